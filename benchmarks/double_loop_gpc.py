"""
The convergent double loop on GP classification: ``EPGPC(schedule="double_loop")`` (the engine's double
loop, after Hernández-Lobato & Hernández-Lobato 2011, §3.2) and ``schedule="convergent"`` (the same with
PC-EP's box ε ≤ τ, which excludes the negative site precisions EP's fixed point may need) with the
label-flip ``NoisyStep`` likelihood, on the noisy synthetic data of ``benchmarks.rep_synthetic`` where EP
cycles, against undamped sequential and damped parallel EP; every method at its default ``tol`` but
undamped EP (R ≤ 1e-3, the relaxed-EP paper's rule). Protocol and results: docs/benchmarks/spike_slab.md.
"""

import time
from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np

from gpflow_ep.compare import make_model
from gpflow_ep.likelihoods import NoisyStep

from .rep import table
from .rep_synthetic import dataset
from .report import markdown_header
from .runner import benchmark_parser, parse_command_line, progress_logger, run_split_grid
from .stats import cell, mean_se

log = progress_logger("double_loop_gpc")
FULL = dict(flip_rates=[0.1, 0.2], n_per_class=50, test_points=4000, max_outer=300)
QUICK = dict(flip_rates=[0.1], repetitions=1, n_per_class=10, test_points=200, max_outer=10)
METHODS = {
    "EP": dict(schedule="sequential", damping=1.0, criterion="alpha", tol=1e-3, max_sweeps=100),
    "EP damped": dict(schedule="parallel", damping=0.5, tol=1e-6, max_sweeps=1000),
    "double loop": dict(schedule="double_loop"),
    "PC-EP box": dict(schedule="convergent"),
}
#: the methods that run the double loop (capped at ``max_outer`` outer steps, energies recorded)
DOUBLE_LOOPS = ("double loop", "PC-EP box")


def run_one(flip_rate: float, rep: int, config: Dict) -> Dict:
    """The methods on data set ``rep`` of ``flip_rate`` (sizes and the double loops' cap from ``config``)."""
    X, Y, _, Xt, Yt = dataset(flip_rate, rep, config["n_per_class"], config["test_points"])
    out = {}
    for name, options in METHODS.items():
        loop = name in DOUBLE_LOOPS
        options = dict(options, max_sweeps=config["max_outer"]) if loop else options
        kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=1.0)
        model = make_model("epgpc", data=(X, Y), kernel=kernel, likelihood=NoisyStep(flip_rate), **options)
        if not loop:
            model.run_ep()  # compile; the timed run starts again from flat sites
            model.sites.reset()
        t0 = time.perf_counter()
        run = model.run_ep()
        seconds, p = time.perf_counter() - t0, model.predict_y(Xt)[0].numpy()
        out[name] = dict(converged=bool(run.converged), sweeps=int(run.sweeps), seconds=seconds)
        out[name].update(error=float(np.mean((p > 0.5) != Yt)), log_z=float(model.log_marginal_likelihood()))
        if loop:
            E = run.info.energies.numpy()[: int(run.sweeps)]
            out[name]["max_increase"] = float(np.max(np.diff(E))) if len(E) > 1 else 0.0
    return out


def summarise(runs: List[Dict]) -> Dict:
    """Per flip rate and method: converged runs, median sweeps and seconds, error, log Z, the energy's largest rise."""
    summary = {}
    for rate in dict.fromkeys(r["flip_rate"] for r in runs):
        summary[str(rate)] = {}
        for m in METHODS:
            results = [r["results"][m] for r in runs if r["flip_rate"] == rate]
            s = dict(converged=int(sum(r["converged"] for r in results)), runs=len(results))
            s.update({f"median_{k}": float(np.median([r[k] for r in results])) for k in ("sweeps", "seconds")})
            s.update({k: mean_se([r[k] for r in results]) for k in ("error", "log_z")})
            summary[str(rate)][m] = dict(s, max_increase=max(r.get("max_increase", 0.0) for r in results))
    return summary


def markdown(report) -> str:
    c = report["config"]
    columns = [
        ("flip rate", lambda r: r["rate"]),
        ("method", lambda r: r["method"]),
        ("converged", lambda r: f"{r['converged']} of {r['runs']}"),
        ("sweeps / outer (median)", lambda r: f"{r['median_sweeps']:.0f}"),
        ("s per run (median)", lambda r: f"{r['median_seconds']:.2f}"),
        ("test error", lambda r: cell(r["error"]["mean"], 3, se=r["error"]["se"] or 0)),
        ("log Z_EP", lambda r: f"{r['log_z']['mean']:.2f}"),
    ]
    rows = [dict(r, rate=rate, method=m) for rate, methods in report["summary"].items() for m, r in methods.items()]
    increase = max(r[m]["max_increase"] for r in report["summary"].values() for m in DOUBLE_LOOPS)
    lines = markdown_header("The convergent double loop on noisy-label GP classification (EPGPC + NoisyStep)", report)
    lines += [
        f"N = {2 * c['n_per_class']} training points, {c['test_points']} clean test points, {c['repetitions']} data "
        f"sets per flip rate; double loop at most {c['max_outer']} outer iterations.",
        "",
        *table(columns, rows),
        "",
        f"Largest single increase of the double loop's energy over all runs: {increase:.1e}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    quick = "flip rate 0.1, 1 repetition, 10 points per class, 10 outer iterations"
    parser = benchmark_parser("benchmarks.double_loop_gpc", __doc__, "results/spike_slab", quick)
    parser.add_argument("--repetitions", type=int, default=10, help="data sets per flip rate (default 10)")
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    config = {**FULL, "repetitions": args.repetitions, **(QUICK if args.quick else {})}

    def describe(run):
        done = ", ".join(
            f"{m} {'ok' if r['converged'] else 'NO'} {r['sweeps']} {r['seconds']:.1f}s err {r['error']:.3f}"
            for m, r in run["results"].items()
        )
        return f"flip {run['flip_rate']} rep {run['rep']}: {done}"

    return run_split_grid(
        config["flip_rates"],
        config["repetitions"],
        lambda rate, rep: dict(flip_rate=rate, rep=rep, results=run_one(rate, rep, config)),
        summarise,
        config=config,
        command=command,
        prefix=Path(args.out_dir) / ("double_loop_gpc_quick" if args.quick else "double_loop_gpc"),
        markdown=markdown,
        log=log,
        describe=describe,
    )


if __name__ == "__main__":
    raise SystemExit(main())
