"""The schedule interface and the convergence reporting of the built-in schedules (gpflow_ep.ep.schedules)."""

import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.ep import (
    EPRun,
    EPSettings,
    GPAlgebra,
    JointPosterior,
    LikelihoodFactor,
    Schedule,
    SiteAlgebra,
    SiteFactor,
    SiteMarginals,
    TiltedMoments,
    ep_log_marginal_likelihood,
    get_schedule,
    register_schedule,
    run_ep,
)
from gpflow_ep.likelihoods import Probit

N = 5


class _Prior(SiteAlgebra):
    """q = N(0, I) whatever the sites (a test double: the sites never change it)."""

    def marginals(self, precision, natural_mean):
        return SiteMarginals(tf.zeros_like(precision), tf.ones_like(precision), tf.constant(True))

    def joint(self, precision, natural_mean):
        return JointPosterior(tf.eye(N, dtype=tf.float64), tf.zeros([N, 1], tf.float64), tf.constant(True))


class _NaNFactor(SiteFactor):
    """A factor whose tilted moments are NaN: every update must be skipped, never propagated."""

    def tilted(self, cavity_mean, cavity_var, power=1.0):
        nan = tf.fill(tf.shape(cavity_mean), tf.constant(np.nan, tf.float64))
        return TiltedMoments(nan, nan, nan)

    def site(self, index):
        return self


@pytest.mark.parametrize("criterion", ["sites", "alpha", "moments"])
@pytest.mark.parametrize("schedule", ["parallel", "sequential"])
def test_a_sweep_that_skips_every_site_is_not_convergence(schedule, criterion):
    """Nothing was updated, so the statistics are unchanged (R = 0) and no site moved: that proves nothing."""
    zeros = tf.zeros([N, 1], tf.float64)
    settings = EPSettings(schedule=schedule, criterion=criterion, max_sweeps=4)
    run = run_ep(_Prior(), _NaNFactor(), zeros, zeros, settings)
    assert not bool(run.converged)
    assert int(run.sweeps) == 4
    assert int(run.num_skipped) == 4 * N
    np.testing.assert_array_equal(run.precision, zeros)
    assert np.all(np.isfinite(run.natural_mean))


class _OneSweep(Schedule):
    """A user schedule: one undamped parallel sweep, reported as converged."""

    def run(self, algebra, factor, precision, natural_mean, settings):
        return get_schedule("parallel").run(algebra, factor, precision, natural_mean, settings.updated(max_sweeps=1))


def test_a_registered_schedule_is_an_ep_settings_choice():
    """The name is checked where the schedule is looked up (settings do not import the registry)."""
    with pytest.raises(ValueError, match="schedule"):
        get_schedule("one-sweep")
    register_schedule("one-sweep", _OneSweep())
    settings = EPSettings(schedule="one-sweep")
    rng = np.random.default_rng(0)
    Y = (rng.random((N, 1)) > 0.5).astype(float)
    zeros = tf.zeros([N, 1], tf.float64)
    run = run_ep(_Prior(), LikelihoodFactor(Probit(), None, tf.constant(Y)), zeros, zeros, settings)
    assert int(run.sweeps) == 1
    with pytest.raises(ValueError, match="schedule"):
        register_schedule("bad", object())


def _run_of(num_sites):
    column = tf.zeros([num_sites, 1], tf.float64)
    scalar = tf.constant(0)
    return EPRun(
        precision=column + 1.0,
        natural_mean=column,
        converged=tf.constant(True),
        sweeps=tf.constant(7),
        max_change=tf.constant(3.2e-7, tf.float64),
        num_skipped=scalar,
        num_rejected=scalar,
        skipped_last_sweep=scalar,
        dual=column,
        relaxation=column,
        history=tf.zeros([100], tf.float64),
    )


def test_an_ep_run_prints_as_one_short_line():
    """print(model.run_ep()) is a summary (the scalars, then the arrays' dtypes and shapes), the same
    length for 1,000 sites as for 10; the arrays stay attributes. Inside a tf.function it still prints."""
    text = repr(_run_of(1000))
    assert "\n" not in text and len(text) == len(repr(_run_of(10))) + 8  # "1000" vs "10" in four shapes
    assert text.startswith("EPRun(converged=True, sweeps=7, max_change=3.2e-07, num_skipped=0,")
    assert "precision=<float64 [1000, 1]>" in text and "history=<float64 [100]>" in text
    assert str(_run_of(3)) == repr(_run_of(3))
    np.testing.assert_array_equal(_run_of(1000).precision.numpy(), np.ones((1000, 1)))
    texts = []

    @tf.function(autograph=False)
    def inside(precision):
        texts.append(repr(_run_of(4)._replace(precision=precision)))
        return precision

    inside(tf.ones([4, 1], tf.float64))
    assert "precision=<symbolic float64 [4, 1]>" in texts[0]


class _CountingGP(SiteAlgebra):
    """A full-GP algebra that counts its factorisations (posterior calls) as the compiled run executes them."""

    def __init__(self, K):
        self.gp = GPAlgebra(K, tf.zeros([K.shape[0], 1], tf.float64))
        self.count = tf.Variable(0)

    def posterior(self, precision, natural_mean):
        with tf.control_dependencies([self.count.assign_add(1)]):
            return self.gp.posterior(tf.identity(precision), natural_mean)

    def joint(self, precision, natural_mean):
        return self.gp.joint(precision, natural_mean)

    def prior_marginals(self, precision):
        return self.gp.prior_marginals(precision)


def _probit_problem(n=30):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, 2))
    Y = (np.sin(2 * X[:, :1]) + 0.5 * X[:, 1:] > 0).astype(float)
    diff = X[:, None, :] - X[None, :, :]
    K = tf.constant(1.5 * np.exp(-0.5 * np.sum(diff**2, axis=-1)))
    return K, LikelihoodFactor(Probit(), None, tf.constant(Y))


def test_a_cold_parallel_run_factorises_once_per_sweep_and_returns_the_evidence():
    """
    From flat sites q is the prior (no factorisation), each sweep factorises once, and log Z_EP at the
    returned sites comes from the last sweep's factorisation: equal to the energy evaluated afresh.
    """
    K, factor = _probit_problem()
    algebra = _CountingGP(K)
    zeros = tf.zeros([K.shape[0], 1], tf.float64)
    settings = EPSettings(tol=1e-9)
    run = tf.function(lambda: run_ep(algebra, factor, zeros, zeros, settings))()
    assert bool(run.converged)
    assert int(algebra.count.numpy()) == int(run.sweeps)
    energy = ep_log_marginal_likelihood(algebra.gp, factor, run.precision, run.natural_mean, settings)
    # both are sums of ~N terms of order one evaluated in float64
    np.testing.assert_allclose(run.log_marginal_likelihood, energy.log_marginal_likelihood, rtol=1e-12)


def test_a_warm_parallel_run_returns_the_evidence_of_its_sites():
    """Warm start from stored sites, one sweep: the evidence still matches a fresh evaluation; an algebra
    without a log normaliser gives none."""
    K, factor = _probit_problem()
    algebra = GPAlgebra(K, tf.fill([K.shape[0], 1], tf.constant(0.4, tf.float64)))
    zeros = tf.zeros([K.shape[0], 1], tf.float64)
    first = run_ep(algebra, factor, zeros, zeros, EPSettings(tol=1e-9))
    settings = EPSettings(tol=1e-3, power=0.5)
    run = run_ep(algebra, factor, first.precision, first.natural_mean, settings)
    energy = ep_log_marginal_likelihood(algebra, factor, run.precision, run.natural_mean, settings)
    np.testing.assert_allclose(run.log_marginal_likelihood, energy.log_marginal_likelihood, rtol=1e-12)
    few = LikelihoodFactor(Probit(), None, tf.ones([N, 1], tf.float64))
    flat = tf.zeros([N, 1], tf.float64)
    assert run_ep(_Prior(), few, flat, flat, EPSettings(max_sweeps=2)).log_marginal_likelihood is None
