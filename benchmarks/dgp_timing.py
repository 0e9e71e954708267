r"""
Time per iteration of DGP-AEP against GPflux's DeepGP (and GPflow's SVGP), without the accuracy runs.

``benchmarks.dgp_uci`` measures the time per iteration inside its 6000-iteration accuracy runs,
which take hours; this measures the same models (``dgp_uci.minibatch_trainers``: same starts,
minibatch 50, Adam) on the first split of each dataset for each ``--num-inducing``, in interleaved
chunks of ``--chunk`` steps after one untimed compiling step, for ``--iterations`` steps: the median
seconds per step over the chunks, and DGP-AEP's ratio to GPflux at the same depth (the issue's goal:
at most 2×). Use it to re-time the current code when the accuracy tables were run with an older one.
Run ``python -m benchmarks.dgp_timing [--quick] [--out-dir results/dgp]``.
"""

from pathlib import Path
from typing import Dict, List

import numpy as np

from gpflow_ep.datasets import load_benchmark

from .dgp_uci import NAMES, minibatch_trainers, train_interleaved
from .report import markdown_header, timed_report, write_report
from .runner import benchmark_parser, check_choices, check_datasets, parse_command_line, parse_list, progress_logger

log = progress_logger("dgp_timing")
QUICK_HELP = "yacht, M = 5, DGP-AEP 2 and GPflux 2, 40 iterations in chunks of 10"
METHODS = ("GP-AEP", "DGP-AEP 2", "DGP-AEP 3", "GPflux 2", "GPflux 3", "SVGP")
PAIRS = (("DGP-AEP 2", "GPflux 2"), ("DGP-AEP 3", "GPflux 3"))


def time_dataset(name, M, methods, iterations, chunk, data_dir, lr=0.005, seed=0) -> Dict[str, float]:
    """Median seconds per iteration of each method on split 0 of ``name`` (y standardised)."""
    data = load_benchmark(name, 0, data_dir, kind="regression")
    Y = (data.Y_train - data.Y_train.mean()) / data.Y_train.std()
    trainers = minibatch_trainers(data.X_train, Y, methods, M, lr, samples=1, seed=seed)
    train_interleaved(trainers.values(), iterations, chunk)
    return {method: trainer.median_per_step() for method, trainer in trainers.items()}


def ratios(times: Dict[str, float]) -> Dict[str, float]:
    """DGP-AEP's time over GPflux's at each depth both were timed at."""
    return {f"{a} / {b}": times[a] / times[b] for a, b in PAIRS if a in times and b in times}


def run_timing(datasets, inducing, methods, iterations, chunk, data_dir) -> Dict:
    rows = []
    for name in datasets:
        for M in inducing:
            times = time_dataset(name, M, methods, iterations, chunk, data_dir)
            rows.append(dict(dataset=name, num_inducing=M, seconds_per_iteration=times, ratios=ratios(times)))
            log(f"{name} M={M}: " + ", ".join(f"{k} {v:.2f}×" for k, v in rows[-1]["ratios"].items()))
    config = dict(
        datasets=list(datasets), num_inducing=list(inducing), methods=list(methods), iterations=iterations, chunk=chunk
    )
    return dict(config=config, rows=rows)


def claims(report) -> List[str]:
    out = []
    for M in report["config"]["num_inducing"]:
        for key in dict.fromkeys(k for r in report["rows"] for k in r["ratios"]):
            values = [r["ratios"][key] for r in report["rows"] if r["num_inducing"] == M and key in r["ratios"]]
            if values:
                within = sum(v <= 2.0 for v in values)
                out.append(
                    f"M = {M}, {key}: {min(values):.2f}–{max(values):.2f}× (median {np.median(values):.2f}×); "
                    f"≤ 2× (the goal) on {within} of {len(values)} datasets."
                )
    return out


def timing_markdown(report) -> str:
    c = report["config"]
    methods = c["methods"]
    keys = list(dict.fromkeys(k for r in report["rows"] for k in r["ratios"]))
    lines = markdown_header("DGP-AEP time per iteration against GPflux", report)
    lines += [
        f"Split 0 of each dataset, minibatch 50, Adam; median over chunks of {c['chunk']} steps of "
        f"{c['iterations']} (interleaved, the compiling step excluded). Times in ms.",
        "",
        "| dataset | M | " + " | ".join(methods + keys) + " |",
        "|---" * (2 + len(methods) + len(keys)) + "|",
    ]
    for r in report["rows"]:
        cells = [f"{1e3 * r['seconds_per_iteration'][m]:.2f}" for m in methods]
        cells += [f"{r['ratios'][k]:.2f}×" if k in r["ratios"] else "—" for k in keys]
        lines.append(f"| {NAMES.get(r['dataset'], r['dataset'])} | {r['num_inducing']} | " + " | ".join(cells) + " |")
    lines += ["", "## Claims", ""] + [f"- {c}" for c in claims(report)]
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.dgp_timing", __doc__, "results/dgp", QUICK_HELP, data_dir=True)
    parser.add_argument("--datasets", default=",".join(NAMES), help="regression dataset folders")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)}")
    parser.add_argument("--num-inducing", default="50,100", help="comma-separated M values")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=100, help="steps per interleaved timing chunk")
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    datasets, methods = parse_list(args.datasets), parse_list(args.methods)
    inducing = parse_list(args.num_inducing, int)
    if args.quick:
        datasets, inducing, args.iterations, args.chunk = ["yacht"], [5], 40, 10
        methods = ["DGP-AEP 2", "GPflux 2"]
    check_choices(parser, "--methods", methods, METHODS)
    check_datasets(parser, datasets, "regression", args.data_dir)
    report = timed_report(
        command, lambda: run_timing(datasets, inducing, methods, args.iterations, args.chunk, args.data_dir)
    )
    stem = "dgp_timing_quick" if args.quick else "dgp_timing"
    json_path, md_path = write_report(Path(args.out_dir) / stem, report, timing_markdown(report))
    log(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
