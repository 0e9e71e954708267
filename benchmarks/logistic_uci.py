r"""
Logistic GP classification on the binary UCI sets: EP with GPflow's logistic likelihood
``Bernoulli(invlink=tf.sigmoid)`` against GPflow's VGP and SVGP with the same likelihood.

Protocol (that of the probit baselines of ``benchmarks.rep_uci``, "EP-probit" and "VGP-probit"):
the six binary sets of ``shared/datasets/binary`` (Pima, Australian, Breast, Crabs, Ionosphere,
Sonar) with their fixed train/test splits (about 90 % / 10 %), the first ``--splits`` of each;
inputs standardised with the training part; an isotropic ``SquaredExponential`` kernel (variance 1,
lengthscale √D to start; both trained) and the likelihood's parameters, none here, by L-BFGS-B
(``gpflow.optimizers.Scipy``, ``--maxiter`` iterations for every model):

* ``EP``: ``EPGPC`` with the logistic likelihood (tilted moments by the package's adaptive
  quadrature), nested parallel EP (damping 0.5) re-run inside every evidence evaluation; EP is run
  once more at the learned hyper-parameters (and, if the parallel schedule does not converge there,
  the convergent double loop, as in ``benchmarks.robust_regression``);
* ``VGP``: ``gpflow.models.VGP``;
* ``SVGP``: ``gpflow.models.SVGP``, M = min(``--num-inducing``, N) k-means centres (trained),
  full batch.

Reported per data set (mean ± s.e. over splits): test error (sign of the predictive mean, the same as
p(y* = 1) > ½ for the logistic link), test NLPD (−mean ``predict_log_density``), training time
(compilation included on a data set's first split), EP's convergence, and runs whose training
failed (a non-finite loss or gradient).

Run ``python -m benchmarks.logistic_uci [--quick] [--out-dir results/logistic_uci]``.
"""

import math
from pathlib import Path
from typing import Dict, List

import gpflow
import tensorflow as tf

from gpflow_ep.datasets import load_benchmark
from gpflow_ep.models import EPGPC

from .models import evaluate
from .report import markdown_header
from .robust_regression import Slots, ep_cell, finish_ep, train
from .runner import (
    add_split_grid_options,
    benchmark_parser,
    check_choices,
    check_datasets,
    merge_split_reports,
    parse_command_line,
    parse_list,
    progress_logger,
    run_split_grid,
)
from .stats import cell, mean_se

log = progress_logger("logistic_uci")

QUICK_HELP = "Crabs, 1 split, maxiter 5, M = 10"
DATASETS = ("Pima", "Australian", "Breast", "Crabs", "Iono", "Sonar")
METHODS = ("EP", "VGP", "SVGP")
EP_OPTIONS = dict(schedule="parallel", damping=0.5, max_sweeps=200, tol=1e-6)


def logistic() -> gpflow.likelihoods.Bernoulli:
    """GPflow's Bernoulli likelihood with the logistic link."""
    return gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)


def iso_kernel(input_dim: int) -> gpflow.kernels.SquaredExponential:
    """Isotropic SE kernel, variance 1 and lengthscale √D (``benchmarks.rep_uci``'s baselines)."""
    return gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=math.sqrt(input_dim))


def run_split(slots: Slots, name: str, split: int, methods, maxiter: int, data_dir=None) -> Dict:
    s = load_benchmark(name, split, data_dir, kind="binary")
    results = {}
    for m in methods:
        slot, model = slots.model(f"{m}-logistic", s.X_train, s.Y_train, split)
        r = train(slot, maxiter)
        if isinstance(model, EPGPC):
            r["ep"] = finish_ep(model)
        r.update(evaluate(model, s.X_test, s.Y_test))
        r["kernel"] = dict(
            variance=float(model.kernel.variance.numpy()), lengthscale=float(model.kernel.lengthscales.numpy())
        )
        results[m] = r
    return dict(dataset=name, split=split, n_train=len(s.X_train), n_test=len(s.X_test), results=results)


def summarise(runs: List[Dict], methods) -> Dict:
    per_set = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        rows = [r["results"] for r in runs if r["dataset"] == name]
        entry = {}
        for m in methods:
            got = [row[m] for row in rows if m in row]
            entry[m] = {k: mean_se([g.get(k) for g in got]) for k in ("error", "nlpd", "train_time_s")}
            entry[m]["failed"] = sum((not g["finite"]) or g["final_loss"] is None for g in got)
            entry[m]["kernel_variance"] = mean_se([g["kernel"]["variance"] for g in got])
            eps = [g["ep"] for g in got if "ep" in g]
            if eps:
                entry[m]["ep_converged"] = sum(e["converged"] for e in eps)
                entry[m]["ep_fallback"] = sum(e["fallback"] for e in eps)
                entry[m]["ep_fallback_converged"] = sum(e.get("fallback_converged", False) for e in eps)
                entry[m]["ep_runs"] = len(eps)
        per_set[name] = dict(splits=len(rows), methods=entry)
    return dict(per_set=per_set)


def markdown(report: Dict) -> str:
    c = report["config"]
    lines = markdown_header("Logistic GP classification: EP against VGP and SVGP", report)
    lines += [
        f"Isotropic SE kernel; L-BFGS-B, maxiter {c['maxiter']}; SVGP M = {c['num_inducing']}; EP options "
        f"{c['ep_options']}. Test error (%) and NLPD, mean ± s.e. over splits; kernel variance learned; time: "
        "hyper-parameter training (compilation included on a data set's first split); failed: runs whose final "
        "loss or predictions were not finite.",
        "",
        "| data set | splits | method | error % | NLPD | kernel variance | time (s) | EP converged | failed |",
        "|---" * 9 + "|",
    ]
    for name, row in report["summary"]["per_set"].items():
        for m in c["methods"]:
            e = row["methods"][m]
            lines.append(
                f"| {name} | {row['splits']} | {m} | {cell(e['error'], 2, scale=100)} | "
                f"{cell(e['nlpd'], 3)} | {cell(e['kernel_variance'], 1)} | "
                f"{cell(e['train_time_s'], 1)} | {ep_cell(e)} | {e['failed']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.logistic_uci", __doc__, "results/logistic_uci", QUICK_HELP, data_dir=True)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)}")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--maxiter", type=int, default=100)
    parser.add_argument("--num-inducing", type=int, default=50)
    add_split_grid_options(parser)
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    prefix = Path(args.out_dir) / ("logistic_uci_quick" if args.quick else "logistic_uci")
    if args.merge:
        return merge_split_reports(args.merge, prefix, command, summarise, markdown, log)
    datasets, methods = parse_list(args.datasets), parse_list(args.methods)
    if args.quick:
        datasets, args.splits, args.maxiter, args.num_inducing = ["Crabs"], 1, 5, 10
    check_choices(parser, "--methods", methods, METHODS)
    check_datasets(parser, datasets, "binary", args.data_dir)
    config = dict(
        datasets=datasets,
        methods=methods,
        splits=args.splits,
        maxiter=args.maxiter,
        num_inducing=args.num_inducing,
        ep_options=EP_OPTIONS,
        likelihood="gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)",
        kernel="isotropic SquaredExponential",
    )
    slots: Dict[str, Slots] = {}

    def one_split(name: str, split: int) -> Dict:
        per_set = slots.setdefault(name, Slots(logistic, args.num_inducing, EP_OPTIONS, iso_kernel))
        return run_split(per_set, name, split, methods, args.maxiter, args.data_dir)

    def describe(run) -> str:
        return f"{run['dataset']} split {run['split']}: " + ", ".join(
            f"{m} err {v['error']:.3f} nlpd {v['nlpd']:.3f} {v['train_time_s']:.1f}s" for m, v in run["results"].items()
        )

    return run_split_grid(
        datasets,
        args.splits,
        one_split,
        lambda runs: summarise(runs, methods),
        config=config,
        command=command,
        prefix=prefix,
        markdown=markdown,
        log=log,
        describe=describe,
        first_split=args.first_split,
    )


if __name__ == "__main__":
    raise SystemExit(main())
