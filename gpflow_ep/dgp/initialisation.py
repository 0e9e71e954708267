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
and standard deviation and does not standardise X). One shared kernel per layer, one set
of inducing inputs per output (the reference code's defaults; ``share_kernel``/``tie_inducing``
change them).
"""

from typing import List, Sequence

import numpy as np
from gpflow.inducing_variables import InducingPoints
from gpflow.kernels import SquaredExponential
from scipy.cluster.vq import kmeans2

from .layer import AEPLayer, random_factor

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
        shared_kernel = _kernel(q, lengthscale)
        kernels = [shared_kernel if share_kernel else _kernel(q, lengthscale) for _ in range(width)]
        shared_Z = InducingPoints(Z.copy())
        inducing = [shared_Z if tie_inducing else InducingPoints(Z.copy()) for _ in range(width)]
        factors = [random_factor(num_inducing, factor_scale, num_data, rng) for _ in range(width)]
        layers.append(AEPLayer(kernels, inducing, factors, noise_variance=None if last else HIDDEN_NOISE))
    return layers
