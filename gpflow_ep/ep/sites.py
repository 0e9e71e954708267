r"""
Gaussian EP sites and the scalar site update, written once for every EP model.

A site is an unnormalised Gaussian in the scalar h_i (h_i = f_i for a full GP, h_i = υ_iᵀu for an
inducing-point model), held in natural parameters

    t̃_i(h_i) ∝ exp(-½ τ_i h_i² + ν_i h_i),      τ_i = 1/ṽ_i (site precision), ν_i = m̃_i/ṽ_i.

τ_i = 0 is a flat site (ṽ_i = ∞, the EP initialisation) and τ_i < 0 is legitimate for likelihoods
that are not log-concave (e.g. ``NoisyStep``). With power α (power EP; α = 1 is EP) one update of
site i, given the marginal q(h_i) = N(μ_i, σ_i²), is:

1. **Cavity** q^{\i} ∝ q / t̃_i^β (β = α, or β = 1 for ``cavity="full"``, the literal reading of
   Qi & Guo 2012's power EP, App. C), a rank-one downdate of q's precision along h_i. For *any*
   linear function h' of q's variables with q-moments (μ', σ'²) and Cov_q(h', h_i) = s' it gives
   (Sherman–Morrison; Hernández-Lobato & Hernández-Lobato 2016, eqs. 14–15, in a division-free form)

       d_i = 1 - β τ_i σ_i²,   shift_i = β (τ_i μ_i - ν_i) / d_i,   scale_i = β τ_i / d_i,
       mean^{\i}(h') = μ' + s' shift_i,      var^{\i}(h') = σ'² + scale_i s'².

   With h' = h_i (s' = σ_i²) this is σ_{\i}² = σ_i²/d_i, μ_{\i} = (μ_i - β ν_i σ_i²)/d_i. A model
   whose site variable moves between updates (minibatch SEP: h_i = υ_iᵀu with a fresh υ_i) takes
   the cavity of the new variable from the same downdate (:meth:`Cavity.of`). The cavity is
   improper when d_i ≤ 0 and the update is then skipped (and counted).
2. **Tilted moments** of p(y_i | h_i)^α q^{\i}(h_i) via (log Z, g = ∂log Z/∂μ_{\i},
   H = ∂²log Z/∂μ_{\i}²) from the site's factor (:mod:`gpflow_ep.ep.factors`).
3. **New site**: the natural parameters of (proj[p̂] / q^{\i})^{1/α} (GPML infEP, Minka 2004):

       τ_i^new = -H / (1 + σ_{\i}² H) / α,    ν_i^new = (g - μ_{\i} H) / (1 + σ_{\i}² H) / α;

   1 + σ_{\i}² H = Var_p̂ / σ_{\i}² is positive for any proper tilted distribution; otherwise the
   update is skipped. With site clipping (``min_precision`` ε) a precision below ε becomes ε and
   ν is chosen so that q^{\i} t̃_i^α keeps the tilted mean m̂ (the constraints (13) of
   Hernández-Lobato & Hernández-Lobato 2011; the mean rule is ours):
   ν = (m̂ (1/σ_{\i}² + αε) - μ_{\i}/σ_{\i}²) / α.
4. **Damping** ρ ∈ (0, 1] in natural parameters: τ_i ← (1 - ρ) τ_i + ρ τ_i^new (same for ν);
   ρ = 1 is undamped EP. Damping does not move the fixed points.
"""

from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_float

__all__ = ["SiteParameters", "Cavity", "cavity_distribution", "site_update", "clip_site", "damp"]


class SiteParameters(tf.Module):
    """
    Site natural parameters τ (``precision``) and ν (``natural_mean``), each [N, 1].

    They are EP *state*, not hyper-parameters: non-trainable ``tf.Variable``s, so they are saved by
    ``tf.train.Checkpoint`` and never appear in ``trainable_variables``; a model keeps them in its
    ``ep_state`` (:mod:`gpflow_ep.models.ep_state`), which ``print_summary(model)`` leaves out.
    Also kept per site, from its latest visit: ``dual`` = ∂log Z_i/∂(cavity mean) (Minka's per-site
    "α" in his kernel-EP toolbox, the quantity of Qi & Guo's convergence test; renamed here because
    α is the EP power) and ``relaxation`` = the relaxation precision b_i of relaxed EP.
    """

    def __init__(self, num_sites: int, name: str = "sites"):
        super().__init__(name=name)
        zeros = np.zeros((num_sites, 1))
        if num_sites == 0:
            # No site to keep (tied sites keep none): empty constants, not variables. A multi-worker
            # tf.distribute strategy broadcasts every new variable's initial value, and TensorFlow's
            # collective broadcast of an empty tensor crashes the process (a segmentation fault with
            # TensorFlow 2.21; tests/integration/test_training_multiworker.py trains tied sites so).
            empty = tf.constant(zeros, default_float())
            self.precision = self.natural_mean = self.dual = self.relaxation = empty
            return
        self.precision = tf.Variable(zeros, dtype=default_float(), trainable=False, name="precision")
        self.natural_mean = tf.Variable(zeros, dtype=default_float(), trainable=False, name="natural_mean")
        self.dual = tf.Variable(zeros, dtype=default_float(), trainable=False, name="dual")
        self.relaxation = tf.Variable(zeros, dtype=default_float(), trainable=False, name="relaxation")

    @property
    def num_sites(self) -> int:
        return int(self.precision.shape[0])

    def reset(self) -> None:
        """Flat sites (τ = ν = 0): q equals the prior."""
        self.store(*(tf.zeros_like(v) for v in (self.precision, self.natural_mean, self.dual, self.relaxation)))

    def assign(self, precision, natural_mean) -> None:
        if self.num_sites > 0:
            self.precision.assign(precision)
            self.natural_mean.assign(natural_mean)

    def store(self, precision, natural_mean, dual, relaxation) -> None:
        """Assign all four per-site arrays (nothing to store without sites)."""
        if self.num_sites == 0:
            return
        variables = (self.precision, self.natural_mean, self.dual, self.relaxation)
        for variable, value in zip(variables, (precision, natural_mean, dual, relaxation)):
            variable.assign(value)

    def read(self):
        """The current (τ, ν) as tensors, cut from any gradient (sites are held fixed)."""
        return tf.stop_gradient(tf.convert_to_tensor(self.precision)), tf.stop_gradient(
            tf.convert_to_tensor(self.natural_mean)
        )


class Cavity(NamedTuple):
    """
    The cavities of a set of sites (module docstring, step 1): the moments of the site variables
    under q^{\\i}, a validity mask, and the downdate coefficients ``shift``/``scale`` that give the
    cavity moments of any other linear function of q's variables (:meth:`of`).
    """

    mean: tf.Tensor
    var: tf.Tensor
    valid: tf.Tensor  # bool: the cavity is a proper Gaussian
    shift: tf.Tensor
    scale: tf.Tensor

    def of(self, mean, var, cross) -> "Cavity":
        """
        The cavity moments of other linear functions h' (one per site) with q-moments
        (``mean``, ``var``) and ``cross`` = Cov_q(h', h_i): mean + cross·shift, var + scale·cross².
        """
        new_mean = mean + cross * self.shift
        new_var = var + self.scale * tf.square(cross)
        valid = self.valid & (new_var >= 0.0) & tf.math.is_finite(new_mean) & tf.math.is_finite(new_var)
        return Cavity(tf.where(valid, new_mean, mean), tf.where(valid, new_var, var), valid, self.shift, self.scale)


@check_shapes(
    "marginal_mean: [N, 1]",
    "marginal_var: [N, 1]",
    "precision: [N, 1]",
    "natural_mean: [N, 1]",
)
def cavity_distribution(
    marginal_mean, marginal_var, precision, natural_mean, removed_fraction: float = 1.0, *, of=None
) -> Cavity:
    """
    Cavity q^{\\i} = q / t̃_i^β of every site from its marginal q(h_i) = N(μ_i, σ_i²) (module
    docstring, step 1); β = ``removed_fraction`` (``EPSettings.removed_fraction``).

    :param of: optional (mean, var, cross): evaluate the cavity directly on other linear functions
        h' of q's variables (``cavity_distribution(...).of(*of)`` in one step, see :meth:`Cavity.of`;
        SEP's minibatch refresh removes a site's old direction and reads its fresh one).
    """
    beta = removed_fraction
    den = 1.0 - beta * precision * marginal_var
    valid = (den > 0.0) & tf.math.is_finite(den)
    safe_den = tf.where(valid, den, tf.ones_like(den))
    shift = beta * (precision * marginal_mean - natural_mean) / safe_den
    scale = beta * precision / safe_den
    zero = tf.zeros_like(shift)
    downdate = Cavity(marginal_mean, marginal_var, valid, tf.where(valid, shift, zero), tf.where(valid, scale, zero))
    # var = 0 is legitimate for a projection far from every inducing input (SEP: the FITC variance
    # carries the uncertainty); a zero *total* variance is caught by the site update's checks
    return downdate.of(*((marginal_mean, marginal_var, marginal_var) if of is None else of))


@check_shapes(
    "cavity.mean: [N, 1]",
    "cavity.var: [N, 1]",
    "tilted.log_z: [N, 1]",
    "return[0]: [N, 1]",
    "return[1]: [N, 1]",
    "return[2]: [N, 1]",
)
def site_update(cavity: Cavity, tilted, power: float = 1.0):
    """
    New site natural parameters from a cavity and its tilted moments (module docstring, step 3).

    :return: (precision, natural_mean, valid); invalid entries are zero and must not be used.
    """
    g, H = tilted.dlog_z, tilted.d2log_z
    den = 1.0 + cavity.var * H
    valid = (den > 0.0) & tf.math.is_finite(den) & tf.math.is_finite(g) & tf.math.is_finite(tilted.log_z)
    safe_den = tf.where(valid, den, tf.ones_like(den))
    new_precision = -H / safe_den / power
    new_natural_mean = (g - cavity.mean * H) / safe_den / power
    valid = valid & cavity.valid & tf.math.is_finite(new_precision) & tf.math.is_finite(new_natural_mean)
    zero = tf.zeros_like(new_precision)
    return tf.where(valid, new_precision, zero), tf.where(valid, new_natural_mean, zero), valid


@check_shapes(
    "precision: [N, 1]",
    "natural_mean: [N, 1]",
    "cavity.mean: [N, 1]",
    "return[0]: [N, 1]",
    "return[1]: [N, 1]",
)
def clip_site(precision, natural_mean, cavity: Cavity, tilted, power: float, min_precision: Optional[float]):
    """
    Site clipping (module docstring, step 3): precisions below ``min_precision`` become it, with ν
    chosen so that the site's marginal keeps the tilted mean. ``None`` returns the site unchanged.
    """
    if min_precision is None:
        return precision, natural_mean
    clipped = precision < min_precision
    safe_var = tf.where(cavity.var > 0.0, cavity.var, tf.ones_like(cavity.var))
    tilted_mean = cavity.mean + cavity.var * tilted.dlog_z
    clipped_nu = (tilted_mean * (1.0 / safe_var + power * min_precision) - cavity.mean / safe_var) / power
    return (
        tf.where(clipped, tf.fill(tf.shape(precision), tf.constant(min_precision, precision.dtype)), precision),
        tf.where(clipped, clipped_nu, natural_mean),
    )


def damp(old, new, damping):
    """(1 - ρ) old + ρ new: a damped step in natural parameters (module docstring, step 4)."""
    return old + damping * (new - old)
