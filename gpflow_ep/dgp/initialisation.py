r"""
The initialisation of DGP-AEP of the authors' reference code (github.com/thangbui/deepGP_approxEP;
Bui et al. 2016, §8.1 describes it in words), for [D, D_1, ..., 1] widths.

**First layer:** inducing inputs by k-means (``scipy.cluster.vq.kmeans2(X, M, minit="points")``)
when N < 20 000, else M random training inputs, the same for every output; every ARD lengthscale
the median of the pairwise distances of the training inputs (upper triangle with the zero
diagonal; from a random subset of 5M inputs when N ≥ 10 000); signal variance 1; factor (R, t)
entries N(0, 1) (R's diagonal as its log).

**Later layers:** lengthscales e (log ℓ = 1), signal variance 1, inducing inputs on the diagonal
of [-1, 1]^Q (``linspace(-1, 1, M)`` in every coordinate), factor entries N(0, 0.1²).

**Noise:** 0.01 in every hidden layer; the output layer has none of its own: a Gaussian
likelihood's variance starts at 0.01 (the observation noise), a probit output has none.

These values assume a standardised target (the reference code standardises y with the training mean
and standard deviation and does not standardise X).

**Structure:** one kernel per layer shared by its outputs (GPflow's ``SharedIndependent``) and one set
of inducing inputs per output (``SeparateIndependentInducingVariables``), the reference code's
defaults; ``share_kernel=False`` gives a kernel per output (``SeparateIndependent``, the paper's
text), ``tie_inducing=True`` one set of inducing inputs per layer (``SharedIndependentInducingVariables``,
the reference code's ``zu_tied``). Both shared is the structure of GPflux's
``build_constant_input_dim_deep_gp``, the cheapest: one K_uu per layer.
"""

from typing import List, Sequence

import numpy as np
from gpflow.inducing_variables import (
    InducingPoints,
    SeparateIndependentInducingVariables,
    SharedIndependentInducingVariables,
)
from gpflow.kernels import SeparateIndependent, SharedIndependent, SquaredExponential
from scipy.cluster.vq import kmeans2

from .layer import AEPLayer
from .tied_factor import random_factor

__all__ = ["initial_layers", "median_distance", "initial_inducing_inputs"]

HIDDEN_NOISE = 0.01
KMEANS_LIMIT = 20_000
MEDIAN_SUBSET_LIMIT = 10_000


def median_distance(X: np.ndarray, num_inducing: int, rng: np.random.Generator) -> float:
    """Median pairwise Euclidean distance, zero diagonal included (a 5M subset when N ≥ 10 000)."""
    if X.shape[0] >= MEDIAN_SUBSET_LIMIT:
        X = X[rng.choice(X.shape[0], min(5 * num_inducing, X.shape[0]), replace=False)]
    i, j = np.triu_indices(X.shape[0])
    distances = np.sqrt(np.sum(np.square(X[i] - X[j]), axis=-1))
    median = float(np.median(distances))
    return median if median > 0 else 1.0


def initial_inducing_inputs(X: np.ndarray, num_inducing: int, rng: np.random.Generator) -> np.ndarray:
    """k-means centres (N < 20 000) or M random training inputs (the reference code's rule)."""
    if num_inducing > X.shape[0]:
        raise ValueError(f"num_inducing={num_inducing} exceeds the number of training points {X.shape[0]}")
    if X.shape[0] < KMEANS_LIMIT:
        centres, _ = kmeans2(X, num_inducing, minit="points", seed=rng)
        return np.asarray(centres, dtype=np.float64)
    return X[rng.choice(X.shape[0], num_inducing, replace=False)].copy()


def _kernel(input_dim: int, lengthscale: float) -> SquaredExponential:
    return SquaredExponential(variance=1.0, lengthscales=np.full(input_dim, lengthscale))


def initial_layers(
    X: np.ndarray,
    widths: Sequence[int],
    num_inducing: int,
    num_data: int,
    *,
    seed: int = 0,
    share_kernel: bool = True,
    tie_inducing: bool = False,
) -> List[AEPLayer]:
    """The layers of a DGP-AEP model of the given ``widths`` (module docstring)."""
    rng = np.random.default_rng(seed)
    layers = []
    for depth, (q, width) in enumerate(zip(widths[:-1], widths[1:])):
        first, last = depth == 0, depth == len(widths) - 2
        if first:
            Z = initial_inducing_inputs(X, num_inducing, rng)
            lengthscale, factor_scale = median_distance(X, num_inducing, rng), 1.0
        else:
            Z = np.repeat(np.linspace(-1.0, 1.0, num_inducing)[:, None], q, axis=1)
            lengthscale, factor_scale = np.e, 0.1
        if share_kernel:
            kernel = SharedIndependent(_kernel(q, lengthscale), output_dim=width)
        else:
            kernel = SeparateIndependent([_kernel(q, lengthscale) for _ in range(width)])
        if tie_inducing:
            inducing = SharedIndependentInducingVariables(InducingPoints(Z.copy()))
        else:
            inducing = SeparateIndependentInducingVariables([InducingPoints(Z.copy()) for _ in range(width)])
        factor = random_factor(width, num_inducing, factor_scale, num_data, rng)
        layers.append(AEPLayer(kernel, inducing, factor, noise_variance=None if last else HIDDEN_NOISE))
    return layers
