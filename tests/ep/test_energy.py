"""
The one EP energy, :func:`gpflow_ep.ep.ep_log_marginal_likelihood`, for every algebra, against closed forms.

With Gaussian factors EP is exact at the sites τ = 1/σ², ν = y/σ² (a Gaussian factor is its own site), for
any power α (Minka 2004, Sec. 3), so log Z_EP must equal the Gaussian evidence written out with scipy.
Tolerances: float64 evaluations of the same number through different factorisations, relative 1e-10.
"""

import gpflow
import numpy as np
import pytest
import scipy.stats
import tensorflow as tf

from gpflow_ep.ep import (
    EPSettings,
    GPAlgebra,
    LikelihoodFactor,
    LinearGaussianAlgebra,
    SiteAlgebra,
    SiteMarginals,
    WhitenedAlgebra,
    ep_log_marginal_likelihood,
)


def _gp_problem(rng, n=9):
    X = rng.normal(size=(n, 2))
    K = gpflow.kernels.SquaredExponential(lengthscales=1.1)(X).numpy() + 1e-6 * np.eye(n)
    m = rng.normal(size=(n, 1))  # a prior mean, so the centring is exercised
    y = rng.normal(size=(n, 1))
    return K, m, y


def _gaussian_factor(y, noise):
    return LikelihoodFactor(gpflow.likelihoods.Gaussian(variance=noise), None, tf.constant(y))


def _exact_sites(y, noise):
    return tf.constant(np.full_like(y, 1.0 / noise)), tf.constant(y / noise)


@pytest.mark.parametrize("power", [1.0, 0.5])
def test_full_gp_energy_is_the_gaussian_evidence(rng, power):
    K, m, y = _gp_problem(rng)
    noise = 0.3
    energy = ep_log_marginal_likelihood(
        GPAlgebra(tf.constant(K), tf.constant(m)),
        _gaussian_factor(y, noise),
        *_exact_sites(y, noise),
        EPSettings(power=power),
    )
    exact = scipy.stats.multivariate_normal(m[:, 0], K + noise * np.eye(len(y))).logpdf(y[:, 0])
    np.testing.assert_allclose(energy.log_marginal_likelihood.numpy(), exact, rtol=1e-10)
    assert int(energy.num_left_out) == 0 and bool(energy.proper)


def test_whitened_energy_is_the_gaussian_evidence_of_its_prior(rng):
    """Sites on projections h = Aᵀv + m, v ~ N(0, I): the prior of h is N(m, AᵀA)."""
    M, n, noise = 4, 9, 0.2
    A = rng.normal(size=(M, n))
    m, y = rng.normal(size=(n, 1)), rng.normal(size=(n, 1))
    energy = ep_log_marginal_likelihood(
        WhitenedAlgebra(tf.constant(A), tf.constant(m)),
        _gaussian_factor(y, noise),
        *_exact_sites(y, noise),
        EPSettings(),
    )
    exact = scipy.stats.multivariate_normal(m[:, 0], A.T @ A + noise * np.eye(n)).logpdf(y[:, 0])
    np.testing.assert_allclose(energy.log_marginal_likelihood.numpy(), exact, rtol=1e-10)


@pytest.mark.parametrize("form", ["weights", "woodbury"])
def test_linear_gaussian_energy_is_the_evidence_of_a_gaussian_weight_prior(rng, form):
    """Gaussian factors N(w_i; 0, v) on the weights: y ~ N(0, v XXᵀ + σ²I), in both forms of the algebra."""
    n, d, noise, v = 6, 8, 0.4, 0.7
    X, y = rng.normal(size=(n, d)), rng.normal(size=(n, 1))
    algebra = LinearGaussianAlgebra(tf.constant(X), tf.constant(y), tf.constant(noise, tf.float64), form=form)
    zeros = np.zeros((d, 1))
    energy = ep_log_marginal_likelihood(algebra, _gaussian_factor(zeros, v), *_exact_sites(zeros, v), EPSettings())
    exact = scipy.stats.multivariate_normal(np.zeros(n), v * X @ X.T + noise * np.eye(n)).logpdf(y[:, 0])
    np.testing.assert_allclose(energy.log_marginal_likelihood.numpy(), exact, rtol=1e-10)


def test_an_improper_q_has_no_evidence_and_no_nan(rng):
    K, m, y = _gp_problem(rng)
    tau = tf.constant(np.full_like(y, -50.0))  # far beyond what the prior can carry: q improper
    energy = ep_log_marginal_likelihood(
        GPAlgebra(tf.constant(K), tf.constant(m)), _gaussian_factor(y, 0.3), tau, tf.constant(y), EPSettings()
    )
    assert not bool(energy.proper)
    assert energy.log_marginal_likelihood.numpy() == -np.inf


class _MarginalsOnly(SiteAlgebra):
    def marginals(self, precision, natural_mean):
        return SiteMarginals(tf.zeros_like(precision), tf.ones_like(precision), tf.constant(True))

    def joint(self, precision, natural_mean):
        raise NotImplementedError


def test_an_algebra_without_a_log_normaliser_is_a_value_error():
    sites = tf.zeros([3, 1], tf.float64)
    factor = _gaussian_factor(np.zeros((3, 1)), 1.0)
    with pytest.raises(ValueError, match="log normaliser"):
        ep_log_marginal_likelihood(_MarginalsOnly(), factor, sites, sites, EPSettings())
