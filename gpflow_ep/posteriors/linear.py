r"""
The posterior of a linear-Gaussian model with EP sites on its weights as a GPflow posterior.

For y = Xw + ε, ε ~ N(0, σ²I), with the Gaussian likelihood exact and one EP site per weight
(Hernández-Lobato & Hernández-Lobato 2011, Sec. 2), q(w) = N(m, Σ) with Σ⁻¹ = σ⁻²XᵀX + diag(τ) and
m = Σ(ν + σ⁻²Xᵀy) (:class:`~gpflow_ep.ep.LinearGaussianAlgebra`), and the latent function
f(x) = xᵀw has the Gaussian predictive

    q(f*) = N(X*m, X*ΣX*ᵀ)

(the paper's EP posterior approximation, its eq. 4, pushed through the linear map).
:class:`LinearModelPosterior` caches m and Σ (``PrecomputeCacheType.TENSOR`` or ``VARIABLE``);
``fused_predict_f`` factorises at each call.
"""

from typing import Optional, Tuple

import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.base import MeanAndVariance, TensorType
from gpflow.conditionals.util import expand_independent_outputs
from gpflow.posteriors import AbstractPosterior, PrecomputeCacheType, PrecomputedValue
from gpflow.utilities import assert_params_false

from ..ep.linear_gaussian import LinearGaussianAlgebra

__all__ = ["LinearModelPosterior"]


class LinearModelPosterior(AbstractPosterior):
    """
    q(f*) of f(x) = xᵀw under the EP posterior q(w) of a linear-Gaussian model (module docstring),
    built from tensors or variables: the training data, the noise variance and the sites on the
    weights. ``update_cache()`` recomputes m and Σ from their current values.

    It has no kernel (``kernel`` is None) and one latent function: ``full_output_cov=True`` raises
    ``NotImplementedError`` as for GPflow's ``VGPPosterior``.

    :param X: the training inputs, [N, D].
    :param y: the training targets, [N, 1].
    :param noise_variance: σ², [] (a tensor or ``Parameter``).
    :param precision: τ, the sites' precisions, [D, 1].
    :param natural_mean: ν, the sites' natural means, [D, 1].
    :param form: the algebra's form (:class:`~gpflow_ep.ep.LinearGaussianAlgebra`).
    :param precompute_cache: GPflow's ``PrecomputeCacheType`` (``None``: no cache yet).
    """

    @check_shapes("X: [N, D]", "y: [N, 1]", "precision: [D, 1]", "natural_mean: [D, 1]")
    def __init__(
        self,
        X: TensorType,
        y: TensorType,
        noise_variance: TensorType,
        precision: TensorType,
        natural_mean: TensorType,
        form: str = "auto",
        *,
        precompute_cache: Optional[PrecomputeCacheType],
    ):
        super().__init__(None, X)
        self.y, self.noise_variance, self.form = y, noise_variance, form
        self.precision, self.natural_mean = precision, natural_mean
        if precompute_cache is not None:
            self.update_cache(precompute_cache)

    @check_shapes("return[0]: [D, 1]", "return[1]: [D, D]")
    def weights(self) -> Tuple[tf.Tensor, tf.Tensor]:
        """m and Σ of q(w) at the current noise variance and sites."""
        algebra = LinearGaussianAlgebra(self.X_data, self.y, tf.convert_to_tensor(self.noise_variance), self.form)
        joint = algebra.joint(tf.convert_to_tensor(self.precision), tf.convert_to_tensor(self.natural_mean))
        return joint.mean, joint.cov

    def _precompute(self) -> Tuple[PrecomputedValue, ...]:
        mean, cov = self.weights()
        return PrecomputedValue(mean, (False, False)), PrecomputedValue(cov, (False, False))

    def _predict(self, weights, Xnew, full_cov: bool, full_output_cov: bool) -> MeanAndVariance:
        assert_params_false(self._predict, full_output_cov=full_output_cov)
        mean, cov = weights
        Xnew = tf.convert_to_tensor(Xnew, mean.dtype)
        projected = tf.matmul(Xnew, cov)  # X*Σ
        if full_cov:
            var = tf.matmul(projected, Xnew, transpose_b=True)[None]  # [1, N, N]
        else:
            var = tf.reduce_sum(projected * Xnew, axis=-1, keepdims=True)  # [N, 1]
        return tf.matmul(Xnew, mean), expand_independent_outputs(var, full_cov, False)

    @inherit_check_shapes
    def _conditional_with_precompute(
        self,
        cache: Tuple[tf.Tensor, ...],
        Xnew: TensorType,
        full_cov: bool = False,
        full_output_cov: bool = False,
    ) -> MeanAndVariance:
        return self._predict(cache, Xnew, full_cov, full_output_cov)

    @inherit_check_shapes
    def _conditional_fused(
        self, Xnew: TensorType, full_cov: bool = False, full_output_cov: bool = False
    ) -> MeanAndVariance:
        return self._predict(self.weights(), Xnew, full_cov, full_output_cov)
