"""A random FITC layer and its u-space posterior/cavity in NumPy, for the DGP-AEP tests."""

import gpflow
import numpy as np
import pytest

from gpflow_ep.dgp import AEPLayer, random_factor


def _u_space(factor, L, cavity: bool, d: int = 0):
    """
    (mean [M], covariance [M, M]) of q(u_d) or the cavity of GP d from T = RRᵀ, t: P = K⁻¹ + βT,
    m = P⁻¹βt (explicit inverses).
    """
    R = factor.factor_cholesky.numpy()[d]
    t = factor.factor_shift.numpy()[d, :, 0]
    K_inv = np.linalg.inv(L @ L.T)
    beta = factor.removed_fraction if cavity else 1.0
    V = np.linalg.inv(K_inv + beta * R @ R.T)
    return V @ (beta * t), V


@pytest.fixture
def u_space():
    """(factor, L, cavity, d) → (mean [M], covariance [M, M]) of GP d's q(u) or cavity, explicit inverses."""
    return _u_space


@pytest.fixture
def make_layer(rng):
    def make(Q=2, D=1, M=5, num_data=7, noise=0.3, share_kernel=True):
        kernel = gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=rng.uniform(0.7, 1.5, Q))
        if not share_kernel:
            kernel = [kernel] + [
                gpflow.kernels.SquaredExponential(variance=0.9, lengthscales=rng.uniform(0.7, 1.5, Q))
                for _ in range(D - 1)
            ]
        Z = [rng.normal(size=(M, Q)) for _ in range(D)]
        return AEPLayer(kernel, Z, random_factor(D, M, 0.7, num_data, rng), noise_variance=noise)

    return make
