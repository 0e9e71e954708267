"""DeepKernel and FeatureInducingPoints (the hybrid of Wistuba & Rawat 2018, §3.4): values, dtype, gradients."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow import covariances
from gpflow.keras import tf_keras

from gpflow_ep.kernels import DeepKernel, FeatureInducingPoints
from gpflow_ep.likelihoods import MultiClassHinge


class _Float64Network(tf.Module):
    """A two-layer tanh network in float64 (a plain tf.Module: any callable works)."""

    def __init__(self, rng):
        super().__init__()
        self.W1 = tf.Variable(rng.normal(size=(4, 6)))
        self.W2 = tf.Variable(rng.normal(size=(6, 3)))

    def __call__(self, X):
        return tf.tanh(X @ self.W1) @ self.W2


def _network(dtype="float64"):
    if dtype == "float64":
        return _Float64Network(np.random.default_rng(5))
    layers = tf_keras.layers
    net = tf_keras.Sequential([layers.Dense(6, activation="tanh"), layers.Dense(3)])
    net(tf.zeros([1, 4], dtype))
    return net


@pytest.fixture
def kernel():
    return DeepKernel(gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=[0.7, 1.1, 2.0]), _network())


def test_is_the_base_kernel_on_features(kernel, rng):
    """k(x, x') = k_base(φ(x), φ(x')): the same float64 operations, so equal to 1e-14."""
    X, X2 = rng.normal(size=(7, 4)), rng.normal(size=(5, 4))
    H, H2 = kernel.network(X).numpy(), kernel.network(X2).numpy()
    base = kernel.base_kernel
    np.testing.assert_allclose(kernel(X, X2).numpy(), base(H, H2).numpy(), rtol=1e-14)
    np.testing.assert_allclose(kernel(X).numpy(), base(H).numpy(), rtol=1e-14)
    np.testing.assert_allclose(kernel(X, full_cov=False).numpy(), base(H, full_cov=False).numpy(), rtol=1e-14)


def test_feature_inducing_points_live_in_feature_space(kernel, rng):
    X, Z = rng.normal(size=(7, 4)), rng.normal(size=(4, 3))
    iv = FeatureInducingPoints(Z)
    base, H = kernel.base_kernel, kernel.network(X).numpy()
    np.testing.assert_allclose(
        covariances.Kuu(iv, kernel, jitter=1e-6).numpy(), base(Z).numpy() + 1e-6 * np.eye(4), rtol=1e-14
    )
    np.testing.assert_allclose(covariances.Kuf(iv, kernel, X).numpy(), base(Z, H).numpy(), rtol=1e-14)
    # Z in input space goes through the network like any input
    Zx = rng.normal(size=(4, 4))
    np.testing.assert_allclose(
        covariances.Kuf(gpflow.inducing_variables.InducingPoints(Zx), kernel, X).numpy(),
        kernel(Zx, X).numpy(),
        rtol=1e-14,
    )


def test_float32_network_feeds_a_float64_kernel(rng):
    """A float32 trunk (tf_keras' default) under a float64 GP: features are cast, the GP stays float64."""
    kernel = DeepKernel(gpflow.kernels.SquaredExponential(lengthscales=[1.0] * 3), _network("float32"))
    K = kernel(rng.normal(size=(5, 4)))
    assert K.dtype == tf.float64
    np.testing.assert_allclose(np.diag(K.numpy()), 1.0, rtol=1e-12)


def test_svgp_trains_the_network_with_the_gp(kernel, rng):
    """The network's weights are among the SVGP's trainable variables and get ELBO gradients."""
    X, Y = rng.normal(size=(20, 4)), rng.integers(0, 3, size=(20, 1)).astype(float)
    model = gpflow.models.SVGP(
        kernel, MultiClassHinge(3, bound="augmented"), FeatureInducingPoints(rng.normal(size=(5, 3))), num_latent_gps=3
    )
    model.q_mu.assign(rng.normal(size=(5, 3)))  # at q_mu = 0, q_sqrt = I the ELBO is free of the features
    network_variables = {v.ref() for v in kernel.network.trainable_variables}
    assert network_variables <= {v.ref() for v in model.trainable_variables}
    with tf.GradientTape() as tape:
        loss = model.training_loss((X, Y))
    grads = tape.gradient(loss, kernel.network.trainable_variables)
    assert all(g is not None and np.all(np.isfinite(g.numpy())) for g in grads)
    assert max(np.max(np.abs(g.numpy())) for g in grads) > 0.0
    mean, var = model.predict_f(X)
    assert mean.shape == (20, 3) and np.all(var.numpy() > 0)


def test_bad_arguments_are_value_errors(rng):
    with pytest.raises(ValueError, match="base_kernel"):
        DeepKernel("rbf", _network())
    with pytest.raises(ValueError, match="network"):
        DeepKernel(gpflow.kernels.SquaredExponential(), 3)
    image_net = tf_keras.Sequential([tf_keras.layers.Reshape((2, 2, 1))])
    with pytest.raises(ValueError, match="network must return"):
        DeepKernel(gpflow.kernels.SquaredExponential(), image_net)(rng.normal(size=(3, 4)))
