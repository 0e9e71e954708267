"""
``is_log_concave`` against the definition: log p(y | f) is midpoint-concave in f for every y,
log p(y | (a + b)/2) ≥ (log p(y | a) + log p(y | b))/2, checked on a grid of f pairs through each
likelihood's own ``log_prob``. A likelihood registered as log-concave has no violation beyond
float64 round-off (the tolerance, 1e-9 times the larger |log p|, is far above the ~1e-15 relative
error of one evaluation); one registered as not log-concave shows a violation of more than 0.1 nats.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.likelihoods import BinaryHinge, Laplace, NoisyStep, Probit, is_log_concave

F = np.linspace(-12.0, 12.0, 97)


def _largest_violation(likelihood, targets) -> float:
    """max over targets y and grid pairs (a, b) of (log p(a) + log p(b))/2 − log p((a + b)/2), scaled."""
    a, b = np.meshgrid(F, F, indexing="ij")
    a, b = a.reshape(-1, 1), b.reshape(-1, 1)
    worst = -np.inf
    for y in targets:
        Y = np.full_like(a, y)

        def log_p(f, Y=Y):
            return likelihood.log_prob(None, tf.constant(f), tf.constant(Y)).numpy()

        la, lb, lm = log_p(a), log_p(b), log_p((a + b) / 2)
        scale = np.maximum(1.0, np.maximum(np.abs(la), np.abs(lb)))
        worst = max(worst, float(np.max(((la + lb) / 2 - lm) / scale)))
    return worst


LOG_CONCAVE = {
    "Gaussian": (lambda: gpflow.likelihoods.Gaussian(variance=0.3), [-2.0, 0.0, 5.0]),
    "Probit": (Probit, [0.0, 1.0]),
    "logistic Bernoulli": (lambda: gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid), [0.0, 1.0]),
    "Laplace": (lambda: Laplace(scale=0.5), [-1.0, 0.0, 3.0]),
    "Poisson": (gpflow.likelihoods.Poisson, [0.0, 1.0, 7.0]),
    "Exponential": (gpflow.likelihoods.Exponential, [0.1, 1.0, 10.0]),
    "Gamma": (lambda: gpflow.likelihoods.Gamma(shape=2.0), [0.1, 1.0, 10.0]),
    "BinaryHinge": (BinaryHinge, [0.0, 1.0]),
}

NOT_LOG_CONCAVE = {
    "StudentT": (lambda: gpflow.likelihoods.StudentT(scale=0.5, df=3.0), [0.0, 4.0]),
    "NoisyStep": (lambda: NoisyStep(0.05), [0.0, 1.0]),
    "Bernoulli (jittered probit)": (gpflow.likelihoods.Bernoulli, [0.0, 1.0]),
    "Ordinal (floored)": (lambda: gpflow.likelihoods.Ordinal(np.array([-1.0, 1.0])), [0.0, 1.0, 2.0]),
}


@pytest.mark.parametrize("name", LOG_CONCAVE)
def test_registered_log_concave_likelihoods_are_midpoint_concave(name):
    build, targets = LOG_CONCAVE[name]
    likelihood = build()
    assert is_log_concave(likelihood)
    assert _largest_violation(likelihood, targets) <= 1e-9


@pytest.mark.parametrize("name", NOT_LOG_CONCAVE)
def test_likelihoods_not_registered_as_log_concave_violate_concavity(name):
    build, targets = NOT_LOG_CONCAVE[name]
    likelihood = build()
    assert not is_log_concave(likelihood)
    assert _largest_violation(likelihood, targets) > 0.1


def test_an_unknown_likelihood_is_not_known_to_be_log_concave_and_a_link_decides():
    class MyLikelihood(gpflow.likelihoods.Gaussian):
        pass

    assert is_log_concave(MyLikelihood())  # a subclass inherits its base's registration
    assert not is_log_concave(gpflow.likelihoods.Beta())
    assert not is_log_concave(gpflow.likelihoods.Poisson(invlink=tf.square))
