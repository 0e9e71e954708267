"""SE-ARD kernel expectations (Bui et al. 2016, App. D, Eqs. (3)–(5)): GPflow's expectations are the oracle."""

import gpflow
import numpy as np
import pytest
from gpflow.expectations import expectation
from gpflow.inducing_variables import InducingPoints
from gpflow.probability_distributions import DiagonalGaussian

from gpflow_ep.dgp import psi_statistics, psi_traces


@pytest.fixture
def setting(rng):
    N, M, Q = 5, 4, 3
    kernel = gpflow.kernels.SquaredExponential(variance=1.7, lengthscales=rng.uniform(0.5, 2.0, Q))
    return kernel, rng.normal(size=(N, Q)), rng.uniform(0.05, 1.5, (N, Q)), rng.normal(size=(M, Q))


def test_matches_gpflow_expectations(setting):
    """ψ₀, ψ₁, Ψ₂ equal gpflow.expectations (both analytic; float64 round-off, 1e-10)."""
    kernel, mean, var, Z = setting
    psi = psi_statistics(kernel, mean, var, Z)
    p = DiagonalGaussian(mean, var)
    iv = InducingPoints(Z)
    np.testing.assert_allclose(psi.psi0, expectation(p, kernel), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(psi.psi1, expectation(p, (kernel, iv)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(psi.psi2, expectation(p, (kernel, iv), (kernel, iv)), rtol=1e-10, atol=1e-12)


def test_inputs_far_from_the_inducing_inputs(setting):
    """ψ₁'s and Ψ₂'s expanded exponents (module docstring) keep their relative accuracy where they are tiny:
    inputs 6 lengthscales away, Ψ₂ down to ~1e-60 (float64 round-off of an exponent of ~10², 1e-10)."""
    kernel, mean, var, Z = setting
    mean = 6.0 * mean + 3.0
    psi = psi_statistics(kernel, mean, var, Z)
    p, iv = DiagonalGaussian(mean, var), InducingPoints(Z)
    expected = expectation(p, (kernel, iv), (kernel, iv))
    assert np.min(expected) < 1e-8  # the regime this test is about
    np.testing.assert_allclose(psi.psi2, expected, rtol=1e-10, atol=0.0)
    expected1 = expectation(p, (kernel, iv))
    assert np.min(expected1) < 1e-8
    np.testing.assert_allclose(psi.psi1, expected1, rtol=1e-10, atol=0.0)


def test_traces(setting, rng):
    """
    psi_traces = tr(C_k Ψ₂,n) for every input n and (non-symmetric) matrix k, Ψ₂ from gpflow.expectations
    (float64 round-off of the sums, 1e-10), with ψ₀ and ψ₁ as psi_statistics'.
    """
    kernel, mean, var, Z = setting
    iv = InducingPoints(Z)
    psi2 = expectation(DiagonalGaussian(mean, var), (kernel, iv), (kernel, iv)).numpy()
    C = rng.normal(size=(3, Z.shape[0], Z.shape[0]))
    expected = np.array([[np.trace(c @ p) for c in C] for p in psi2])
    result = psi_traces(kernel, mean, var, Z, C)
    np.testing.assert_allclose(result.traces, expected, rtol=1e-10, atol=1e-12)
    psi = psi_statistics(kernel, mean, var, Z)
    np.testing.assert_allclose(result.psi0, psi.psi0, rtol=1e-15)
    np.testing.assert_allclose(result.psi1, psi.psi1, rtol=1e-15)


def test_scalar_lengthscale_broadcasts(rng):
    kernel = gpflow.kernels.SquaredExponential(variance=0.8, lengthscales=1.3)
    mean, var, Z = rng.normal(size=(3, 2)), rng.uniform(0.1, 1.0, (3, 2)), rng.normal(size=(4, 2))
    p = DiagonalGaussian(mean, var)
    iv = InducingPoints(Z)
    psi = psi_statistics(kernel, mean, var, Z)
    np.testing.assert_allclose(psi.psi2, expectation(p, (kernel, iv), (kernel, iv)), rtol=1e-10, atol=1e-12)


def test_monte_carlo(setting, rng):
    """ψ₁, Ψ₂ against 4·10⁵ samples of h for the first input: within 4 Monte Carlo standard errors."""
    kernel, mean, var, Z = setting
    psi = psi_statistics(kernel, mean, var, Z)
    S = 400_000
    h = mean[0] + np.sqrt(var[0]) * rng.standard_normal((S, mean.shape[1]))
    k = kernel(h, Z).numpy()  # [S, M]
    for estimate, samples in ((psi.psi1[0], k), (psi.psi2[0], k[:, :, None] * k[:, None, :])):
        mc = samples.mean(axis=0)
        se = samples.std(axis=0) / np.sqrt(S)
        assert np.all(np.abs(mc - estimate.numpy()) <= 4 * se + 1e-12)


def test_point_input_limit(setting):
    """s = 0: ψ₁ = k(x, Z), Ψ₂ = k kᵀ, ψ₀ = σ_f²."""
    kernel, mean, _, Z = setting
    psi = psi_statistics(kernel, mean, np.zeros_like(mean), Z)
    k = kernel(mean, Z).numpy()
    np.testing.assert_allclose(psi.psi1, k, rtol=1e-12)
    np.testing.assert_allclose(psi.psi2, k[:, :, None] * k[:, None, :], rtol=1e-12)
    np.testing.assert_allclose(psi.psi0, 1.7, rtol=1e-15)


def test_other_kernels_are_refused():
    with pytest.raises(ValueError, match="kernel"):
        psi_statistics(gpflow.kernels.Matern32(), np.zeros((1, 1)), np.ones((1, 1)), np.zeros((2, 1)))
