r"""
Which likelihoods are log-concave in f, the property that decides how safe plain parallel EP is.

When log p(y | f) is concave in f every EP site has a non-negative precision and every cavity is
proper, so damped parallel EP rarely fails (Seeger 2008; Rasmussen & Williams 2006, Sec. 3.6: the
probit's sites are positive). When it is not — the Student-t of robust regression, the label-flip
noisy step — sites can be negative and parallel EP can oscillate (Jylänki, Vanhatalo & Vehtari 2011,
Sec. 4), which is why :class:`~gpflow_ep.models.EPGP` falls back to the convergent double loop by
default for such likelihoods.

:func:`is_log_concave` answers True only where the concavity is a mathematical fact:

* GPflow's ``Gaussian``; ``gpflow_ep``'s ``Probit`` (log Φ(yf) is concave) and ``Laplace``
  (−|y − f|/b); GPflow's ``Bernoulli`` with the logistic link (log σ(yf)); ``Poisson``,
  ``Exponential`` and ``Gamma`` with GPflow's default ``exp`` link (y f − eᶠ, −f − y e⁻ᶠ and
  −k f − y e⁻ᶠ up to constants); the hinge pseudo-likelihood ``BinaryHinge`` (−2 max(0, 1 − yf)).
* False for GPflow's ``StudentT``, ``gpflow_ep``'s ``NoisyStep`` (ε + (1 − 2ε) Θ(yf) with ε > 0 is a
  step with two finite levels), GPflow's default ``Bernoulli`` (its ``inv_probit`` is
  (1 − 2j) Φ(f) + j with j = 1e-3, bounded away from 0 and 1, so its logarithm is not concave),
  GPflow's ``Ordinal`` (its class probabilities carry a floor of 1e-6 for the same reason), ``Beta``,
  and any likelihood not registered (unknown means "not known to be log-concave").

Register a likelihood of your own with ``is_log_concave.register(MyLikelihood)``, a function of the
likelihood instance returning a bool.
"""

import functools

import tensorflow as tf
from gpflow.likelihoods import Bernoulli, Exponential, Gamma, Gaussian, Likelihood, Poisson

from .gpflow_tilted import is_logistic
from .hinge import BinaryHinge
from .laplace import Laplace
from .probit import Probit

__all__ = ["is_log_concave"]


@functools.singledispatch
def is_log_concave(likelihood: Likelihood) -> bool:
    """True when log p(y | f) is concave in f for every y (module docstring); False when unknown."""
    del likelihood
    return False


def _always(likelihood: Likelihood) -> bool:
    del likelihood
    return True


for _cls in (Gaussian, Probit, Laplace, BinaryHinge):
    is_log_concave.register(_cls)(_always)


@is_log_concave.register(Bernoulli)
def _bernoulli(likelihood: Bernoulli) -> bool:
    return bool(is_logistic(likelihood))


def _exp_link(likelihood) -> bool:
    return likelihood.invlink in (tf.exp, tf.math.exp)


for _cls in (Poisson, Exponential, Gamma):
    is_log_concave.register(_cls)(_exp_link)
