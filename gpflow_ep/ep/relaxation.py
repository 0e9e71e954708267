r"""
Relaxed EP (Qi & Guo 2012, §3–4 and App. B): a relaxation step of the EP engine.

Before moment matching, the cavity N(h_c, λ_c) of site i is multiplied by a Gaussian relaxation
factor centred on the site's current mean m_i, with precision b_i (paper eq. 11; b is a
*precision*, the paper's eq. 11 read with b a precision):

    r_i(f) ∝ exp(-½ b_i (f - m_i)²),
    relaxed cavity N(h̃_c, λ̃):  λ̃ = λ_c / (1 + b λ_c),  h̃_c = (h_c + b λ_c m_i) / (1 + b λ_c)   (eq. 13)

and the site is moment-matched against the relaxed cavity (eqs. 14–15). b_i minimises the
penalised objective Q(b) + c|b| by a bounded 1-D line search; b = 0 is EP exactly.

With the tilted quantities at the relaxed cavity — log Ẑ, g = ∂log Ẑ/∂h̃_c, H = ∂²log Ẑ/∂h̃_c²,
r = 1 + λ̃H (= ã/λ̃), tilted mean h̃ = h̃_c + λ̃g, variance ã = λ̃r, F = ã + h̃², and the
"relaxed site" τ_b = -H/r, ν_b = (g - h̃_c H)/r — App. B eq. 36 reads

    Q_paper(b) = T1 + T2 + T3 + T4 + T5 + T6 + T7 + c|b|,
      T1 = E_{p_b}[log t]                  T2 = (τ_b F - h̃ ν_b)/2       T3 = -½ log(1 + (b + τ_b) λ_c)
      T4 = ½ log(1 + b λ_c)                T5 = -½ b (m_i² - 2 m_i h̃ + F)
      T6 = ½ b (m_i - h_c)² / (1 + b λ_c)  T7 = -log Ẑ,

(T2 is the paper's (F - h̃ m_b)/(2 v_b) without the division by a possibly infinite v_b.) The paper's
Q is not the KL it claims to be (App. B, eqs. 35–40: it differs by terms in b); ``objective="exact"`` uses instead

    KL_exact(b) = KL(p_b ‖ N(h̃, ã)) = T1 - log Ẑ + ½ log r + ½ (1 - r) - ½ λ̃ g².

The new message (the paper's step (e), eqs. 12–17, read so that it agrees with its own formula), in natural parameters:

    reading A (default):  (τ, ν) = (τ_b, ν_b)                    — the exact minimiser of eq. 5
    reading B (eq. 16):   (τ, ν) = (τ_b + b, ν_b + b m_i)         — r absorbed into the site
    reading C (text):     (τ, ν) = (τ_b - b, ν_b - b m_i)         — r "removed" from the site

For likelihoods other than ``NoisyStep`` the paper's formulas generalise through T1, which
:func:`~gpflow_ep.ep.tilted.tilted_expected_log_likelihood` provides for any scalar likelihood.
"""

from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
import tensorflow as tf

__all__ = [
    "Relaxation",
    "RelaxedTerms",
    "relaxed_terms",
    "relaxation_objective",
    "penalised_line_search",
    "relaxed_message",
    "MESSAGE_UPDATES",
    "OBJECTIVES",
]

MESSAGE_UPDATES = ("A", "B", "C")
OBJECTIVES = ("paper", "exact")


@dataclass(frozen=True)
class Relaxation:
    """
    The relaxation step's settings.

    :param penalty: c ≥ 0, the weight of the l1 penalty c|b| (c → ∞ is EP). Its scale is that of a
        precision: REP with (κK, c) equals REP with (K, c/κ) (the kernel amplitude only rescales the penalty).
    :param message_update: "A" (default), "B" or "C" (module docstring).
    :param objective: "paper" (eq. 36 verbatim, default) or "exact" (the true relaxed KL).
    :param allow_negative_b: also search b ∈ (-0.999/λ_c, 0) (the paper's penalty c·abs(b_i) allows negative b).
    :param grid_size: log-spaced grid points on (0, b_max], b_max = ``b_max_scale``/λ_c.
    :param golden_steps: golden-section refinements around the best grid point.
    """

    penalty: float
    message_update: str = "A"
    objective: str = "paper"
    allow_negative_b: bool = False
    grid_size: int = 60
    golden_steps: int = 30
    b_max_scale: float = 100.0


class RelaxedTerms(NamedTuple):
    """Quantities of the relaxed tilted distribution p_b ∝ t · N(h̃_c, λ̃) at one b."""

    var: tf.Tensor  # λ̃
    mean: tf.Tensor  # h̃_c
    log_z: tf.Tensor  # log Ẑ
    dlog_z: tf.Tensor  # g (the per-site α of the paper)
    ratio: tf.Tensor  # r = ã / λ̃
    tilted_mean: tf.Tensor  # h̃
    site_precision: tf.Tensor  # τ_b
    site_natural_mean: tf.Tensor  # ν_b


def relaxed_terms(b, cavity_mean, cavity_var, centre, tilted_fn) -> RelaxedTerms:
    """The relaxed cavity (eq. 13) and its tilted moments (eqs. 14–15) at relaxation precision b."""
    scale = 1.0 + b * cavity_var
    var = cavity_var / scale
    mean = (cavity_mean + b * cavity_var * centre) / scale
    t = tilted_fn(mean, var)
    ratio = 1.0 + var * t.d2log_z
    return RelaxedTerms(
        var,
        mean,
        t.log_z,
        t.dlog_z,
        ratio,
        mean + var * t.dlog_z,
        -t.d2log_z / ratio,
        (t.dlog_z - mean * t.d2log_z) / ratio,
    )


def relaxation_objective(b, cavity_mean, cavity_var, centre, tilted_fn, expected_log_lik_fn, relaxation):
    """Q(b) + c|b| for the chosen objective; +∞ wherever it is not finite."""
    q = relaxed_terms(b, cavity_mean, cavity_var, centre, tilted_fn)
    t1 = expected_log_lik_fn(q.mean, q.var)
    if relaxation.objective == "paper":
        F = q.var * q.ratio + tf.square(q.tilted_mean)
        value = (
            t1
            + 0.5 * (q.site_precision * F - q.tilted_mean * q.site_natural_mean)
            - 0.5 * tf.math.log(1.0 + (b + q.site_precision) * cavity_var)
            + 0.5 * tf.math.log(1.0 + b * cavity_var)
            - 0.5 * b * (tf.square(centre) - 2.0 * centre * q.tilted_mean + F)
            + 0.5 * b * tf.square(centre - cavity_mean) / (1.0 + b * cavity_var)
            - q.log_z
        )
    else:
        value = t1 - q.log_z + 0.5 * tf.math.log(q.ratio) + 0.5 * (1.0 - q.ratio) - 0.5 * q.var * tf.square(q.dlog_z)
    value = value + relaxation.penalty * tf.abs(b)
    return tf.where(tf.math.is_finite(value) & (q.ratio > 0.0), value, tf.constant(np.inf, value.dtype))


_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


def penalised_line_search(objective: Callable, b_max, b_min=None, grid_size: int = 60, golden_steps: int = 30):
    """
    argmin of a 1-D objective per site over [b_min, b_max] (Qi & Guo 2012, App. B;
    the line search is ours, the paper says only "line search").

    1. Evaluate at b = 0 and at ``grid_size`` log-spaced points in [1e-5 b_max, b_max] (and the
       mirrored grid on [b_min, 0) when ``b_min`` is given).
    2. If the best grid point is b = 0, return 0 exactly (the l1 kink makes this the typical case).
    3. Otherwise refine by golden section between the best point's grid neighbours and keep the
       refinement only if it improves.

    Non-finite objective values count as +∞, so the result never has a non-finite objective.

    :param objective: maps b of shape [K, N, 1] to objective values of the same shape.
    :param b_max: [N, 1] upper bounds (> 0); ``b_min``: [N, 1] lower bounds (< 0) or ``None``.
    :return: b [N, 1].
    """
    dtype = b_max.dtype
    fractions = tf.constant(np.logspace(-5.0, 0.0, grid_size)[:, None, None], dtype)
    grids = [tf.zeros_like(b_max)[None], fractions * b_max[None]]
    if b_min is not None:
        grids.insert(0, fractions[::-1] * b_min[None])
    grid = tf.concat(grids, axis=0)  # [K, N, 1], ascending along K
    values = objective(grid)
    values = tf.where(tf.math.is_finite(values), values, tf.constant(np.inf, dtype))
    k_best = tf.argmin(values, axis=0, output_type=tf.int32)  # [N, 1]
    K = tf.shape(grid)[0]

    def at(k):
        return tf.gather_nd(tf.transpose(grid, [1, 2, 0]), k[..., None], batch_dims=2)

    b_grid = at(k_best)
    v_grid = tf.reduce_min(values, axis=0)
    lo, hi = at(tf.maximum(k_best - 1, 0)), at(tf.minimum(k_best + 1, K - 1))

    def finite_or_inf(v):
        return tf.where(tf.math.is_finite(v), v, tf.constant(np.inf, dtype))

    def golden(i, lo, hi):
        x1 = hi - _GOLDEN * (hi - lo)
        x2 = lo + _GOLDEN * (hi - lo)
        f = finite_or_inf(objective(tf.stack([x1, x2])))
        keep_left = f[0] <= f[1]
        return i + 1, tf.where(keep_left, lo, x1), tf.where(keep_left, x2, hi)

    def refine():
        _, a, c = tf.while_loop(lambda i, *_: i < golden_steps, golden, (tf.constant(0), lo, hi))
        b_ref = 0.5 * (a + c)
        v_ref = finite_or_inf(objective(b_ref[None])[0])
        return tf.where(v_ref < v_grid, b_ref, b_grid)

    at_zero = tf.equal(b_grid, 0.0)
    # the typical case: the l1 kink puts every site's optimum at exactly 0, nothing to refine
    b = tf.cond(tf.reduce_all(at_zero), lambda: tf.zeros_like(b_grid), refine)
    return tf.where(at_zero, tf.zeros_like(b), b)


def relaxed_message(terms: RelaxedTerms, b, centre, message_update: str):
    """The new site (τ, ν) under reading A, B or C, and its validity mask."""
    tau, nu = terms.site_precision, terms.site_natural_mean
    if message_update == "B":
        tau, nu = tau + b, nu + b * centre
    elif message_update == "C":
        tau, nu = tau - b, nu - b * centre
    valid = (terms.ratio > 0.0) & tf.math.is_finite(tau) & tf.math.is_finite(nu) & tf.math.is_finite(terms.log_z)
    zero = tf.zeros_like(tau)
    return tf.where(valid, tau, zero), tf.where(valid, nu, zero), valid
