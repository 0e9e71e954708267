r"""
DGP-AEP with a probit output on binary benchmark sets, against SEPGPC and SVGP (Bui et al. 2016, App. F).

``GP-AEP`` (DGPAEP [D, 1]), ``DGP-AEP 2`` ([D, 2, 1]), minibatch ``SEPGPC`` and GPflow's ``SVGP``, exact
probit, the same k-means start, Adam on batches of 50 in interleaved chunks; test error and NLPD over
splits, time per iteration. The paper reports this output only in its App. A.2. Results:
docs/benchmarks/dgp.md. Run ``python -m benchmarks.dgp_binary [--quick] [--out-dir results/dgp]``.
"""

from pathlib import Path
from typing import Dict

import gpflow

from gpflow_ep.datasets import load_benchmark
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import DGPAEP, SEPGPC

from .dgp_uci import minibatch_trainer, summarise, train_interleaved
from .models import evaluate
from .report import markdown_header
from .runner import benchmark_parser, check_choices, parse_command_line, parse_list, progress_logger, run_split_grid
from .stats import cell, markdown_table

log = progress_logger("dgp_binary")
QUICK = dict(datasets="Crabs", splits=1, iterations=60, num_inducing=5, chunk=20)
QUICK_HELP = "Crabs, 1 split, 60 iterations, M = 5"
METHODS = ("GP-AEP", "DGP-AEP 2", "SEPGPC", "SVGP")


def _models(X, Y, M, seed) -> Dict:
    D = X.shape[1]
    start = DGPAEP.from_data(X, Y, [D, 1], num_inducing=M, likelihood=Probit(), seed=seed)
    Z = start.layers[0].inducing_variables[0].Z.numpy()
    lengthscales = start.layers[0].kernels[0].lengthscales.numpy()

    def kernel():
        return gpflow.kernels.SquaredExponential(lengthscales=lengthscales.copy())

    return {
        "GP-AEP": start,
        "DGP-AEP 2": DGPAEP.from_data(X, Y, [D, 2, 1], num_inducing=M, likelihood=Probit(), seed=seed),
        "SEPGPC": SEPGPC(kernel(), Probit(), Z.copy(), num_data=len(X)),
        "SVGP": gpflow.models.SVGP(kernel(), Probit(), Z.copy(), num_data=len(X)),
    }


def run_split(name, split, methods, M, iterations, lr, chunk, data_dir, seed=0) -> Dict:
    """Every method on one split: test error, NLPD, all finite, median seconds per iteration."""
    data = load_benchmark(name, split, data_dir, kind="binary")
    models = {m: model for m, model in _models(data.X_train, data.Y_train, M, seed).items() if m in methods}
    trainers = {m: minibatch_trainer(model, data.X_train, data.Y_train, lr, 50, seed) for m, model in models.items()}
    train_interleaved(trainers.values(), iterations, chunk)
    results = {}
    for m, model in models.items():
        scores = evaluate(model, data.X_test, data.Y_test)
        results[m] = {k: scores[k] for k in ("error", "nlpd", "finite")}
        results[m]["seconds_per_iteration"] = trainers[m].median_per_step()
    return results


def binary_markdown(report) -> str:
    c, summary, methods = report["config"], report["summary"], report["config"]["methods"]
    rows = []
    for name, row in summary.items():
        for metric in ("error", "nlpd"):
            rows.append(
                [name, metric] + [cell(row[m][metric]["mean"], 3, se=row[m][metric]["se"] or 0) for m in methods]
            )
        times = [row[m]["seconds_per_iteration"] for m in methods]
        rows.append([name, "ms / iteration"] + [f"{1e3 * t:.2f} ({t / times[0]:.2f}×)" for t in times])
    lines = markdown_header("DGP-AEP with a probit output on binary sets", report)
    lines += [
        f"M = {c['num_inducing']}, {c['iterations']} Adam iterations (lr {c['learning_rate']}, batch "
        f"{c['batch_size']}), {c['splits']} splits; mean ± s.e. over splits.",
        "",
        *markdown_table(["dataset", "metric", *methods], rows),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.dgp_binary", __doc__, "results/dgp", QUICK_HELP, data_dir=True)
    parser.add_argument("--datasets", default="Pima,Iono")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)}")
    parser.add_argument("--num-inducing", type=int, default=50)
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--chunk", type=int, default=250)
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    if args.quick:
        vars(args).update(QUICK)
    datasets, methods = parse_list(args.datasets), parse_list(args.methods)
    check_choices(parser, "--methods", methods, METHODS)
    settings = dict(M=args.num_inducing, iterations=args.iterations, lr=args.lr, chunk=args.chunk)
    config = dict(datasets=datasets, methods=methods, num_inducing=args.num_inducing, splits=args.splits)
    config.update(iterations=args.iterations, learning_rate=args.lr, batch_size=50, chunk=args.chunk)

    def run(name, split):
        return dict(
            dataset=name, split=split, results=run_split(name, split, methods, **settings, data_dir=args.data_dir)
        )

    def describe(run):
        scores = ", ".join(f"{m} {r['error']:.3f}/{r['nlpd']:.3f}" for m, r in run["results"].items())
        return f"{run['dataset']} split {run['split']}: {scores}"

    return run_split_grid(
        datasets,
        args.splits,
        run,
        lambda runs: summarise(runs, methods, metrics=("error", "nlpd")),
        config=config,
        command=command,
        prefix=Path(args.out_dir) / ("dgp_binary_quick" if args.quick else "dgp_binary"),
        markdown=binary_markdown,
        log=log,
        describe=describe,
    )


if __name__ == "__main__":
    raise SystemExit(main())
