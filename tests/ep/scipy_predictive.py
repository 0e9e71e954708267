"""
An independent reference for predictive moments: SciPy's adaptive Gauss–Kronrod quadrature
(``scipy.integrate.quad``) of a likelihood's conditional mean and variance, written here in NumPy from
the likelihoods' definitions, against N(f; m, v), split at the likelihood's kinks (graded in units of its
own width) and around the predictive mean; shared by the predictive-moment tests of the dispatcher
(tests/ep/test_predictive.py) and of the models (tests/models/test_ep_base.py).
"""

import math
import warnings
from typing import Callable, NamedTuple, Sequence

import gpflow
import numpy as np
import tensorflow as tf
from scipy import integrate
from scipy.special import expit, ndtr

from gpflow_ep.likelihoods import BinaryHinge, Laplace, NoisyStep, Probit

__all__ = ["PredictiveCase", "predictive_cases", "predictive_reference", "ORDINAL_EDGES"]

JITTER = 1e-3  # GPflow's probit squashing (inv_probit), also in its Ordinal's class probabilities
ORDINAL_EDGES = np.array([-1.0, 0.0, 0.4, 2.0])


class PredictiveCase(NamedTuple):
    """A likelihood (built fresh), its conditional mean and variance as scalar functions of f, and its features."""

    likelihood: Callable[[], gpflow.likelihoods.Likelihood]
    conditional_mean: Callable[[float], float]
    conditional_variance: Callable[[float], float]
    kinks: Sequence[float] = ()  # values of f where the conditional moments step or bend
    width: float = 1.0  # the scale on which they do so


def _ordinal(sigma):
    edges = np.concatenate([[-np.inf], ORDINAL_EDGES, [np.inf]])
    classes = np.arange(len(edges) - 1)

    def probabilities(f):  # GPflow's class probabilities given f (they sum to 1 - 2·JITTER)
        return (1.0 - 2.0 * JITTER) * np.diff(ndtr((edges - f) / sigma))

    def mean(f):
        return float(classes @ probabilities(f))

    def variance(f):
        return float(classes**2 @ probabilities(f)) - mean(f) ** 2

    def likelihood():
        lik = gpflow.likelihoods.Ordinal(ORDINAL_EDGES)
        lik.sigma.assign(sigma)
        return lik

    return PredictiveCase(likelihood, mean, variance, tuple(ORDINAL_EDGES), sigma)


def _bernoulli(p, likelihood, kinks=(0.0,), width=1.0):
    return PredictiveCase(likelihood, p, lambda f: p(f) * (1.0 - p(f)), kinks, width)


def _softplus(f):
    return max(f, 0.0) + math.log1p(math.exp(-abs(f)))


def predictive_cases():
    """name → :class:`PredictiveCase` for every likelihood EP models take, and the links of GPflow's likelihoods."""
    step = lambda eps: lambda f: eps + (1.0 - 2.0 * eps) * (f >= 0.0)  # noqa: E731
    return {
        "probit": _bernoulli(lambda f: float(ndtr(f)), Probit),
        "bernoulli_probit": _bernoulli(
            lambda f: JITTER + (1.0 - 2.0 * JITTER) * float(ndtr(f)), gpflow.likelihoods.Bernoulli
        ),
        "logistic": _bernoulli(lambda f: float(expit(f)), lambda: gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)),
        "bernoulli_cloglog": _bernoulli(  # another link: 1 - exp(-e^f)
            lambda f: -math.expm1(-math.exp(f)),
            lambda: gpflow.likelihoods.Bernoulli(invlink=lambda F: -tf.math.expm1(-tf.exp(F))),
            kinks=(),
        ),
        "noisy_step": _bernoulli(step(0.1), lambda: NoisyStep(epsilon=0.1)),
        "hinge": PredictiveCase(BinaryHinge, lambda f: float(f > 0.0), lambda f: 0.0, (0.0,)),
        "gaussian": PredictiveCase(lambda: gpflow.likelihoods.Gaussian(variance=0.01), lambda f: f, lambda f: 0.01),
        "student_t_narrow": PredictiveCase(
            lambda: gpflow.likelihoods.StudentT(scale=0.05, df=3.0), lambda f: f, lambda f: 0.05**2 * 3.0
        ),
        "laplace_narrow": PredictiveCase(lambda: Laplace(scale=0.1), lambda f: f, lambda f: 2.0 * 0.1**2),
        "poisson": PredictiveCase(gpflow.likelihoods.Poisson, math.exp, math.exp),
        "poisson_binsize": PredictiveCase(
            lambda: gpflow.likelihoods.Poisson(binsize=0.5), lambda f: 0.5 * math.exp(f), lambda f: 0.5 * math.exp(f)
        ),
        "poisson_softplus": PredictiveCase(
            lambda: gpflow.likelihoods.Poisson(invlink=tf.math.softplus), _softplus, _softplus
        ),
        "exponential": PredictiveCase(gpflow.likelihoods.Exponential, math.exp, lambda f: math.exp(2.0 * f)),
        "gamma": PredictiveCase(
            lambda: gpflow.likelihoods.Gamma(shape=2.5), lambda f: 2.5 * math.exp(f), lambda f: 2.5 * math.exp(2.0 * f)
        ),
        "gamma_softplus": PredictiveCase(
            lambda: gpflow.likelihoods.Gamma(invlink=tf.math.softplus, shape=2.5),
            lambda f: 2.5 * _softplus(f),
            lambda f: 2.5 * _softplus(f) ** 2,
        ),
        "ordinal": _ordinal(1.0),
        "ordinal_narrow": _ordinal(0.05),
    }


def _expectation(h, m, sd, points):
    """∫ h(f) N(f; m, sd²) df over m ± 40 sd, split at ``points`` (relative tolerance 1e-13)."""
    lo, hi = m - 40.0 * sd, m + 40.0 * sd
    points = sorted(p for p in set(points) if lo < p < hi)

    def integrand(f):
        t = (f - m) / sd
        return h(f) * math.exp(-0.5 * t * t) / (sd * math.sqrt(2.0 * math.pi))

    total = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        for a, b in zip([lo] + points, points + [hi]):
            total += integrate.quad(integrand, a, b, limit=500, epsabs=0.0, epsrel=1e-13)[0]
    return total


def predictive_reference(case: PredictiveCase, m: float, v: float):
    """
    (E[y], Var[y]) under N(f; m, v): E_q[mean(f)] and E_q[variance(f)] + E_q[(mean(f) - E[y])²], each split
    at the mean m ± sd·2ᵏ and at every kink ± width·2ᵏ (k = -3…5), so no step or bend falls inside a piece
    coarser than its own scale.
    """
    sd = math.sqrt(v)
    grades = np.concatenate([[0.0], 2.0 ** np.arange(-3, 6), -(2.0 ** np.arange(-3, 6))])
    points = [m + sd * g for g in grades] + [k + case.width * g for k in case.kinks for g in grades]
    mean = _expectation(case.conditional_mean, m, sd, points)
    spread = _expectation(lambda f: (case.conditional_mean(f) - mean) ** 2, m, sd, points)
    return mean, _expectation(case.conditional_variance, m, sd, points) + spread
