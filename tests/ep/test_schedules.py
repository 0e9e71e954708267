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
    SweepInfo,
    TiltedMoments,
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
        measure=tf.constant(0),
        max_change=tf.constant(3.2e-7, tf.float64),
        history=tf.zeros([100], tf.float64),
        num_skipped=scalar,
        num_rejected=scalar,
        dual=column,
        relaxation=column,
        info=SweepInfo(skipped_last_sweep=scalar),
    )


def test_an_ep_run_prints_as_one_short_line():
    """print(model.run_ep()) is a summary (the scalars, then the arrays' dtypes and shapes), the same
    length for 1,000 sites as for 10; the arrays stay attributes. Inside a tf.function it still prints."""
    text = repr(_run_of(1000))
    assert "\n" not in text and len(text) == len(repr(_run_of(10))) + 8  # "1000" vs "10" in four shapes
    assert text.startswith("EPRun(converged=True, sweeps=7, measure=0, max_change=3.2e-07, num_skipped=0,")
    assert "info=SweepInfo(skipped_last_sweep=0)" in text
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


class _CountingGPAlgebra(GPAlgebra):
    """The full-GP algebra, counting the factorisations it runs (a variable, so compiled runs count too)."""

    def __init__(self, K, prior_mean):
        super().__init__(K, prior_mean)
        self.factorisations = tf.Variable(0)

    def posterior(self, precision, natural_mean):
        with tf.control_dependencies([self.factorisations.assign_add(1)]):
            return super().posterior(tf.identity(precision), natural_mean)


@pytest.mark.parametrize("warm", [False, True])
def test_parallel_ep_from_flat_sites_factorises_once_per_sweep(warm):
    """A cold start reads q = prior off the algebra (no factorisation at flat sites); a warm start factorises
    once more, to read q at the stored sites."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 2))
    K = tf.constant(np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, -1)) + 1e-9 * np.eye(12))
    Y = tf.constant((X[:, :1] > 0).astype(float))
    factor = LikelihoodFactor(Probit(), None, Y)
    settings = EPSettings(schedule="parallel", tol=1e-8)
    zeros = tf.zeros([12, 1], tf.float64)
    cold = run_ep(_CountingGPAlgebra(K, zeros), factor, zeros, zeros, settings)
    start = (cold.precision, cold.natural_mean) if warm else (zeros, zeros)
    algebra = _CountingGPAlgebra(K, zeros)
    run = tf.function(lambda: run_ep(algebra, factor, *start, settings))()
    assert bool(run.converged)
    assert int(algebra.factorisations.numpy()) == int(run.sweeps) + int(warm)
    if not warm:  # the same run compiled: B = I + AKA has eigenvalues in [1, 1 + max τ λ_max(K)] (< 1e3 here)
        scale = np.max(np.abs(cold.precision))
        np.testing.assert_allclose(run.precision, cold.precision, rtol=0, atol=1e-10 * scale)
