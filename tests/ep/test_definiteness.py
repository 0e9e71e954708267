"""
Factorising matrices that may be indefinite without a failing Cholesky factorisation
(:func:`gpflow_ep.ep.algebra.safe_cholesky` with ``maybe_indefinite``,
:func:`gpflow_ep.ep.algebra.is_positive_definite`):
the outcome is that of the plain factorisation (the factor, or the identity flagged not ``ok``), and
TensorFlow writes nothing on stderr. TensorFlow's CPU kernel logs every failed factorisation from C++,
so the tests read the process's stderr (``capfd``); the first test shows that such a failure is seen there.
"""

import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.ep import LinearGaussianAlgebra
from gpflow_ep.ep.algebra import is_positive_definite, safe_cholesky
from gpflow_ep.ep.gp_factorisation import GPSiteFactorisation
from gpflow_ep.ep.whitened import WhitenedGaussian

FAILED = "Cholesky decomposition was not successful"


def test_a_failed_tensorflow_cholesky_is_seen_on_stderr(capfd):
    """The canary: the plain factorisation of an indefinite matrix is reported where these tests look."""
    tf.linalg.cholesky(tf.constant([[1.0, 2.0], [2.0, 1.0]], tf.float64)).numpy()
    assert FAILED in capfd.readouterr().err


def _matrices(rng):
    """(name, symmetric matrix or batch, every block positive definite) by numpy's eigenvalues."""
    B = rng.normal(size=(6, 6))
    pd = B @ B.T + 0.1 * np.eye(6)  # positive definite, not diagonally dominant
    dominant = np.diag(rng.uniform(5.0, 6.0, 6)) + 0.1 * (pd / np.abs(pd).max())
    indefinite = pd - 1.5 * np.linalg.eigvalsh(pd)[0] * np.eye(6) - 2.0 * np.linalg.eigvalsh(pd)[1] * np.eye(6)
    low_rank = B[:, :3] @ B[:, :3].T  # positive semi-definite, singular
    nan = pd.copy()
    nan[3, 1] = nan[1, 3] = np.nan
    cases = [
        ("positive definite", pd),
        ("diagonally dominant", dominant),
        ("indefinite", indefinite),
        ("negative definite", -pd),
        ("singular", low_rank),
        ("batch, one block indefinite", np.stack([pd, indefinite, dominant])),
        ("batch, all positive definite", np.stack([pd, dominant])),
        ("empty", np.zeros((0, 0))),
        ("non-finite", nan),
    ]
    for name, S in cases:
        if name == "non-finite":
            truth = False
        elif S.shape[-1] == 0:
            truth = True
        else:
            eig = np.linalg.eigvalsh(S)
            truth = bool(np.all(eig[..., 0] > S.shape[-1] * np.finfo(float).eps * np.abs(eig).max(axis=-1)))
        yield name, S, truth


def test_definiteness_is_decided_like_the_eigenvalues_and_quietly(rng, capfd):
    for name, S, truth in _matrices(rng):
        assert bool(is_positive_definite(tf.constant(S))) == truth, name
    assert FAILED not in capfd.readouterr().err


@pytest.mark.parametrize("compiled", [False, True])
def test_a_maybe_indefinite_matrix_is_factorised_only_when_positive_definite(rng, capfd, compiled):
    """The factor where the matrix is positive definite; else the identity and not ``ok``; never a NaN or a log."""

    def factorise(S, maybe):
        return safe_cholesky(S, maybe_indefinite=maybe)

    if compiled:  # the flag is a tensor: the decision is made at run time
        factorise = tf.function(factorise)
    for name, S, truth in _matrices(rng):
        L, ok = factorise(tf.constant(S), tf.constant(True))
        assert bool(ok) == truth, name
        expected = np.linalg.cholesky(S) if truth else np.broadcast_to(np.eye(S.shape[-1]), S.shape)
        np.testing.assert_allclose(L.numpy(), expected, rtol=1e-12, atol=1e-14, err_msg=name)
    assert FAILED not in capfd.readouterr().err


def test_positive_definite_by_construction_is_the_plain_factorisation(rng, monkeypatch):
    """No test at all when the caller rules indefiniteness out (at run time, or in Python)."""
    B = rng.normal(size=(5, 5))
    S = tf.constant(B @ B.T + np.eye(5))
    monkeypatch.setattr("gpflow_ep.ep.algebra.is_positive_definite", lambda *args: pytest.fail("tested"))
    for maybe in (False, tf.constant(False)):
        L, ok = safe_cholesky(S, maybe_indefinite=maybe)
        assert bool(ok)
        np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(S.numpy()), rtol=1e-12)


def test_a_passing_sufficient_test_spares_the_eigenvalues(rng, monkeypatch):
    B = rng.normal(size=(5, 5))
    S = tf.constant(B @ B.T + 0.01 * np.eye(5))  # not diagonally dominant: Gershgorin does not decide
    monkeypatch.setattr(tf.linalg, "eigvalsh", lambda *args: pytest.fail("eigenvalues computed"))
    L, ok = safe_cholesky(S, maybe_indefinite=True, sufficient=lambda: tf.constant(True))
    assert bool(ok)
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(S.numpy()), rtol=1e-12)


def _gp_problem(rng, n=12):
    X = rng.normal(size=(n, 2))
    K = np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, axis=-1) / 1.3**2)
    return K, rng.uniform(0.1, 2.0, size=(n, 1)), rng.normal(size=(n, 1))


@pytest.mark.parametrize("negative", [-0.05, -0.9, -10.0])
def test_gp_sites_of_both_signs_decide_propriety_quietly(rng, capfd, negative):
    """C = I - A₋Σ₊[J, J]A₋ for sites that keep q proper (small, then large negative precisions: the
    trace test, then the eigenvalues decide) and for a site that makes q improper."""
    K, tau, nu = _gp_problem(rng)
    tau[[2, 7]] = negative / np.diag(K)[[2, 7], None]
    precision = np.linalg.inv(K) + np.diag(tau[:, 0])
    proper = bool(np.linalg.eigvalsh(precision)[0] > 0)
    q = GPSiteFactorisation(K, tau, nu)
    assert bool(q.proper) == proper
    if proper:
        np.testing.assert_allclose(q.mean[:, 0], np.linalg.solve(precision, nu[:, 0]), rtol=1e-7, atol=1e-8)
    assert np.all(np.isfinite(q.mean)) and np.all(np.isfinite(q.var))
    assert FAILED not in capfd.readouterr().err


@pytest.mark.parametrize("negative", [-0.01, -0.5, -50.0])
def test_whitened_sites_of_both_signs_decide_propriety_quietly(rng, capfd, negative):
    """B = I + Λ with a negative site: proper or not as the dense B says, the moments the dense ones."""
    A = rng.normal(size=(2, 4, 9)) / 2.0  # two blocks of 4 inducing values, 9 sites each
    tau, nu = rng.uniform(0.1, 1.0, size=(2, 9, 1)), rng.normal(size=(2, 9, 1))
    tau[1, 3] = negative
    q = WhitenedGaussian.from_sites(tf.constant(A), tf.constant(tau), tf.constant(nu))
    B = np.eye(4) + A @ (tau * np.transpose(A, (0, 2, 1)))
    proper = bool(np.all(np.linalg.eigvalsh(B)[:, 0] > 0))
    assert bool(q.proper) == proper
    if proper:
        np.testing.assert_allclose(q.mean.numpy(), np.linalg.solve(B, A @ nu), rtol=1e-10, atol=1e-12)
    assert FAILED not in capfd.readouterr().err


def test_linear_gaussian_weights_with_negative_precisions_decide_propriety_quietly(rng, capfd):
    """A = XᵀX/σ² + diag(τ) with one negative τ_i: still positive definite, then indefinite."""
    X, y = rng.normal(size=(20, 5)), rng.normal(size=(20, 1))
    algebra = LinearGaussianAlgebra(tf.constant(X), tf.constant(y), tf.constant(0.5, tf.float64), form="weights")
    A = X.T @ X / 0.5
    smallest, largest = np.linalg.eigvalsh(A)[[0, -1]]
    for negative, proper in ((-0.5 * smallest, True), (-2.0 * largest, False)):
        tau = np.full((5, 1), 0.3)
        tau[1] = negative
        assert bool(np.linalg.eigvalsh(A + np.diag(tau[:, 0]))[0] > 0) == proper
        q = algebra.posterior(tf.constant(tau), tf.constant(np.zeros((5, 1))))
        assert bool(q.proper) == proper, negative
    assert FAILED not in capfd.readouterr().err
