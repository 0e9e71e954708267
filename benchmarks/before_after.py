r"""
Before/after comparisons of two versions of ``gpflow_ep``. ``--before-tree DIR``: DGPAEP (Bui et al. 2016;
a compiled Adam step, ``predict_y``) and SpikeSlabRegression (Hernández-Lobato & Hernández-Lobato 2011;
``run_ep``, log Z_EP and its gradient) timed under this tree and DIR in interleaved rounds of one fresh
process per version, with the numbers both compute compared. ``--kind KIND --before A.json ... --after
B.json ...``: the cost ratios of two versions' own benchmark reports, side by side. Protocol and results:
docs/benchmarks/one_engine.md.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from .report import utc_now, write_report
from .stats import markdown_table

# ---------------------------------------------------------------- reports


def _epgpc(report: Dict) -> Dict:
    rows = [r for r in report["results"] if r.get("sweep_over_cholesky") is not None]
    return {f"{r['dataset']} n={r['n']} {r['schedule']}": r["sweep_over_cholesky"] for r in rows}


def _sep_scaling(report: Dict) -> Dict:
    return {f"n={r['n']}": r["SEP minibatch"]["per_step_s"] / r["SVGP"]["per_step_s"] for r in report["rows"]}


#: per kind: the ratio of each row of a report, and the ratio's name
KINDS = {
    "epgpc_scaling": (_epgpc, "sweep / Cholesky"),
    "sepgpc_scaling": (_sep_scaling, "SEP step / SVGP step"),
    "sepgpc_airline": (lambda report: {"airline epoch": report["epoch_time_ratio"]}, "SEP epoch / SVGP epoch"),
}


def ratios(kind: str, paths: Sequence[str]) -> Dict[str, Dict]:
    """Per row: the ratio of every report and their median."""
    per_report = [KINDS[kind][0](json.loads(Path(p).read_text())) for p in paths]
    keys = [k for k in per_report[0] if all(k in r for r in per_report)]
    return {
        k: dict(values=[r[k] for r in per_report], median=float(np.median([r[k] for r in per_report]))) for k in keys
    }


def markdown(report: Dict) -> str:
    label = KINDS[report["kind"]][1]
    rows = []
    for key, row in report["rows"].items():
        b, a = row["before"], row["after"]
        rows.append([key, f"{b['median']:.3g}", f"{a['median']:.3g}", f"{a['median'] / b['median']:.2f}"])
        rows[-1] += [", ".join(f"{v:.3g}" for v in side["values"]) for side in (b, a)]
    head = ["row", f"before ({label})", f"after ({label})", "after / before", "before runs", "after runs"]
    lines = [
        f"# {report['kind']}: {label}, before and after",
        "",
        f"Command: `{report['command']}`  ",
        f"Before: {', '.join(report['before_files'])}  ",
        f"After: {', '.join(report['after_files'])}",
        "",
        *markdown_table(head, rows),
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- versions

#: workload sizes: "full" the benchmark's, "quick" a tiny one (the test's)
SIZES = {
    "full": {
        "dgpaep": dict(data="diabetes", num_inducing=50, batch=200, predict=1000, warm_up_steps=10, timed_steps=100),
        "spike_slab": dict(n=200, d=500, timed_runs=5, timed_gradients=20),
    },
    "quick": {
        "dgpaep": dict(data="synthetic", num_inducing=5, batch=20, predict=50, warm_up_steps=2, timed_steps=5),
        "spike_slab": dict(n=20, d=30, timed_runs=2, timed_gradients=3),
    },
}
WORKLOADS = ("dgpaep", "spike_slab")
#: the largest relative difference of two versions' numbers that counts as equal (float64 round-off of a
#: reordered computation is ~1e-13 here; a changed formula moves the numbers far more)
EQUAL_TOLERANCE = 1e-10
_MARK = "BEFORE_AFTER_JSON "
_ROOT = Path(__file__).resolve().parent.parent


def _timed(fn: Callable[[], object], warmup: int, repeats: int):
    """``fn`` called ``warmup`` times untimed, then ``repeats`` times timed: (timing summary, last value)."""
    value = None
    for _ in range(warmup):
        value = fn()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        seconds.append(time.perf_counter() - start)
    return dict(median_s=float(np.median(seconds)), seconds=seconds), value


def dgpaep_workload(size: Dict) -> Dict:
    """
    A DGP-AEP of widths [D, 2, 1] on standardised data (scikit-learn's diabetes, or 60 synthetic points in
    3-D): one compiled Adam step on the minibatch objective (the same batches in every process), and
    ``predict_y`` compiled on standard normal inputs after the steps.
    """
    import tensorflow as tf
    from gpflow.keras import tf_keras

    from gpflow_ep.models import DGPAEP

    if size["data"] == "diabetes":
        from sklearn.datasets import load_diabetes

        X, y = load_diabetes(return_X_y=True)
    else:
        rng = np.random.default_rng(1)
        X = rng.standard_normal((60, 3))
        y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(len(X))
    X, y = (X - X.mean(0)) / X.std(0), ((y - y.mean()) / y.std())[:, None]
    widths = [X.shape[1], 2, 1]
    X_new = tf.constant(np.random.default_rng(2).standard_normal((size["predict"], X.shape[1])))
    model = DGPAEP.from_data(X, y, widths, size["num_inducing"], seed=0)
    initial_loss = float(model.training_loss((X, y)))
    variables, optimizer = model.trainable_variables, tf_keras.optimizers.Adam(0.01)
    rng, X_all, y_all = np.random.default_rng(3), tf.constant(X), tf.constant(y)
    steps = size["warm_up_steps"] + size["timed_steps"]
    batches = iter([tf.constant(rng.choice(len(X), size["batch"], replace=False)) for _ in range(steps)])

    @tf.function
    def step(index):
        with tf.GradientTape() as tape:
            loss = model.training_loss((tf.gather(X_all, index), tf.gather(y_all, index)))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    predict = tf.function(model.predict_y)
    step_s, last_loss = _timed(lambda: float(step(next(batches))), size["warm_up_steps"], size["timed_steps"])
    predict_s, (mean, var) = _timed(lambda: [t.numpy() for t in predict(X_new)], 2, max(5, size["timed_steps"] // 5))
    return dict(
        timings={"training step": step_s, f"predict_y ({len(X_new)} points)": predict_s},
        values={
            "initial loss (all data)": [initial_loss],
            "last step's loss": [last_loss],
            "predictive mean": mean[:, 0].tolist(),
            "predictive variance": var[:, 0].tolist(),
        },
        setting=dict(
            data=size["data"], widths=widths, **{k: v for k, v in size.items() if k not in ("data", "predict")}
        ),
    )


def spike_slab_workload(size: Dict) -> Dict:
    """
    ``SpikeSlabRegression`` (σ² = 0.01, v_s = 1, p_s = 0.1) on y = X w + ε, X standard normal, 10 % of w
    standard normal and the rest 0, σ = 0.1: ``run_ep()`` from the initial sites, then log Z_EP and its
    gradient in the unconstrained hyper-parameters at the converged sites, compiled.
    """
    import tensorflow as tf

    from gpflow_ep.models import SpikeSlabRegression

    n, d = size["n"], size["d"]
    rng = np.random.default_rng(4)
    X = rng.standard_normal((n, d))
    w = np.where(rng.random(d) < 0.1, rng.standard_normal(d), 0.0)
    y = (X @ w + 0.1 * rng.standard_normal(n))[:, None]
    model = SpikeSlabRegression((X, y), noise_variance=0.01, slab_variance=1.0, prior_inclusion=0.1)

    def run_ep():
        model.reset_sites()
        run = model.run_ep()
        return dict(sweeps=int(run.sweeps), converged=bool(run.converged))

    @tf.function
    def evidence_and_gradient():
        with tf.GradientTape() as tape:
            evidence = model.log_marginal_likelihood()
        return evidence, tape.gradient(evidence, model.trainable_variables)

    def evidence_gradient():
        evidence, gradient = evidence_and_gradient()
        return float(evidence), [float(g) for g in gradient]

    run_s, run = _timed(run_ep, 1, size["timed_runs"])
    grad_s, (evidence, gradient) = _timed(evidence_gradient, 2, size["timed_gradients"])
    weights_mean, weights_var = (t.numpy()[:, 0].tolist() for t in model.weight_moments())
    return dict(
        timings={"run_ep to convergence": run_s, "log Z_EP + gradient": grad_s},
        values={
            "sweeps": [run["sweeps"]],
            "log Z_EP": [evidence],
            "gradient of log Z_EP": gradient,
            "weight means": weights_mean,
            "weight variances": weights_var,
        },
        setting=dict(n=n, d=d, converged=run["converged"], **{k: size[k] for k in ("timed_runs", "timed_gradients")}),
    )


def worker_main(argv: Sequence[str]) -> int:
    """One subprocess: the workloads under the ``gpflow_ep`` on ``PYTHONPATH``; one JSON line on stdout."""
    import gpflow_ep

    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", nargs="*", choices=WORKLOADS, required=True)
    parser.add_argument("--size", choices=sorted(SIZES), required=True)
    args = parser.parse_args(argv)
    functions = {"dgpaep": dgpaep_workload, "spike_slab": spike_slab_workload}
    result = dict(gpflow_ep=str(Path(gpflow_ep.__file__).resolve().parent), workloads={})
    for name in args.workloads:
        result["workloads"][name] = functions[name](SIZES[args.size][name])
    print(_MARK + json.dumps(result), flush=True)
    return 0


#: run in the subprocess: gpflow_ep from PYTHONPATH (``-c`` puts the working directory, '', first on
#: sys.path: dropped), then this module from this tree
_BOOTSTRAP = (
    "import sys\n"
    "sys.path[:] = [p for p in sys.path if p != '']\n"
    "import gpflow_ep\n"
    f"sys.path.insert(0, {str(_ROOT)!r})\n"
    "from benchmarks.before_after import worker_main\n"
    "sys.exit(worker_main(sys.argv[1:]))\n"
)


def run_worker(tree: Path, workloads: Sequence[str], size: str) -> Dict:
    """The workloads timed in a fresh Python process whose ``gpflow_ep`` is ``tree``'s."""
    command = [sys.executable, "-c", _BOOTSTRAP, "--workloads", *workloads, "--size", size]
    proc = subprocess.run(command, env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(_MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"the worker for {tree} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len(_MARK) :])
    if Path(result["gpflow_ep"]) != (tree / "gpflow_ep").resolve():
        raise RuntimeError(f"the worker for {tree} imported gpflow_ep from {result['gpflow_ep']}")
    return result


def relative_difference(a: Sequence[float], b: Sequence[float]) -> float:
    """‖a - b‖∞ / max(‖a‖∞, ‖b‖∞) (0 for two zero vectors; inf for different lengths)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        return float("inf")
    scale = max(np.max(np.abs(a), initial=0.0), np.max(np.abs(b), initial=0.0))
    return 0.0 if scale == 0.0 else float(np.max(np.abs(a - b)) / scale)


def compare_versions(before: Path, after: Path, workloads: Sequence[str], rounds: int, size: str) -> Dict:
    """
    Interleaved rounds of one process per version (``before`` first in odd rounds): per timed call the
    median over rounds of each process's median, after / before of those and per round; per number the
    largest relative difference from the first before process's over every process.
    """
    runs: Dict[str, List[Dict]] = {"before": [], "after": []}
    for r in range(rounds):
        for side in ("before", "after") if r % 2 == 0 else ("after", "before"):
            start = time.perf_counter()
            runs[side].append(run_worker(before if side == "before" else after, workloads, size))
            print(f"round {r + 1}/{rounds}: {side} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    rows, values = [], []
    for w in workloads:
        results = {side: [run["workloads"][w] for run in runs[side]] for side in runs}
        for timing in results["after"][0]["timings"]:
            b, a = ([res["timings"][timing]["median_s"] for res in results[side]] for side in ("before", "after"))
            rows.append(
                dict(
                    workload=w,
                    timing=timing,
                    before_s=b,
                    after_s=a,
                    before_median_s=float(np.median(b)),
                    after_median_s=float(np.median(a)),
                    ratio=float(np.median(a) / np.median(b)),
                    round_ratios=[x / y for x, y in zip(a, b)],
                )
            )
        for name, first in results["before"][0]["values"].items():
            difference = max(relative_difference(first, res["values"][name]) for res in sum(results.values(), []))
            values.append(
                dict(
                    workload=w,
                    quantity=name,
                    size=len(first),
                    before=first[0],
                    after=results["after"][0]["values"][name][0],
                    relative_difference=difference,
                    equal=difference <= EQUAL_TOLERANCE,
                )
            )
    settings = {w: runs["after"][0]["workloads"][w]["setting"] for w in workloads}
    for run in runs["before"] + runs["after"]:  # the numbers are summarised above; keep the timings
        for result in run["workloads"].values():
            result.pop("values")
    report = dict(rows=rows, values=values, settings=settings, rounds=rounds, size=size, runs=runs)
    return dict(report, before_tree=str(before), after_tree=str(after))


def versions_markdown(report: Dict) -> str:
    """The versions report's tables: timings (medians over rounds) and the numbers' agreement."""
    timings = [
        [r["workload"], r["timing"], f"{1e3 * r['before_median_s']:.3g}", f"{1e3 * r['after_median_s']:.3g}"]
        + [f"{r['ratio']:.2f}", ", ".join(f"{x:.2f}" for x in r["round_ratios"]), f"{np.median(r['round_ratios']):.2f}"]
        for r in report["rows"]
    ]
    numbers = [
        [v["workload"], v["quantity"], v["size"], f"{v['before']:.10g}", f"{v['after']:.10g}"]
        + [f"{v['relative_difference']:.1e}", "yes" if v["equal"] else "**no**"]
        for v in report["values"]
    ]
    load = report["load_average"]
    lines = [
        f"# {', '.join(report['workloads'])}: before ({report['before_revision']}) and after "
        f"({report['after_revision']}), interleaved",
        "",
        f"Command: `{report['command']}`  ",
        f"Before: {report['before_tree']}; after: {report['after_tree']}  ",
        f"Rounds: {report['rounds']}, each one process per version, order alternating; load average "
        f"{load[0]:.1f} at the start, {load[1]:.1f} at the end. Each process reports the median of its timed calls; "
        "before and after are the medians of those over rounds, after / before their ratio, per round the ratio "
        "within each round's pair of processes.",
        "",
        *markdown_table(
            ["workload", "timed call", "before (ms)", "after (ms)", "after / before", "per round", "median per round"],
            timings,
        ),
        "",
        f"Numbers (first entry shown; largest relative difference ‖a − b‖∞ / max(‖a‖∞, ‖b‖∞) over every "
        f"process of both versions; equal when ≤ {EQUAL_TOLERANCE:.0e}):",
        "",
        *markdown_table(
            ["workload", "quantity", "entries", "before", "after", "largest relative difference", "equal"], numbers
        ),
        "",
        "Settings: " + "; ".join(f"{w}: {s}" for w, s in report["settings"].items()),
    ]
    return "\n".join(lines) + "\n"


def versions_main(args, command: str) -> int:
    before, after = Path(args.before_tree).resolve(), Path(args.after_tree).resolve()
    for tree, name in ((before, "--before-tree"), (after, "--after-tree")):
        if not (tree / "gpflow_ep" / "__init__.py").is_file():
            raise ValueError(f"{name}: {tree} has no gpflow_ep package")
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    if rounds < 1:
        raise ValueError(f"--rounds must be at least 1; got {rounds}")
    load_start = os.getloadavg()[0]
    result = compare_versions(before, after, args.workloads, rounds, "quick" if args.quick else "full")
    revisions = [
        subprocess.run(["git", "-C", str(t), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        for t in (before, after)
    ]
    revision = [p.stdout.strip() if p.returncode == 0 else t.name for p, t in zip(revisions, (before, after))]
    report = dict(
        result,
        workloads=list(args.workloads),
        before_revision=revision[0],
        after_revision=revision[1],
        load_average=[load_start, os.getloadavg()[0]],
        command=command,
        made=utc_now(),
    )
    write_report(Path(args.out_dir) / "versions_before_after", report, versions_markdown(report))
    print(versions_markdown(report))
    return 0 if all(v["equal"] for v in report["values"]) else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.before_after", description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-tree", help="versions: the earlier version's source tree (it holds gpflow_ep/)")
    parser.add_argument("--after-tree", default=str(_ROOT), help="versions: the later tree (default: this one)")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--rounds", type=int, help="versions: rounds of one process per version (5; 1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="versions: tiny workloads (a smoke test)")
    parser.add_argument("--kind", choices=sorted(KINDS), help="reports: the benchmark whose reports are compared")
    parser.add_argument("--before", nargs="+", help="reports: the earlier version's")
    parser.add_argument("--after", nargs="+", help="reports: this version's")
    parser.add_argument("--out-dir", default="results/engine")
    args = parser.parse_args(argv)
    command = f"python -m benchmarks.before_after {' '.join(sys.argv[1:] if argv is None else argv)}"
    if args.before_tree is not None:
        if args.kind is not None:
            parser.error("--kind compares reports and --before-tree versions: give one of them")
        return versions_main(args, command)
    if args.kind is None or not args.before or not args.after:
        parser.error("give --before-tree DIR (versions), or --kind KIND --before ... --after ... (reports)")
    before, after = ratios(args.kind, args.before), ratios(args.kind, args.after)
    rows = {k: dict(before=before[k], after=after[k]) for k in before if k in after}
    report = dict(
        kind=args.kind, rows=rows, before_files=args.before, after_files=args.after, command=command, made=utc_now()
    )
    write_report(Path(args.out_dir) / f"{args.kind}_before_after", report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
