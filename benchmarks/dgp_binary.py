r"""
DGP-AEP with a probit output on binary benchmark sets, against SEPGPC and SVGP (Bui et al. 2016, App. F).

The paper reports this output only in its App. A.2 (Table 1, without N, M or iteration counts). For each binary set
of ``shared/datasets/binary`` in ``--datasets`` and each of its first ``--splits`` fixed splits
(inputs standardised with the training split), these models start from the same k-means inducing
inputs and median-distance lengthscales (M = ``--num-inducing``) and are trained with Adam
(``--lr``), minibatches of 50 and ``--iterations`` steps in interleaved chunks:

* ``GP-AEP``: DGPAEP [D, 1] with the exact probit likelihood;
* ``DGP-AEP 2``: DGPAEP [D, 2, 1] with the probit likelihood;
* ``SEPGPC``: minibatch stochastic EP (the SEP paper's method) with the probit likelihood;
* ``SVGP``: GPflow's whitened SVGP with the probit likelihood.

Reported: mean ± s.e. over splits of the test error and the test NLPD, and the median time per
iteration (compilation excluded). Run ``python -m benchmarks.dgp_binary [--quick] [--out-dir results/dgp]``.
"""

from pathlib import Path
from typing import Dict

import gpflow

from gpflow_ep.datasets import load_benchmark
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import DGPAEP, SEPGPC

from .dgp_uci import minibatch_trainer, summarise, train_interleaved
from .models import evaluate
from .report import markdown_header, timed_report, write_report
from .runner import benchmark_parser, check_choices, parse_command_line, parse_list, progress_logger

log = progress_logger("dgp_binary")
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
    data = load_benchmark(name, split, data_dir, kind="binary")
    models = {m: model for m, model in _models(data.X_train, data.Y_train, M, seed).items() if m in methods}
    trainers = {m: minibatch_trainer(model, data.X_train, data.Y_train, lr, 50, seed) for m, model in models.items()}
    train_interleaved(trainers.values(), iterations, chunk)
    results = {}
    for m, model in models.items():
        scores = evaluate(model, data.X_test, data.Y_test)
        results[m] = dict(
            error=scores["error"],
            nlpd=scores["nlpd"],
            finite=scores["finite"],
            seconds_per_iteration=trainers[m].median_per_step(),
        )
    return results


def run_binary(datasets, methods, M, splits, iterations, lr, chunk, data_dir) -> Dict:
    runs = []
    for name in datasets:
        for split in range(splits):
            result = run_split(name, split, methods, M, iterations, lr, chunk, data_dir)
            runs.append(dict(dataset=name, split=split, results=result))
            log(
                f"{name} split {split}: "
                + ", ".join(f"{m} {r['error']:.3f}/{r['nlpd']:.3f}" for m, r in result.items())
            )
    summary = summarise(runs, methods, metrics=("error", "nlpd"))
    return dict(
        config=dict(
            datasets=list(datasets),
            methods=list(methods),
            num_inducing=M,
            splits=splits,
            iterations=iterations,
            learning_rate=lr,
            batch_size=50,
            chunk=chunk,
        ),
        runs=runs,
        summary=summary,
    )


def binary_markdown(report) -> str:
    c, summary, methods = report["config"], report["summary"], report["config"]["methods"]
    lines = markdown_header("DGP-AEP with a probit output on binary sets", report)
    lines += [
        f"M = {c['num_inducing']}, {c['iterations']} Adam iterations (lr {c['learning_rate']}, batch {c['batch_size']}), "
        f"{c['splits']} splits; mean ± s.e. over splits.",
        "",
        "| dataset | metric | " + " | ".join(methods) + " |",
        "|---" * (2 + len(methods)) + "|",
    ]
    for name, row in summary.items():
        for metric in ("error", "nlpd"):
            cells = [f"{row[m][metric]['mean']:.3f} ± {row[m][metric]['se'] or 0:.3f}" for m in methods]
            lines.append(f"| {name} | {metric} | " + " | ".join(cells) + " |")
        ref = row[methods[0]]["seconds_per_iteration"]
        cells = [
            f"{1e3 * row[m]['seconds_per_iteration']:.2f} ({row[m]['seconds_per_iteration'] / ref:.2f}×)"
            for m in methods
        ]
        lines.append(f"| {name} | ms / iteration | " + " | ".join(cells) + " |")
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
    datasets, methods = parse_list(args.datasets), parse_list(args.methods)
    if args.quick:
        datasets, args.splits, args.iterations, args.num_inducing, args.chunk = ["Crabs"], 1, 60, 5, 20
    check_choices(parser, "--methods", methods, METHODS)
    report = timed_report(
        command,
        lambda: run_binary(
            datasets, methods, args.num_inducing, args.splits, args.iterations, args.lr, args.chunk, args.data_dir
        ),
    )
    stem = "dgp_binary_quick" if args.quick else "dgp_binary"
    json_path, md_path = write_report(Path(args.out_dir) / stem, report, binary_markdown(report))
    log(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
