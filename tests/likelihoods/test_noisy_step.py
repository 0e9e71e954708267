"""NoisyStep: label-flip step likelihood with closed-form predictions and variational expectations."""

import gpflow
import numpy as np
import pytest
from scipy import integrate, stats

from gpflow_ep.likelihoods import NoisyStep

MU = np.array([[-2.0], [0.3], [1.5], [0.0]])
VAR = np.array([[0.5], [2.0], [0.1], [1.0]])
Y = np.array([[0.0], [1.0], [0.0], [1.0]])


def _expect(fn, mu, var):
    sd = np.sqrt(var)
    return sum(
        integrate.quad(lambda f: fn(f) * stats.norm.pdf(f, mu, sd), a, b, epsabs=1e-13, epsrel=1e-12)[0]
        for a, b in [(mu - 30 * sd, 0.0), (0.0, mu + 30 * sd)]
    )


@pytest.mark.parametrize("eps", [0.05, 0.2])
def test_closed_forms_match_quadrature(eps):
    lik = NoisyStep(eps)
    y = 2 * Y[:, 0] - 1
    p = lambda f, s: eps + (1 - 2 * eps) * (s * f >= 0)
    lpd = lik.predict_log_density(None, MU, VAR, Y)
    ve = lik.variational_expectations(None, MU, VAR, Y)
    mean, _ = lik.predict_mean_and_var(None, MU, VAR)
    for i, s in enumerate(y):
        np.testing.assert_allclose(lpd[i], np.log(_expect(lambda f, s=s: p(f, s), MU[i, 0], VAR[i, 0])), atol=1e-10)
        np.testing.assert_allclose(ve[i], _expect(lambda f, s=s: np.log(p(f, s)), MU[i, 0], VAR[i, 0]), atol=1e-10)
        np.testing.assert_allclose(mean[i, 0], _expect(lambda f: p(f, 1), MU[i, 0], VAR[i, 0]), atol=1e-10)


def test_epsilon_is_a_constrained_parameter():
    lik = NoisyStep(0.3)
    assert isinstance(lik.epsilon, gpflow.Parameter)
    np.testing.assert_allclose(lik.epsilon.numpy(), 0.3)
    lik.epsilon.unconstrained_variable.assign(40.0)
    assert 0 < lik.epsilon.numpy() <= 0.5


@pytest.mark.parametrize("eps", [0.0, 0.5, -0.1, 0.7])
def test_epsilon_outside_open_interval_raises(eps):
    with pytest.raises(ValueError, match="epsilon"):
        NoisyStep(eps)


def test_usable_in_gpflow_vgp():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 1))
    Y = (X > 0).astype(float)
    m = gpflow.models.VGP((X, Y), gpflow.kernels.SquaredExponential(), NoisyStep(0.1))
    assert np.isfinite(m.elbo().numpy())
