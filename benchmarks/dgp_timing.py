r"""
Time per iteration of DGP-AEP against GPflux's DeepGP (and GPflow's SVGP), without the accuracy runs.

The models of ``benchmarks.dgp_uci`` (same starts, batch 50, Adam) on split 0 of each data set and each
``--num-inducing``, in interleaved chunks after an untimed compiling step; DGP-AEP's ratio to GPflux at
equal depth (the goal: at most 2×). Results: docs/benchmarks/dgp.md. Run ``python -m benchmarks.dgp_timing
[--quick] [--out-dir results/dgp]``.
"""

from pathlib import Path
from typing import Dict, List

from gpflow_ep.datasets import load_benchmark

from .claims import Claim, claim_items, verdicts
from .dgp_uci import NAMES, PAIRS, minibatch_trainers, train_interleaved
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, check_choices, check_datasets, parse_command_line, parse_list, progress_logger
from .stats import markdown_table

log = progress_logger("dgp_timing")
QUICK = dict(datasets="yacht", num_inducing="5", iterations=40, chunk=10, methods="DGP-AEP 2,GPflux 2")
QUICK_HELP = "yacht, M = 5, DGP-AEP 2 and GPflux 2, 40 iterations in chunks of 10"
METHODS = ("GP-AEP", "DGP-AEP 2", "DGP-AEP 3", "GPflux 2", "GPflux 3", "SVGP")
GOAL = 2.0


def time_dataset(name, M, methods, iterations, chunk, data_dir, lr=0.005, seed=0) -> Dict[str, float]:
    """Median seconds per iteration of each method on split 0 of ``name`` (y standardised)."""
    data = load_benchmark(name, 0, data_dir, kind="regression")
    Y = (data.Y_train - data.Y_train.mean()) / data.Y_train.std()
    trainers = minibatch_trainers(data.X_train, Y, methods, M, lr, samples=1, seed=seed)
    train_interleaved(trainers.values(), iterations, chunk)
    return {method: trainer.median_per_step() for method, trainer in trainers.items()}


def run_timing(datasets, inducing, methods, iterations, chunk, data_dir) -> Dict:
    """A row per (data set, M): seconds per iteration and DGP-AEP / GPflux ratios at equal depth."""
    rows = []
    for name in datasets:
        for M in inducing:
            times = time_dataset(name, M, methods, iterations, chunk, data_dir)
            ratios = {f"{a} / {b}": times[a] / times[b] for a, b in PAIRS if a in times and b in times}
            rows.append(dict(dataset=name, num_inducing=M, seconds_per_iteration=times, ratios=ratios))
            log(f"{name} M={M}: " + ", ".join(f"{k} {v:.2f}×" for k, v in ratios.items()))
    config = dict(datasets=datasets, num_inducing=inducing, methods=methods, iterations=iterations, chunk=chunk)
    return dict(config=config, rows=rows)


def claims(report) -> List[Claim]:
    """DGP-AEP's time per iteration at most 2× GPflux's (the goal), per M and depth, over the report's rows."""
    out = []
    for M in report["config"]["num_inducing"]:
        for key in dict.fromkeys(k for r in report["rows"] for k in r["ratios"]):
            out.append(
                Claim(
                    f"M = {M}, {key} ≤ {GOAL:g}× (the goal)",
                    holds=lambda r, key=key: r["ratios"][key] <= GOAL,
                    rows=lambda table, M=M, key=key: [
                        r for r in table if r["num_inducing"] == M and key in r["ratios"]
                    ],
                    show=lambda r, key=key: f"{NAMES.get(r['dataset'], r['dataset'])} {r['ratios'][key]:.2f}×",
                )
            )
    return out


def timing_markdown(report) -> str:
    c = report["config"]
    methods, keys = c["methods"], list(dict.fromkeys(k for r in report["rows"] for k in r["ratios"]))
    rows = [
        [NAMES.get(r["dataset"], r["dataset"]), r["num_inducing"]]
        + [f"{1e3 * r['seconds_per_iteration'][m]:.2f}" for m in methods]
        + [f"{r['ratios'][k]:.2f}×" if k in r["ratios"] else "—" for k in keys]
        for r in report["rows"]
    ]
    lines = markdown_header("DGP-AEP time per iteration against GPflux", report)
    lines += [
        f"Split 0 of each dataset, minibatch 50, Adam; median over chunks of {c['chunk']} steps of "
        f"{c['iterations']} (interleaved, the compiling step excluded). Times in ms.",
        "",
        *markdown_table(["dataset", "M", *methods, *keys], rows),
    ]
    lines += markdown_section("Claims", claim_items(verdicts(claims(report), report["rows"])))
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.dgp_timing", __doc__, "results/dgp", QUICK_HELP, data_dir=True)
    parser.add_argument("--datasets", default=",".join(NAMES), help="regression dataset folders")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)}")
    parser.add_argument("--num-inducing", default="50,100", help="comma-separated M values")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=100, help="steps per interleaved timing chunk")
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    if args.quick:
        vars(args).update(QUICK)
    datasets, methods, inducing = (
        parse_list(args.datasets),
        parse_list(args.methods),
        parse_list(args.num_inducing, int),
    )
    check_choices(parser, "--methods", methods, METHODS)
    check_datasets(parser, datasets, "regression", args.data_dir)
    report = timed_report(
        command, lambda: run_timing(datasets, inducing, methods, args.iterations, args.chunk, args.data_dir)
    )
    stem = Path(args.out_dir) / ("dgp_timing_quick" if args.quick else "dgp_timing")
    json_path, md_path = write_report(stem, report, timing_markdown(report))
    log(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
