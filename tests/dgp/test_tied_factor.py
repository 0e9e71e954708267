"""The tied factor: φ terms and the cavity (Bui et al. 2016, §4.2 and App. E)."""

import numpy as np
import pytest
import tensorflow as tf
from gpflow import covariances

from gpflow_ep.dgp import TiedFactor, random_factor


def _phi(mean, cov):
    """½ log|V| + ½ mᵀV⁻¹m (the Gaussian log-normaliser, Bui et al. 2016, App. E, Eq. (19))."""
    return 0.5 * np.linalg.slogdet(cov)[1] + 0.5 * mean @ np.linalg.solve(cov, mean)


def test_energy_terms_equal_the_explicit_phi_terms(make_layer, u_space):
    """(1 - N)φ_post + Nφ_cav - φ_prior from Cholesky factors = the same with explicit inverses (1e-9)."""
    layer = make_layer(num_data=7)
    factor = layer.factor
    L = np.linalg.cholesky(covariances.Kuu(layer.inducing_variables[0], layer.kernels[0], jitter=layer.jitter).numpy())
    N = factor.num_data
    phi_post = _phi(*u_space(factor, L, cavity=False))
    phi_cav = _phi(*u_space(factor, L, cavity=True))
    phi_prior = 0.5 * np.linalg.slogdet(L @ L.T)[1]
    expected = (1 - N) * phi_post + N * phi_cav - phi_prior
    np.testing.assert_allclose(factor.energy_terms(L).numpy(), expected, rtol=1e-9)


@pytest.mark.parametrize("cavity", [False, True])
def test_whitened_distribution_is_the_u_space_one(make_layer, cavity, u_space):
    """q(v), v = L⁻¹u, maps to P = K⁻¹ + βT, m = P⁻¹βt (β = (N-1)/N for the cavity, 1 for q)."""
    layer = make_layer(num_data=5)
    factor = layer.factor
    L = np.linalg.cholesky(covariances.Kuu(layer.inducing_variables[0], layer.kernels[0], jitter=layer.jitter).numpy())
    mean, cov = u_space(factor, L, cavity)
    moments = [factor.moments(L, cavity)] + ([factor.energy_and_cavity(L)[1]] if cavity else [])  # training's
    for q in moments:
        np.testing.assert_allclose(L @ q.mean.numpy()[0, :, 0], mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(L @ q.covariance.numpy()[0] @ L.T, cov, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shared_L", [True, False])
def test_training_pass_gradient_is_the_derivative_of_its_definition(rng, shared_L):
    """
    The written-out gradient of energy_and_cavity (module docstring) equals TensorFlow's autodiff of the
    definitions written with explicit inverses and log-determinants (tf.linalg.inv, slogdet), for random
    cotangents of all three outputs, in L (one shared by the w GPs, or one each), R and t: float64 round-off
    of O(M³) products of well-conditioned matrices, 1e-9 relative.
    """
    w, M, N = 3, 4, 6
    factor = random_factor(w, M, 0.7, N, rng)
    A = rng.normal(size=(1 if shared_L else w, M, M))
    L = tf.constant(np.linalg.cholesky(A @ np.swapaxes(A, -1, -2) + M * np.eye(M)))
    mean_bar, S_bar = tf.constant(rng.normal(size=(w, M, 1))), tf.constant(rng.normal(size=(w, M, M)))
    R, t = factor.factor_cholesky, factor.factor_shift
    beta = factor.removed_fraction

    def reference(L, R, t):
        G = tf.matmul(L, R, transpose_a=True)
        eta = tf.matmul(L, t, transpose_a=True)
        Lambda = tf.matmul(G, G, transpose_b=True)
        B, B_c = np.eye(M) + Lambda, np.eye(M) + beta * Lambda
        S, S_c = tf.linalg.inv(B), tf.linalg.inv(B_c)
        post = -0.5 * tf.linalg.slogdet(B)[1] + 0.5 * tf.reduce_sum(eta * tf.matmul(S, eta), axis=[1, 2])
        cav = -0.5 * tf.linalg.slogdet(B_c)[1] + 0.5 * beta**2 * tf.reduce_sum(eta * tf.matmul(S_c, eta), axis=[1, 2])
        return tf.reduce_sum(post + N * (cav - post)), beta * tf.matmul(S_c, eta), S_c

    def objective(outputs):
        energy, mean, S = outputs
        return 0.7 * energy + tf.reduce_sum(mean_bar * mean) + tf.reduce_sum(S_bar * S)

    results = []
    for compute in (lambda: (lambda e, q: (e, q.mean, q.covariance))(*factor.energy_and_cavity(L)),
                    lambda: reference(L, tf.convert_to_tensor(R), tf.convert_to_tensor(t))):
        with tf.GradientTape() as tape:
            tape.watch(L)
            value = objective(compute())
        results.append([value] + tape.gradient(value, [L, R.unconstrained_variable, t.unconstrained_variable]))
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9 * np.max(np.abs(expected)))


def test_removed_fraction():
    assert TiedFactor(np.eye(2), np.zeros((2, 1)), 4).removed_fraction == 0.75
    assert TiedFactor(np.eye(2), np.zeros((2, 1)), 1).removed_fraction == 0.0


@pytest.mark.parametrize(
    "R, t, match",
    [
        (np.array([[1.0, 0.0], [0.5, -1.0]]), np.zeros((2, 1)), "positive diagonal"),
        (np.eye(2), np.zeros((3, 1)), "factor_shift"),
    ],
)
def test_bad_factors_are_refused(R, t, match):
    with pytest.raises(ValueError, match=match):
        TiedFactor(R, t, 3)
