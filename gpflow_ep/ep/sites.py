r"""
Gaussian EP sites and the scalar site update, written once for every EP model.

A site is an unnormalised Gaussian in the scalar h_i (h_i = f_i for a full GP, h_i = υ_iᵀu for an
inducing-point model), held in natural parameters

    t̃_i(h_i) ∝ exp(-½ τ_i h_i² + ν_i h_i),      τ_i = 1/ṽ_i (site precision), ν_i = m̃_i/ṽ_i.

τ_i = 0 is a flat site (ṽ_i = ∞, the EP initialisation) and τ_i < 0 is legitimate for likelihoods
that are not log-concave (e.g. ``NoisyStep``). With power α (power EP; α = 1 is EP) one update of
site i, given the marginal q(h_i) = N(μ_i, σ_i²), is:

1. **Cavity** q^{\i} ∝ q / t̃_i^α, in the division-free form of SEP spec §2.1:

       d_i = 1 - α τ_i σ_i²,   σ_{\i}² = σ_i² / d_i,   μ_{\i} = (μ_i - α ν_i σ_i²) / d_i;

   the cavity is improper when d_i ≤ 0 and the update is then skipped (and counted).
   ``cavity="full"`` removes the whole site (α replaced by 1 here), the literal reading of
   Qi & Guo's power EP (rep spec §5).
2. **Tilted moments** of p(y_i | h_i)^α q^{\i}(h_i) via (log Z, g = ∂log Z/∂μ_{\i},
   H = ∂²log Z/∂μ_{\i}²) from :func:`~gpflow_ep.ep.tilted_moments`.
3. **New site**: the natural parameters of (proj[p̂] / q^{\i})^{1/α} (GPML infEP, Minka 2004):

       τ_i^new = -H / (1 + σ_{\i}² H) / α,    ν_i^new = (g - μ_{\i} H) / (1 + σ_{\i}² H) / α;

   1 + σ_{\i}² H = Var_p̂ / σ_{\i}² is positive for any proper tilted distribution; otherwise the
   update is skipped.
4. **Damping** ρ ∈ (0, 1] in natural parameters: τ_i ← (1 - ρ) τ_i + ρ τ_i^new (same for ν);
   ρ = 1 is undamped EP. Damping does not move the fixed points.
"""

from typing import NamedTuple

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_float

__all__ = ["SiteParameters", "Cavity", "cavity", "site_update", "damp", "CAVITY_CHOICES"]

CAVITY_CHOICES = ("fractional", "full")


class SiteParameters(tf.Module):
    """
    Site natural parameters τ (``precision``) and ν (``natural_mean``), each [N, 1].

    They are EP *state*, not hyper-parameters: non-trainable ``tf.Variable``s, so they show in
    ``print_summary``, are saved by ``tf.train.Checkpoint`` and never appear in
    ``trainable_variables`` (DESIGN principle 3).
    """

    def __init__(self, num_sites: int, name: str = "sites"):
        super().__init__(name=name)
        zeros = np.zeros((num_sites, 1))
        self.precision = tf.Variable(zeros, dtype=default_float(), trainable=False, name="precision")
        self.natural_mean = tf.Variable(zeros, dtype=default_float(), trainable=False, name="natural_mean")
        # what the latest visit of each site saw: α_i = ∂log Z_i/∂(cavity mean) (Minka's "sample
        # weighting", the paper's convergence statistic) and the relaxation precision b_i (relaxed EP)
        self.alpha = tf.Variable(zeros, dtype=default_float(), trainable=False, name="alpha")
        self.relaxation = tf.Variable(zeros, dtype=default_float(), trainable=False, name="relaxation")

    @property
    def num_sites(self) -> int:
        return int(self.precision.shape[0])

    def reset(self) -> None:
        """Flat sites (τ = ν = 0): q equals the prior."""
        for v in (self.precision, self.natural_mean, self.alpha, self.relaxation):
            v.assign(tf.zeros_like(v))

    def assign(self, precision, natural_mean) -> None:
        self.precision.assign(precision)
        self.natural_mean.assign(natural_mean)

    def read(self):
        """The current (τ, ν) as tensors, cut from any gradient (sites are held fixed)."""
        return tf.stop_gradient(self.precision.read_value()), tf.stop_gradient(self.natural_mean.read_value())


class Cavity(NamedTuple):
    mean: tf.Tensor
    var: tf.Tensor
    valid: tf.Tensor  # bool: the cavity is a proper Gaussian


@check_shapes(
    "marginal_mean: [N, 1]",
    "marginal_var: [N, 1]",
    "precision: [N, 1]",
    "natural_mean: [N, 1]",
)
def cavity(marginal_mean, marginal_var, precision, natural_mean, power=1.0, kind="fractional"):
    """Cavity q^{\\i} = q / t̃_i^α of every site (module docstring, step 1)."""
    removed = power if kind == "fractional" else 1.0
    den = 1.0 - removed * precision * marginal_var
    valid = (den > 0.0) & tf.math.is_finite(den)
    safe_den = tf.where(valid, den, tf.ones_like(den))
    var = marginal_var / safe_den
    mean = (marginal_mean - removed * natural_mean * marginal_var) / safe_den
    # var = 0 is legitimate for a projection far from every inducing input (SEP: the FITC variance
    # carries the uncertainty); a zero *total* variance is caught by the site update's checks
    valid = valid & (var >= 0.0) & tf.math.is_finite(mean) & tf.math.is_finite(var)
    return Cavity(tf.where(valid, mean, marginal_mean), tf.where(valid, var, marginal_var), valid)


def site_update(cavity_mean, cavity_var, tilted, power=1.0):
    """
    New site natural parameters from a cavity and its tilted moments (module docstring, step 3).

    :return: (precision, natural_mean, valid); invalid entries are zero and must not be used.
    """
    g, H = tilted.dlog_z, tilted.d2log_z
    den = 1.0 + cavity_var * H
    valid = (den > 0.0) & tf.math.is_finite(den) & tf.math.is_finite(g) & tf.math.is_finite(tilted.log_z)
    safe_den = tf.where(valid, den, tf.ones_like(den))
    new_precision = -H / safe_den / power
    new_natural_mean = (g - cavity_mean * H) / safe_den / power
    valid = valid & tf.math.is_finite(new_precision) & tf.math.is_finite(new_natural_mean)
    zero = tf.zeros_like(new_precision)
    return tf.where(valid, new_precision, zero), tf.where(valid, new_natural_mean, zero), valid


def damp(old, new, damping):
    """(1 - ρ) old + ρ new: a damped step in natural parameters (module docstring, step 4)."""
    return old + damping * (new - old)
