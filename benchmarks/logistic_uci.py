r"""
Logistic GP classification on the binary UCI sets: EP with GPflow's logistic likelihood
``Bernoulli(invlink=tf.sigmoid)`` against GPflow's VGP and SVGP with the same likelihood. Protocol and
results: docs/benchmarks/logistic_uci.md; run by ``benchmarks.robust_regression.Comparison``.
"""

import math
from typing import Dict, List

import gpflow
import tensorflow as tf

from .data import load_benchmark
from .models import evaluate
from .robust_regression import Comparison, Task, ep_cell, stat
from .stats import mean_se


def logistic() -> gpflow.likelihoods.Bernoulli:
    """GPflow's Bernoulli likelihood with the logistic link."""
    return gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)


def iso_kernel(input_dim: int) -> gpflow.kernels.SquaredExponential:
    """Isotropic SE kernel, variance 1 and lengthscale √D (``benchmarks.rep_uci``'s baselines)."""
    return gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=math.sqrt(input_dim))


def load_task(args, name: str, split: int) -> Task:
    """One fixed split of a binary set, scored by test error and NLPD (``benchmarks.models.evaluate``)."""
    s = load_benchmark(name, split, args.data_dir, kind="binary")

    def metrics(model) -> Dict:
        kernel = dict(
            variance=float(model.kernel.variance.numpy()), lengthscale=float(model.kernel.lengthscales.numpy())
        )
        return dict(evaluate(model, s.X_test, s.Y_test), kernel=kernel)

    return Task(s.X_train, s.Y_train, s.X_test, s.Y_test, logistic, metrics)


def failures(got: List[Dict]) -> Dict:
    """Runs whose final loss or predictions were not finite, and the learned kernel variance."""
    failed = sum((not g["finite"]) or g["final_loss"] is None for g in got)
    return dict(failed=failed, kernel_variance=mean_se([g["kernel"]["variance"] for g in got]))


COMPARISON = Comparison(
    stem="logistic_uci",
    title="Logistic GP classification: EP against VGP and SVGP",
    datasets=("Pima", "Australian", "Breast", "Crabs", "Iono", "Sonar"),
    methods=("EP", "VGP", "SVGP"),
    quick=dict(datasets="Crabs", splits=1, maxiter=5, num_inducing=10),
    load=load_task,
    keys=("error", "nlpd", "train_time_s"),
    extra=failures,
    columns=(
        ("error %", stat("error", 2, scale=100)),
        ("NLPD", stat("nlpd", 3)),
        ("kernel variance", stat("kernel_variance", 1)),
        ("time (s)", stat("train_time_s", 1)),
        ("EP converged", ep_cell),
        ("failed", lambda e: str(e["failed"])),
    ),
    caption=lambda c: (
        f"Isotropic SE kernel; L-BFGS-B, maxiter {c['maxiter']}; SVGP M = {c['num_inducing']}; EP options "
        f"{c['ep_options']}. Test error (%) and NLPD, mean ± s.e. over splits; kernel variance learned; time: "
        "hyper-parameter training (compilation included on a data set's first split); failed: runs whose final "
        "loss or predictions were not finite."
    ),
    config=dict(likelihood="gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)", kernel="isotropic SquaredExponential"),
    kernel=iso_kernel,
    data_kind="binary",
)
METHODS = COMPARISON.methods


def main(argv=None, shared: bool = False) -> int:
    return COMPARISON.main(__doc__, argv, shared)


if __name__ == "__main__":
    raise SystemExit(main())
