r"""
Logistic GP classification on the binary UCI sets: EP with GPflow's logistic likelihood
``Bernoulli(invlink=tf.sigmoid)`` against GPflow's VGP and SVGP with the same likelihood.

Protocol, results and reading: ``docs/benchmarks/logistic_uci.md``; the models are trained by
``benchmarks.robust_regression.compare_on_splits``.
"""

import math
from typing import Dict, List

import gpflow
import tensorflow as tf

from gpflow_ep.datasets import load_benchmark

from . import runner
from .models import evaluate
from .report import markdown_header
from .robust_regression import (
    Task,
    compare_on_splits,
    comparison_parser,
    ep_cell,
    methods_table,
    stat,
    summarise_methods,
)
from .stats import mean_se

log = runner.progress_logger("logistic_uci")

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


def load_task(name: str, split: int, data_dir=None) -> Task:
    """One fixed split of a binary set, scored by test error and NLPD (``benchmarks.models.evaluate``)."""
    s = load_benchmark(name, split, data_dir, kind="binary")

    def metrics(model) -> Dict:
        kernel = dict(
            variance=float(model.kernel.variance.numpy()), lengthscale=float(model.kernel.lengthscales.numpy())
        )
        return dict(evaluate(model, s.X_test, s.Y_test), kernel=kernel)

    return Task(s.X_train, s.Y_train, s.X_test, s.Y_test, logistic, metrics)


def summarise(runs: List[Dict], methods) -> Dict:
    def failures(got):
        failed = sum((not g["finite"]) or g["final_loss"] is None for g in got)
        return dict(failed=failed, kernel_variance=mean_se([g["kernel"]["variance"] for g in got]))

    return summarise_methods(runs, methods, ("error", "nlpd", "train_time_s"), failures)


COLUMNS = (
    ("error %", stat("error", 2, scale=100)),
    ("NLPD", stat("nlpd", 3)),
    ("kernel variance", stat("kernel_variance", 1)),
    ("time (s)", stat("train_time_s", 1)),
    ("EP converged", ep_cell),
    ("failed", lambda e: str(e["failed"])),
)


def markdown(report: Dict) -> str:
    c = report["config"]
    lines = markdown_header("Logistic GP classification: EP against VGP and SVGP", report)
    lines += [
        f"Isotropic SE kernel; L-BFGS-B, maxiter {c['maxiter']}; SVGP M = {c['num_inducing']}; EP options "
        f"{c['ep_options']}. Test error (%) and NLPD, mean ± s.e. over splits; kernel variance learned; time: "
        "hyper-parameter training (compilation included on a data set's first split); failed: runs whose final "
        "loss or predictions were not finite.",
        "",
        *methods_table(report, COLUMNS),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = comparison_parser("logistic_uci", __doc__, QUICK_HELP, DATASETS, METHODS)
    args, command = runner.parse_command_line(parser, argv, shared=shared, log=log)
    if args.quick:
        args.datasets, args.splits, args.maxiter, args.num_inducing = "Crabs", 1, 5, 10
    if not args.merge:
        runner.check_choices(parser, "--methods", runner.parse_list(args.methods), METHODS)
        runner.check_datasets(parser, runner.parse_list(args.datasets), "binary", args.data_dir)
    config = dict(
        ep_options=EP_OPTIONS,
        likelihood="gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)",
        kernel="isotropic SquaredExponential",
    )

    def load(name: str, split: int) -> Task:
        return load_task(name, split, args.data_dir)

    return compare_on_splits(
        args, command, "logistic_uci", load, summarise, markdown, log, config, EP_OPTIONS, kernel=iso_kernel
    )


if __name__ == "__main__":
    raise SystemExit(main())
