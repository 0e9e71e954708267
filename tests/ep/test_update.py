"""One site update (:mod:`gpflow_ep.ep.update`): a Gaussian factor is its own site; damping and invalid proposals."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.ep import EPSettings, LikelihoodFactor
from gpflow_ep.ep.sites import cavity_distribution
from gpflow_ep.ep.update import SiteProposal, accept_proposal, propose_sites


@pytest.mark.parametrize("power", [1.0, 0.5])
def test_a_gaussian_factor_proposes_itself_from_any_cavity(rng, power):
    """Moment matching with t(h) = N(y; h, σ²) gives the site τ = 1/σ², ν = y/σ² whatever the cavity (for any α)."""
    n, noise = 5, 0.3
    y = rng.normal(size=(n, 1))
    mean, var = rng.normal(size=(n, 1)), rng.uniform(0.5, 2.0, size=(n, 1))
    tau, nu = rng.uniform(0.0, 0.5, size=(n, 1)), rng.normal(size=(n, 1))
    settings = EPSettings(power=power)
    cav = cavity_distribution(*(tf.constant(t) for t in (mean, var, tau, nu)), settings.removed_fraction)
    factor = LikelihoodFactor(gpflow.likelihoods.Gaussian(variance=noise), None, tf.constant(y))
    prop = propose_sites(cav, tf.constant(tau), tf.constant(nu), factor, settings)
    assert bool(tf.reduce_all(prop.valid))
    np.testing.assert_allclose(prop.precision, np.full((n, 1), 1.0 / noise), rtol=1e-12)
    np.testing.assert_allclose(prop.natural_mean, y / noise, rtol=1e-12, atol=1e-14)


def test_accept_proposal_damps_valid_sites_and_keeps_the_others():
    old_tau, old_nu = tf.constant([[1.0], [2.0]], tf.float64), tf.constant([[0.5], [-1.0]], tf.float64)
    new = tf.constant([[3.0], [4.0]], tf.float64)
    valid = tf.constant([[True], [False]])
    prop = SiteProposal(new, -new, valid, tf.zeros_like(new), tf.zeros_like(new))
    tau, nu = accept_proposal(old_tau, old_nu, prop, 0.25)
    np.testing.assert_allclose(tau.numpy(), [[0.25 * 3.0 + 0.75 * 1.0], [2.0]], rtol=1e-15)
    np.testing.assert_allclose(nu.numpy(), [[0.25 * -3.0 + 0.75 * 0.5], [-1.0]], rtol=1e-15)
