"""The noisy step (label-flip) likelihood of Qi & Guo (2012), eq. 8."""

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import inherit_check_shapes
from gpflow import Parameter
from gpflow.likelihoods import ScalarLikelihood

from ..ep.tilted import log_normal_pdf, tilted_expected_log_likelihood, tilted_moments
from ..numerics import log_ndtr, ndtr
from ..validation import register_binary_likelihood, require_float64
from .labels import binary_labels_to_sign


def _half_sigmoid() -> tfp.bijectors.Bijector:
    """Bijector from the real line onto (0, 0.5)."""
    return tfp.bijectors.Chain([tfp.bijectors.Scale(np.float64(0.5)), tfp.bijectors.Sigmoid()])


@register_binary_likelihood
class NoisyStep(ScalarLikelihood):
    r"""
    Step likelihood with label-flip probability ε (Qi & Guo 2012, eq. 8), with y = 2Y - 1:

        p(Y | f) = ε + (1 - 2ε) Θ(y f),       Θ(a) = 1 if a ≥ 0 else 0,

    i.e. the label is the sign of f, flipped with probability ε ∈ (0, 0.5). ε is a GPflow
    ``Parameter`` constrained to (0, 0.5); set ``set_trainable(lik.epsilon, False)`` to keep it fixed
    as in the paper, where it equals the injected flip rate.

    Closed forms under f ~ N(μ, σ²), with z = y μ / σ:

        predictive:             p(Y) = ε + (1 - 2ε) Φ(z)
        variational expectation E[log p(Y | f)] = log(1 - ε) Φ(z) + log(ε) Φ(-z)

    The likelihood is not log-concave, so EP sites can have negative precision (whenever the cavity
    mean lies on the wrong side of the step).
    """

    def __init__(self, epsilon: float = 0.1, **kwargs):
        require_float64(type(self).__name__)
        super().__init__(**kwargs)
        epsilon = float(epsilon)
        if not 0.0 < epsilon < 0.5:
            raise ValueError(f"epsilon must lie in (0, 0.5); got {epsilon}")
        self.epsilon = Parameter(epsilon, transform=_half_sigmoid(), name="epsilon")

    def _sign_z(self, Y, Fmu, Fvar):
        y = binary_labels_to_sign(Y)
        return y * Fmu / tf.sqrt(Fvar)

    def _scalar_log_prob(self, X, F, Y):
        eps = tf.convert_to_tensor(self.epsilon)
        y = binary_labels_to_sign(Y)
        correct = tf.cast(y * F >= 0, F.dtype)
        return correct * tf.math.log1p(-eps) + (1.0 - correct) * tf.math.log(eps)

    def _conditional_mean(self, X, F):
        eps = tf.convert_to_tensor(self.epsilon)
        return eps + (1.0 - 2.0 * eps) * tf.cast(F >= 0, F.dtype)

    def _conditional_variance(self, X, F):
        p = self._conditional_mean(X, F)
        return p - tf.square(p)

    @inherit_check_shapes
    def _predict_mean_and_var(self, X, Fmu, Fvar):
        """p = ε + (1 - 2ε) Φ(z) and the Bernoulli variance p (1 - p), 1 - p = ε + (1 - 2ε) Φ(-z), z = μ/σ."""
        eps = tf.convert_to_tensor(self.epsilon)
        z = Fmu / tf.sqrt(Fvar)
        p = eps + (1.0 - 2.0 * eps) * ndtr(z)
        return p, p * (eps + (1.0 - 2.0 * eps) * ndtr(-z))

    @inherit_check_shapes
    def _predict_log_density(self, X, Fmu, Fvar, Y):
        eps = tf.convert_to_tensor(self.epsilon)
        z = self._sign_z(Y, Fmu, Fvar)
        # log(ε + (1 - 2ε) Φ(z)) = logaddexp(log ε, log(1 - 2ε) + log Φ(z))
        log_p = tf.math.reduce_logsumexp(
            tf.stack([tf.math.log(eps) * tf.ones_like(z), tf.math.log1p(-2.0 * eps) + log_ndtr(z)]),
            axis=0,
        )
        return tf.reduce_sum(log_p, axis=-1)

    @inherit_check_shapes
    def _variational_expectations(self, X, Fmu, Fvar, Y):
        eps = tf.convert_to_tensor(self.epsilon)
        z = self._sign_z(Y, Fmu, Fvar)
        ve = tf.math.log1p(-eps) * ndtr(z) + tf.math.log(eps) * ndtr(-z)
        return tf.reduce_sum(ve, axis=-1)


@tilted_moments.register(NoisyStep)
def _noisy_step_tilted(likelihood, X, Y, m, v, power):
    r"""
    Noisy step at any power α (Qi & Guo 2012, App. C, Eq. (41)): p^α = ε^α + κ Θ(y f) with
    κ = (1 - ε)^α - ε^α, so with z = y m / √v

        Z = ε^α + κ Φ(z),   ∂log Z/∂m = y κ φ(z) / (Z √v) =: g,   ∂²log Z/∂m² = -g (m / v + g).

    log Z = logaddexp(α log ε, log κ + log Φ(z)) never underflows because ε > 0.
    """
    eps = tf.convert_to_tensor(likelihood.epsilon)
    y = binary_labels_to_sign(Y)
    sd = tf.sqrt(v)
    z = y * m / sd
    log_eps_a = power * tf.math.log(eps)
    log_kappa = tf.math.log(tf.pow(1.0 - eps, power) - tf.pow(eps, power))
    log_z = tf.math.reduce_logsumexp(tf.stack([log_eps_a * tf.ones_like(z), log_kappa + log_ndtr(z)]), axis=0)
    g = y * tf.exp(log_kappa + log_normal_pdf(z) - log_z) / sd
    return log_z, g, -g * (m / v + g)


@tilted_expected_log_likelihood.register(NoisyStep)
def _noisy_step_expected(likelihood, X, Y, m, v):
    r"""T1 = {[(1-ε) log(1-ε) - ε log ε] Φ(z) + ε log ε} / Ẑ,  Ẑ = ε + (1-2ε) Φ(z) (App. B)."""
    eps = tf.convert_to_tensor(likelihood.epsilon)
    log_z, _, _ = _noisy_step_tilted(likelihood, X, Y, m, v, 1.0)
    z = binary_labels_to_sign(Y) * m / tf.sqrt(v)
    a = (1.0 - eps) * tf.math.log1p(-eps) - eps * tf.math.log(eps)
    return a * tf.exp(log_ndtr(z) - log_z) + eps * tf.math.log(eps) * tf.exp(-log_z)
