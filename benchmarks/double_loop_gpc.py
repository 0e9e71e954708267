r"""
The convergent double loop on GP classification: ``EPGPC(schedule="convergent")`` with the label-flip
``NoisyStep`` likelihood on noisy synthetic data where EP cycles (the double loop of Hernández-Lobato &
Hernández-Lobato 2011, §3.2, is a schedule of the engine, so it applies to EPGPC unchanged).

Data as ``benchmarks.rep_synthetic`` with ``--n-per-class`` points per class; methods :data:`METHODS`
(undamped sequential EP, damped parallel EP, the double loop). Protocol and results:
docs/benchmarks/spike_slab.md. Run ``python -m benchmarks.double_loop_gpc [--quick] [--out-dir results/spike_slab]``.
"""

import time
from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np

from gpflow_ep.likelihoods import NoisyStep
from gpflow_ep.models import EPGPC

from .rep_synthetic import dataset
from .report import markdown_header
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger, run_split_grid
from .stats import cell, markdown_table, mean_se

log = progress_logger("double_loop_gpc")
QUICK = dict(flip_rates="0.1", repetitions=1, n_per_class=10, test_points=200, max_outer=10)
QUICK_HELP = "flip rate 0.1, 1 repetition, 10 points per class, 10 outer iterations"
METHODS = {
    "EP": dict(schedule="sequential", damping=1.0, criterion="alpha", tol=1e-3, max_sweeps=100),
    "EP damped": dict(schedule="parallel", damping=0.5, tol=1e-6, max_sweeps=1000),
    "double loop": dict(schedule="convergent", tol=1e-9),
}


def run_one(flip_rate: float, rep: int, n_per_class: int, test_points: int, max_outer: int) -> Dict:
    """The three methods on data set ``rep`` of ``flip_rate``."""
    X, Y, _, Xt, Yt = dataset(flip_rate, rep, n_per_class, test_points)
    out = {}
    for name, options in METHODS.items():
        if name == "double loop":
            options = dict(options, max_sweeps=max_outer)
        model = EPGPC(
            (X, Y), gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=1.0), NoisyStep(flip_rate), **options
        )
        if name != "double loop":
            model.run_ep()  # compile; the timed run starts again from flat sites
            model.sites.reset()
        t0 = time.perf_counter()
        run = model.run_ep()
        seconds = time.perf_counter() - t0
        p = model.predict_y(Xt)[0].numpy()
        out[name] = dict(
            converged=bool(run.converged),
            sweeps=int(run.sweeps),
            seconds=seconds,
            error=float(np.mean((p > 0.5) != Yt)),
            log_z=float(model.log_marginal_likelihood()),
        )
        if name == "double loop":
            E = run.history.numpy()[: int(run.sweeps)]
            out[name]["max_increase"] = float(np.max(np.diff(E))) if len(E) > 1 else 0.0
    return out


def summarise(runs: List[Dict]) -> Dict:
    """Per flip rate and method: runs converged, median sweeps and seconds, error and log Z mean ± s.e."""
    summary = {}
    for rate in dict.fromkeys(r["flip_rate"] for r in runs):
        rows = [r["results"] for r in runs if r["flip_rate"] == rate]
        summary[str(rate)] = {
            m: dict(
                converged=int(sum(row[m]["converged"] for row in rows)),
                runs=len(rows),
                median_sweeps=float(np.median([row[m]["sweeps"] for row in rows])),
                median_seconds=float(np.median([row[m]["seconds"] for row in rows])),
                error=mean_se([row[m]["error"] for row in rows]),
                log_z=mean_se([row[m]["log_z"] for row in rows]),
                max_increase=max((row[m].get("max_increase", 0.0) for row in rows), default=0.0),
            )
            for m in METHODS
        }
    return summary


def markdown(report) -> str:
    c = report["config"]
    rows = [
        [
            rate,
            m,
            f"{r['converged']} of {r['runs']}",
            f"{r['median_sweeps']:.0f}",
            f"{r['median_seconds']:.2f}",
            cell(r["error"]["mean"], 3, se=r["error"]["se"] or 0),
            f"{r['log_z']['mean']:.2f}",
        ]
        for rate, methods in report["summary"].items()
        for m, r in methods.items()
    ]
    increase = max(r["double loop"]["max_increase"] for r in report["summary"].values())
    header = [
        "flip rate",
        "method",
        "converged",
        "sweeps / outer (median)",
        "s per run (median)",
        "test error",
        "log Z_EP",
    ]
    lines = markdown_header("The convergent double loop on noisy-label GP classification (EPGPC + NoisyStep)", report)
    lines += [
        f"N = {2 * c['n_per_class']} training points, {c['test_points']} clean test points, {c['repetitions']} data "
        f"sets per flip rate; double loop at most {c['max_outer']} outer iterations.",
        "",
        *markdown_table(header, rows),
        "",
        f"Largest single increase of the double loop's energy over all runs: {increase:.1e}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.double_loop_gpc", __doc__, "results/spike_slab", QUICK_HELP)
    parser.add_argument("--flip-rates", default="0.1,0.2")
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--n-per-class", type=int, default=50)
    parser.add_argument("--test-points", type=int, default=4000)
    parser.add_argument("--max-outer", type=int, default=300)
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    if args.quick:
        vars(args).update(QUICK)
    rates = parse_list(args.flip_rates, float)
    sizes = dict(n_per_class=args.n_per_class, test_points=args.test_points, max_outer=args.max_outer)

    def run_split(rate, rep):
        return dict(flip_rate=rate, rep=rep, results=run_one(rate, rep, **sizes))

    def describe(run):
        return f"flip {run['flip_rate']} rep {run['rep']}: " + ", ".join(
            f"{m} {'ok' if r['converged'] else 'NO'} {r['sweeps']} {r['seconds']:.1f}s err {r['error']:.3f}"
            for m, r in run["results"].items()
        )

    return run_split_grid(
        rates,
        args.repetitions,
        run_split,
        summarise,
        config=dict(flip_rates=rates, repetitions=args.repetitions, **sizes),
        command=command,
        prefix=Path(args.out_dir) / ("double_loop_gpc_quick" if args.quick else "double_loop_gpc"),
        markdown=markdown,
        log=log,
        describe=describe,
    )


if __name__ == "__main__":
    raise SystemExit(main())
