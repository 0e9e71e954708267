r"""
Tilted moments: the only thing EP needs from a likelihood.

For a cavity N(f; m, v) and a likelihood term p(y | f) raised to the power α (α = 1 is EP,
α ≠ 1 is power EP) the tilted distribution is

    p̂(f) = p(y | f)^α N(f; m, v) / Z,      Z(m, v) = ∫ p(y | f)^α N(f; m, v) df.

Its mean and variance follow from the derivatives of log Z with respect to the cavity mean
(R&W eq. 3.58 and Seeger 2005):

    E_p̂[f]   = m + v ∂log Z/∂m
    Var_p̂[f] = v + v² ∂²log Z/∂m²

so every likelihood supplies the triple (log Z, ∂log Z/∂m, ∂²log Z/∂m²) through
:func:`tilted_moments`, a multiple-dispatch function on the likelihood class (like GPflow's
``Kuu``/``Kuf``). A likelihood registers its closed form next to its own code, with the function's ``register``
decorator (as GPflow registers ``Kuu``/``Kuf`` implementations)::

    @tilted_moments.register(MyLikelihood)
    def _my_tilted(likelihood, X, Y, cavity_mean, cavity_var, power):
        return log_z, dlog_z, d2log_z

(:mod:`gpflow_ep.likelihoods` does so for ``Probit``, ``NoisyStep`` and GPflow's ``Gaussian``).
Every other ``gpflow.likelihoods.ScalarLikelihood`` falls back to adaptive Gauss–Hermite
quadrature of its ``_scalar_log_prob``. :func:`tilted_expected_log_likelihood` (relaxed EP's T1)
has the same ``register``.
"""

from typing import Callable, NamedTuple, Optional

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.likelihoods import Likelihood, ScalarLikelihood
from gpflow.utilities import Dispatcher

__all__ = [
    "TiltedMoments",
    "tilted_moments",
    "tilted_expected_log_likelihood",
    "gauss_hermite_tilted_moments",
    "quadrature_tilted_moments",
    "log_normal_pdf",
    "HALF_LOG_2PI",
]

HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


class TiltedMoments(NamedTuple):
    """log Z of the tilted distribution and its first two derivatives w.r.t. the cavity mean."""

    log_z: tf.Tensor
    dlog_z: tf.Tensor
    d2log_z: tf.Tensor

    def mean_and_var(self, cavity_mean, cavity_var):
        """Tilted mean m + v ∂log Z and variance v + v² ∂²log Z."""
        return (
            cavity_mean + cavity_var * self.dlog_z,
            cavity_var + tf.square(cavity_var) * self.d2log_z,
        )


_dispatcher = Dispatcher("tilted_moments")


@check_shapes(
    "Y: [N, 1]",
    "cavity_mean: [batch..., N, 1]",
    "cavity_var: [batch..., N, 1]",
    "return[0]: [batch..., N, 1]",
    "return[1]: [batch..., N, 1]",
    "return[2]: [batch..., N, 1]",
)
def tilted_moments(
    likelihood: Likelihood,
    X: Optional[tf.Tensor],
    Y: tf.Tensor,
    cavity_mean: tf.Tensor,
    cavity_var: tf.Tensor,
    power: float = 1.0,
) -> TiltedMoments:
    """
    log Z, ∂log Z/∂m and ∂²log Z/∂m² of ∫ p(Y | f)^power N(f; cavity_mean, cavity_var) df.

    :param likelihood: any GPflow likelihood with a registered closed form, or any
        ``ScalarLikelihood`` (adaptive Gauss–Hermite quadrature).
    :param X: inputs passed on to the likelihood (may be ``None`` for input-free likelihoods).
    :param power: the power-EP fraction α ∈ (0, 1]; a Python float.

    Leading batch dimensions of the cavity broadcast against the sites (used to evaluate a grid of
    relaxed cavities at once).
    """
    implementation = _dispatcher.dispatch(type(likelihood))
    return TiltedMoments(*implementation(likelihood, X, Y, cavity_mean, cavity_var, power))


tilted_moments.register = _dispatcher.register


def log_normal_pdf(z):
    """log N(z; 0, 1)."""
    return -0.5 * tf.square(z) - HALF_LOG_2PI


# --------------------------------------------------------------------------------------------
# Quadrature fallback
# --------------------------------------------------------------------------------------------


@_dispatcher.register(ScalarLikelihood)
def quadrature_tilted_moments(likelihood, X, Y, m, v, power):
    """Any ``ScalarLikelihood``: adaptive Gauss–Hermite quadrature of its ``_scalar_log_prob``."""

    def log_lik(F):  # F: [Q, N, 1]
        return likelihood._scalar_log_prob(X, F, Y)

    return gauss_hermite_tilted_moments(log_lik, m, v, power)


@_dispatcher.register(Likelihood)
def _unsupported(likelihood, X, Y, m, v, power):
    raise ValueError(
        f"likelihood {type(likelihood).__name__} has no EP tilted moments: it is not a "
        "ScalarLikelihood and no closed form is registered with gpflow_ep.ep.tilted_moments"
    )


def _gauss_hermite(log_lik, m, v, power, num_points):
    """(log Z, mean, var, E[log p]) of p^α N(f; m, v) by two-stage Gauss–Hermite (see below)."""
    x, w = np.polynomial.hermite_e.hermegauss(num_points)  # ∫ h(x) e^{-x²/2} dx ≈ Σ w h(x)
    x = tf.constant(x.reshape((-1,) + (1,) * len(m.shape)), dtype=m.dtype)
    log_w = tf.constant(np.log(w / np.sqrt(2.0 * np.pi)).reshape(x.shape), dtype=m.dtype)

    def weighted(log_terms, f, log_p):
        log_z = tf.reduce_logsumexp(log_terms, axis=0)
        p = tf.exp(log_terms - log_z)
        mean = tf.reduce_sum(p * f, axis=0)
        var = tf.reduce_sum(p * tf.square(f - mean), axis=0)
        expected = tf.reduce_sum(tf.math.multiply_no_nan(log_p, p), axis=0)
        return log_z, mean, var, expected

    sd = tf.sqrt(v)
    f1 = m + sd * x
    log_p1 = log_lik(f1)
    _, mu1, var1, _ = weighted(log_w + power * log_p1, f1, log_p1)
    mu1 = tf.where(tf.math.is_finite(mu1), mu1, m)
    var1 = tf.where(tf.math.is_finite(var1) & (var1 > 1e-6 * v), var1, v)

    sd1 = tf.sqrt(var1)
    f2 = mu1 + sd1 * x
    log_p2 = log_lik(f2)
    # log N(f; m, v) - log N(f; μ₁, σ₁²) for f = μ₁ + σ₁ x
    log_ratio = -0.5 * tf.square(f2 - m) / v - 0.5 * tf.math.log(v) + 0.5 * tf.square(x) + tf.math.log(sd1)
    return weighted(log_w + power * log_p2 + log_ratio, f2, log_p2)


def gauss_hermite_tilted_moments(
    log_lik: Callable[[tf.Tensor], tf.Tensor],
    m: tf.Tensor,
    v: tf.Tensor,
    power: float = 1.0,
    num_points: int = 64,
):
    r"""
    Tilted moments of p(y|f)^α N(f; m, v) by two-stage (adaptive) Gauss–Hermite quadrature.

    Stage 1 integrates against the cavity: f_k = m + √v x_k. Its normalised weights give a first
    estimate (μ₁, σ₁²) of the tilted moments. Stage 2 re-centres the rule on N(μ₁, σ₁²) and
    integrates the ratio p^α N(f; m, v) / N(f; μ₁, σ₁²), which is smooth and O(1) where the tilted
    mass is, so the rule stays accurate even when the cavity and the tilted distribution are far
    apart (|z| ≫ 1). All sums are done in log space.

    :param log_lik: maps F of shape [Q, ..., N, 1] to log p(y | F) of the same shape.
    :return: (log Z, ∂log Z/∂m, ∂²log Z/∂m²), each of the shape of ``m``.
    """
    log_z, mean, var, _ = _gauss_hermite(log_lik, m, v, power, num_points)
    return log_z, (mean - m) / v, (var - v) / tf.square(v)


# --------------------------------------------------------------------------------------------
# Expected log-likelihood under the tilted distribution (relaxed EP's T1)
# --------------------------------------------------------------------------------------------

_expected_dispatcher = Dispatcher("tilted_expected_log_likelihood")


def tilted_expected_log_likelihood(likelihood: Likelihood, X, Y, cavity_mean, cavity_var) -> tf.Tensor:
    """
    E_p̂[log p(Y | f)] under the tilted distribution p̂ ∝ p(Y | f) N(f; cavity_mean, cavity_var)
    (relaxed EP's T1, rep spec §4.5); closed form where registered, Gauss–Hermite otherwise.
    Leading batch dimensions of the cavity broadcast against Y [N, 1].
    """
    implementation = _expected_dispatcher.dispatch(type(likelihood))
    return implementation(likelihood, X, Y, cavity_mean, cavity_var)


tilted_expected_log_likelihood.register = _expected_dispatcher.register


@_expected_dispatcher.register(ScalarLikelihood)
def _scalar_expected(likelihood, X, Y, m, v):
    """Any ``ScalarLikelihood``: the tilted weights of the adaptive Gauss–Hermite rule."""
    return _gauss_hermite(lambda F: likelihood._scalar_log_prob(X, F, Y), m, v, 1.0, 64)[3]
