"""The convergent double loop (Hernández-Lobato & Hernández-Lobato 2011, Sec. 3: eqs. 9, 19, 28, bound of 3.1)."""

import numpy as np
import pytest
import tensorflow as tf
from scipy.optimize import minimize_scalar

from gpflow_ep.datasets import spike_slab_problem
from gpflow_ep.ep import EPRun, EPSettings, run_ep
from gpflow_ep.ep.double_loop import _objective, outer_step, site_log_normaliser
from gpflow_ep.models import SpikeSlabRegression


@pytest.fixture(scope="module")
def paper_model():
    X, y, *_ = spike_slab_problem(3, n_train=10, d=12)
    return SpikeSlabRegression((X, y), 0.05**2, 1.0, 0.2)


def _inner(model, v1, v2):
    f = _objective(model.site_problem().algebra, model.site_problem().factor)

    def F(nu, tau):
        value, g_nu, g_tau = f(tf.constant(nu), tf.constant(tau), tf.constant(v1), tf.constant(v2))
        return value.numpy(), g_nu.numpy(), g_tau.numpy()

    return F


def _feasible_point(rng, d):
    v2 = rng.uniform(1.0, 30.0, size=(d, 1))
    return rng.normal(size=(d, 1)) * v2, v2, rng.normal(size=(d, 1)), v2 * rng.uniform(0.1, 0.9, size=(d, 1))


def test_inner_objective_gradient_and_convexity(paper_model, rng):
    """Test 6: F_t's analytic gradient matches central differences (h = 1e-6: error O(h²) ≈ 1e-10
    relative to F's curvature) and its second differences along random directions are ≥ 0."""
    d = paper_model.sites.num_sites
    v1, v2, nu, tau = _feasible_point(rng, d)
    F = _inner(paper_model, v1, v2)
    _, g_nu, g_tau = F(nu, tau)
    h = 1e-6
    for i in range(d):
        e = np.zeros((d, 1))
        e[i] = h
        fd_nu = (F(nu + e, tau)[0] - F(nu - e, tau)[0]) / (2 * h)
        fd_tau = (F(nu, tau + e)[0] - F(nu, tau - e)[0]) / (2 * h)
        np.testing.assert_allclose(g_nu[i, 0], fd_nu, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_tau[i, 0], fd_tau, rtol=1e-5, atol=1e-6)
    for _ in range(5):
        dn, dt = rng.normal(size=(d, 1)), rng.normal(size=(d, 1)) * tau * 0.05
        t = 1e-3
        second = F(nu + t * dn, tau + t * dt)[0] - 2 * F(nu, tau)[0] + F(nu - t * dn, tau - t * dt)[0]
        assert second / t**2 >= -1e-6


def test_outer_step_is_the_minimiser():
    """Test 7: the closed form equals a numerical minimisation of λ₁v₁ + λ₂v₂ + log Z̃(v), with and
    without the 3ε clamp (tolerance: scipy's bounded scalar minimiser, xatol 1e-12)."""
    eps = 1e-2
    for mean, var in [(0.7, 0.3), (-1.2, 2.0), (0.4, 1e3)]:  # the last needs the clamp: 1/var < 3ε
        lam1, lam2 = -mean, 0.5 * (var + mean**2)

        def after_v1(v2, lam1=lam1, lam2=lam2):  # v₁ minimised out: v₁ = -λ₁ v₂
            v1 = -lam1 * v2
            return lam1 * v1 + lam2 * v2 + site_log_normaliser(tf.constant(v1), tf.constant(v2)).numpy()

        best = minimize_scalar(after_v1, bounds=(3 * eps, 1e3), method="bounded", options=dict(xatol=1e-12)).x
        v1, v2 = outer_step(np.array([mean]), np.array([var]), eps)
        np.testing.assert_allclose(v2[0], best, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(v1[0], mean * v2[0], rtol=1e-12)


def test_energy_lower_bound(paper_model, rng):
    """Test 8: E(v, v/2, v/2) ≥ n/2 log 2πσ² - d/2 log 2 for random feasible v (the paper's Sec. 3.1)."""
    n, d = paper_model.data[0].shape
    bound = 0.5 * n * np.log(2 * np.pi * paper_model.noise_variance.numpy()) - 0.5 * d * np.log(2.0)
    for _ in range(5):
        v1, v2, _, _ = _feasible_point(rng, d)
        F = _inner(paper_model, v1, v2)
        energy = -F(0.5 * v1, 0.5 * v2)[0] + np.sum(site_log_normaliser(tf.constant(v1), tf.constant(v2)).numpy())
        assert energy >= bound


@pytest.mark.slow
def test_convergent_schedule_on_a_gp_classifier_reaches_the_ep_fixed_point():
    """The double loop is the engine's, not the spike-and-slab model's: on EPGPC with the (log-
    concave) probit no bound binds and it reaches the parallel schedule's fixed point (log Z to 1e-6)."""
    import gpflow

    from gpflow_ep.datasets import two_dimensional
    from gpflow_ep.likelihoods import Probit
    from gpflow_ep.models import EPGPC

    X, Y = two_dimensional(24, seed=1)
    ep = EPGPC((X, Y), gpflow.kernels.SquaredExponential(lengthscales=0.7), Probit(), tol=1e-10, max_sweeps=500)
    ep.run_ep()
    dl = EPGPC(
        (X, Y),
        gpflow.kernels.SquaredExponential(lengthscales=0.7),
        Probit(),
        schedule="convergent",
        max_sweeps=500,
        tol=1e-12,
    )
    run = dl.run_ep()
    assert bool(run.converged)
    np.testing.assert_allclose(
        dl.log_marginal_likelihood().numpy(), ep.log_marginal_likelihood().numpy(), rtol=0, atol=1e-6
    )
    energies = run.history.numpy()[: int(run.sweeps)]
    assert np.all(np.diff(energies) <= 1e-8 * np.maximum(1.0, np.abs(energies[1:])))


def test_convergent_schedule_refuses_what_it_does_not_do():
    from gpflow_ep.ep import GPAlgebra, LikelihoodFactor
    from gpflow_ep.likelihoods import Probit

    K = tf.eye(3, dtype=tf.float64)
    algebra, factor = (
        GPAlgebra(K, tf.zeros([3, 1], tf.float64)),
        LikelihoodFactor(Probit(), None, tf.ones([3, 1], tf.float64)),
    )
    zeros = tf.zeros([3, 1], tf.float64)
    with pytest.raises(ValueError, match="power"):
        run_ep(algebra, factor, zeros, zeros, EPSettings(schedule="convergent", power=0.5))
    with pytest.raises(ValueError, match="eagerly"):
        tf.function(lambda: run_ep(algebra, factor, zeros, zeros, EPSettings(schedule="convergent")).precision)()


def test_a_non_finite_step_keeps_the_last_finite_state(paper_model):
    """A factor whose normaliser turns NaN once a cavity precision exceeds 140 (the warm start's
    largest cavity precision grows from 99 to 146 in six outer steps from this start): the double
    loop stops, says so, and returns finite sites and energies."""
    from gpflow_ep.ep.double_loop import run_double_loop

    class Poisoned(type(paper_model.site_problem().factor)):
        def cavity_log_normaliser(self, v1, v2):
            value = super().cavity_log_normaliser(v1, v2)
            return tf.where(v2 > 140.0, tf.constant(np.nan, v2.dtype), value)

    base = paper_model.site_problem().factor
    d = paper_model.sites.num_sites
    tau0 = tf.fill([d, 1], tf.constant(5.0, tf.float64))
    res = run_double_loop(
        paper_model.site_problem().algebra,
        Poisoned(base.slab_variance, base.prior_inclusion),
        tau0,
        tf.zeros_like(tau0),
        EPSettings(schedule="convergent", max_sweeps=50),
    )
    assert res.non_finite and not bool(res.run.converged)
    assert np.all(np.isfinite(res.run.precision.numpy())) and np.all(np.isfinite(res.run.natural_mean.numpy()))
    assert np.all(np.isfinite(res.energies)) and 0 < len(res.energies) < 50


def test_a_double_loop_result_prints_as_one_short_line():
    """Its run's summary, the counts, and the arrays' shapes (the energies of every inner solve stay ``.energies``)."""
    from gpflow_ep.ep.double_loop import DoubleLoopResult

    d = 200
    column = tf.zeros([d, 1], tf.float64)
    zero, history = tf.constant(0), tf.zeros([1000], tf.float64)
    change = tf.constant(0.1, tf.float64)
    stopped, sweeps = tf.constant(False), tf.constant(1000)
    run = EPRun(column, column, stopped, sweeps, change, zero, zero, zero, column, column, history)
    result = DoubleLoopResult(run, np.zeros(1000), (np.ones((d, 1)), np.ones((d, 1))), 3, 0, 1e-9, 5000, False)
    text = repr(result)
    assert "\n" not in text and len(text) < 600
    assert "active_site_bounds=3" in text and "energies=<float64 [1000]>" in text
    assert "run=EPRun(converged=False, sweeps=1000" in text
