"""
``predictive_moments``: E[y*] and Var[y*] under a Gaussian predictive N(f; m, v), checked against SciPy's
adaptive quadrature of each likelihood's conditional mean and variance (tests/ep/scipy_predictive.py,
``scipy.integrate.quad`` to 1e-13 relative, split at the kinks) to 1e-8 relative — the accuracy of the
package's quadrature — over predictive sds 0.01…3 and means within ±2, for every likelihood EP models
take and other links of GPflow's; and the two quadrature helpers where the closed forms are known.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy_predictive import predictive_cases, predictive_reference

from gpflow_ep.ep import predictive_moments
from gpflow_ep.ep.predictive import expectation_of_positive, variance_of_positive
from gpflow_ep.likelihoods import MultiClassStep

CASES = predictive_cases()
MEANS, VARIANCES = np.array([-2.0, 0.3, 1.7]), np.array([1e-4, 0.04, 1.0, 9.0])
#: the reference's conditional moments are differences of CDFs near 1 (class probabilities) and squares of
#: such differences, exact to a few ε absolutely, so below 1e-14 only the relative tolerance of the rule is
#: beyond what it can check (Bernoulli variances there: test_bernoulli_variances_keep_their_digits_as_p_nears_1)
REFERENCE_ATOL = 1e-14


@pytest.mark.parametrize("name", sorted(CASES))
def test_predictive_moments_match_scipy_over_wide_and_narrow_predictives(name):
    case = CASES[name]
    m, v = (a.ravel()[:, None] for a in np.meshgrid(MEANS, VARIANCES))
    mean, var = (t.numpy()[:, 0] for t in predictive_moments(case.likelihood(), None, m, v))
    reference = np.array([predictive_reference(case, mi, vi) for mi, vi in zip(m[:, 0], v[:, 0])])
    np.testing.assert_allclose(mean, reference[:, 0], rtol=1e-8, atol=REFERENCE_ATOL)
    np.testing.assert_allclose(var, reference[:, 1], rtol=1e-8, atol=REFERENCE_ATOL)


@pytest.mark.parametrize("name", ["probit", "noisy_step", "hinge"])
def test_bernoulli_variances_keep_their_digits_as_p_nears_1(name):
    """p (1 − p) with 1 − p from Φ(−z), where p − p² is 0 (p = Φ(z) at z = 8.5 is 1 − 1e-17)."""
    from scipy.special import ndtr

    m, v = np.array([[8.5], [30.0], [-8.5]]), np.array([[1.0], [1.0], [1.0]])
    z = m[:, 0] / (np.sqrt(2.0) if name == "probit" else 1.0)  # the probit's s² = 1 + v
    p, q = ndtr(z), ndtr(-z)
    if name == "noisy_step":
        p, q = 0.1 + 0.8 * p, 0.1 + 0.8 * q
    mean, var = (t.numpy()[:, 0] for t in predictive_moments(CASES[name].likelihood(), None, m, v))
    np.testing.assert_allclose(mean, p, rtol=1e-13)
    np.testing.assert_allclose(var, p * q, rtol=1e-13)


@pytest.mark.parametrize("name, moment, error", [("poisson", 1, 3e-3), ("logistic", 0, 2e-4)])
def test_gpflows_gauss_hermite_rule_is_off_under_a_wide_predictive(name, moment, error):
    """Why predict_y dispatches: GPflow's 20-point rule at sd 3 (Poisson variance 0.4 %, logistic mean 3e-4 off)."""
    case = CASES[name]
    m, v = np.array([[0.3]]), np.array([[9.0]])
    reference = predictive_reference(case, 0.3, 9.0)
    gauss_hermite = case.likelihood().predict_mean_and_var(None, m, v)[moment].numpy()[0, 0]
    ours = [t.numpy()[0, 0] for t in predictive_moments(case.likelihood(), None, m, v)]
    assert abs(gauss_hermite / reference[moment] - 1.0) > error
    np.testing.assert_allclose(ours, reference, rtol=1e-8)


def test_gpflows_ordinal_rule_is_nan_and_the_closed_form_is_not():
    """GPflow's Ordinal evaluates Φ(±∞) by erf(±inf), NaN in some TensorFlow builds; the closed form never does."""
    likelihood = CASES["ordinal"].likelihood()
    mean, var = predictive_moments(likelihood, None, np.array([[0.3]]), np.array([[9.0]]))
    assert np.isfinite(mean.numpy()).all() and np.isfinite(var.numpy()).all()


def test_expectation_of_an_exponential_follows_its_mass_far_from_the_mean():
    """E[e^f] = e^{m + v/2}: under v = 100 the mass of e^f N(f; 0, v) is 10 sds from the mean."""
    m, v = tf.constant([[0.0], [1.0]], tf.float64), tf.constant([[100.0], [1e-6]], tf.float64)
    expected = np.exp(m.numpy() + v.numpy() / 2)
    np.testing.assert_allclose(expectation_of_positive(lambda F: F, m, v).numpy(), expected, rtol=1e-8)


def test_variance_of_positive_keeps_its_digits_under_a_narrow_predictive():
    """Var[e^f] = e^{2m + v}(e^v − 1) ≈ e^{2m} v at v = 1e-10, where E[g²] − E[g]² would keep none."""
    m, v = tf.constant([[0.5], [-3.0]], tf.float64), tf.constant([[1e-10], [4.0]], tf.float64)
    mean = expectation_of_positive(lambda F: F, m, v)
    expected = np.exp(2 * m.numpy() + v.numpy()) * np.expm1(v.numpy())
    np.testing.assert_allclose(variance_of_positive(tf.exp, mean, m, v).numpy(), expected, rtol=1e-8)


def test_other_likelihoods_keep_their_own_predict_mean_and_var():
    likelihood = MultiClassStep(num_classes=3)
    m, v = np.array([[0.1, -0.4, 0.8]]), np.array([[1.0, 2.0, 0.5]])
    for ours, own in zip(predictive_moments(likelihood, None, m, v), likelihood.predict_mean_and_var(None, m, v)):
        np.testing.assert_array_equal(ours.numpy(), own.numpy())
    beta, m, v = gpflow.likelihoods.Beta(), m[:, :1], v[:, :1]
    for ours, own in zip(predictive_moments(beta, None, m, v), beta.predict_mean_and_var(None, m, v)):
        np.testing.assert_array_equal(ours.numpy(), own.numpy())
