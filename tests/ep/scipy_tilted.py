"""
An independent reference for tilted integrals: SciPy's adaptive Gauss–Kronrod quadrature
(``scipy.integrate.quad_vec``) of exp(α log p(y | f)) N(f; m, v), split at the likelihood's kinks, at
the tilted mode and around the cavity mean, in the offset δ = f - m (shared by the tilted-moment tests).
"""

import math
import warnings

import numpy as np
from scipy import integrate, optimize

__all__ = ["tilted_reference"]


def tilted_reference(log_lik, m, v, power=1.0, kinks=(), depth=60.0):
    """
    (log Z, ∂log Z/∂m, ∂²log Z/∂m²) of ∫ p(y | f)^α N(f; m, v) df for a scalar numpy ``log_lik``.

    The mode of the integrand is found by a dense scan and bounded minimisation; the integration
    range is where the integrand is within ``depth`` nats of its mode (found by scanning outwards);
    breakpoints at the kinks, the mode and the cavity mean, graded geometrically around each so that
    no feature falls between the adaptive rule's first nodes.
    """
    sd = np.sqrt(v)
    kinks = [float(k) - m for k in np.atleast_1d(kinks)]

    def g(d):
        with np.errstate(all="ignore"):
            value = power * log_lik(m + d) - 0.5 * d * d / v
        return np.where(np.isfinite(value), value, -np.inf)

    def density(d):  # exp(g(d) - g_mode) for a Python float (the quadrature's hot path)
        value = power * float(log_lik(m + d)) - 0.5 * d * d / v - g_mode
        return math.exp(min(value, 700.0)) if value == value else 0.0

    scan = np.concatenate(
        [sd * np.linspace(-20, 20, 4001), sd * np.geomspace(1e-9, 1e7, 2001), -sd * np.geomspace(1e-9, 1e7, 2001)]
        + [k + sd * np.linspace(-1e-3, 1e-3, 41) for k in kinks]
    )
    values = g(scan)
    i = int(np.argmax(values))
    order = np.sort(scan)
    j = int(np.searchsorted(order, scan[i]))
    lo, hi = order[max(j - 1, 0)], order[min(j + 1, len(order) - 1)]
    res = optimize.minimize_scalar(lambda d: -g(d), bounds=(lo, hi), method="bounded", options={"xatol": 1e-14})
    mode = res.x if -res.fun >= values[i] else scan[i]
    g_mode = max(float(g(mode)), values[i])

    steps = sd * np.geomspace(2.0**-40, 2.0**30, 211)

    def reach(sign):  # the farthest step within `depth` nats of the mode
        within = steps[g(mode + sign * steps) > g_mode - depth]
        return 2.0 * within.max() if len(within) else steps[0]

    lo, hi = mode - max(reach(-1.0), 20 * sd), mode + max(reach(1.0), 20 * sd)
    lo, hi = min(lo, -20 * sd), max(hi, 20 * sd)
    graded = np.concatenate([[0.0], np.geomspace(2.0**-30, 2.0**20, 26), -np.geomspace(2.0**-30, 2.0**20, 26)])
    points = [mode + sd * graded, sd * graded] + [k + sd * graded for k in kinks]
    points = np.unique(np.concatenate(points))
    points = points[(points > lo) & (points < hi)]

    below = steps[(g(mode + steps) < g_mode - 1.0) | (g(mode - steps) < g_mode - 1.0)]
    width = below.min() if len(below) else sd  # integrate in units of the tilted width
    pieces = np.concatenate([[lo], points, [hi]])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        i0, i1, i2 = _integrate(density, mode, width, pieces)
    mean = mode + i1 / i0
    var = i2 / i0 - (i1 / i0) ** 2
    return g_mode - 0.5 * np.log(2 * np.pi * v) + np.log(i0), mean / v, (var - v) / v**2


def _integrate(density, mode, width, pieces):
    """∫ density(δ) (δ - mode)ᵏ dδ, k = 0, 1, 2, piece by piece, in units of ``width``."""
    totals = np.zeros(3)
    for a, b in zip(pieces[:-1], pieces[1:]):
        ta, tb = (a - mode) / width, (b - mode) / width
        for k in range(3):
            integrand = lambda t, k=k: density(mode + width * t) * t**k
            totals[k] += integrate.quad(integrand, ta, tb, epsabs=1e-15, epsrel=1e-14, limit=200)[0]
    return totals * width ** np.arange(1, 4)
