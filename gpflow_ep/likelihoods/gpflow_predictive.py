r"""
Predictive moments (:func:`gpflow_ep.ep.predictive_moments`) of GPflow's own likelihoods whose
``predict_mean_and_var`` is GPflow's 20-point Gauss–Hermite rule, registered on import. Under
q(f) = N(f; μ, σ²):

* ``Poisson`` (rate λ(f) = b g(f), b the bin size), ``Exponential`` (mean λ(f) = g(f), variance λ²) and
  ``Gamma`` (shape k: mean k λ, variance k λ²), with the exp link g = exp, from E_q[e^{af}] = e^{aμ + a²σ²/2}:

      Poisson:      E[y] = λ̄ = b e^{μ + σ²/2},     Var[y] = λ̄ + λ̄² (e^{σ²} − 1),
      Exponential:  E[y] = e^{μ + σ²/2},           Var[y] = e^{2μ + σ²} (2e^{σ²} − 1),
      Gamma:        E[y] = k e^{μ + σ²/2},         Var[y] = k e^{2μ + σ²} (1 + (k + 1)(e^{σ²} − 1)),

  with e^{σ²} − 1 by ``expm1`` (no cancellation at narrow predictives); with any other link, the
  adaptive quadrature of the (non-negative) conditional moments
  (:func:`~gpflow_ep.ep.predictive.expectation_of_positive`, :func:`~gpflow_ep.ep.predictive.variance_of_positive`):
  E[y] = E_q[m(f)] and Var[y] = E_q[v(f)] + Var_q[m(f)] for the conditional mean m and variance v.
* ``Bernoulli``: with p(f) = g(f), E[y] = p̄ = E_q[p] and Var[y] = p̄ (1 − p̄) (the conditional variance
  p(1 − p) plus Var_q[p]). The probit link (GPflow's default, with its squashing ε = 10⁻³) is GPflow's
  closed form ε + (1 − 2ε) Φ(μ/√(1 + σ²)) (R&W eq. 3.82); the logistic link is the quadrature of
  log σ(f) and, for 1 − p̄, of log σ(−f) (each accurate where the other is near 1), with the logistic's
  bend at f = 0 declared to the mesh; other links the quadrature of log g(f) and log(1 − g(f)).
* ``StudentT``: conditional mean f and constant conditional variance c = scale² ν/(ν − 2), so
  E[y] = μ and Var[y] = σ² + c exactly (Gauss–Hermite's E[c + f²] − μ² cancels when μ² ≫ σ² + c).
* ``Ordinal`` (Chu & Ghahramani 2005): GPflow's class probabilities given f are
  (1 − 2ε) [Φ((b_k − f)/s) − Φ((b_{k-1} − f)/s)] (ε = 10⁻³, its probit squashing; they sum to 1 − 2ε),
  s the likelihood's σ, b_{-1} = −∞, b_K = +∞, and with z_j = (b_j − μ)/√(s² + σ²) (eqs. 18–19)

      P_k = E_q[p(k | f)] = (1 − 2ε) [Φ(z_k) − Φ(z_{k-1})],
      E[y] = M = Σ_k k P_k,    Var[y] = Σ_k k² P_k − M² = Σ_k (k − M)² P_k + 2ε M²,

  the last form without cancellation, and log(Φ(z_k) − Φ(z_{k-1})) from the tail in which it is not a
  difference of numbers near 1; the infinite ends are not evaluated (GPflow's own rule evaluates
  Φ(±∞) by ``tf.math.erf(±inf)``, NaN in TensorFlow 2.21, so its ``predict_mean_and_var`` is NaN).
"""

import numpy as np
import tensorflow as tf
from gpflow.likelihoods import Bernoulli, Exponential, Gamma, Ordinal, Poisson, StudentT
from gpflow.likelihoods.utils import inv_probit

from ..ep.predictive import expectation_of_positive, predictive_moments, variance_of_positive
from .gpflow_tilted import PROBIT_JITTER, is_logistic, log_ndtr_difference, ordinal_z

__all__ = ["quadrature_mean_and_var"]


def quadrature_mean_and_var(conditional_mean, conditional_variance, Fmu, Fvar, kinks=None):
    """
    E[y] = E_q[m(f)] and Var[y] = E_q[v(f)] + Var_q[m(f)] by the adaptive quadrature, for a
    non-negative conditional mean m and variance v (functions of F [Q, ..., N, 1], elementwise).
    """
    mean = expectation_of_positive(lambda F: tf.math.log(conditional_mean(F)), Fmu, Fvar, kinks)
    expected_var = expectation_of_positive(lambda F: tf.math.log(conditional_variance(F)), Fmu, Fvar, kinks)
    return mean, expected_var + variance_of_positive(conditional_mean, mean, Fmu, Fvar, kinks)


def _exp_link_moments(Fmu, Fvar):
    """(e^{μ + σ²/2}, e^{2μ + σ²}, e^{σ²} − 1)."""
    return tf.exp(Fmu + 0.5 * Fvar), tf.exp(2.0 * Fmu + Fvar), tf.math.expm1(Fvar)


@predictive_moments.register(Poisson)
def _poisson_predictive(likelihood, X, Fmu, Fvar):
    binsize = tf.cast(likelihood.binsize, Fmu.dtype)
    if likelihood.invlink is tf.exp:
        first, _, excess = _exp_link_moments(Fmu, Fvar)
        rate = binsize * first
        return rate, rate + tf.square(rate) * excess
    rate = lambda F: binsize * likelihood.invlink(F)  # noqa: E731
    return quadrature_mean_and_var(rate, rate, Fmu, Fvar)


@predictive_moments.register(Exponential)
def _exponential_predictive(likelihood, X, Fmu, Fvar):
    if likelihood.invlink is tf.exp:
        first, second, excess = _exp_link_moments(Fmu, Fvar)
        return first, second * (1.0 + 2.0 * excess)
    mean = likelihood.invlink
    return quadrature_mean_and_var(mean, lambda F: tf.square(mean(F)), Fmu, Fvar)


@predictive_moments.register(Gamma)
def _gamma_predictive(likelihood, X, Fmu, Fvar):
    shape = tf.cast(likelihood._shape(X), Fmu.dtype)  # GPflow's shape k, a parameter or a function of X
    if likelihood.invlink is tf.exp:
        first, second, excess = _exp_link_moments(Fmu, Fvar)
        return shape * first, shape * second * (1.0 + (shape + 1.0) * excess)
    mean = lambda F: shape * likelihood.invlink(F)  # noqa: E731
    return quadrature_mean_and_var(mean, lambda F: shape * tf.square(likelihood.invlink(F)), Fmu, Fvar)


@predictive_moments.register(Bernoulli)
def _bernoulli_predictive(likelihood, X, Fmu, Fvar):
    if likelihood.invlink is inv_probit:
        return likelihood.predict_mean_and_var(X, Fmu, Fvar)  # GPflow's closed form
    if is_logistic(likelihood):
        kinks = tf.zeros_like(Fmu)[None]  # the logistic's bend at f = 0 (as for its tilted moments)
        p = expectation_of_positive(tf.math.log_sigmoid, Fmu, Fvar, kinks)
        q = expectation_of_positive(lambda F: tf.math.log_sigmoid(-F), Fmu, Fvar, kinks)
    else:
        p = expectation_of_positive(lambda F: tf.math.log(likelihood.invlink(F)), Fmu, Fvar)
        q = expectation_of_positive(lambda F: tf.math.log1p(-likelihood.invlink(F)), Fmu, Fvar)
    return p, p * q


@predictive_moments.register(StudentT)
def _student_t_predictive(likelihood, X, Fmu, Fvar):
    return tf.identity(Fmu), Fvar + likelihood.conditional_variance(X, Fmu)


@predictive_moments.register(Ordinal)
def _ordinal_predictive(likelihood, X, Fmu, Fvar):
    num_classes = tf.size(likelihood.bin_edges) + 1
    classes = tf.cast(tf.range(num_classes), Fmu.dtype)
    k = tf.reshape(classes, tf.concat([[-1], tf.ones([tf.rank(Fmu)], tf.int32)], 0))  # [K, 1, ..., 1]
    s = tf.sqrt(tf.square(tf.cast(likelihood.sigma, Fmu.dtype)) + Fvar)
    z_lo, z_hi = ordinal_z(likelihood, k, Fmu, s)  # [K, ..., N, 1]
    P = tf.exp(np.log1p(-2.0 * PROBIT_JITTER) + log_ndtr_difference(z_hi, z_lo))
    mean = tf.reduce_sum(k * P, axis=0)
    var = tf.reduce_sum(tf.square(k - mean) * P, axis=0) + 2.0 * PROBIT_JITTER * tf.square(mean)
    return mean, var
