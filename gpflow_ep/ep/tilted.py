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

(:mod:`gpflow_ep.likelihoods` does so for ``Probit``, ``NoisyStep``, ``Laplace`` and GPflow's
``Gaussian``, ``Bernoulli`` and ``StudentT``). Every other ``gpflow.likelihoods.ScalarLikelihood``
falls back to the adaptive quadrature of its ``_scalar_log_prob``
(:func:`gpflow_ep.ep.quadrature.adaptive_tilted_integral`: composite Gauss–Legendre on a mesh
graded around the tilted mode, the cavity mean and the likelihood's kinks; log Z, ∂log Z/∂m and
∂²log Z/∂m² to 1e-8 relative over cavity variances 1e-4…1e3 and means within ±50, tested against
SciPy's adaptive quadrature; nodes where log p is not finite contribute zero, with zero gradient).

A likelihood whose log density has kinks (points where it is not differentiable, like |y - f|) or
bends on a scale much finer than the cavity (the logistic at f = 0) declares them with
:func:`tilted_kinks`, so that the quadrature puts a panel edge there::

    @tilted_kinks.register(MyLikelihood)
    def _my_kinks(likelihood, X, Y):
        return Y[None]  # [K, N, 1] values of f

:func:`tilted_expected_log_likelihood` (relaxed EP's T1) has the same ``register``.
"""

from typing import Callable, NamedTuple, Optional

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.likelihoods import Likelihood, ScalarLikelihood
from gpflow.utilities import Dispatcher

from .quadrature import adaptive_tilted_integral, gauss_hermite_tilted_integral

__all__ = [
    "TiltedMoments",
    "tilted_moments",
    "has_tilted_moments",
    "tilted_expected_log_likelihood",
    "tilted_kinks",
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

    Leading batch dimensions of the cavity broadcast against the sites (used to evaluate a grid of
    relaxed cavities at once).

    :param likelihood: any GPflow likelihood with a registered closed form, or any
        ``ScalarLikelihood`` (adaptive Gauss–Hermite quadrature).
    :param X: inputs passed on to the likelihood (may be ``None`` for input-free likelihoods).
    :param Y: the observations, one per site.
    :param cavity_mean: the cavity means m.
    :param cavity_var: the cavity variances v.
    :param power: the power-EP fraction α ∈ (0, 1]; a Python float.
    """
    implementation = _dispatcher.dispatch(type(likelihood))
    return TiltedMoments(*implementation(likelihood, X, Y, cavity_mean, cavity_var, power))


tilted_moments.register = _dispatcher.register


def has_tilted_moments(likelihood: Likelihood) -> bool:
    """Whether :func:`tilted_moments` has an implementation (closed form or quadrature) for ``likelihood``."""
    return _dispatcher.dispatch(type(likelihood)) is not _unsupported


def log_normal_pdf(z):
    """log N(z; 0, 1)."""
    return -0.5 * tf.square(z) - HALF_LOG_2PI


# --------------------------------------------------------------------------------------------
# Quadrature fallback
# --------------------------------------------------------------------------------------------


_kinks_dispatcher = Dispatcher("tilted_kinks")


def tilted_kinks(likelihood: Likelihood, X: Optional[tf.Tensor], Y: tf.Tensor) -> Optional[tf.Tensor]:
    """
    The values of f [K, N, 1] where log p(Y | f) has a kink (or bends on a scale much finer than a
    cavity's), for the quadrature's mesh; ``None`` (the default) for a smooth likelihood.
    """
    return _kinks_dispatcher.dispatch(type(likelihood))(likelihood, X, Y)


tilted_kinks.register = _kinks_dispatcher.register


@_kinks_dispatcher.register(Likelihood)
def _no_kinks(likelihood, X, Y):
    return None


@_dispatcher.register(ScalarLikelihood)
def quadrature_tilted_moments(likelihood, X, Y, m, v, power):
    """
    Any ``ScalarLikelihood``: adaptive quadrature of its ``_scalar_log_prob``
    (:func:`~gpflow_ep.ep.quadrature.adaptive_tilted_integral`), with the mesh split at the
    likelihood's :func:`tilted_kinks`.
    """

    def log_lik(F):  # F: [Q, ..., N, 1]
        return likelihood._scalar_log_prob(X, F, Y)

    return adaptive_tilted_integral(log_lik, m, v, power, kinks=tilted_kinks(likelihood, X, Y))[:3]


@_dispatcher.register(Likelihood)
def _unsupported(likelihood, X, Y, m, v, power):
    raise ValueError(
        f"likelihood {type(likelihood).__name__} has no EP tilted moments: it is not a "
        "ScalarLikelihood and no closed form is registered with gpflow_ep.ep.tilted_moments"
    )


def gauss_hermite_tilted_moments(
    log_lik: Callable[[tf.Tensor], tf.Tensor],
    m: tf.Tensor,
    v: tf.Tensor,
    power: float = 1.0,
    num_points: int = 64,
):
    """
    (log Z, ∂log Z/∂m, ∂²log Z/∂m²) of p(y|f)^α N(f; m, v) by the cheaper two-stage Gauss–Hermite
    rule (:func:`~gpflow_ep.ep.quadrature.gauss_hermite_tilted_integral`; about 1e-6 for smooth
    likelihoods at moderate cavities, not at kinks or cavity variances ≫ 1).

    :param log_lik: maps F of shape [Q, ..., N, 1] to log p(y | F) of the same shape.
    """
    return gauss_hermite_tilted_integral(log_lik, m, v, power, num_points)[:3]


# --------------------------------------------------------------------------------------------
# Expected log-likelihood under the tilted distribution (relaxed EP's T1)
# --------------------------------------------------------------------------------------------

_expected_dispatcher = Dispatcher("tilted_expected_log_likelihood")


def tilted_expected_log_likelihood(likelihood: Likelihood, X, Y, cavity_mean, cavity_var) -> tf.Tensor:
    """
    E_p̂[log p(Y | f)] under the tilted distribution p̂ ∝ p(Y | f) N(f; cavity_mean, cavity_var)
    (relaxed EP's T1); closed form where registered, adaptive quadrature otherwise.
    Leading batch dimensions of the cavity broadcast against Y [N, 1].
    """
    implementation = _expected_dispatcher.dispatch(type(likelihood))
    return implementation(likelihood, X, Y, cavity_mean, cavity_var)


tilted_expected_log_likelihood.register = _expected_dispatcher.register


@_expected_dispatcher.register(ScalarLikelihood)
def _scalar_expected(likelihood, X, Y, m, v):
    """Any ``ScalarLikelihood``: the tilted weights of the adaptive quadrature."""
    return adaptive_tilted_integral(
        lambda F: likelihood._scalar_log_prob(X, F, Y), m, v, 1.0, kinks=tilted_kinks(likelihood, X, Y)
    ).expected_log_lik
