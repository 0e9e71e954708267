"""The pieces of linear algebra every site algebra shares (:mod:`gpflow_ep.ep.algebra`), against numpy."""

import numpy as np
import tensorflow as tf

from gpflow_ep.ep.algebra import centred_natural_mean, project_sites, safe_cholesky


def test_safe_cholesky_factors_a_positive_definite_batch(rng):
    B = rng.normal(size=(3, 4, 4))
    S = B @ np.transpose(B, (0, 2, 1)) + np.eye(4)
    L, ok = safe_cholesky(tf.constant(S))
    assert bool(ok)
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(S), rtol=1e-12, atol=1e-14)


def test_a_failed_cholesky_is_the_identity_and_flagged_never_nan():
    S = np.array([[1.0, 2.0], [2.0, 1.0]])  # indefinite
    L, ok = safe_cholesky(tf.constant(S))
    assert not bool(ok)
    np.testing.assert_array_equal(L.numpy(), np.eye(2))


def test_project_sites_is_a_t_at_and_a_nu(rng):
    A, tau, nu = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 5, 1)), rng.normal(size=(2, 5, 1))
    Lambda, eta = project_sites(tf.constant(A), tf.constant(tau), tf.constant(nu))
    for c in range(2):
        np.testing.assert_allclose(Lambda[c], A[c] @ np.diag(tau[c, :, 0]) @ A[c].T, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(eta[c], A[c] @ nu[c], rtol=1e-12, atol=1e-13)


def test_centring_moves_a_site_onto_the_centred_variable(rng):
    """exp(νh - ½τh²) with h = g + o is exp((ν - τo)g - ½τg²) times a constant: compare the log-densities' slopes."""
    tau, nu, o, g = (rng.normal(size=(4, 1)) for _ in range(4))
    centred = centred_natural_mean(tf.constant(tau), tf.constant(nu), tf.constant(o)).numpy()
    # d/dg of νh - ½τh² at h = g + o is ν - τ(g + o); of the centred site, ν_c - τg
    np.testing.assert_allclose(centred - tau * g, nu - tau * (g + o), rtol=1e-12, atol=1e-14)
