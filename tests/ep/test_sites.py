"""The scalar site algebra: cavity, site update, damping."""

import numpy as np
import pytest

from gpflow_ep.ep import cavity, damp, site_update, tilted_moments
from gpflow_ep.likelihoods import NoisyStep, Probit


def _gauss_product(m1, v1, m2, v2):
    prec = 1 / v1 + 1 / v2
    return (m1 / v1 + m2 / v2) / prec, 1 / prec


@pytest.mark.parametrize("power", [1.0, 0.6])
@pytest.mark.parametrize("lik", [Probit(), NoisyStep(0.2)], ids=["probit", "noisy_step"])
def test_new_site_times_cavity_matches_tilted_moments(lik, power, rng):
    """cavity × site^α has the tilted moments (rep spec §8 item 2), for sites of either sign."""
    n = 8
    cav_m = rng.normal(scale=2.0, size=(n, 1))
    cav_v = rng.uniform(0.2, 3.0, size=(n, 1))
    Y = (rng.random((n, 1)) > 0.5).astype(float)
    t = tilted_moments(lik, None, Y, cav_m, cav_v, power)
    tau, nu, ok = site_update(cav_m, cav_v, t, power)
    assert np.all(ok)
    mean_t, var_t = t.mean_and_var(cav_m, cav_v)
    prec = 1 / cav_v + power * tau.numpy()
    np.testing.assert_allclose(1 / prec, var_t, rtol=1e-12)
    np.testing.assert_allclose((cav_m / cav_v + power * nu.numpy()) / prec, mean_t, rtol=1e-10, atol=1e-12)


def test_cavity_removes_the_fraction_power_of_the_site(rng):
    mean, var = np.array([[0.3]]), np.array([[0.8]])
    tau, nu = np.array([[0.5]]), np.array([[-0.2]])
    for power, kind, removed in [(1.0, "fractional", 1.0), (0.5, "fractional", 0.5), (0.5, "full", 1.0)]:
        cav = cavity(mean, var, tau, nu, power, kind)
        prec = 1 / var - removed * tau
        np.testing.assert_allclose(cav.var, 1 / prec, rtol=1e-14)
        np.testing.assert_allclose(cav.mean, (mean / var - removed * nu) / prec, rtol=1e-14)
        assert bool(cav.valid)


def test_improper_cavity_is_flagged_and_finite():
    cav = cavity(np.array([[0.0]]), np.array([[1.0]]), np.array([[2.0]]), np.array([[0.1]]))
    assert not bool(cav.valid[0, 0])
    assert np.isfinite(cav.mean).all() and np.isfinite(cav.var).all()


def test_damping_interpolates_natural_parameters():
    np.testing.assert_allclose(damp(np.array([1.0]), np.array([3.0]), 0.25), [1.5])
    np.testing.assert_allclose(damp(np.array([1.0]), np.array([3.0]), 1.0), [3.0])
