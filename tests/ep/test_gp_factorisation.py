"""The full-GP posterior algebra against dense linear algebra, with sites of both signs."""

import gpflow
import numpy as np
import pytest

from gpflow_ep.ep.gp_factorisation import GPSiteFactorisation


def _problem(rng, n=12, negative=(2, 7)):
    X = rng.normal(size=(n, 2))
    K = gpflow.kernels.SquaredExponential(lengthscales=1.3)(X).numpy()
    tau = rng.uniform(0.1, 2.0, size=(n, 1))
    tau[list(negative)] = -0.05  # small negative precisions keep q proper
    nu = rng.normal(size=(n, 1))
    return X, K, tau, nu


def _dense(K, tau, nu):
    Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(tau[:, 0]))
    return Sigma, Sigma @ nu[:, 0]


@pytest.mark.parametrize("negative", [(), (3,), (2, 7)])
def test_marginals_and_normaliser_match_dense_algebra(rng, negative):
    _, K, tau, nu = _problem(rng, negative=negative)
    q = GPSiteFactorisation(K, tau, nu)
    Sigma, mu = _dense(K, tau, nu)
    assert bool(q.proper)
    # tolerances: K has condition number ~1e5 here, so the dense inverse itself carries ~1e-10
    np.testing.assert_allclose(q.mean[:, 0], mu, atol=1e-8)
    np.testing.assert_allclose(q.var[:, 0], np.diag(Sigma), atol=1e-8)
    np.testing.assert_allclose(q.covariance(), Sigma, atol=1e-8)
    log_det_ratio = np.linalg.slogdet(Sigma)[1] - np.linalg.slogdet(K)[1]
    np.testing.assert_allclose(q.log_det_ratio, log_det_ratio, atol=1e-7)


def test_predictions_match_dense_conditioning(rng):
    X, K, tau, nu = _problem(rng)
    kern = gpflow.kernels.SquaredExponential(lengthscales=1.3)
    Xs = rng.normal(size=(5, 2))
    Kxs, Kss = kern(X, Xs).numpy(), kern(Xs).numpy()
    # q(f*) = ∫ p(f* | f) q(f) df:  mean k*ᵀK⁻¹μ,  cov K** - k*ᵀK⁻¹(K - Σ)K⁻¹k*
    Sigma, mu = _dense(K, tau, nu)
    Kinv_kxs = np.linalg.solve(K, Kxs)
    mean = Kinv_kxs.T @ mu
    cov = Kss - Kinv_kxs.T @ (K - Sigma) @ Kinv_kxs
    q = GPSiteFactorisation(K, tau, nu)
    m, c = q.predict(Kxs, Kss, full_cov=True)
    np.testing.assert_allclose(m, mean, atol=1e-7)
    np.testing.assert_allclose(c, cov, atol=1e-7)
    m2, v2 = q.predict(Kxs, np.diag(Kss), full_cov=False)
    np.testing.assert_allclose(v2, np.diag(cov), atol=1e-7)


def test_flat_sites_give_the_prior(rng):
    _, K, _, _ = _problem(rng)
    zeros = np.zeros((K.shape[0], 1))
    q = GPSiteFactorisation(K, zeros, zeros)
    np.testing.assert_allclose(q.var[:, 0], np.diag(K), atol=1e-12)
    np.testing.assert_allclose(q.mean, 0.0, atol=1e-12)
    np.testing.assert_allclose(q.log_normaliser_ratio, 0.0, atol=1e-12)


def test_improper_posterior_is_flagged_not_nan(rng):
    _, K, tau, nu = _problem(rng)
    tau[0] = -10.0 / K[0, 0]  # far more negative than the prior precision allows
    q = GPSiteFactorisation(K, tau, nu)
    assert not bool(q.proper)
    assert np.all(np.isfinite(q.mean)) and np.all(np.isfinite(q.var))
