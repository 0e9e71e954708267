"""
What each likelihood's targets Y may be, checked eagerly: ``check_targets(likelihood, Y, name)``.

GPflow's likelihoods accept any float Y and fail (or return NaN or a density of 0) inside a compiled
graph when Y is outside their support: a ``Poisson`` count of 2.5 or -1, an ``Ordinal`` class of 7
with 5 bins. :func:`check_targets` is a multiple-dispatch function on the likelihood class, like
:func:`~gpflow_ep.ep.tilted_moments`, so a likelihood registers its support next to its own code::

    @check_targets.register(MyLikelihood)
    def _my_targets(likelihood, Y, name):
        ...  # raise ValueError naming ``name``

Every likelihood's Y must be finite (checked by the models' data validation before this); the
registrations below add the support of GPflow's likelihoods with a restricted one.
"""

import numpy as np
from gpflow.likelihoods import Bernoulli, Beta, Exponential, Gamma, Likelihood, Ordinal, Poisson
from gpflow.utilities import Dispatcher

from ..validation import check_binary_labels

__all__ = ["check_targets"]

_dispatcher = Dispatcher("check_targets")


def check_targets(likelihood: Likelihood, Y, name: str = "Y") -> np.ndarray:
    """
    Raise a ``ValueError`` naming ``name`` when the targets ``Y`` [N, 1] lie outside the support of
    ``likelihood``; return them as a float64 array.
    """
    Y = np.asarray(Y.numpy() if hasattr(Y, "numpy") else Y, dtype=np.float64)
    if not np.all(np.isfinite(Y)):
        raise ValueError(f"{name} contains NaN or Inf")
    _dispatcher.dispatch(type(likelihood))(likelihood, Y, name)
    return Y


check_targets.register = _dispatcher.register


def _found(values: np.ndarray) -> str:
    return str(np.unique(values)[:5].tolist())


def _check_integers(Y: np.ndarray, name: str, low: float, high: float, what: str) -> None:
    bad = (Y != np.round(Y)) | (Y < low) | (Y > high)
    if np.any(bad):
        raise ValueError(f"{name} must hold {what}; found {_found(Y[bad])}")


@_dispatcher.register(Likelihood)
def _any_finite(likelihood, Y, name):
    """Any real Y (Gaussian, StudentT, Laplace, ...)."""


@_dispatcher.register(Bernoulli)
def _binary(likelihood, Y, name):
    check_binary_labels(Y, name)


@_dispatcher.register(Poisson)
def _counts(likelihood, Y, name):
    _check_integers(Y, name, 0, np.inf, "counts: non-negative integers")


@_dispatcher.register(Ordinal)
def _ordinal(likelihood, Y, name):
    top = likelihood.num_bins - 1
    _check_integers(Y, name, 0, top, f"ordinal classes: integers in [0, {top}] (num_bins = len(bin_edges) + 1)")


@_dispatcher.register((Exponential, Gamma))
def _positive(likelihood, Y, name):
    bad = Y <= 0
    if np.any(bad):
        raise ValueError(f"{name} must be positive for {type(likelihood).__name__}; found {_found(Y[bad])}")


@_dispatcher.register(Beta)
def _unit_interval(likelihood, Y, name):
    bad = (Y <= 0) | (Y >= 1)
    if np.any(bad):
        raise ValueError(f"{name} must lie in (0, 1) for Beta; found {_found(Y[bad])}")
