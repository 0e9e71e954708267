r"""
A GPflow kernel on learned features: the hybrid Bayesian neural network of the Bayesian SVM
(Wistuba & Rawat 2018, §3.4 and Fig. 1),

    k(x, x') = k_base(φ_W(x), φ_W(x')),

with φ_W a ``tf_keras`` network (e.g. a CNN trunk ending in a 100-unit dense layer) whose weights W are
trained jointly with the GP by gradient steps on the ELBO (GPflow collects the network's variables
with the kernel's). Inputs stay the flat [N, D] arrays GPflow expects; a network on images starts with
a ``Reshape`` layer.

The inducing inputs may live in either space:

* ``gpflow.inducing_variables.InducingPoints(Z)`` with Z in input space: u = f(Z), K_uu = k(Z, Z)
  passes Z through the network like any input;
* :class:`FeatureInducingPoints` (Z in feature space; the paper does not say where Z lives): u = g(Z) for the
  GP g on features, K_uu = k_base(Z, Z) and K_uf = k_base(Z, φ_W(X)) (registered with GPflow's
  ``Kuu``/``Kuf`` dispatch), so ``SVGP`` and its predictions need no change.

dtype: the network runs in its own dtype (``tf_keras`` layers cast their inputs to their
compute dtype, float32 by default) and its features are cast to the inputs' dtype (GPflow's default
float, float64) before the base kernel, so the GP algebra keeps float64.
"""

import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow import covariances
from gpflow.base import TensorLike, TensorType
from gpflow.inducing_variables import InducingPoints
from gpflow.kernels import Kernel

__all__ = ["DeepKernel", "FeatureInducingPoints"]


class DeepKernel(Kernel):
    """
    k(x, x') = ``base_kernel``(φ(x), φ(x')) with φ = ``network`` (module docstring).

    :param base_kernel: a GPflow kernel on the network's output features (e.g. SE-ARD on 100 features).
    :param network: a callable ``tf_keras`` layer or model mapping [N, D] inputs to [N, F] features.
    """

    def __init__(self, base_kernel: Kernel, network, name=None):
        super().__init__(name=name)
        if not isinstance(base_kernel, Kernel):
            raise ValueError(f"base_kernel must be a gpflow.kernels.Kernel; got {type(base_kernel).__name__}")
        if not callable(network):
            raise ValueError(f"network must be a callable tf_keras layer or model; got {type(network).__name__}")
        self.base_kernel = base_kernel
        self.network = network

    def features(self, X: TensorType) -> tf.Tensor:
        """φ(X), [N, F], in the kernel's dtype."""
        H = self.network(X)  # tf_keras layers cast their inputs to their own compute dtype
        if len(H.shape) != 2:
            raise ValueError(f"network must return [N, F] features; got shape {H.shape}")
        return tf.cast(H, X.dtype)

    @inherit_check_shapes
    def K(self, X: TensorType, X2=None) -> tf.Tensor:
        return self.base_kernel.K(self.features(X), None if X2 is None else self.features(X2))

    @inherit_check_shapes
    def K_diag(self, X: TensorType) -> tf.Tensor:
        return self.base_kernel.K_diag(self.features(X))


class FeatureInducingPoints(InducingPoints):
    """Inducing inputs Z in a :class:`DeepKernel`'s feature space, [M, F] (module docstring)."""


@covariances.Kuu.register(FeatureInducingPoints, DeepKernel)
def _kuu_features(inducing_variable: FeatureInducingPoints, kernel: DeepKernel, *, jitter: float = 0.0) -> tf.Tensor:
    Kzz = kernel.base_kernel(inducing_variable.Z)
    return Kzz + jitter * tf.eye(inducing_variable.num_inducing, dtype=Kzz.dtype)


@covariances.Kuf.register(FeatureInducingPoints, DeepKernel, TensorLike)
def _kuf_features(inducing_variable: FeatureInducingPoints, kernel: DeepKernel, Xnew: TensorType) -> tf.Tensor:
    return kernel.base_kernel(inducing_variable.Z, kernel.features(Xnew))
