r"""
Predictive moments of an observation: the mean and variance of y* under a Gaussian predictive
q(f*) = N(f*; μ, σ²) of its latent value, what a model's ``predict_y`` returns. By the laws of total
expectation and variance,

    E[y*] = E_q[E[y | f]],      Var[y*] = E_q[Var[y | f]] + Var_q[E[y | f]].

GPflow's ``ScalarLikelihood.predict_mean_and_var`` evaluates E_q[E[y | f]] and
E_q[Var[y | f] + E[y | f]²] by a 20-point Gauss–Hermite rule. That rule is exact for conditional
moments that are polynomials of degree < 40 in f (the Gaussian, Student-t and Laplace likelihoods),
but not for the others: for GPflow's ``Poisson`` with its exp link under σ = 3 its variance is 0.4 %
off (E_q[e^{2f}] = e^{2μ + 2σ²} is a Gaussian 6σ from the rule's centre), for the logistic
``Bernoulli`` its mean 3·10⁻⁴ relative; and the difference E[y²] − E[y]² loses digits when the
predictive is narrow.

:func:`predictive_moments` dispatches on the likelihood class, as :func:`~gpflow_ep.ep.tilted_moments`
does: closed forms, and for other conditional moments the package's adaptive quadrature
(:func:`~gpflow_ep.ep.quadrature.adaptive_tilted_integral`) through :func:`expectation_of_positive`
and :func:`variance_of_positive`. A likelihood registers its own with ``predictive_moments.register``;
:mod:`gpflow_ep.likelihoods.gpflow_predictive` registers those of GPflow's ``Bernoulli``, ``Poisson``,
``Exponential``, ``Gamma``, ``StudentT`` and ``Ordinal``. Every other likelihood uses its own
``predict_mean_and_var``: closed forms for GPflow's ``Gaussian`` and the package's ``Probit``,
``NoisyStep``, ``BinaryHinge`` and ``Laplace``, GPflow's Gauss–Hermite rule for a ``ScalarLikelihood``
without one (exact when its conditional moments are polynomials in f).

**The quadrature of a non-negative conditional moment.** For g(f) ≥ 0, E_q[g] is the normaliser of
the "tilted" integral ∫ exp(log g(f)) N(f; μ, σ²) df at power 1, which the adaptive rule computes to
1e-8 relative with its mesh built around the product g · N (so a g that grows like e^f, whose mass
under q lies σ² beyond μ, is resolved), and

    Var_q[g] = E_q[(g − E_q[g])²] = ∫ exp(2 log |g(f) − E_q[g]|) N(f; μ, σ²) df,

the same rule at power 2: its integrand is smooth (the square has no kink where g crosses its mean)
and non-negative, and it does not lose the digits E_q[g²] − E_q[g]² loses when q is narrow.
"""

from typing import Callable, Optional

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import MeanAndVariance
from gpflow.likelihoods import Likelihood
from gpflow.utilities import Dispatcher

from .quadrature import adaptive_tilted_integral

__all__ = ["predictive_moments", "expectation_of_positive", "variance_of_positive"]

_dispatcher = Dispatcher("predictive_moments")


@check_shapes(
    "Fmu: [batch..., latent_dim]",
    "Fvar: [batch..., latent_dim]",
    "return[0]: [batch..., observation_dim]",
    "return[1]: [batch..., observation_dim]",
)
def predictive_moments(likelihood: Likelihood, X, Fmu: tf.Tensor, Fvar: tf.Tensor) -> MeanAndVariance:
    """
    E[y*] and Var[y*] under p(y*) = ∫ p(y* | f) N(f; Fmu, Fvar) df (module docstring): a registered
    closed form or accurate quadrature, else ``likelihood.predict_mean_and_var``.

    :param likelihood: any GPflow likelihood.
    :param X: the inputs, passed on to the likelihood (may be ``None`` for input-free likelihoods).
    :param Fmu: the predictive means μ of the latent values.
    :param Fvar: the predictive variances σ² of the latent values (marginals).
    """
    return _dispatcher.dispatch(type(likelihood))(likelihood, X, Fmu, Fvar)


predictive_moments.register = _dispatcher.register


@_dispatcher.register(Likelihood)
def _own_predict_mean_and_var(likelihood, X, Fmu, Fvar):
    """The likelihood's own ``predict_mean_and_var`` (closed form, or GPflow's Gauss–Hermite rule)."""
    return likelihood.predict_mean_and_var(X, Fmu, Fvar)


def expectation_of_positive(
    log_g: Callable[[tf.Tensor], tf.Tensor], mean: tf.Tensor, var: tf.Tensor, kinks: Optional[tf.Tensor] = None
) -> tf.Tensor:
    """
    E[g(f)] under N(f; ``mean``, ``var``) for a non-negative g given by ``log_g`` (−∞ where g = 0): the
    adaptive tilted integral of g at power 1 (module docstring), 1e-8 relative.

    :param log_g: maps F of shape [Q, ..., N, 1] to log g(F) of the same shape (elementwise).
    :param mean: [..., N, 1] Gaussian means; ``var`` their variances, the same shape.
    :param kinks: optional [K, ..., N, 1] values of f where g is not smooth, as for
        :func:`~gpflow_ep.ep.quadrature.adaptive_tilted_integral`.
    """
    return tf.exp(adaptive_tilted_integral(log_g, mean, var, 1.0, kinks=kinks).log_z)


def variance_of_positive(
    g: Callable[[tf.Tensor], tf.Tensor],
    expectation: tf.Tensor,
    mean: tf.Tensor,
    var: tf.Tensor,
    kinks: Optional[tf.Tensor] = None,
) -> tf.Tensor:
    """
    Var[g(f)] = E[(g(f) − E[g])²] under N(f; ``mean``, ``var``), with ``expectation`` = E[g]
    (:func:`expectation_of_positive`): the adaptive tilted integral of the absolute value of g − E[g]
    at power 2 (module docstring), free of the cancellation of E[g²] − E[g]².

    :param g: maps F of shape [Q, ..., N, 1] to g(F) of the same shape (elementwise).
    """
    log_deviation = lambda F: tf.math.log(tf.abs(g(F) - expectation))  # noqa: E731
    return tf.exp(adaptive_tilted_integral(log_deviation, mean, var, 2.0, kinks=kinks).log_z)
