"""Laplace: a full GPflow likelihood (VGP/SVGP) with closed-form EP tilted moments."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy import integrate, stats

from gpflow_ep.ep import tilted_kinks, tilted_moments
from gpflow_ep.ep.tilted import tilted_expected_log_likelihood
from gpflow_ep.likelihoods import Laplace

B = 0.7
MU = np.array([[-2.0], [0.3], [1.5], [1.0]])
VAR = np.array([[0.5], [2.0], [0.1], [1e-3]])
Y = np.array([[0.0], [1.0], [-0.4], [1.0]])


def _expect(fn, mu, var, y):
    """∫ fn(f) N(f; μ, σ²) df by adaptive quadrature split at the kink f = y."""
    sd = np.sqrt(var)
    g = lambda f: fn(f) * stats.norm.pdf(f, mu, sd)
    lo, hi = min(mu, y) - 40 * sd, max(mu, y) + 40 * sd
    return sum(integrate.quad(g, a, b, epsabs=1e-14, epsrel=1e-13, limit=500)[0] for a, b in [(lo, y), (y, hi)])


def _log_p(f, y):
    return stats.laplace.logpdf(y, loc=f, scale=B)


def test_log_density_is_scipys():
    F = np.linspace(-3, 3, 7)[:, None]
    np.testing.assert_allclose(Laplace(B).log_prob(None, F, np.ones_like(F)), _log_p(F[:, 0], 1.0), rtol=1e-14)


def test_variational_expectations_match_quadrature():
    ve = Laplace(B).variational_expectations(None, MU, VAR, Y)
    expected = [_expect(lambda f, y=y: _log_p(f, y), m, v, y) for m, v, y in zip(MU[:, 0], VAR[:, 0], Y[:, 0])]
    np.testing.assert_allclose(ve, expected, rtol=0, atol=1e-10)


def test_predictions_match_quadrature():
    lik = Laplace(B)
    mean, var = lik.predict_mean_and_var(None, MU, VAR)
    np.testing.assert_allclose(mean, MU, rtol=1e-15)
    np.testing.assert_allclose(var, VAR + 2 * B**2, rtol=1e-14)  # Var[y] = E[Var[y|f]] + Var[f]
    lpd = lik.predict_log_density(None, MU, VAR, Y)
    expected = [
        np.log(_expect(lambda f, y=y: np.exp(_log_p(f, y)), m, v, y)) for m, v, y in zip(MU[:, 0], VAR[:, 0], Y[:, 0])
    ]
    np.testing.assert_allclose(lpd, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("power", [1.0, 0.5])
def test_closed_form_tilted_moments_match_quadrature(power):
    t = tilted_moments(Laplace(B), None, Y, MU, VAR, power)
    mean, var = t.mean_and_var(MU, VAR)
    for i, (m, v, y) in enumerate(zip(MU[:, 0], VAR[:, 0], Y[:, 0])):
        tilt = lambda f, y=y: np.exp(power * _log_p(f, y))
        z0 = _expect(tilt, m, v, y)
        z1 = _expect(lambda f, t=tilt: f * t(f), m, v, y) / z0
        z2 = _expect(lambda f, t=tilt, c=z1: (f - c) ** 2 * t(f), m, v, y) / z0
        np.testing.assert_allclose(
            [t.log_z[i, 0], mean[i, 0], var[i, 0]], [np.log(z0), z1, z2], rtol=1e-9, atol=1e-10 * np.sqrt(v)
        )


def test_narrow_cavity_curvature_is_the_kinks_delta_function():
    """v → 0 at the kink: ∂²log Z/∂m² → -2κ N(m - y; 0, v) (no cancellation in the closed form)."""
    v = np.array([[1e-12]])
    t = tilted_moments(Laplace(B), None, np.zeros((1, 1)), np.zeros((1, 1)), v, 1.0)
    np.testing.assert_allclose(t.d2log_z, -2.0 / B / np.sqrt(2 * np.pi * v), rtol=1e-5)


def test_expected_log_likelihood_matches_quadrature():
    t1 = tilted_expected_log_likelihood(Laplace(B), None, Y, MU, VAR)
    for i, (m, v, y) in enumerate(zip(MU[:, 0], VAR[:, 0], Y[:, 0])):
        p = lambda f, y=y: np.exp(_log_p(f, y))
        expected = _expect(lambda f, y=y, p=p: _log_p(f, y) * p(f), m, v, y) / _expect(p, m, v, y)
        np.testing.assert_allclose(t1[i, 0], expected, rtol=1e-9)


def test_declares_its_kink_at_y():
    np.testing.assert_array_equal(tilted_kinks(Laplace(B), None, Y), Y[None])


def test_scale_gradient_through_the_tilted_normaliser():
    lik = Laplace(B)
    with tf.GradientTape() as tape:
        log_z = tf.reduce_sum(tilted_moments(lik, None, Y, MU, VAR, 1.0).log_z)
    grad = tape.gradient(log_z, lik.scale.unconstrained_variable)
    assert np.isfinite(grad.numpy())


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf])
def test_bad_scale_raises(bad):
    with pytest.raises(ValueError, match="scale"):
        Laplace(bad)


def test_usable_in_gpflow_svgp_and_vgp():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 1))
    Yr = np.sin(X) + rng.laplace(scale=0.2, size=X.shape)
    svgp = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), Laplace(0.2), X[:5].copy())
    vgp = gpflow.models.VGP((X, Yr), gpflow.kernels.SquaredExponential(), Laplace(0.2))
    assert np.isfinite(svgp.elbo((X, Yr)).numpy()) and np.isfinite(vgp.elbo().numpy())
