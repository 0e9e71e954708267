"""Convergence reporting of the EP schedules (gpflow_ep.ep.schedules)."""

import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.ep import run_parallel_ep, run_sequential_ep
from gpflow_ep.ep.update import SiteProposal

N = 5


def _always_skipped(cavity, precision, natural_mean, index=None):
    """Every proposed update is invalid (as for improper cavities everywhere)."""
    shape = tf.shape(precision) if index is None else [1, 1]
    zeros = tf.zeros(shape, tf.float64)
    return SiteProposal(zeros, zeros, tf.zeros(shape, tf.bool), zeros, zeros)


def _prior_marginals(tau, nu):
    return tf.zeros_like(tau), tf.ones_like(tau), tf.constant(True)


def _prior_joint(tau, nu):
    return tf.eye(N, dtype=tf.float64), tf.zeros([N, 1], tf.float64), tf.constant(True)


@pytest.mark.parametrize("criterion", ["sites", "alpha"])
@pytest.mark.parametrize("schedule", ["parallel", "sequential"])
def test_a_sweep_that_skips_every_site_is_not_convergence(schedule, criterion):
    """Nothing was updated, so α is unchanged (R = 0) and no site moved: that proves nothing."""
    zeros = tf.zeros([N, 1], tf.float64)
    if schedule == "parallel":
        run = run_parallel_ep(_prior_marginals, _always_skipped, zeros, zeros, max_sweeps=4, criterion=criterion)
    else:
        run = run_sequential_ep(_prior_joint, _always_skipped, zeros, zeros, max_sweeps=4, criterion=criterion)
    assert not bool(run.converged)
    assert int(run.sweeps) == 4
    assert int(run.num_skipped) == 4 * N
    np.testing.assert_array_equal(run.precision, zeros)
