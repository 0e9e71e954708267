r"""
The posterior of a full-GP EP model as a GPflow posterior.

EP's q(f) over the training inputs X is the GP prior N(m_X, K) times one Gaussian site per
likelihood term, in natural parameters (τ_i, ν_i) (Rasmussen & Williams 2006, Sec. 3.6):

    q(f) ∝ N(f; m_X, K) Π_i exp(-½ τ_i f_i² + ν_i f_i).

For g = f - m the sites are (τ, ν - τm), and the predictive of g* = g(x*) is linear in k* = k(X, x*):

    E[g*] = k*ᵀ α,        Cov[g*] = k(x*, x*) - k*ᵀ Q k*,

with α = (K + T⁻¹)⁻¹ T⁻¹(ν - τm) and Q = (K + T⁻¹)⁻¹ (R&W eqs. 3.60–3.61, T = diag τ; both are
formed here without T⁻¹, so sites with τ_i ≤ 0 are allowed,
:class:`~gpflow_ep.ep.gp_factorisation.GPSiteFactorisation`).
:class:`EPGPPosterior` caches α and Q (``PrecomputeCacheType.TENSOR`` or ``VARIABLE``), O(N³) once
and O(N²) per test point after; ``fused_predict_f`` factorises K and the sites at each call and never
forms Q (R&W Alg. 3.6 generalised to sites of any sign), which is what the models' ``predict_f`` uses.

With ``dual`` (Minka's predictor, used by power EP's ``predict_with="dual"``), the mean is
k*ᵀa with the per-site statistics a_j = ∂log Z_j/∂(cavity mean) in place of α; the variance is q's.
"""

from typing import Optional, Tuple

import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.base import MeanAndVariance, TensorType
from gpflow.conditionals.util import expand_independent_outputs
from gpflow.kernels import Kernel
from gpflow.mean_functions import MeanFunction
from gpflow.posteriors import AbstractPosterior, PrecomputeCacheType, PrecomputedValue
from gpflow.utilities import assert_params_false

from ..ep.gp_factorisation import GPAlgebra, GPSiteFactorisation

__all__ = ["EPGPPosterior"]


class EPGPPosterior(AbstractPosterior):
    """
    q(f*) of a full-GP EP model (module docstring), built from tensors (or variables): the kernel,
    the training inputs, the sites' natural parameters on f, the mean function and optionally the
    dual weights. ``update_cache()`` recomputes the cache from the kernel's and mean function's
    current parameters at the posterior's sites (held fixed, as EP's hyper-parameter gradient holds
    them); built from an EP model's stored site variables, it also follows later EP runs.

    Like GPflow's ``VGPPosterior``, it predicts one latent function: ``full_output_cov=True``
    raises ``NotImplementedError``.

    :param kernel: the GP's kernel.
    :param X: the training inputs, [N, D].
    :param precision: τ, the sites' precisions, [N, 1].
    :param natural_mean: ν, the sites' natural means (precision times mean), [N, 1].
    :param mean_function: the GP's mean function (``None``: zero).
    :param dual: the dual weights a, [N, 1], for Minka's mean predictor (``None``: the mean of q).
    :param precompute_cache: GPflow's ``PrecomputeCacheType`` (``None``: no cache yet).
    """

    @check_shapes("X: [N, D]", "precision: [N, 1]", "natural_mean: [N, 1]", "dual: [N, 1] if dual is not None")
    def __init__(
        self,
        kernel: Kernel,
        X: TensorType,
        precision: TensorType,
        natural_mean: TensorType,
        mean_function: Optional[MeanFunction] = None,
        dual: Optional[TensorType] = None,
        *,
        precompute_cache: Optional[PrecomputeCacheType],
    ):
        super().__init__(kernel, X, mean_function=mean_function)
        self.precision, self.natural_mean, self.dual = precision, natural_mean, dual
        if precompute_cache is not None:
            self.update_cache(precompute_cache)

    def _factorisation(self) -> GPSiteFactorisation:
        """q(g) at the current kernel, factorised (:class:`~gpflow_ep.ep.gp_factorisation.GPSiteFactorisation`)."""
        X = self.X_data
        prior_mean = tf.zeros_like(X[:, :1]) if self.mean_function is None else self.mean_function(X)
        algebra = GPAlgebra(self.kernel(X), prior_mean)
        precision = tf.convert_to_tensor(self.precision)
        return algebra.posterior(precision, tf.convert_to_tensor(self.natural_mean)).factorisation

    @check_shapes("return[0]: [N, 1]", "return[1]: [N, N]")
    def _precompute(self) -> Tuple[PrecomputedValue, ...]:
        """α [N, 1] and Q [N, N]: the predictive at k* = the columns of I (E = α, Cov = 0 - Q)."""
        q = self._factorisation()
        N = tf.shape(self.X_data)[0]
        identity = tf.eye(N, dtype=self.X_data.dtype)
        alpha, minus_Q = q.predict(identity, tf.zeros_like(identity), full_cov=True)
        Q = -0.5 * (minus_Q + tf.transpose(minus_Q))
        alpha = alpha[:, None] if self.dual is None else tf.convert_to_tensor(self.dual)
        dynamic = self.X_data.shape[0] is None
        return PrecomputedValue(alpha, (dynamic, False)), PrecomputedValue(Q, (dynamic, dynamic))

    @inherit_check_shapes
    def _conditional_with_precompute(
        self,
        cache: Tuple[tf.Tensor, ...],
        Xnew: TensorType,
        full_cov: bool = False,
        full_output_cov: bool = False,
    ) -> MeanAndVariance:
        assert_params_false(self._conditional_with_precompute, full_output_cov=full_output_cov)
        alpha, Q = cache
        Kxs = self.kernel(self.X_data, Xnew)  # [N, N*]
        mean = tf.matmul(Kxs, alpha, transpose_a=True)  # [N*, 1]
        if full_cov:
            cov = self.kernel(Xnew) - tf.matmul(Kxs, Q @ Kxs, transpose_a=True)
        else:
            cov = self.kernel(Xnew, full_cov=False) - tf.reduce_sum(Kxs * (Q @ Kxs), axis=0)
        return mean, expand_independent_outputs(cov[None] if full_cov else cov[:, None], full_cov, False)

    @inherit_check_shapes
    def _conditional_fused(
        self, Xnew: TensorType, full_cov: bool = False, full_output_cov: bool = False
    ) -> MeanAndVariance:
        assert_params_false(self._conditional_fused, full_output_cov=full_output_cov)
        q = self._factorisation()
        Kxs = self.kernel(self.X_data, Xnew)
        mean, cov = q.predict(Kxs, self.kernel(Xnew, full_cov=full_cov), full_cov=full_cov)
        if self.dual is not None:
            mean = tf.linalg.matvec(Kxs, tf.convert_to_tensor(self.dual)[:, 0], transpose_a=True)
        return mean[:, None], cov[None] if full_cov else cov[:, None]
