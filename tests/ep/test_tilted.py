"""Tilted moments: closed forms against adaptive quadrature, and the Gauss–Hermite fallback."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy import integrate, special, stats

from gpflow_ep.ep import gauss_hermite_tilted_moments, tilted_moments
from gpflow_ep.likelihoods import NoisyStep, Probit

# |z| up to 8 (issue) with cavities of small and large variance
CAVITIES = [(0.3, 1.0), (-2.0, 0.5), (8.0, 1.0), (-8.0, 1.0), (4.0, 0.25), (-3.0, 4.0), (0.0, 9.0)]
POWERS = [1.0, 0.8, 0.5]


def _quad_moments(log_t, m, v, power, breakpoint=None):
    """log Z, mean, var of t(f)^α N(f; m, v) by adaptive quadrature (split at the breakpoint)."""
    sd = np.sqrt(v)
    lo, hi = m - 40 * sd, m + 40 * sd
    pieces = [(lo, hi)] if breakpoint is None or not lo < breakpoint < hi else [(lo, breakpoint), (breakpoint, hi)]

    def integral(k):
        f = lambda x: x**k * np.exp(power * log_t(x)) * stats.norm.pdf(x, m, sd)
        return sum(integrate.quad(f, a, b, epsabs=1e-15, epsrel=1e-13, limit=500)[0] for a, b in pieces)

    z0, z1, z2 = integral(0), integral(1), integral(2)
    mean = z1 / z0
    return np.log(z0), mean, z2 / z0 - mean**2


def _closed(lik, Y, m, v, power):
    t = tilted_moments(lik, None, np.array([[Y]]), np.array([[m]]), np.array([[v]]), power)
    mean, var = t.mean_and_var(np.array([[m]]), np.array([[v]]))
    return float(t.log_z), float(mean), float(var)


@pytest.mark.parametrize("power", POWERS)
@pytest.mark.parametrize("m, v", CAVITIES)
@pytest.mark.parametrize("Y", [0.0, 1.0])
def test_noisy_step_tilted_moments_match_quadrature(Y, m, v, power):
    eps = 0.1
    y = 2 * Y - 1
    log_t = lambda f: np.log(eps + (1 - 2 * eps) * (y * f >= 0))
    expected = _quad_moments(log_t, m, v, power, breakpoint=0.0)
    actual = _closed(NoisyStep(eps), Y, m, v, power)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-8)


@pytest.mark.parametrize("power", POWERS)
@pytest.mark.parametrize("m, v", CAVITIES)
@pytest.mark.parametrize("Y", [0.0, 1.0])
def test_probit_tilted_moments_match_quadrature(Y, m, v, power):
    """α = 1 is the closed form; α ≠ 1 (no closed form exists) is adaptive Gauss–Hermite."""
    y = 2 * Y - 1
    log_t = lambda f: special.log_ndtr(y * f)
    expected = _quad_moments(log_t, m, v, power)
    actual = _closed(Probit(), Y, m, v, power)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-8)


@pytest.mark.parametrize("power", POWERS)
def test_gaussian_tilted_moments_are_exact(power):
    noise, y, m, v = 0.3, 0.7, -0.4, 1.7
    log_t = lambda f: stats.norm.logpdf(y, f, np.sqrt(noise))
    expected = _quad_moments(log_t, m, v, power)
    t = tilted_moments(
        gpflow.likelihoods.Gaussian(variance=noise), None, np.array([[y]]), np.array([[m]]), np.array([[v]]), power
    )
    mean, var = t.mean_and_var(np.array([[m]]), np.array([[v]]))
    np.testing.assert_allclose([float(t.log_z), float(mean), float(var)], expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("m, v", CAVITIES)
@pytest.mark.parametrize("lik_case", ["probit", "gaussian"])
def test_gauss_hermite_fallback_agrees_with_closed_form(lik_case, m, v):
    """The generic ScalarLikelihood path (quadrature of _scalar_log_prob) vs the closed form, 1e-6."""
    if lik_case == "probit":
        lik, Y = Probit(), np.array([[1.0]])
    else:
        lik, Y = gpflow.likelihoods.Gaussian(variance=0.5), np.array([[0.3]])
    m_, v_ = np.array([[m]]), np.array([[v]])
    closed = tilted_moments(lik, None, Y, m_, v_, 1.0)
    quad = gauss_hermite_tilted_moments(lambda F: lik._scalar_log_prob(None, F, Y), tf.constant(m_), tf.constant(v_))
    for a, b in zip(closed, quad):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_fallback_serves_any_gpflow_scalar_likelihood():
    """Student-t and Poisson have no closed form: quadrature vs SciPy's adaptive quadrature."""
    m, v = 0.4, 0.8
    cases = [
        (gpflow.likelihoods.StudentT(scale=0.5, df=3.0), 1.3, lambda f: stats.t.logpdf(1.3, 3.0, f, 0.5)),
        (gpflow.likelihoods.Poisson(), 3.0, lambda f: stats.poisson.logpmf(3, np.exp(f))),
    ]
    for lik, y, log_t in cases:
        expected = _quad_moments(log_t, m, v, 1.0)
        t = tilted_moments(lik, None, np.array([[y]]), np.array([[m]]), np.array([[v]]), 1.0)
        mean, var = t.mean_and_var(np.array([[m]]), np.array([[v]]))
        np.testing.assert_allclose([float(t.log_z), float(mean), float(var)], expected, rtol=0, atol=1e-6)


def test_tilted_moments_stay_finite_far_in_the_tails():
    m = np.array([[-40.0], [40.0], [-30.0]])
    v = np.array([[1.0], [1.0], [1e-4]])
    Y = np.ones((3, 1))
    for lik in [Probit(), NoisyStep(0.05)]:
        for a in tilted_moments(lik, None, Y, m, v, 1.0):
            assert np.all(np.isfinite(a))


def test_unsupported_likelihood_raises_value_error():
    lik = gpflow.likelihoods.Softmax(3)
    with pytest.raises(ValueError, match="likelihood"):
        tilted_moments(lik, None, np.zeros((1, 1)), np.zeros((1, 1)), np.ones((1, 1)))
