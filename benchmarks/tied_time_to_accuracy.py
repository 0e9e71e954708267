r"""
Held-out NLPD against wall-clock training time on nycflights13 "is the arrival delayed?": sparse EP with tied
sites (stochastic EP, Li, Hernández-Lobato & Turner 2015), with the SEP paper's per-point sites
(Hernández-Lobato & Hernández-Lobato 2016, Sec. 2.3), GPflow's SVGP trained by Adam, and SVGP with GPflow's
``NaturalGradient`` on q(u) (Salimbeni, Eleftheriadis & Hensman 2018) and Adam on the hyper-parameters (q_mu
and q_sqrt set non-trainable for Adam, as GPflow's documentation shows). The same SE-ARD kernel, initial
inducing inputs (k-means), minibatches (``make_dataset``'s, the site index for per-point EP only), number of
steps and Adam learning rate on every side; each method's plain compiled step.

The methods train in interleaved chunks of steps (the order alternating), the held-out NLPD evaluated after
every chunk; only the training steps are timed (evaluation excluded, compilation excluded by a first,
untimed step). The goal: tied SEP reaches SVGP + Adam's final held-out NLPD in less training time than
SVGP + Adam. Protocol and results: docs/benchmarks/sepgpc_tied.md.
Run ``python -m benchmarks.tied_time_to_accuracy [--quick] [--out-dir results/tied]``.
"""

from pathlib import Path
from typing import Dict, List, Optional, Sequence

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ep.compare import inducing_inputs
from gpflow_ep.training import make_dataset

from .claims import Claim, claim_items, verdicts
from .data import load_flights
from .minibatch import TimedSteps, sparse_model
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, progress_logger
from .stats import markdown_table
from .step_speed import svgp_step
from .tied_accuracy import score
from .tied_speed import minibatch_ep_step

log = progress_logger("tied_time_to_accuracy")
TIED, PER_POINT, ADAM, NATGRAD = "SEPGPC tied", "SEPGPC per-point", "SVGP Adam", "SVGP NatGrad + Adam"
METHODS = (TIED, PER_POINT, ADAM, NATGRAD)
FULL = dict(n_train=200_000, n_test=10_000, M=100, batch=1000, steps=8000, every=250, lr=0.01, gamma=0.1)
QUICK = dict(n_train=3_000, n_test=1_000, M=10, batch=200, steps=60, every=20, lr=0.01, gamma=0.1)
#: the k-means of the initial inducing inputs runs on this many random training rows
KMEANS_ROWS = 10_000


def natgrad_step(model, optimizer, gamma: float):
    """
    GPflow's recipe for SVGP with natural gradients: q_mu and q_sqrt non-trainable, a ``NaturalGradient(gamma)``
    step on them, then an Adam step on the hyper-parameters, each on the batch's training loss (compiled).
    """
    gpflow.set_trainable(model.q_mu, False)
    gpflow.set_trainable(model.q_sqrt, False)
    natgrad, variational = gpflow.optimizers.NaturalGradient(gamma), [(model.q_mu, model.q_sqrt)]
    variables = model.trainable_variables

    @tf.function(autograph=False)
    def step(batch):
        def loss():
            return model.training_loss(batch[:2])

        natgrad.minimize(loss, variational)
        optimizer.minimize(loss, variables)
        return tf.identity(optimizer.iterations)  # waits for both updates (a loss would cost a third pass)

    return step


def build(method: str, D: int, Z, n: int, config: Dict):
    """The method's model and its compiled step (Adam with the shared learning rate)."""
    adam = tf_keras.optimizers.Adam(config["lr"])
    if method in (TIED, PER_POINT):
        model = sparse_model("SEPGPC", D, Z, n, sites="tied" if method == TIED else "per_point")
        return model, minibatch_ep_step(model, adam)
    model = sparse_model("SVGP", D, Z, n)  # stock Bernoulli()
    return model, svgp_step(model, adam) if method == ADAM else natgrad_step(model, adam, config["gamma"])


def run(config: Dict) -> Dict:
    """Every method trained in interleaved chunks of ``every`` steps, scored after each: the curves and summaries."""
    X, Y, Xt, Yt, info = load_flights(test_size=config["n_test"], seed=0, subsample=config["n_train"])
    (n, D), every = X.shape, config["every"]
    rows = np.sort(np.random.default_rng(0).permutation(n)[:KMEANS_ROWS])
    Z = inducing_inputs(X[rows], config["M"], seed=0)
    models, timed = {}, {}
    for method in METHODS:
        models[method], step = build(method, D, Z, n, config)
        batches = make_dataset((X, Y), config["batch"], seed=0, drop_remainder=True, index=method == PER_POINT)
        timed[method] = TimedSteps(step, iter(batches))

    def evaluate(method, step, seconds):
        scores = score(models[method], Xt, Yt)
        return dict(step=step, time_s=seconds, nlpd=scores["nlpd"], error=scores["error"])

    curves = {m: [evaluate(m, 0, 0.0)] for m in METHODS}
    compile_s = {m: t.run(1) for m, t in timed.items()}  # the first step compiles: not timed
    log(f"first (compiling) step, s: {compile_s}")
    seconds, done, rounds = dict.fromkeys(METHODS, 0.0), 1, 0
    while done < config["steps"]:
        k = min(every - done % every, config["steps"] - done)
        for method in METHODS if rounds % 2 == 0 else METHODS[::-1]:
            seconds[method] += k * timed[method].run(k)
            curves[method].append(evaluate(method, done + k, seconds[method]))
        done, rounds = done + k, rounds + 1
        log(f"step {done}: " + ", ".join(f"{m} {seconds[m]:.1f} s NLPD {curves[m][-1]['nlpd']:.4f}" for m in METHODS))
    summary = summarise(curves, {m: 1e3 * float(np.median(t.per_step[1:])) for m, t in timed.items()})
    settings = dict(config, n_train=n, steps_per_epoch=n // config["batch"], kmeans_rows=len(rows))
    return dict(config=settings, data=info, compile_first_step_s=compile_s, curves=curves, summary=summary)


def first_reaching(curve: List[Dict], target: float) -> Optional[Dict]:
    """The first checkpoint of ``curve`` with NLPD ≤ ``target``, or None."""
    return next((point for point in curve if point["nlpd"] <= target), None)


def summarise(curves: Dict, ms_per_step: Dict) -> Dict:
    """Per method: final and best NLPD, training time, ms per step, when it first reaches SVGP + Adam's final NLPD."""
    target = curves[ADAM][-1]["nlpd"]
    methods = {
        m: dict(
            final=c[-1],
            best_nlpd=min(p["nlpd"] for p in c),
            train_seconds=c[-1]["time_s"],
            ms_per_step=ms_per_step[m],
            reaches_target=first_reaching(c, target),
        )
        for m, c in curves.items()
    }
    row = dict(target=target, tied=methods[TIED]["reaches_target"], svgp=methods[ADAM]["reaches_target"])
    return dict(target_nlpd=target, methods=methods, claims=verdicts([GOAL], [row]))


def _goal_holds(row) -> bool:
    return row["tied"] is not None and row["tied"]["time_s"] < row["svgp"]["time_s"]


def _reached(point: Optional[Dict]) -> str:
    return "not reached" if point is None else f"{point['time_s']:.1f} s (step {point['step']})"


GOAL = Claim(
    "goal: tied SEP reaches SVGP + Adam's final held-out NLPD in less wall-clock training time than SVGP + Adam",
    holds=_goal_holds,
    show=lambda r: f"target NLPD {r['target']:.4f}: tied SEP {_reached(r['tied'])}, SVGP + Adam {_reached(r['svgp'])}",
)


def markdown(report: Dict) -> str:
    c, s, d = report["config"], report["summary"], report["data"]
    lines = markdown_header("Tied sites: held-out NLPD against training time (nycflights13)", report) + [
        f"nycflights13 \"is the arrival delayed?\" (positive rate {d['positive_rate']:.3f}): {c['n_train']:,} "
        f"training flights (the first of a random order), {d['n_test']:,} test flights; inputs "
        f"{', '.join(d['features'])}. M = {c['M']} (k-means of {c['kmeans_rows']:,} training rows), batch "
        f"{c['batch']} ({c['steps_per_epoch']} steps an epoch), {c['steps']} steps per method, Adam {c['lr']}, "
        f"natural-gradient γ = {c['gamma']}; SE-ARD kernel (variance 1, lengthscales √D) on every side.",
        "",
        f"Timings are from one run with the methods interleaved in chunks of {c['every']} steps (the order "
        "reversed every other round), so that load on the machine (2 cores, other processes may run) affects all "
        "alike; training time sums the chunks (steps × the chunk's time per step), evaluation and the first "
        "(compiling) step excluded. ms/step: median over the chunks.",
        "",
        f"Target: SVGP + Adam's final held-out NLPD, **{s['target_nlpd']:.4f}**.",
        "",
    ]
    rows = [
        [m, e["final"]["step"], f"{e['train_seconds']:.1f}", f"{e['ms_per_step']:.2f}", f"{e['final']['nlpd']:.4f}",
         f"{e['final']['error']:.4f}", f"{e['best_nlpd']:.4f}", _reached(e["reaches_target"])]
        for m, e in s["methods"].items()
    ]
    header = ["method", "steps", "training s", "ms/step", "final NLPD", "final error", "best NLPD", "first reaches target"]
    lines += markdown_table(header, rows)
    curves = report["curves"]
    header = ["step", *(f"{m} {k}" for m in curves for k in ("s", "NLPD"))]
    points = zip(*curves.values())
    rows = [[p[0]["step"], *(f"{x[k]:.1f}" if k == "time_s" else f"{x[k]:.4f}" for x in p for k in ("time_s", "nlpd"))]
            for p in points]
    lines += ["", "## Held-out NLPD against training time", "", *markdown_table(header, rows)]
    lines += markdown_section("Goal", claim_items(s["claims"]))
    return "\n".join(lines) + "\n"


def plot(prefix: Path, report: Dict) -> Path:
    """``<prefix>.png``: held-out NLPD against training time, one line per method, the target dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for (m, c), style in zip(report["curves"].items(), ("-o", "-s", "-^", "-v")):
        ax.plot([p["time_s"] for p in c[1:]], [p["nlpd"] for p in c[1:]], style, ms=3, label=m)
    ax.axhline(report["summary"]["target_nlpd"], color="gray", ls="--", label="SVGP + Adam's final NLPD")
    ax.set(xlabel="training time (s, evaluation and compilation excluded)", ylabel="held-out NLPD")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = prefix.with_suffix(".png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    quick = f"{QUICK['n_train']:,} flights, M = {QUICK['M']}, {QUICK['steps']} steps"
    parser = benchmark_parser("benchmarks.tied_time_to_accuracy", __doc__, "results/tied", quick)
    parser.add_argument("--steps", type=int, default=None, help=f"steps per method (default {FULL['steps']})")
    args, command = parse_command_line(parser, argv)
    config = dict(QUICK if args.quick else FULL)
    if args.steps is not None:
        config["steps"] = args.steps
    report = timed_report(command, lambda: run(config))
    prefix = Path(args.out_dir) / ("tied_time_to_accuracy_quick" if args.quick else "tied_time_to_accuracy")
    json_path, md_path = write_report(prefix, report, markdown(report))
    log(f"wrote {json_path}, {md_path} and {plot(prefix, report)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
