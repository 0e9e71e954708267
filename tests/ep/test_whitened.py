"""WhitenedGaussian with batch dimensions and WhitenedAlgebra with sites on (block, point) pairs."""

import numpy as np
import pytest
import tensorflow as tf
from scipy import linalg

from gpflow_ep.ep import WhitenedAlgebra
from gpflow_ep.ep.whitened import SitePairs, WhitenedGaussian


@pytest.fixture
def paired(rng):
    """C = 3 blocks of M = 4, P = 5 points; 12 sites on random pairs (some pairs with several, one with none)."""
    C, M, P = 3, 4, 5
    A = rng.normal(size=(C, M, P))
    site_pair = np.array([0, 0, 3, 5, 5, 5, 7, 9, 10, 12, 14, 2])
    tau = rng.uniform(0.1, 2.0, size=(12, 1))
    nu = rng.normal(size=(12, 1))
    prior_mean = rng.normal(size=(12, 1))
    # the dense stacked form: site s is the column of its pair's projection, in its block's rows
    dense = np.zeros((C * M, 12))
    for s, pair in enumerate(site_pair):
        c, j = divmod(pair, P)
        dense[c * M : (c + 1) * M, s] = A[c, :, j]
    return A, site_pair, tau, nu, prior_mean, dense


def test_sites_on_pairs_equal_the_dense_stacked_algebra(paired):
    """Marginals, normaliser and prior marginals equal those of one [CM, S] projection matrix (float64, 1e-12)."""
    A, site_pair, tau, nu, prior_mean, dense = paired
    pairs = SitePairs(tf.constant(site_pair, tf.int32), 15)
    blocked = WhitenedAlgebra(tf.constant(A), tf.constant(prior_mean), pairs)
    stacked = WhitenedAlgebra(tf.constant(dense), tf.constant(prior_mean))
    args = (tf.constant(tau), tf.constant(nu))
    for a, b in zip(blocked.marginals(*args)[:2], stacked.marginals(*args)[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        blocked.factorise(*args).log_normaliser_ratio, stacked.factorise(*args).log_normaliser_ratio, rtol=1e-12
    )
    np.testing.assert_allclose(blocked.prior_marginals(args[0]).var, stacked.prior_marginals(args[0]).var, rtol=1e-12)
    with pytest.raises(ValueError, match="parallel schedule"):
        blocked.joint(*args)


def test_batched_gaussian_equals_each_block_alone(rng):
    """q(v) of C blocks at once: moments, covariance and predictions block by block (1e-12)."""
    C, M, N = 3, 4, 6
    half = rng.normal(size=(C, M, M))
    Lambda = half @ np.swapaxes(half, -1, -2)
    eta = rng.normal(size=(C, M, 1))
    A = rng.normal(size=(C, M, N))
    q = WhitenedGaussian(tf.constant(Lambda), tf.constant(eta))
    mean, var = q.project(tf.constant(A))
    total = 0.0
    for c in range(C):
        one = WhitenedGaussian(tf.constant(Lambda[c]), tf.constant(eta[c]))
        m, v = one.project(tf.constant(A[c]))
        np.testing.assert_allclose(mean[c], m, rtol=1e-12)
        np.testing.assert_allclose(var[c], v, rtol=1e-12)
        np.testing.assert_allclose(q.covariance()[c], linalg.inv(np.eye(M) + Lambda[c]), rtol=1e-10)
        total += float(one.log_normaliser_ratio)
    np.testing.assert_allclose(q.log_normaliser_ratio, total, rtol=1e-12)
    assert bool(q.proper)


def test_site_pairs_sum_gather_and_all():
    pairs = SitePairs(tf.constant([2, 0, 2, 1]), 4)
    np.testing.assert_array_equal(pairs.sum(tf.constant([[1.0], [2.0], [3.0], [4.0]])), [[2.0], [4.0], [4.0], [0.0]])
    np.testing.assert_array_equal(pairs.gather(tf.constant([[10.0], [11.0], [12.0], [13.0]])), [[12], [10], [12], [11]])
    flags = pairs.all(tf.constant([[True], [True], [False], [True]]))
    np.testing.assert_array_equal(flags[:, 0], [True, True, False, True])  # pair 3 has no site
    plain = SitePairs()
    x = tf.constant([[1.0], [2.0]])
    assert plain.sum(x) is x and plain.gather(x) is x
