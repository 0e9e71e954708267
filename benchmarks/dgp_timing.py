r"""
Time per iteration of DGP-AEP against GPflux's DeepGP (and GPflow's SVGP), without the accuracy runs: the models
of ``dgp_uci`` on split 0 of each data set and each ``--num-inducing``, trained in interleaved chunks.

Results: docs/benchmarks/dgp.md.
"""

from pathlib import Path
from typing import List

from .claims import Claim, claim_items, verdicts
from .dgp_uci import NAMES, PAIRS, standardised_split, train_interleaved, trainers
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, check_datasets, parse_command_line, parse_list, progress_logger
from .stats import markdown_table

log = progress_logger("dgp_timing")
QUICK = dict(datasets="yacht", num_inducing="5", iterations=40, chunk=10, methods=["DGP-AEP 2", "GPflux 2"])
METHODS = ["GP-AEP", "DGP-AEP 2", "DGP-AEP 3", "GPflux 2", "GPflux 3", "SVGP"]
GOAL = 2.0


def claims(report) -> List[Claim]:
    """DGP-AEP's time per iteration at most 2× GPflux's (the goal), per M and depth, over the report's rows."""
    keys = dict.fromkeys(k for r in report["rows"] for k in r["ratios"])
    return [
        Claim(
            f"M = {M}, {key} ≤ {GOAL:g}× (the goal)",
            holds=lambda r, key=key: r["ratios"][key] <= GOAL,
            rows=lambda table, M=M, key=key: [r for r in table if r["num_inducing"] == M and key in r["ratios"]],
            show=lambda r, key=key: f"{NAMES.get(r['dataset'], r['dataset'])} {r['ratios'][key]:.2f}×",
        )
        for M in report["config"]["num_inducing"]
        for key in keys
    ]


def timing_markdown(report) -> str:
    """A row per (data set, M): ms per iteration of each method and the DGP-AEP / GPflux ratios; the claims."""
    c, keys = report["config"], list(dict.fromkeys(k for r in report["rows"] for k in r["ratios"]))
    rows = [
        [NAMES.get(r["dataset"], r["dataset"]), r["num_inducing"]]
        + [f"{1e3 * r['seconds_per_iteration'][m]:.2f}" for m in c["methods"]]
        + [f"{r['ratios'][k]:.2f}×" if k in r["ratios"] else "—" for k in keys]
        for r in report["rows"]
    ]
    lines = markdown_header("DGP-AEP time per iteration against GPflux", report) + [
        f"Split 0 of each dataset, minibatch 50, Adam; median over chunks of {c['chunk']} steps of "
        f"{c['iterations']} (interleaved, the compiling step excluded). Times in ms.",
        "",
        *markdown_table(["dataset", "M", *c["methods"], *keys], rows),
    ]
    lines += markdown_section("Claims", claim_items(verdicts(claims(report), report["rows"])))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    quick = "yacht, M = 5, DGP-AEP 2 and GPflux 2, 40 iterations in chunks of 10"
    parser = benchmark_parser("benchmarks.dgp_timing", __doc__, "results/dgp", quick, data_dir=True)
    parser.add_argument("--datasets", default=",".join(NAMES), help="regression dataset folders")
    parser.add_argument("--num-inducing", default="50,100", help="comma-separated M values")
    parser.set_defaults(methods=METHODS, iterations=1000, chunk=100)  # the chunk: steps per interleaved turn
    args, command = parse_command_line(parser, argv)
    if args.quick:
        vars(args).update(QUICK)
    datasets, inducing, methods = parse_list(args.datasets), parse_list(args.num_inducing, int), args.methods
    check_datasets(parser, datasets, "regression", args.data_dir)

    def run():
        rows = []
        for name, M in ((name, M) for name in datasets for M in inducing):
            X, Y, *_ = standardised_split(name, 0, args.data_dir)
            models = trainers(X, Y, methods, M, lr=0.005, seed=0)
            train_interleaved(models.values(), args.iterations, args.chunk)
            times = {m: trainer.median_per_step() for m, trainer in models.items()}
            ratios = {f"{a} / {b}": times[a] / times[b] for a, b in PAIRS if a in times and b in times}
            rows.append(dict(dataset=name, num_inducing=M, seconds_per_iteration=times, ratios=ratios))
            log(f"{name} M={M}: " + ", ".join(f"{k} {v:.2f}×" for k, v in ratios.items()))
        config = dict(datasets=datasets, num_inducing=inducing, methods=methods, iterations=args.iterations)
        return dict(config=dict(config, chunk=args.chunk), rows=rows)

    report = timed_report(command, run)
    stem = Path(args.out_dir) / ("dgp_timing_quick" if args.quick else "dgp_timing")
    log("wrote {} and {}".format(*write_report(stem, report, timing_markdown(report))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
