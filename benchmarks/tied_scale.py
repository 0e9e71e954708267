r"""
Sparse EP at SVGP's scale: SEPGPC with tied sites (stochastic EP, Li, Hernández-Lobato & Turner 2015) and
GPflow's SVGP (stock ``Bernoulli()``) on 10,000,000 synthetic points in 8-D, streamed through ``tf.data``
(each batch generated from its index with stateless random numbers: no point is held in memory, let alone
twice), M = 200 inducing inputs, batch 1,000, the plain compiled Adam step of each (``benchmarks.tied_speed``):
seconds per epoch, the process's peak resident memory, the model's own state and the held-out NLPD after
every epoch; and at 1,000,000 points the same for both and for per-point SEPGPC (the SEP paper's scheme, one
site and one direction per point), whose O(n·M) state is the line tied sites remove.

Each (method, n) runs in a fresh process (peak memory is a process's), one after the other, the order
alternating between methods. Protocol and results: docs/benchmarks/sepgpc_tied.md.
Run ``python -m benchmarks.tied_scale [--quick] [--out-dir results/tied]``.
"""

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from .report import markdown_header, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, progress_logger
from .stats import markdown_table

log = progress_logger("tied_scale")
#: the goal: tied SEPGPC's peak resident memory over SVGP's, at every n
MEMORY_GOAL = 1.2
D, SEED, TEST_SEED, NOISE = 8, 1, 2, 0.3
QUICK = dict(runs=[(20_000, ["SVGP", "SEPGPC tied", "SEPGPC per-point"])], M=20, batch=500, epochs=2, test=2_000)
FULL = dict(
    runs=[(10_000_000, ["SVGP", "SEPGPC tied"]), (1_000_000, ["SVGP", "SEPGPC tied", "SEPGPC per-point"])],
    M=200,
    batch=1_000,
    epochs=3,
    test=100_000,
)


def latent(X):
    """The latent function of the synthetic classes: f(x) = Σ_d w_d sin(1.5 x_d) + 0.5 x₁x₂, fixed w."""
    w = tf.constant(np.linspace(1.0, -1.0, D), X.dtype)
    return tf.reduce_sum(w * tf.sin(1.5 * X), axis=1, keepdims=True) + 0.5 * X[:, :1] * X[:, 1:2]


def points(seed: int, index, size: int):
    """``size`` points of block ``index`` (a [] int64 tensor): X ~ N(0, I), y = 1[f(x) + 0.3 ε > 0], stateless."""
    def seeded(offset):
        return tf.stack([tf.constant(seed + offset, tf.int64), index])

    X = tf.random.stateless_normal([size, D], seed=seeded(0), dtype=tf.float64)
    noise = tf.random.stateless_normal([size, 1], seed=seeded(100), dtype=tf.float64)
    return X, tf.cast(latent(X) + NOISE * noise > 0.0, tf.float64)


def stream(n: int, batch: int, epochs: int, with_index: bool):
    """n points as n/batch generated batches, their order reshuffled every epoch; (X, Y) or (X, Y, index)."""
    num_batches = n // batch
    order = tf.data.Dataset.range(num_batches).shuffle(num_batches, seed=0, reshuffle_each_iteration=True)

    def make(b):
        X, Y = points(SEED, b, batch)
        index = tf.cast(b, tf.int32) * batch + tf.range(batch, dtype=tf.int32)
        return (X, Y, index) if with_index else (X, Y)

    return order.repeat(epochs).map(make, num_parallel_calls=1).prefetch(2), num_batches


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes


def worker(method: str, n: int, M: int, batch: int, epochs: int, test: int) -> Dict:
    """One method on n streamed points in this process: per-epoch seconds and NLPD, peak memory, state size."""
    from gpflow_ep.compare import make_kernel, make_model

    from .step_speed import svgp_step
    from .tied_speed import minibatch_ep_step

    Z, _ = points(SEED + 7, tf.constant(0, tf.int64), M)  # inducing inputs: M draws of the input distribution
    Z = Z.numpy()
    X_test, Y_test = (t.numpy() for t in points(TEST_SEED, tf.constant(0, tf.int64), test))
    options = dict(kernel=make_kernel(D), inducing_variable=Z, num_data=n)
    if method == "SVGP":
        model, make_step = make_model("svgp", **options), svgp_step
    else:
        sites = "tied" if method == "SEPGPC tied" else "per_point"
        model, make_step = make_model("sepgpc", sites=sites, **options), minibatch_ep_step
    state_mb = sum(int(np.prod(v.shape)) * v.dtype.size for v in model.variables) / 2**20
    rss_built = peak_rss_mb()
    from gpflow.keras import tf_keras

    step = make_step(model, tf_keras.optimizers.Adam(0.01))
    dataset, num_batches = stream(n, batch, epochs, with_index=method == "SEPGPC per-point")
    batches = iter(dataset)

    def nlpd() -> float:
        total = 0.0
        for start in range(0, test, 10_000):
            p, _ = model.predict_y(X_test[start : start + 10_000])
            y, p = Y_test[start : start + 10_000], np.clip(p.numpy(), 1e-300, 1.0 - 1e-16)
            total -= float(np.sum(y * np.log(p) + (1.0 - y) * np.log1p(-p)))
        return total / test

    epoch_s, nlpds, compile_s = [], [], None
    for epoch in range(epochs):
        start = time.perf_counter()
        for _ in range(num_batches):
            loss = step(next(batches))
            if compile_s is None:
                float(loss)
                compile_s = time.perf_counter() - start
                start = time.perf_counter()
        float(loss)
        epoch_s.append(time.perf_counter() - start)
        nlpds.append(nlpd())
        log(f"{method} n={n}: epoch {epoch + 1} in {epoch_s[-1]:.1f} s, test NLPD {nlpds[-1]:.4f}")
    return dict(
        method=method,
        n=n,
        epoch_seconds=epoch_s,
        first_step_seconds=compile_s,
        nlpd=nlpds,
        peak_rss_mb=peak_rss_mb(),
        rss_after_build_mb=rss_built,
        state_mb=state_mb,
        steps_per_epoch=num_batches,
    )


def run(config: Dict) -> Dict:
    results: List[Dict] = []
    for r, (n, methods) in enumerate(config["runs"]):
        for method in methods if r % 2 == 0 else methods[::-1]:
            args = [method, str(n), str(config["M"]), str(config["batch"]), str(config["epochs"]), str(config["test"])]
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.tied_scale", "--worker", *args],
                capture_output=True, text=True, check=False,
            )
            if out.returncode != 0:
                raise RuntimeError(f"worker {method} n={n} failed:\n{out.stderr[-3000:]}")
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
            log(f"{method} n={n}: {results[-1]}")
    memory = {}
    for n, _ in config["runs"]:
        by = {r["method"]: r for r in results if r["n"] == n}
        ratio = by["SEPGPC tied"]["peak_rss_mb"] / by["SVGP"]["peak_rss_mb"]
        memory[str(n)] = dict(ratio=ratio, met=bool(ratio <= MEMORY_GOAL))
    return dict(config=config, results=results, memory=memory, goal=MEMORY_GOAL)


def markdown(report: Dict) -> str:
    c = report["config"]
    lines = markdown_header("Tied sites at SVGP's scale: time, memory and accuracy per epoch", report)
    rows = []
    for r in report["results"]:
        epochs = ", ".join(f"{s:.3g}" for s in r["epoch_seconds"])
        nlpd = ", ".join(f"{v:.4f}" for v in r["nlpd"])
        rows.append([f"{r['n']:,}", r["method"], epochs, f"{r['first_step_seconds']:.1f}", f"{r['peak_rss_mb']:.0f}",
                     f"{r['state_mb']:.3g}", nlpd])
    memory = [[f"{int(n):,}", f"{m['ratio']:.2f}x", f"≤ {report['goal']}x {'met' if m['met'] else 'not met'}"]
              for n, m in report["memory"].items()]
    lines += [
        "",
        f"Synthetic 8-D classes streamed through `tf.data` (each batch generated from its index), M = {c['M']}, "
        f"batch {c['batch']}, Adam 0.01, {c['epochs']} epochs, a fresh process per row; the held-out NLPD on "
        f"{c['test']:,} other points after every epoch (not timed).",
        "",
        *markdown_table(["n", "method", "s per epoch", "first step s", "peak RSS MB", "model state MB",
                         "test NLPD after each epoch"], rows),
        "",
        *markdown_table(["n", "peak RSS, tied SEPGPC / SVGP", "goal"], memory),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "--worker":
        parse_command_line(benchmark_parser("benchmarks.tied_scale", __doc__, "results/tied", ""), [])
        method, n, M, batch, epochs, test = argv[1], *(int(a) for a in argv[2:])
        print(json.dumps(worker(method, n, M, batch, epochs, test)))
        return 0
    parser = benchmark_parser("benchmarks.tied_scale", __doc__, "results/tied", "20,000 points, M = 20, batch 500, 2 epochs")
    args, command = parse_command_line(parser, argv)
    config = QUICK if args.quick else FULL
    report = timed_report(command, lambda: run(config))
    prefix = Path(args.out_dir) / ("tied_scale_quick" if args.quick else "tied_scale")
    log("wrote {} and {}".format(*write_report(prefix, report, markdown(report))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
