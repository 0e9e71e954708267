"""The exact probit likelihood p(y | f) = Φ(y f)."""

import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow.likelihoods import ScalarLikelihood

from ..ep.tilted import log_normal_pdf, quadrature_tilted_moments, tilted_moments
from ..numerics import log_ndtr, ndtr
from ..validation import register_binary_likelihood, require_float64
from .labels import binary_labels_to_sign


@register_binary_likelihood
class Probit(ScalarLikelihood):
    r"""
    Exact probit Bernoulli likelihood, with Y in {0, 1} and y = 2Y - 1:

        p(Y | f) = Φ(y f).

    GPflow's ``Bernoulli`` squashes Φ into [1e-3, 1 - 1e-3], which moves the EP log marginal
    likelihood by about 0.05 nats; this class does not, so it matches GPML and GPy.

    Closed forms (R&W eq. 3.80–3.82), with s² = 1 + σ²:

        p(Y = 1) = E_{N(f; μ, σ²)}[Φ(f)] = Φ(μ / s)
        log p(Y) = log Φ(y μ / s)

    ``variational_expectations`` E[log Φ(y f)] has no closed form; it uses GPflow's Gauss–Hermite
    quadrature, exactly like ``gpflow.likelihoods.Bernoulli``.
    """

    def __init__(self, **kwargs):
        require_float64(type(self).__name__)
        super().__init__(**kwargs)

    def _scalar_log_prob(self, X, F, Y):
        return log_ndtr(binary_labels_to_sign(Y) * F)

    def _conditional_mean(self, X, F):
        return ndtr(F)

    def _conditional_variance(self, X, F):
        p = ndtr(F)
        return p - tf.square(p)

    @inherit_check_shapes
    def _predict_mean_and_var(self, X, Fmu, Fvar):
        """p = Φ(μ/s) and the Bernoulli variance p (1 - p), with 1 - p = Φ(-μ/s) (no cancellation as p → 1)."""
        z = Fmu / tf.sqrt(1.0 + Fvar)
        p = ndtr(z)
        return p, p * ndtr(-z)

    @inherit_check_shapes
    def _predict_log_density(self, X, Fmu, Fvar, Y):
        y = binary_labels_to_sign(Y)
        return tf.reduce_sum(log_ndtr(y * Fmu / tf.sqrt(1.0 + Fvar)), axis=-1)


@tilted_moments.register(Probit)
def _probit_tilted(likelihood, X, Y, m, v, power):
    r"""
    Probit, α = 1 (R&W eqs. 3.82–3.84): with y = 2Y - 1, s = √(1 + v), z = y m / s,

        log Z = log Φ(z),   ∂log Z/∂m = y r / s,   ∂²log Z/∂m² = -r (z + r) / s²,

    r = φ(z)/Φ(z) evaluated as exp(log φ(z) - log Φ(z)), stable for z ≪ 0. Φ(·)^α has no closed
    form for α ≠ 1, so power EP uses the quadrature fallback.
    """
    if power != 1.0:
        return quadrature_tilted_moments(likelihood, X, Y, m, v, power)
    y = binary_labels_to_sign(Y)
    log_z, dlog_z, d2log_z = probit_log_z(y * m, 1.0 + v)
    return log_z, y * dlog_z, d2log_z


def probit_log_z(m, s2):
    r"""
    log Φ(m/s) and its first two derivatives in m, s = √``s2`` (the probit's closed form, shared
    with the multi-class step factors): with z = m/s and r = φ(z)/Φ(z) = exp(log φ(z) - log Φ(z))
    (stable for z ≪ 0), ∂/∂m = r/s and ∂²/∂m² = -r(z + r)/s².
    """
    s = tf.sqrt(s2)
    z = m / s
    log_z = log_ndtr(z)
    r = tf.exp(log_normal_pdf(z) - log_z)
    return log_z, r / s, -r * (z + r) / s2
