r"""
EP tilted moments of GPflow's own ``Bernoulli`` and ``StudentT`` likelihoods (registered on import).

* ``Bernoulli(invlink=inv_probit)`` (GPflow's default) squashes the probit,
  p(y | f) = ε + (1 - 2ε) Φ(y f) with ε = 10⁻³ and y = 2Y - 1, so at α = 1 (R&W eq. 3.82 with the
  label-noise mixture of Minka 2001, §3.6.1), with s = √(1 + v), z = y m / s,

      log Z = log(ε + (1 - 2ε) Φ(z)),   ∂log Z/∂m = y r / s,   ∂²log Z/∂m² = -r (z + r) / s²,

  r = (1 - 2ε) φ(z) / Z.
* ``Bernoulli(invlink=tf.sigmoid)``, the logistic: the adaptive quadrature
  (:func:`gpflow_ep.ep.quadrature.adaptive_tilted_integral`) of the stable log σ(y f) =
  ``tf.math.log_sigmoid(y f)`` instead of GPflow's log(1 - σ(f)), which is log 0 for f ≳ 37, with the
  logistic's bend at f = 0 declared as a kink (its log density has poles at ±iπ, so the mesh is graded
  there). Accurate to 1e-8 relative over cavity variances 1e-4…1e3, means within ±50.
* ``StudentT``: the trapezoid rule over the mixing precision of its scale-mixture form
  (:mod:`gpflow_ep.likelihoods.student_t_tilted`), falling back to the same quadrature with the
  density's peak f = y declared as a kink when α(ν + 1)/2 < 1.25, and for the expected log-likelihood
  (the tilted density is bimodal when the cavity is far from y, and the peak can be much narrower
  than the cavity).
* Any other ``Bernoulli`` link: the quadrature of GPflow's own log density.
* ``Ordinal`` (Chu & Ghahramani, 2005): GPflow's density of class k with bin edges b_{k-1} < b_k
  (b_{-1} = -∞, b_K = +∞) is p(k | f) = (1 - 2ε) [Φ((b_k - f)/σ) - Φ((b_{k-1} - f)/σ)] + δ, with the
  probit squashing ε = 10⁻³ and the floor δ = 10⁻⁶ of its implementation. Integrating against
  N(f; m, v) (Chu & Ghahramani 2005, eqs. 18–19), with s = √(σ² + v) and z_j = (b_j - m)/s,

      Z = (1 - 2ε) D + δ,   D = Φ(z_k) - Φ(z_{k-1}),
      ∂log Z/∂m = -(1 - 2ε) [φ(z_k) - φ(z_{k-1})] / (s Z),
      ∂²log Z/∂m² = -(1 - 2ε) [z_k φ(z_k) - z_{k-1} φ(z_{k-1})] / (s² Z) - (∂log Z/∂m)²,

  with log D from the tail in which it is not a difference of numbers near 1, and the infinite end
  of an outer class handled without evaluating Φ(±∞) (``tf.math.erf(±inf)`` is NaN in some
  TensorFlow builds, which makes GPflow's own ``Ordinal.log_prob`` NaN for the first and last class).
  At α ≠ 1, and for the expected log-likelihood, the adaptive quadrature of the same density
  evaluated this way, with the class's finite edges (and points σ/2…4σ around them) as kinks.
"""

import numpy as np
import tensorflow as tf
from gpflow.likelihoods import Bernoulli, Ordinal, StudentT
from gpflow.likelihoods.utils import inv_probit

from ..ep.quadrature import adaptive_tilted_integral
from ..ep.tilted import (
    log_normal_pdf,
    quadrature_tilted_moments,
    tilted_expected_log_likelihood,
    tilted_kinks,
    tilted_moments,
)
from ..numerics import log_ndtr
from .labels import binary_labels_to_sign
from .student_t_tilted import student_t_tilted

__all__ = [
    "logistic_log_prob",
    "squashed_probit_tilted",
    "ordinal_log_prob",
    "ordinal_tilted",
    "is_logistic",
    "log_ndtr_difference",
    "ordinal_z",
    "PROBIT_JITTER",
]

#: GPflow's probit squashing: inv_probit(f) = (1 - 2j) Φ(f) + j (gpflow.likelihoods.utils.inv_probit)
PROBIT_JITTER = 1e-3
_ORDINAL_FLOOR = 1e-6  # gpflow.likelihoods.Ordinal._scalar_log_prob


def is_logistic(likelihood):
    """Whether a GPflow likelihood's inverse link is the logistic sigmoid."""
    return likelihood.invlink in (tf.sigmoid, tf.math.sigmoid, tf.nn.sigmoid)


def logistic_log_prob(Y, F):
    """log σ(y F), y = 2Y - 1, without log(1 - σ): finite for every finite F."""
    return tf.math.log_sigmoid(binary_labels_to_sign(Y) * F)


def squashed_probit_tilted(y, m, v, jitter=PROBIT_JITTER):
    """log Z, ∂log Z/∂m, ∂²log Z/∂m² of (ε + (1 - 2ε) Φ(y f)) N(f; m, v) (module docstring)."""
    s2 = 1.0 + v
    s = tf.sqrt(s2)
    z = y * m / s
    log_scaled = np.log1p(-2.0 * jitter) + log_ndtr(z)
    log_z = tf.reduce_logsumexp(tf.stack([tf.fill(tf.shape(z), tf.constant(np.log(jitter), z.dtype)), log_scaled]), 0)
    r = tf.exp(np.log1p(-2.0 * jitter) + log_normal_pdf(z) - log_z)
    return log_z, y * r / s, -r * (z + r) / s2


def _bernoulli_log_lik(likelihood, X, Y):
    if is_logistic(likelihood):
        return lambda F: logistic_log_prob(Y, F)
    return lambda F: likelihood._scalar_log_prob(X, F, Y)


@tilted_moments.register(Bernoulli)
def _bernoulli_tilted(likelihood, X, Y, m, v, power):
    if likelihood.invlink is inv_probit and power == 1.0:
        return squashed_probit_tilted(binary_labels_to_sign(Y), m, v)
    if not is_logistic(likelihood):
        return quadrature_tilted_moments(likelihood, X, Y, m, v, power)
    log_lik = _bernoulli_log_lik(likelihood, X, Y)
    return adaptive_tilted_integral(log_lik, m, v, power, kinks=tilted_kinks(likelihood, X, Y))[:3]


@tilted_expected_log_likelihood.register(Bernoulli)
def _bernoulli_expected(likelihood, X, Y, m, v):
    log_lik = _bernoulli_log_lik(likelihood, X, Y)
    return adaptive_tilted_integral(log_lik, m, v, 1.0, kinks=tilted_kinks(likelihood, X, Y)).expected_log_lik


@tilted_kinks.register(Bernoulli)
def _bernoulli_kinks(likelihood, X, Y):
    """The logistic bends at f = 0 on a scale of 1 (poles of log σ at ±iπ); other links are smooth."""
    return tf.zeros_like(Y)[None] if is_logistic(likelihood) else None


tilted_moments.register(StudentT)(student_t_tilted)


@tilted_kinks.register(StudentT)
def _student_t_kinks(likelihood, X, Y):
    """The peak f = y, of width ``scale``, often much narrower than the cavity."""
    return Y[None]


def log_ndtr_difference(z_hi, z_lo):
    """log(Φ(z_hi) - Φ(z_lo)) for z_hi > z_lo, from the lower tail, or the upper when z_lo > 0."""
    upper = z_lo > 0.0
    a = tf.where(upper, -z_lo, z_hi)
    b = tf.where(upper, -z_hi, z_lo)
    log_a = log_ndtr(a)
    x = log_ndtr(b) - log_a  # < 0
    log1mexp = tf.where(x > -np.log(2.0), tf.math.log(-tf.math.expm1(x)), tf.math.log1p(-tf.exp(x)))
    return log_a + log1mexp


def _ordinal_edges(likelihood, Y):
    """The class's edges b_{k-1}, b_k and masks of the infinite ones; infinite edges replaced by 0."""
    edges = tf.convert_to_tensor(likelihood.bin_edges, dtype=tf.float64)
    k = tf.cast(Y, tf.int32)
    K = tf.size(edges)
    lo = tf.gather(edges, tf.maximum(k - 1, 0))
    hi = tf.gather(edges, tf.minimum(k, K - 1))
    return lo, hi, k == 0, k == K


def ordinal_z(likelihood, Y, m, s):
    """
    z_{k-1}, z_k of the module docstring. An infinite upper end becomes max(z_{k-1}, 0) + 40 (and a
    lower one min(z_k, 0) - 40): there Φ is 1 (or 0) and φ is 0 in float64 relative to the class's
    mass, which is at least Φ(-|z|) of its finite end (φ(|z| + 40)/Φ(-|z|) < e^-800).
    """
    lo, hi, no_lo, no_hi = _ordinal_edges(likelihood, Y)
    z_lo, z_hi = (lo - m) / s, (hi - m) / s
    return tf.where(no_lo, tf.minimum(z_hi, 0.0) - 40.0, z_lo), tf.where(no_hi, tf.maximum(z_lo, 0.0) + 40.0, z_hi)


def _ordinal_log_z(likelihood, Y, m, s):
    z_lo, z_hi = ordinal_z(likelihood, Y, m, s)
    log_scaled_d = np.log1p(-2.0 * PROBIT_JITTER) + log_ndtr_difference(z_hi, z_lo)
    floor = tf.fill(tf.shape(log_scaled_d), tf.constant(np.log(_ORDINAL_FLOOR), log_scaled_d.dtype))
    return tf.reduce_logsumexp(tf.stack([log_scaled_d, floor]), 0), z_lo, z_hi


def ordinal_log_prob(likelihood, Y, F):
    """log p(Y | F) of GPflow's ``Ordinal`` (module docstring), finite for every class and finite F."""
    return _ordinal_log_z(likelihood, Y, F, likelihood.sigma)[0]


def ordinal_tilted(likelihood, Y, m, v):
    """log Z, ∂log Z/∂m, ∂²log Z/∂m² of p(Y | f) N(f; m, v) for GPflow's ``Ordinal`` (module docstring)."""
    s2 = tf.square(likelihood.sigma) + v
    s = tf.sqrt(s2)
    log_z, z_lo, z_hi = _ordinal_log_z(likelihood, Y, m, s)
    scale = np.log1p(-2.0 * PROBIT_JITTER) - log_z
    r_hi, r_lo = tf.exp(scale + log_normal_pdf(z_hi)), tf.exp(scale + log_normal_pdf(z_lo))
    d1 = -(r_hi - r_lo) / s
    d2 = -(z_hi * r_hi - z_lo * r_lo) / s2 - tf.square(d1)
    return log_z, d1, d2


def _ordinal_kinks(likelihood, Y):
    """The class's finite edges and points at ±σ/2, ±σ, ±2σ, ±4σ around them: the density steps on
    the scale σ, which can be much finer than the cavity, and the mesh's own grading around a kink
    is relative to the tilted density's width."""
    lo, hi, no_lo, no_hi = _ordinal_edges(likelihood, Y)
    offsets = tf.constant([-4.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 4.0], tf.float64)[:, None, None]
    sigma = tf.cast(likelihood.sigma, tf.float64)
    edges = tf.stack([tf.where(no_lo, hi, lo), tf.where(no_hi, lo, hi)])
    return tf.reshape(edges[:, None] + sigma * offsets[None], tf.concat([[-1], tf.shape(Y)], 0))


@tilted_moments.register(Ordinal)
def _ordinal_tilted_moments(likelihood, X, Y, m, v, power):
    if power == 1.0:
        return ordinal_tilted(likelihood, Y, m, v)
    log_lik = lambda F: ordinal_log_prob(likelihood, Y, F)  # noqa: E731
    return adaptive_tilted_integral(log_lik, m, v, power, kinks=_ordinal_kinks(likelihood, Y))[:3]


@tilted_expected_log_likelihood.register(Ordinal)
def _ordinal_expected(likelihood, X, Y, m, v):
    log_lik = lambda F: ordinal_log_prob(likelihood, Y, F)  # noqa: E731
    return adaptive_tilted_integral(log_lik, m, v, 1.0, kinks=_ordinal_kinks(likelihood, Y)).expected_log_lik


@tilted_kinks.register(Ordinal)
def _ordinal_tilted_kinks(likelihood, X, Y):
    """The class's finite bin edges, where the density steps on the scale σ."""
    return _ordinal_kinks(likelihood, Y)
