"""
LinearGaussianAlgebra: its weight-space and Woodbury (data-space) forms agree
(Hernández-Lobato & Hernández-Lobato 2011, §2).
"""

import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.ep import LinearGaussianAlgebra
from gpflow_ep.ep.linear_gaussian import WOODBURY_MIN_DIM


@pytest.fixture
def problem(rng):
    n, d = 6, 9
    X, y = rng.normal(size=(n, d)), rng.normal(size=(n, 1))
    tau, nu = rng.uniform(0.2, 3.0, size=(d, 1)), rng.normal(size=(d, 1))
    return X, y, 0.3, tau, nu


def _direct(X, y, s2, tau, nu):
    A = X.T @ X / s2 + np.diag(tau[:, 0])
    S = np.linalg.inv(A)
    b = nu + X.T @ y / s2
    m = S @ b
    n, d = X.shape
    log_z = (
        -0.5 * n * np.log(2 * np.pi * s2)
        - y.T @ y / (2 * s2)
        + 0.5 * d * np.log(2 * np.pi)
        - 0.5 * np.linalg.slogdet(A)[1]
        + 0.5 * b.T @ m
    )
    return m, np.diag(S)[:, None], S, log_z.item()


@pytest.mark.parametrize("form", ["weights", "woodbury"])
def test_forms_equal_direct_inverse(problem, form):
    """Woodbury = direct inverse (both exact; float64 round-off through a condition number < 1e4: 1e-9)."""
    X, y, s2, tau, nu = problem
    algebra = LinearGaussianAlgebra(tf.constant(X), tf.constant(y), tf.constant(s2, tf.float64), form=form)
    m, v, S, log_z = _direct(X, y, s2, tau, nu)
    q = algebra.marginals(tf.constant(tau), tf.constant(nu))
    np.testing.assert_allclose(q.mean.numpy(), m, rtol=1e-9)
    np.testing.assert_allclose(q.var.numpy(), v, rtol=1e-9)
    np.testing.assert_allclose(algebra.log_normaliser(tf.constant(tau), tf.constant(nu)).numpy(), log_z, rtol=1e-10)
    joint = algebra.joint(tf.constant(tau), tf.constant(nu))
    np.testing.assert_allclose(joint.cov.numpy(), S, rtol=1e-9, atol=1e-12)
    assert bool(q.proper)


def test_log_normaliser_gradients_are_the_moments(problem):
    """log Z is a log-partition function: ∂/∂ν = m, ∂/∂τ = -½(Σ_ii + m_i²) (autodiff, 1e-9)."""
    X, y, s2, tau, nu = problem
    algebra = LinearGaussianAlgebra(tf.constant(X), tf.constant(y), tf.constant(s2, tf.float64))
    t, n_ = tf.Variable(tau), tf.Variable(nu)
    with tf.GradientTape() as tape:
        log_z = algebra.log_normaliser(t, n_)
    g_tau, g_nu = tape.gradient(log_z, [t, n_])
    m, v, _, _ = _direct(X, y, s2, tau, nu)
    np.testing.assert_allclose(g_nu.numpy(), m, rtol=1e-9)
    np.testing.assert_allclose(g_tau.numpy(), -0.5 * (v + m**2), rtol=1e-9)


def test_auto_form_and_improper_sites(problem):
    X, y, s2, tau, nu = problem
    assert LinearGaussianAlgebra(tf.constant(X), tf.constant(y), tf.constant(s2, tf.float64)).form == "weights"
    wide = np.ones((3, WOODBURY_MIN_DIM + 1))
    assert LinearGaussianAlgebra(tf.constant(wide), tf.constant(y[:3]), tf.constant(s2, tf.float64)).form == "woodbury"
    assert (
        LinearGaussianAlgebra(tf.constant(X.T[:, :6]), tf.constant(np.ones((9, 1))), tf.constant(s2, tf.float64)).form
        == "weights"
    )
    algebra = LinearGaussianAlgebra(tf.constant(X), tf.constant(y), tf.constant(s2, tf.float64), form="woodbury")
    bad = tau.copy()
    bad[0] = -1.0
    assert not bool(algebra.marginals(tf.constant(bad), tf.constant(nu)).proper)
    with pytest.raises(ValueError, match="form"):
        LinearGaussianAlgebra(tf.constant(X), tf.constant(y), tf.constant(s2, tf.float64), form="dense")
