"""PowerEP: EP's engine with power α (Minka 2004; Qi & Guo 2012)."""

import gpflow
import numpy as np
import pytest

from gpflow_ep.datasets import noisy_mixture, two_dimensional
from gpflow_ep.likelihoods import NoisyStep, Probit
from gpflow_ep.models import EPGPC, PowerEP
from gpflow_ep.optimizers import EP


@pytest.fixture(scope="module")
def data():
    X, Y, _ = noisy_mixture(30, flip_rate=0.1, seed=5)
    return X, Y


def _kernel(variance=1.0):
    return gpflow.kernels.SquaredExponential(variance=variance, lengthscales=1.0)


@pytest.mark.parametrize("cavity", ["fractional", "full"])
@pytest.mark.parametrize("schedule", ["parallel", "sequential"])
def test_power_one_is_ep(data, cavity, schedule):
    """PEP with u = 1 equals EP, for both cavity readings."""
    runs = []
    for cls, kw in [(EPGPC, {}), (PowerEP, dict(power=1.0, cavity=cavity))]:
        m = cls(data, _kernel(), NoisyStep(0.1), schedule=schedule, ep_mode="alternated", **kw)
        EP(max_sweeps=4, warn=False).minimize(m)
        runs.append([v.numpy() for v in m.sites.read()])
    for a, b in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_cavity_readings_differ_below_power_one(data):
    sites = []
    for cavity in ["fractional", "full"]:
        m = PowerEP(data, _kernel(), NoisyStep(0.1), power=0.6, cavity=cavity, schedule="sequential")
        EP(max_sweeps=3, warn=False).minimize(m)
        sites.append(m.sites.precision.numpy())
    assert np.max(np.abs(sites[0] - sites[1])) > 1e-3


@pytest.mark.parametrize("cls, kw", [(EPGPC, {}), (PowerEP, dict(power=0.8))])
def test_scale_equivariance_of_ep_and_pep(data, cls, kw):
    """A step likelihood sees only sign(f): K and 9K give the same z* = μ*/σ*."""
    X, _ = data
    Xs = two_dimensional(50, seed=9)[0]
    z = []
    for variance in [1.0, 9.0]:
        m = cls(data, _kernel(variance), NoisyStep(0.1), schedule="sequential", tol=1e-12, max_sweeps=500, **kw)
        assert EP().minimize(m).converged
        mu, var = m.predict_f(Xs)
        z.append(mu.numpy() / np.sqrt(var.numpy()))
    np.testing.assert_allclose(z[0], z[1], rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(np.sign(z[0]), np.sign(z[1]))


def test_prediction_identities(data):
    """p(y* = 1) ∈ [ε, 1 - ε]; on training inputs μ* equals q's marginal."""
    X, Y = data
    m = PowerEP(data, _kernel(), NoisyStep(0.1), tol=1e-10, max_sweeps=500, ep_mode="alternated")
    EP().minimize(m)
    p, _ = m.predict_y(two_dimensional(40, seed=2)[0] * 3)
    assert np.all((p >= 0.1 - 1e-12) & (p <= 0.9 + 1e-12))
    np.testing.assert_allclose(
        m.predict_f(X)[0], m.site_problem().algebra.posterior(*m.sites.read()).factorisation.mean, atol=1e-10
    )


def test_dual_predictor_equals_site_predictor_at_an_ep_fixed_point(data):
    """At a converged EP fixed point the duals a = (K + Λ)⁻¹ m, so Minka's predictor equals q's mean."""
    X, _ = data
    Xs = two_dimensional(20, seed=4)[0]
    means = []
    for predict_with in ["sites", "dual"]:
        m = PowerEP(data, _kernel(), NoisyStep(0.1), power=1.0, predict_with=predict_with, tol=1e-12, max_sweeps=1000)
        m.ep_settings = m.ep_settings.updated(schedule="sequential")
        assert EP().minimize(m).converged
        means.append(m.predict_f(Xs)[0].numpy())
    np.testing.assert_allclose(means[0], means[1], atol=1e-8)


@pytest.mark.slow
def test_probit_power_ep_through_quadrature_and_nested_training():
    """Probit at α ≠ 1 has no closed form: the Gauss–Hermite path, trained by Scipy."""
    X, Y = two_dimensional(40, seed=3)
    m = PowerEP((X, Y), _kernel(), Probit(), power=0.7)
    before = m.training_loss().numpy()
    res = gpflow.optimizers.Scipy().minimize(m.training_loss, m.trainable_variables, options=dict(maxiter=20))
    assert np.isfinite(res.fun) and res.fun < before
    assert int(m.ep_diagnostics.converged.numpy()) == 1


def test_bad_predict_with_raises(data):
    with pytest.raises(ValueError, match="predict_with"):
        PowerEP(data, _kernel(), NoisyStep(0.1), predict_with="votes")
