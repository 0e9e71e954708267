r"""
The convergent double loop on GP classification: ``EPGPC(schedule="convergent")`` with the
label-flip ``NoisyStep`` likelihood on the relaxed-EP paper's noisy synthetic data, where EP cycles
(issue #10; the double loop of Hernández-Lobato & Hernández-Lobato 2011, §3.2, is a schedule of the
engine, so it applies to EPGPC unchanged).

Data as ``benchmarks.rep_synthetic`` (``noisy_mixture``: class 1 ~ N(0, I), class 0 ~ ½N((±3, 0), I),
``--flip-rates`` of the training labels flipped, ε = flip rate, clean test points), but with
``--n-per-class`` points per class (default 50, N = 100: on N = 400 one double-loop run did not
finish 100 outer iterations in 15 min on this 2-core machine, every inner L-BFGS-B evaluation
factorising a 400 × 400 matrix). Kernel SE(variance 1, lengthscale 1), sites from flat, for
``--repetitions`` data sets per flip rate:

* ``EP``: sequential, undamped, R = ‖a_t - a_{t-1}‖ < 1e-3 within 100 sweeps (the reproduction's setting);
* ``EP damped``: parallel, damping 0.5, site changes < 1e-6 within 1000 sweeps;
* ``double loop``: the convergent schedule, ΔE < 1e-9·max(1, |E|) three times running, at most
  ``--max-outer`` outer iterations.

Reported: runs converged, sweeps or outer iterations (median), wall time per run (median; EP runs
compiled, the first call excluded), test error and log Z_EP (means), and the double loop's largest
energy increase. Run ``python -m benchmarks.double_loop_gpc [--quick] [--out-dir results/spike_slab]``.
"""

import time
from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np

from gpflow_ep.likelihoods import NoisyStep
from gpflow_ep.models import EPGPC

from .rep_synthetic import dataset
from .report import markdown_header, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger
from .stats import mean_se

log = progress_logger("double_loop_gpc")
QUICK_HELP = "flip rate 0.1, 1 repetition, 10 points per class, 10 outer iterations"
METHODS = {
    "EP": dict(schedule="sequential", damping=1.0, criterion="alpha", tol=1e-3, max_sweeps=100),
    "EP damped": dict(schedule="parallel", damping=0.5, tol=1e-6, max_sweeps=1000),
    "double loop": dict(schedule="convergent", tol=1e-9),
}


def run_one(flip_rate: float, rep: int, n_per_class: int, test_points: int, max_outer: int) -> Dict:
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
        row = dict(
            converged=bool(run.converged),
            sweeps=int(run.sweeps),
            seconds=seconds,
            error=float(np.mean((p > 0.5) != Yt)),
            log_z=float(model.log_marginal_likelihood()),
        )
        if name == "double loop":
            E = run.history.numpy()[: int(run.sweeps)]
            row["max_increase"] = float(np.max(np.diff(E))) if len(E) > 1 else 0.0
        out[name] = row
    return out


def summarise(runs: List[Dict]) -> Dict:
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
    lines = markdown_header("The convergent double loop on noisy-label GP classification (EPGPC + NoisyStep)", report)
    lines += [
        f"N = {2 * c['n_per_class']} training points, {c['test_points']} clean test points, {c['repetitions']} data sets per "
        f"flip rate; double loop at most {c['max_outer']} outer iterations.",
        "",
        "| flip rate | method | converged | sweeps / outer (median) | s per run (median) | test error | log Z_EP |",
        "|---|---|---|---|---|---|---|",
    ]
    for rate, rows in report["summary"].items():
        for m, r in rows.items():
            lines.append(
                f"| {rate} | {m} | {r['converged']} of {r['runs']} | {r['median_sweeps']:.0f} | {r['median_seconds']:.2f} | "
                f"{r['error']['mean']:.3f} ± {r['error']['se'] or 0:.3f} | {r['log_z']['mean']:.2f} |"
            )
    inc = max(r["double loop"]["max_increase"] for r in report["summary"].values())
    lines += ["", f"Largest single increase of the double loop's energy over all runs: {inc:.1e}."]
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.double_loop_gpc", __doc__, "results/spike_slab", QUICK_HELP)
    parser.add_argument("--flip-rates", default="0.1,0.2")
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--n-per-class", type=int, default=50)
    parser.add_argument("--test-points", type=int, default=4000)
    parser.add_argument("--max-outer", type=int, default=300)
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    rates = parse_list(args.flip_rates, float)
    if args.quick:
        rates, args.repetitions, args.n_per_class, args.test_points, args.max_outer = [0.1], 1, 10, 200, 10
    stem = "double_loop_gpc_quick" if args.quick else "double_loop_gpc"
    config = dict(
        flip_rates=rates,
        repetitions=args.repetitions,
        n_per_class=args.n_per_class,
        test_points=args.test_points,
        max_outer=args.max_outer,
    )

    def run() -> Dict:
        runs = []
        for rate in rates:
            for rep in range(args.repetitions):
                results = run_one(rate, rep, args.n_per_class, args.test_points, args.max_outer)
                runs.append(dict(flip_rate=rate, rep=rep, results=results))
                log(
                    f"flip {rate} rep {rep}: "
                    + ", ".join(
                        f"{m} {'ok' if r['converged'] else 'NO'} {r['sweeps']} {r['seconds']:.1f}s err {r['error']:.3f}"
                        for m, r in results.items()
                    )
                )
        return dict(config=config, runs=runs, summary=summarise(runs))

    report = timed_report(command, run)
    json_path, md_path = write_report(Path(args.out_dir) / stem, report, markdown(report))
    log(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
