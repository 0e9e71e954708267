"""The tied factor: φ terms and the cavity (Bui et al. 2016, §4.2 and App. E)."""

import numpy as np
import pytest
from gpflow import covariances

from gpflow_ep.dgp import TiedFactor


def _phi(mean, cov):
    """½ log|V| + ½ mᵀV⁻¹m (the Gaussian log-normaliser, Bui et al. 2016, App. E, Eq. (19))."""
    return 0.5 * np.linalg.slogdet(cov)[1] + 0.5 * mean @ np.linalg.solve(cov, mean)


def test_energy_terms_equal_the_explicit_phi_terms(make_layer, u_space):
    """(1 - N)φ_post + Nφ_cav - φ_prior from Cholesky factors = the same with explicit inverses (1e-9)."""
    layer = make_layer(num_data=7)
    factor = layer.factor
    L = np.linalg.cholesky(covariances.Kuu(layer.inducing_variables[0], layer.kernels[0], jitter=layer.jitter).numpy())
    N = factor.num_data
    phi_post = _phi(*u_space(factor, L, cavity=False))
    phi_cav = _phi(*u_space(factor, L, cavity=True))
    phi_prior = 0.5 * np.linalg.slogdet(L @ L.T)[1]
    expected = (1 - N) * phi_post + N * phi_cav - phi_prior
    np.testing.assert_allclose(factor.energy_terms(L).numpy(), expected, rtol=1e-9)


@pytest.mark.parametrize("cavity", [False, True])
def test_whitened_distribution_is_the_u_space_one(make_layer, cavity, u_space):
    """q(v), v = L⁻¹u, maps to P = K⁻¹ + βT, m = P⁻¹βt (β = (N-1)/N for the cavity, 1 for q)."""
    layer = make_layer(num_data=5)
    factor = layer.factor
    L = np.linalg.cholesky(covariances.Kuu(layer.inducing_variables[0], layer.kernels[0], jitter=layer.jitter).numpy())
    mean, cov = u_space(factor, L, cavity)
    for q in (factor.whitened(L, cavity), factor.posterior_and_cavity(L)[int(cavity)]):  # the layer uses the pair
        np.testing.assert_allclose(L @ q.mean.numpy()[0, :, 0], mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(L @ q.covariance().numpy()[0] @ L.T, cov, rtol=1e-9, atol=1e-12)


def test_removed_fraction():
    assert TiedFactor(np.eye(2), np.zeros((2, 1)), 4).removed_fraction == 0.75
    assert TiedFactor(np.eye(2), np.zeros((2, 1)), 1).removed_fraction == 0.0


@pytest.mark.parametrize(
    "R, t, match",
    [
        (np.array([[1.0, 0.0], [0.5, -1.0]]), np.zeros((2, 1)), "positive diagonal"),
        (np.eye(2), np.zeros((3, 1)), "factor_shift"),
    ],
)
def test_bad_factors_are_refused(R, t, match):
    with pytest.raises(ValueError, match=match):
        TiedFactor(R, t, 3)
