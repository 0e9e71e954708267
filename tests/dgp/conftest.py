"""A random FITC layer and its u-space posterior/cavity in NumPy, for the DGP-AEP tests."""

import gpflow
import numpy as np
import pytest

from gpflow_ep.dgp import AEPLayer
from gpflow_ep.dgp.layer import random_factor


def _u_space(factor, L, cavity: bool):
    """
    (mean [M], covariance [M, M]) of q(u) or the cavity from T = RRᵀ, t: P = K⁻¹ + βT, m = P⁻¹βt
    (explicit inverses).
    """
    R = factor.factor_cholesky.numpy()
    t = factor.factor_shift.numpy()[:, 0]
    K_inv = np.linalg.inv(L @ L.T)
    beta = factor.removed_fraction if cavity else 1.0
    V = np.linalg.inv(K_inv + beta * R @ R.T)
    return V @ (beta * t), V


@pytest.fixture
def u_space():
    """(factor, L, cavity) → (mean [M], covariance [M, M]) of q(u) or the cavity, explicit inverses."""
    return _u_space


@pytest.fixture
def make_layer(rng):
    def make(Q=2, D=1, M=5, num_data=7, noise=0.3, share_kernel=True):
        kernels = [gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=rng.uniform(0.7, 1.5, Q))]
        kernels = (
            kernels * D
            if share_kernel
            else kernels
            + [
                gpflow.kernels.SquaredExponential(variance=0.9, lengthscales=rng.uniform(0.7, 1.5, Q))
                for _ in range(D - 1)
            ]
        )
        Z = [rng.normal(size=(M, Q)) for _ in range(D)]
        factors = [random_factor(M, 0.7, num_data, rng) for _ in range(D)]
        return AEPLayer(kernels, Z, factors, noise_variance=noise)

    return make
