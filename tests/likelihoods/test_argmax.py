"""
The argmax class probabilities p_k = ∫ N(f; m_k, s_k²) Π_{j≠k} Φ((f - m_j)/s_j) df against SciPy's adaptive
quadrature of the same integrals (split at every class's mean and ±s), over latent variances 1e-4…10 in any
combination — the case a Gauss–Hermite rule per class does not resolve — and their sum against 1.

Tolerances (float64): SciPy's quad to 1e-13 absolute; the composite Gauss–Legendre rule's error is set by the
Gaussian mass outside ±7 standard deviations (2.6e-12): 1e-10 absolute for each p_k and for Σ_k p_k - 1.
"""

import numpy as np
import pytest
import tensorflow as tf
from scipy import integrate, special

from gpflow_ep.likelihoods import MultiClassHinge, MultiClassStep
from gpflow_ep.likelihoods.argmax import argmax_probabilities


def _scipy(mean, var):
    sd = np.sqrt(var)
    lo, hi = np.min(mean - 12 * sd), np.max(mean + 12 * sd)
    points = np.unique(np.concatenate([mean + sd * t for t in (-3.0, -1.0, 0.0, 1.0, 3.0)]))
    out = []
    for k in range(len(mean)):

        others = np.arange(len(mean)) != k

        def integrand(f, k=k, others=others):  # N(f; m_k, v_k) Π_{j≠k} Φ((f - m_j)/σ_j)
            z = (f - mean[k]) / sd[k]
            density = np.exp(-0.5 * z * z) / (np.sqrt(2 * np.pi) * sd[k])
            return density * np.prod(special.ndtr((f - mean[others]) / sd[others]))

        out.append(integrate.quad(integrand, lo, hi, points=points, limit=500, epsabs=1e-14, epsrel=1e-13)[0])
    return np.array(out)


def _cases():
    rng = np.random.default_rng(7)
    for _ in range(12):
        C = int(rng.integers(2, 7))
        yield rng.normal(size=C) * rng.choice([0.3, 1.0, 3.0]), np.exp(rng.uniform(np.log(1e-4), np.log(10.0), C))
    yield np.array([0.0, 0.1, 3.0]), np.array([1.0, 1e-4, 0.5])  # a confident class inside an uncertain one
    yield np.array([2.0, -1.0, 0.0, 0.5]), np.array([1e-4, 1e-4, 1e-4, 1e-4])  # all confident


def test_class_probabilities_match_adaptive_quadrature_and_sum_to_one():
    cases = list(_cases())
    width = max(len(m) for m, _ in cases)
    for mean, var in cases:
        p = argmax_probabilities(tf.constant(mean[None]), tf.constant(var[None])).numpy()[0]
        np.testing.assert_allclose(p, _scipy(mean, var), rtol=0, atol=1e-10, err_msg=f"{mean}, {var}")
        np.testing.assert_allclose(p.sum(), 1.0, rtol=0, atol=1e-10)
    assert width >= 5


@pytest.mark.parametrize("likelihood", [MultiClassStep(4, noise_variance=1e-3), MultiClassHinge(4)])
def test_both_multiclass_likelihoods_predict_with_it(likelihood):
    rng = np.random.default_rng(3)
    mean, var = rng.normal(size=(5, 4)), np.exp(rng.uniform(-8.0, 2.0, size=(5, 4)))
    p, _ = likelihood.predict_mean_and_var(None, tf.constant(mean), tf.constant(var))
    noise = likelihood.noise_variance.numpy() if isinstance(likelihood, MultiClassStep) else 0.0
    expected = argmax_probabilities(tf.constant(mean), tf.constant(var + noise))
    np.testing.assert_allclose(p, expected, rtol=1e-14)
    np.testing.assert_allclose(p.numpy().sum(axis=1), 1.0, rtol=0, atol=1e-10)
