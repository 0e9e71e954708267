"""The scalar site algebra: cavity (and its rank-one form on other directions), site update, clipping, damping."""

import numpy as np
import pytest

from gpflow_ep.ep import tilted_moments
from gpflow_ep.ep.sites import cavity_distribution, clip_site, damp, site_update
from gpflow_ep.likelihoods import NoisyStep, Probit


@pytest.mark.parametrize("power", [1.0, 0.6])
@pytest.mark.parametrize("lik", [Probit(), NoisyStep(0.2)], ids=["probit", "noisy_step"])
def test_new_site_times_cavity_matches_tilted_moments(lik, power, rng):
    """cavity × site^α has the tilted moments (Minka 2004, the power-EP update), for sites of either sign."""
    n = 8
    cav_m = rng.normal(scale=2.0, size=(n, 1))
    cav_v = rng.uniform(0.2, 3.0, size=(n, 1))
    Y = (rng.random((n, 1)) > 0.5).astype(float)
    t = tilted_moments(lik, None, Y, cav_m, cav_v, power)
    zeros = np.zeros((n, 1))
    cav = cavity_distribution(cav_m, cav_v, zeros, zeros)  # flat sites: the cavity is the marginal
    tau, nu, ok = site_update(cav, t, power)
    assert np.all(ok)
    mean_t, var_t = t.mean_and_var(cav_m, cav_v)
    prec = 1 / cav_v + power * tau.numpy()
    np.testing.assert_allclose(1 / prec, var_t, rtol=1e-12)
    np.testing.assert_allclose((cav_m / cav_v + power * nu.numpy()) / prec, mean_t, rtol=1e-10, atol=1e-12)


def test_cavity_removes_the_fraction_power_of_the_site():
    mean, var = np.array([[0.3]]), np.array([[0.8]])
    tau, nu = np.array([[0.5]]), np.array([[-0.2]])
    for removed in [1.0, 0.5]:
        cav = cavity_distribution(mean, var, tau, nu, removed)
        prec = 1 / var - removed * tau
        np.testing.assert_allclose(cav.var, 1 / prec, rtol=1e-14)
        np.testing.assert_allclose(cav.mean, (mean / var - removed * nu) / prec, rtol=1e-14)
        assert bool(cav.valid)


@pytest.mark.parametrize("removed", [1.0, 0.5])
def test_cavity_of_another_direction_is_the_rank_one_downdate(removed, rng):
    """
    Cavity.of: for a Gaussian q(x) with precision P, removing β of a site on h = aᵀx gives
    precision P - βτaaᵀ and shift -βνa; the moments of h' = bᵀx under it, computed densely, must
    equal the rank-one form from h's marginal and Cov(h', h) (float64, 1e-10).
    """
    D = 4
    G = rng.normal(size=(D, D))
    P = G @ G.T + D * np.eye(D)
    eta = rng.normal(size=(D, 1))
    Sigma = np.linalg.inv(P)
    mu = Sigma @ eta
    a, b = rng.normal(size=(D, 1)), rng.normal(size=(D, 1))
    tau, nu = np.array([[0.7]]), np.array([[0.4]])
    P_cav = P - removed * tau[0, 0] * a @ a.T
    S_cav = np.linalg.inv(P_cav)
    m_cav = S_cav @ (eta - removed * nu[0, 0] * a)
    cav = cavity_distribution(a.T @ mu, a.T @ Sigma @ a, tau, nu, removed)
    np.testing.assert_allclose(cav.mean, a.T @ m_cav, rtol=1e-10)
    np.testing.assert_allclose(cav.var, a.T @ S_cav @ a, rtol=1e-10)
    moved = cav.of(b.T @ mu, b.T @ Sigma @ b, b.T @ Sigma @ a)
    np.testing.assert_allclose(moved.mean, b.T @ m_cav, rtol=1e-10)
    np.testing.assert_allclose(moved.var, b.T @ S_cav @ b, rtol=1e-10)
    assert bool(moved.valid)
    direct = cavity_distribution(
        a.T @ mu, a.T @ Sigma @ a, tau, nu, removed, of=(b.T @ mu, b.T @ Sigma @ b, b.T @ Sigma @ a)
    )
    np.testing.assert_allclose(direct.mean, moved.mean, rtol=1e-12)
    np.testing.assert_allclose(direct.var, moved.var, rtol=1e-12)


def test_improper_cavity_is_flagged_and_finite():
    cav = cavity_distribution(np.array([[0.0]]), np.array([[1.0]]), np.array([[2.0]]), np.array([[0.1]]))
    assert not bool(cav.valid[0, 0])
    assert np.isfinite(cav.mean).all() and np.isfinite(cav.var).all()
    moved = cav.of(np.array([[0.5]]), np.array([[1.0]]), np.array([[0.3]]))
    assert not bool(moved.valid[0, 0])


@pytest.mark.parametrize("power", [1.0, 0.5])
def test_clipped_site_keeps_the_tilted_mean(power, rng):
    """
    Site clipping (Hernández-Lobato & Hernández-Lobato 2011, §2): precision raised to ε, the marginal
    keeps the tilted mean.
    """
    n, eps = 6, 0.3
    lik = NoisyStep(0.3)  # not log-concave: negative site precisions occur
    m, v = rng.normal(scale=0.3, size=(n, 1)), rng.uniform(2.0, 4.0, size=(n, 1))
    Y = np.ones((n, 1))
    zeros = np.zeros((n, 1))
    cav = cavity_distribution(m, v, zeros, zeros)
    t = tilted_moments(lik, None, Y, m, v, power)
    tau, nu, ok = site_update(cav, t, power)
    assert np.all(ok) and np.any(tau.numpy() < eps)
    tau_c, nu_c = clip_site(tau, nu, cav, t, power, eps)
    assert np.all(tau_c.numpy() >= eps)
    clipped = tau.numpy() < eps
    tilted_mean, _ = t.mean_and_var(m, v)
    prec = 1 / v + power * tau_c.numpy()
    marginal_mean = (m / v + power * nu_c.numpy()) / prec
    np.testing.assert_allclose(marginal_mean[clipped], np.asarray(tilted_mean)[clipped], rtol=1e-12)
    np.testing.assert_array_equal(tau_c.numpy()[~clipped], tau.numpy()[~clipped])
    np.testing.assert_array_equal(nu_c.numpy()[~clipped], nu.numpy()[~clipped])
    same = clip_site(tau, nu, cav, t, power, None)
    assert same[0] is tau and same[1] is nu


def test_damping_interpolates_natural_parameters():
    np.testing.assert_allclose(damp(np.array([1.0]), np.array([3.0]), 0.25), [1.5])
    np.testing.assert_allclose(damp(np.array([1.0]), np.array([3.0]), 1.0), [3.0])
