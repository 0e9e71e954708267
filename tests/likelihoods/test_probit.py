"""Probit: exact (unsquashed) probit, closed-form predictions, usable in GPflow's VGP/SVGP."""

import gpflow
import numpy as np
import pytest
from scipy import integrate, special, stats

from gpflow_ep.likelihoods import Probit


def _expect(fn, mu, var):
    sd = np.sqrt(var)
    return integrate.quad(
        lambda f: fn(f) * stats.norm.pdf(f, mu, sd), mu - 30 * sd, mu + 30 * sd, epsabs=1e-13, epsrel=1e-12
    )[0]


MU = np.array([[-2.0], [0.3], [1.5]])
VAR = np.array([[0.5], [2.0], [0.1]])
Y = np.array([[0.0], [1.0], [1.0]])


def test_not_squashed_unlike_gpflow_bernoulli():
    F = np.array([[-6.0]])
    np.testing.assert_allclose(Probit().log_prob(None, F, np.ones((1, 1))), special.log_ndtr(-6.0), rtol=1e-12)
    assert (
        abs(gpflow.likelihoods.Bernoulli().log_prob(None, F, np.ones((1, 1))).numpy()[0] - special.log_ndtr(-6.0)) > 1
    )


def test_predictive_closed_forms_match_quadrature():
    lik = Probit()
    p, var = lik.predict_mean_and_var(None, MU, VAR)
    expected = [_expect(special.ndtr, m, v) for m, v in zip(MU[:, 0], VAR[:, 0])]
    np.testing.assert_allclose(p[:, 0], expected, atol=1e-10)
    np.testing.assert_allclose(var, p * (1 - p), atol=1e-14)
    lpd = lik.predict_log_density(None, MU, VAR, Y)
    y = 2 * Y[:, 0] - 1
    expected = [np.log(_expect(lambda f, s=s: special.ndtr(s * f), m, v)) for m, v, s in zip(MU[:, 0], VAR[:, 0], y)]
    np.testing.assert_allclose(lpd, expected, atol=1e-10)


def test_variational_expectations_match_quadrature():
    ve = Probit().variational_expectations(None, MU, VAR, Y)
    y = 2 * Y[:, 0] - 1
    expected = [_expect(lambda f, s=s: special.log_ndtr(s * f), m, v) for m, v, s in zip(MU[:, 0], VAR[:, 0], y)]
    np.testing.assert_allclose(ve, expected, atol=1e-6)  # GPflow's 20-point Gauss–Hermite


@pytest.mark.parametrize("bad", [np.array([[-1.0], [1.0]]), np.array([[0.5], [1.0]])])
def test_labels_outside_zero_one_raise(bad):
    with pytest.raises(ValueError, match="0 and 1"):
        Probit().log_prob(None, np.zeros((2, 1)), bad)


def test_usable_in_gpflow_svgp():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 1))
    Y = (X > 0).astype(float)
    m = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), Probit(), X[:5].copy())
    assert np.isfinite(m.elbo((X, Y)).numpy())
