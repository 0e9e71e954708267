r"""
The spike-and-slab prior factors f_i(w_i) = p_s N(w_i | 0, v_s) + (1 - p_s) δ(w_i) as EP site
factors of the engine (:class:`~gpflow_ep.ep.SiteFactor`; Hernández-Lobato & Hernández-Lobato 2011, eqs. 38–41).

With the normalised cavity N(w; m̂, ŝ) the tilted normaliser is the two-component mixture

    Z = ∫ N(w; m̂, ŝ) f(w) dw = (1 - p_s) N(0 | m̂, ŝ) + p_s N(0 | m̂, ŝ + v_s),

(the paper's Ẑ of eq. 11 up to the cavity's normaliser), whose slab responsibility is π = sig(ℓ) with the
inclusion log-odds (the paper's p_i of eq. 38 plus ρ_s)

    ℓ = ρ_s + log N(0 | m̂, ŝ + v_s) - log N(0 | m̂, ŝ),   ρ_s = log p_s - log(1 - p_s),

and whose moments are (T1, T2, T5) with the slab-branch posterior N(M_s, V_s),
V_s = ŝ v_s/(ŝ + v_s), M_s = m̂ v_s/(ŝ + v_s):

    E[w] = π M_s,     Var[w] = π V_s + π (1 - π) M_s²      (floored at 1e-12, our guard).

The engine takes them as ∂log Z/∂m̂ = (E[w] - m̂)/ŝ and ∂²log Z/∂m̂² = (Var[w] - ŝ)/ŝ². The tilted
distribution is often wider than the cavity, so the site precision it asks for is negative: the
model clips it at ε (``min_precision``, the paper's constraints 13). A δ has no power, so only α = 1.

The energy of the convergent double loop needs the normaliser of the *unnormalised* cavity
exp(v̂₁w - ½v̂₂w²) (the paper's eq. 11), here in closed form without the cancellation of the generic
log Z + log ∫ exp(v̂₁w - ½v̂₂w²) dw (both grow like v̂₁²/(2v̂₂) when the cavity is wide):

    log Ẑ(v̂) = logaddexp(log(1 - p_s), log p_s - ½ log(1 + v_s v̂₂) + v_s v̂₁² / (2(1 + v_s v̂₂))).
"""

import tensorflow as tf

from ..ep import SiteFactor, TiltedMoments

__all__ = ["SpikeSlabFactor", "MIN_TILTED_VARIANCE"]

#: floor of the tilted variance (π → 0 makes it underflow); a guard of ours, not in the paper
MIN_TILTED_VARIANCE = 1e-12


def _log_normal_at_zero(mean, var):
    return -0.5 * tf.math.log(2.0 * 3.141592653589793 * var) - 0.5 * tf.square(mean) / var


class SpikeSlabFactor(SiteFactor):
    """
    d identical spike-and-slab factors (module docstring).

    :param slab_variance: v_s > 0 (scalar tensor).
    :param prior_inclusion: p_s ∈ (0, 1) (scalar tensor).
    """

    def __init__(self, slab_variance, prior_inclusion):
        self.slab_variance, self.prior_inclusion = slab_variance, prior_inclusion

    def inclusion_log_odds(self, cavity_mean, cavity_var) -> tf.Tensor:
        """ℓ: the log-odds that w_i comes from the slab under the tilted distribution."""
        p = self.prior_inclusion
        return (
            tf.math.log(p)
            - tf.math.log1p(-p)
            + _log_normal_at_zero(cavity_mean, cavity_var + self.slab_variance)
            - _log_normal_at_zero(cavity_mean, cavity_var)
        )

    def moments(self, cavity_mean, cavity_var):
        """(log Z, E[w], Var[w], π) of the tilted distribution."""
        p, vs = self.prior_inclusion, self.slab_variance
        spike = tf.math.log1p(-p) + _log_normal_at_zero(cavity_mean, cavity_var)
        slab = tf.math.log(p) + _log_normal_at_zero(cavity_mean, cavity_var + vs)
        log_z = tf.reduce_logsumexp(tf.stack([spike, slab]), axis=0)
        pi = tf.sigmoid(slab - spike)
        ratio = vs / (cavity_var + vs)
        slab_mean, slab_var = cavity_mean * ratio, cavity_var * ratio
        mean = pi * slab_mean
        var = tf.maximum(pi * slab_var + pi * (1.0 - pi) * tf.square(slab_mean), MIN_TILTED_VARIANCE)
        return log_z, mean, var, pi

    def cavity_log_normaliser(self, v1, v2) -> tf.Tensor:
        """log Ẑ(v̂) of the unnormalised cavity exp(v̂₁w - ½v̂₂w²) in closed form (module docstring)."""
        p, vs = self.prior_inclusion, self.slab_variance
        stretch = 1.0 + vs * v2
        slab = tf.math.log(p) - 0.5 * tf.math.log(stretch) + 0.5 * vs * tf.square(v1) / stretch
        spike = tf.math.log1p(-p) * tf.ones_like(slab)
        return tf.reduce_logsumexp(tf.stack([spike, slab]), axis=0)

    def tilted(self, cavity_mean, cavity_var, power=1.0) -> TiltedMoments:
        if power != 1.0:
            raise ValueError(f"power: a spike (δ) has no power; spike-and-slab EP needs power=1, got {power}")
        log_z, mean, var, _ = self.moments(cavity_mean, cavity_var)
        return TiltedMoments(log_z, (mean - cavity_mean) / cavity_var, (var - cavity_var) / tf.square(cavity_var))

    def site(self, index) -> "SpikeSlabFactor":
        return self
