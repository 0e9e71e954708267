r"""
The binary SVM hinge pseudo-likelihood of Polson & Scott (2011), as used by the Bayesian SVM
(Wistuba & Rawat 2018, §3.1, Eq. (3)), with labels Y in {0, 1} and y = 2Y - 1:

    L(y | f) = exp(-2 max(0, 1 - y f)),

the value of the paper's location-scale mixture Eq. (3) (their Eq. (2) prints the plain hinge in the
exponent; the factor 2 only rescales the regulariser). Its MAP estimate under a GP prior is an SVM.
It is a *pseudo*-likelihood: L(+1 | f) + L(-1 | f) ≠ 1 (2e⁻² at f = 0), so ELBOs and EP evidences
built on it are pseudo-evidences, comparable only between models with the same likelihood.

**Variational expectations**, per point, with b = 1 - y f, μ_b = 1 - y μ, σ_b² = v:

* ``bound="augmented"`` (default; the paper's method): the collapsed bound of the location-scale
  mixture with the optimal q(λ) = GIG(½, 1, E[b²]),  -μ_b - √(μ_b² + σ_b²). With q(λ) = GIG(½, 1, α)
  the term is -μ_b - ½(E[b²]/√α + √α), maximised at α = E[b²] (the paper's Eq. (40) and
  Algorithm 1, line 4). This corrects the per-point term printed in the paper's Eqs. (12) = (33),
  which exceeds it by 2√α + 1 - ½ log(π/2) and so grows without bound in α;
* ``bound="exact"``: E_q[log L] = -2 [μ_b Φ(μ_b/σ_b) + σ_b φ(μ_b/σ_b)] (tighter, same cost).

Both are lower bounds of E_q[log L]'s role in the ELBO (augmented ≤ exact), so either gives a true
lower bound of the log pseudo-evidence in ``gpflow.models.SVGP``/``VGP``.

**Prediction**: the label is sign(E[f]); ``predict_mean_and_var`` gives p(y = 1) =
P(f > 0) = Φ(μ/√v) (the vote probability, the paper's predictive rule in the limit of many samples),
and :meth:`BinaryHinge.variation_ratio` the paper's uncertainty score (§4.3.1, Eq. (13)) in that
limit, 1 - max(p, 1 - p).
These are not a proper Bayesian predictive of the pseudo-likelihood.

**EP** (not in the paper, which uses variational inference): the tilted normaliser of L^α under a
Gaussian cavity is closed form (κ = 2α; split the integral at y f = 1 and complete the square below),
registered with the engine below, so ``EPGPC``, ``PowerEP``, ``RelaxedEP``, ``SEPGPC`` and
``DGPAEP`` accept ``BinaryHinge``. L is log-concave, so EP's site precisions stay non-negative.
"""

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.likelihoods import ScalarLikelihood

from ..ep.tilted import log_normal_pdf, tilted_expected_log_likelihood, tilted_moments
from ..numerics import log_ndtr, ndtr
from ..validation import check_choice, register_binary_likelihood, require_float64
from .labels import binary_labels_to_sign

__all__ = ["BinaryHinge", "hinge_tilted_mixture"]

BOUNDS = ("augmented", "exact")


@register_binary_likelihood
class BinaryHinge(ScalarLikelihood):
    """
    L(Y | f) = exp(-2 max(0, 1 - y f)), y = 2Y - 1 (module docstring).

    :param bound: the data term of the ELBO: ``"augmented"`` (default, the paper's) or ``"exact"``.
    """

    def __init__(self, bound: str = "augmented", **kwargs):
        require_float64(type(self).__name__)
        super().__init__(**kwargs)
        self.bound = check_choice(bound, "bound", BOUNDS)

    def _scalar_log_prob(self, X, F, Y):
        return -2.0 * tf.maximum(0.0, 1.0 - binary_labels_to_sign(Y) * F)

    def _conditional_mean(self, X, F):
        """The SVM decision: 1 where f > 0 (the pseudo-likelihood has no class probability)."""
        return tf.cast(F > 0.0, F.dtype)

    def _conditional_variance(self, X, F):
        return tf.zeros_like(F)

    @inherit_check_shapes
    def _variational_expectations(self, X, Fmu, Fvar, Y):
        mu_b = 1.0 - binary_labels_to_sign(Y) * Fmu
        if self.bound == "augmented":
            ve = -mu_b - tf.sqrt(tf.square(mu_b) + Fvar)
        else:
            sd = tf.sqrt(Fvar)
            z = mu_b / sd
            ve = -2.0 * (mu_b * ndtr(z) + sd * tf.exp(log_normal_pdf(z)))
        return tf.reduce_sum(ve, axis=-1)

    @staticmethod
    def _z(Fmu, Fvar):
        return Fmu / tf.sqrt(tf.maximum(Fvar, np.finfo(np.float64).tiny))

    @inherit_check_shapes
    def _predict_mean_and_var(self, X, Fmu, Fvar):
        """The vote probability p = Φ(μ/σ) and its Bernoulli variance p (1 - p), 1 - p = Φ(-μ/σ)."""
        z = self._z(Fmu, Fvar)
        p = ndtr(z)
        return p, p * ndtr(-z)

    @inherit_check_shapes
    def _predict_log_density(self, X, Fmu, Fvar, Y):
        return tf.reduce_sum(log_ndtr(binary_labels_to_sign(Y) * self._z(Fmu, Fvar)), axis=-1)

    @check_shapes("Fmu: [N, 1]", "Fvar: [N, 1]", "return: [N, 1]")
    def variation_ratio(self, Fmu, Fvar):
        """The paper's uncertainty score (eq. 13) for S → ∞ samples: 1 - max(p, 1 - p) ∈ [0, ½]."""
        p = ndtr(self._z(Fmu, Fvar))
        return 1.0 - tf.maximum(p, 1.0 - p)


def hinge_tilted_mixture(mean, var, kappa):
    r"""
    The tilted distribution ∝ exp(-κ max(0, 1 - g)) N(g; μ, v) as a two-part mixture:
    N(μ, v) on [1, ∞) with weight Z₁ = Φ(a₁), a₁ = (μ - 1)/σ, and N(μ + κv, v) on (-∞, 1] with
    weight Z₂ = exp(κ(μ - 1) + κ²v/2) Φ(c), c = (1 - μ - κv)/σ.

    :return: log Z, E[g], Var[g] = w₁v₁ + w₂v₂ + w₁w₂(m₁ - m₂)² (no cancellation of squares), and
        (w₂, m₂): the weight and mean of the part g ≤ 1.
    """
    sd = tf.sqrt(var)
    a1 = (mean - 1.0) / sd
    c = (1.0 - mean - kappa * var) / sd
    log_z1 = log_ndtr(a1)
    log_z2 = kappa * (mean - 1.0) + 0.5 * kappa**2 * var + log_ndtr(c)
    log_z = tf.reduce_logsumexp(tf.stack([log_z1, log_z2]), axis=0)
    w1, w2 = tf.exp(log_z1 - log_z), tf.exp(log_z2 - log_z)
    r1 = tf.exp(log_normal_pdf(a1) - log_z1)  # inverse Mills ratios φ/Φ
    r2 = tf.exp(log_normal_pdf(c) - log_ndtr(c))
    m1, v1 = mean + sd * r1, var * tf.maximum(1.0 - a1 * r1 - tf.square(r1), 0.0)
    m2, v2 = mean + kappa * var - sd * r2, var * tf.maximum(1.0 - c * r2 - tf.square(r2), 0.0)
    tilted_mean = w1 * m1 + w2 * m2
    tilted_var = w1 * v1 + w2 * v2 + w1 * w2 * tf.square(m1 - m2)
    return log_z, tilted_mean, tilted_var, (w2, m2)


@tilted_moments.register(BinaryHinge)
def _hinge_tilted(likelihood, X, Y, m, v, power):
    r"""
    L^α with κ = 2α on g = y f (cavity N(y m, v)): log Z and, from the mixture's moments,
    ∂log Z/∂m = y (E[g] - y m)/v and ∂²log Z/∂m² = (Var[g] - v)/v².
    """
    y = binary_labels_to_sign(Y)
    log_z, mean_g, var_g, _ = hinge_tilted_mixture(y * m, v, 2.0 * power)
    return log_z, y * (mean_g - y * m) / v, (var_g - v) / tf.square(v)


@tilted_expected_log_likelihood.register(BinaryHinge)
def _hinge_expected(likelihood, X, Y, m, v):
    """E_p̂[log L] = -2 E_p̂[max(0, 1 - g)] = -2 w₂ (1 - E[g | g ≤ 1]) (only the part g ≤ 1 pays)."""
    y = binary_labels_to_sign(Y)
    _, _, _, (w2, m2) = hinge_tilted_mixture(y * m, v, 2.0)
    return -2.0 * w2 * (1.0 - m2)
