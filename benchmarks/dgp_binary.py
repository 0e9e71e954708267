r"""
DGP-AEP with a probit output on binary benchmark sets against SEPGPC and SVGP (Bui et al. 2016, App. F): the
models, start and interleaved Adam training of ``dgp_uci`` with the exact probit; test error, NLPD, time per step.

Results: docs/benchmarks/dgp.md.
"""

from pathlib import Path
from typing import Dict

from gpflow_ep.likelihoods import Probit

from .data import load_benchmark
from .dgp_uci import BATCH, summarise, train_interleaved, trainers
from .models import evaluate
from .report import markdown_header
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger, run_split_grid
from .stats import cell, markdown_table

log = progress_logger("dgp_binary")
QUICK = dict(datasets="Crabs", splits=1, iterations=60, num_inducing=5, chunk=20)
METHODS = ("GP-AEP", "DGP-AEP 2", "SEPGPC", "SVGP")
KEYS = ("error", "nlpd", "finite", "seconds_per_iteration")


def run_split(name, split, M, iterations, lr, chunk, data_dir) -> Dict:
    """Every method on one split: test error, NLPD, all finite, median seconds per iteration."""
    data = load_benchmark(name, split, data_dir, kind="binary")
    models = trainers(data.X_train, data.Y_train, METHODS, M, lr, seed=0, likelihood=Probit)
    train_interleaved(models.values(), iterations, chunk)
    results = {
        m: dict(evaluate(t.model, data.X_test, data.Y_test), seconds_per_iteration=t.median_per_step())
        for m, t in models.items()
    }
    return {m: {k: r[k] for k in KEYS} for m, r in results.items()}


def binary_markdown(report) -> str:
    """Per data set, the error and NLPD (mean ± s.e. over splits) and ms per iteration of each method."""
    c, methods, rows = report["config"], report["config"]["methods"], []
    for name, row in report["summary"].items():
        rows += [[name, k, *(cell(row[m][k]["mean"], 3, se=row[m][k]["se"] or 0) for m in methods)] for k in KEYS[:2]]
        times = [row[m]["seconds_per_iteration"] for m in methods]
        rows.append([name, "ms / iteration", *(f"{1e3 * t:.2f} ({t / times[0]:.2f}×)" for t in times)])
    lines = markdown_header("DGP-AEP with a probit output on binary sets", report) + [
        f"M = {c['num_inducing']}, {c['iterations']} Adam iterations (lr {c['learning_rate']}, batch "
        f"{c['batch_size']}), {c['splits']} splits; mean ± s.e. over splits.",
        "",
        *markdown_table(["dataset", "metric", *methods], rows),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    quick = "Crabs, 1 split, 60 iterations, M = 5"
    parser = benchmark_parser("benchmarks.dgp_binary", __doc__, "results/dgp", quick, data_dir=True)
    parser.add_argument("--datasets", default="Pima,Iono")
    parser.add_argument("--splits", type=int, default=5)
    parser.set_defaults(num_inducing=50, iterations=2000, lr=0.005, chunk=250)  # the chunk: steps per turn
    args, command = parse_command_line(parser, argv)
    if args.quick:
        vars(args).update(QUICK)
    datasets, settings = parse_list(args.datasets), (args.num_inducing, args.iterations, args.lr, args.chunk)
    config = dict(datasets=datasets, methods=list(METHODS), num_inducing=args.num_inducing, splits=args.splits)
    config.update(iterations=args.iterations, learning_rate=args.lr, batch_size=BATCH, chunk=args.chunk)

    def run(name, split):
        return dict(dataset=name, split=split, results=run_split(name, split, *settings, args.data_dir))

    def describe(run):
        scores = ", ".join(f"{m} {r['error']:.3f}/{r['nlpd']:.3f}" for m, r in run["results"].items())
        return f"{run['dataset']} split {run['split']}: {scores}"

    prefix = Path(args.out_dir) / ("dgp_binary_quick" if args.quick else "dgp_binary")
    grid = dict(config=config, command=command, prefix=prefix, markdown=binary_markdown, log=log, describe=describe)
    return run_split_grid(datasets, args.splits, run, lambda runs: summarise(runs, METHODS, KEYS[:2]), **grid)


if __name__ == "__main__":
    raise SystemExit(main())
