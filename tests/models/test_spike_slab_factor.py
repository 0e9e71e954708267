"""
SpikeSlabFactor: tilted moments of the spike-and-slab prior (Hernández-Lobato & Hernández-Lobato
2011, eqs. 38-41).
"""

import numpy as np
import pytest
import tensorflow as tf
from scipy import integrate, stats
from scipy.special import expit

from gpflow_ep.ep import SiteFactor
from gpflow_ep.models import SpikeSlabFactor

VS, PS = 1.3, 0.2
CAVITIES = [(0.4, 0.5), (-1.7, 0.05), (0.0, 3.0), (2.5, 1e-3), (0.3, 50.0)]


def _factor():
    return SpikeSlabFactor(tf.constant(VS, tf.float64), tf.constant(PS, tf.float64))


def _quadrature(m, s):
    """Z, E[w], E[w²] of N(w; m, s) f(w) by adaptive quadrature of the slab plus the spike's mass at 0."""
    slab = [
        integrate.quad(
            lambda w, k=k: w**k * stats.norm.pdf(w, m, np.sqrt(s)) * stats.norm.pdf(w, 0, np.sqrt(VS)),
            -np.inf,
            np.inf,
            epsabs=1e-14,
            epsrel=1e-12,
        )[0]
        for k in range(3)
    ]
    spike = (1 - PS) * stats.norm.pdf(0.0, m, np.sqrt(s))
    Z = PS * slab[0] + spike
    return Z, PS * slab[1] / Z, PS * slab[2] / Z


@pytest.mark.parametrize("m, s", CAVITIES)
def test_tilted_moments_match_quadrature(m, s):
    """(T5), (T6) against adaptive quadrature; the integrals are smooth, so 1e-9 relative."""
    log_z, mean, var, pi = (
        t.numpy()[0, 0] for t in _factor().moments(tf.constant([[m]], tf.float64), tf.constant([[s]], tf.float64))
    )
    Z, m1, m2 = _quadrature(m, s)
    np.testing.assert_allclose(np.exp(log_z), Z, rtol=1e-9)
    np.testing.assert_allclose(mean, m1, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(var, max(m2 - m1**2, 1e-12), rtol=1e-8, atol=1e-14)
    assert 0.0 <= pi <= 1.0


@pytest.mark.parametrize("m, s", CAVITIES)
def test_paper_form_equals_the_stable_form(m, s):
    """The paper's eqs. (38)-(41), which divide by v̂₂, give the same moments to round-off (1e-12)."""
    v1, v2 = m / s, 1.0 / s
    rho = np.log(PS) - np.log1p(-PS)
    p = -0.5 * np.log(v2) - 0.5 * np.log(1 / v2 + VS) + 0.5 * v1**2 / v2**2 * (v2 - 1 / (1 / v2 + VS))
    sig, nsig = expit(p + rho), expit(-(p + rho))
    a = sig * v1 / (1 + v2 * VS) + nsig * v1
    b = sig * (v1**2 / v2**2 - 1 / v2 - VS) / (1 / v2 + VS) ** 2 + nsig * (v1**2 - v2)
    mean = (v1 - a) / v2
    second = 1 / v2 - (a**2 - b) / v2**2 + mean**2
    _, m1, var, _ = (
        t.numpy()[0, 0] for t in _factor().moments(tf.constant([[m]], tf.float64), tf.constant([[s]], tf.float64))
    )
    np.testing.assert_allclose(m1, mean, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(var, max(second - mean**2, 1e-12), rtol=1e-8, atol=1e-13)


def test_log_partition_gradients_are_the_moments():
    """∂log Ẑ/∂v̂₁ = E[w], ∂log Ẑ/∂v̂₂ = -½E[w²] for the unnormalised cavity (autodiff; exact algebra, 1e-10)."""
    v1 = tf.Variable([[0.8], [-2.0], [0.1]], dtype=tf.float64)
    v2 = tf.Variable([[2.0], [20.0], [0.3]], dtype=tf.float64)
    factor = _factor()
    with tf.GradientTape() as tape:
        s = 1.0 / v2
        m = v1 * s
        log_zhat = factor.tilted(m, s).log_z + 0.5 * tf.math.log(2 * np.pi * s) + 0.5 * tf.square(m) / s
    g1, g2 = tape.gradient(log_zhat, [v1, v2])
    _, mean, var, _ = factor.moments(v1 / v2, 1.0 / v2)
    np.testing.assert_allclose(g1.numpy(), mean.numpy(), rtol=1e-10)
    np.testing.assert_allclose(g2.numpy(), -0.5 * (var + mean**2).numpy(), rtol=1e-10)


def test_pure_spike_limit_gives_a_zero_mean_site():
    """p_s → 0: the tilted distribution is the spike, E[w] = 0 (catches the sign error of a public R port)."""
    factor = SpikeSlabFactor(tf.constant(1.0, tf.float64), tf.constant(1e-300, tf.float64))
    _, mean, var, pi = factor.moments(tf.constant([[0.7]], tf.float64), tf.constant([[0.2]], tf.float64))
    assert abs(mean.numpy()[0, 0]) < 1e-12 and pi.numpy()[0, 0] < 1e-12 and var.numpy()[0, 0] == 1e-12


def test_only_power_one():
    with pytest.raises(ValueError, match="power"):
        _factor().tilted(tf.constant([[0.0]], tf.float64), tf.constant([[1.0]], tf.float64), power=0.5)


@pytest.mark.parametrize("v1, v2", [(0.3, 0.5), (-2.0, 3.0), (5.0, 1e-3), (40.0, 1e-6), (1e-3, 1e6)])
def test_cavity_log_normaliser_closed_form(v1, v2):
    """log Ẑ(v̂) = log ∫ exp(v̂₁w - ½v̂₂w²) f(w) dw in closed form against quadrature of the slab plus
    the spike's mass (1 - p_s) at 0 (1e-9 relative on Ẑ), and against the engine's generic
    log Z + log ∫ exp(v̂₁w - ½v̂₂w²) dw where that has no cancellation (v̂₁²/v̂₂ < 1e4: 1e-10)."""
    factor = _factor()
    closed = factor.cavity_log_normaliser(tf.constant([[v1]], tf.float64), tf.constant([[v2]], tf.float64))
    # the slab integrand peaks at w* = v̂₁ v_s/(1 + v_s v̂₂), width ~ (v̂₂ + 1/v_s)^-1/2: integrate around it
    centre, width = v1 * VS / (1 + VS * v2), (v2 + 1 / VS) ** -0.5
    log_peak = 0.5 * VS * v1**2 / (1 + VS * v2)
    slab = integrate.quad(
        lambda w: np.exp(v1 * w - 0.5 * (v2 + 1 / VS) * w**2 - log_peak) / np.sqrt(2 * np.pi * VS),
        centre - 40 * width,
        centre + 40 * width,
        epsabs=0.0,
        epsrel=1e-12,
        limit=200,
    )[0]
    expected = np.logaddexp(np.log(1 - PS), np.log(PS) + np.log(slab) + log_peak)
    np.testing.assert_allclose(closed.numpy()[0, 0], expected, rtol=1e-9)
    if v1**2 / v2 < 1e4:
        v1_, v2_ = tf.constant([[v1]], tf.float64), tf.constant([[v2]], tf.float64)
        generic = SiteFactor.cavity_log_normaliser(factor, v1_, v2_)
        np.testing.assert_allclose(generic.numpy()[0, 0], closed.numpy()[0, 0], rtol=1e-10, atol=1e-12)
