r"""
q(f) of a sparse EP model as a GPflow posterior (``gpflow.posteriors.AbstractPosterior``), built
from the kernel, the inducing variable and q(u)'s natural parameters, never from the model.

Sparse EP (Hernández-Lobato & Hernández-Lobato 2016, Sec. 2; Villacampa-Calvo & Hernández-Lobato
2017, Sec. 3, one block per class) keeps q(u) per block c as the prior times the sites' Gaussian
in u,

    q(u^c) ∝ N(u^c; 0, K_uu) exp(-½ u^cᵀΛ_u u^c + η_uᵀu^c),

Σ_u = (K_uu⁻¹ + Λ_u)⁻¹, μ_u = Σ_u η_u, and predicts as an SVGP with that q(u) (the paper's eq. 5
with the FITC conditional p(f* | u)):

    q(f*) = N(k*ᵀα, k** - k*ᵀQ⁻¹k*),   α = K_uu⁻¹μ_u,   Q⁻¹ = K_uu⁻¹ - K_uu⁻¹Σ_uK_uu⁻¹.

Both are computed without an inverse of K_uu: with L = chol(K_uu) and v = L⁻¹u, q(v) has precision
B = I + LᵀΛ_uL and shift Lᵀη_u (:class:`~gpflow_ep.ep.WhitenedGaussian`), so α = L⁻ᵀB⁻¹Lᵀη_u and
Q⁻¹ = L⁻ᵀ(I - B⁻¹)L⁻¹. The cached path (:meth:`SparseEPPosterior.predict_f`) stores α and Q⁻¹ as
GPflow's ``IndependentPosterior`` does; the fused path (:meth:`~SparseEPPosterior.fused_predict_f`)
is the whitened predictive k** - a*ᵀa* + (L_B⁻¹a*)ᵀ(L_B⁻¹a*), a* = L⁻¹k*, with mean
a*ᵀB⁻¹Lᵀη_u. q(u)'s natural parameters are EP state and do not change with the hyper-parameters;
everything else is recomputed from the current kernel and inducing inputs in ``_precompute``, so
``update_cache()`` after a parameter change predicts as a freshly built posterior.

When the outputs share their kernel and inducing inputs (:func:`~gpflow_ep.covariances.shares_blocks`),
L and L⁻¹K_uf are computed once and broadcast against the C blocks of q.
"""

from typing import Optional, Tuple

import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.base import MeanAndVariance, TensorType
from gpflow.conditionals.util import expand_independent_outputs
from gpflow.config import default_jitter
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel
from gpflow.mean_functions import MeanFunction
from gpflow.posteriors import AbstractPosterior, PrecomputeCacheType, PrecomputedValue

from ..covariances import block_Kff, block_Kuf, block_Kuu
from ..ep import WhitenedGaussian
from ..ep.whitened import eye_like

__all__ = ["SparseEPPosterior"]


class SparseEPPosterior(AbstractPosterior):
    """
    q(f) = ∫ p(f | u) q(u) du of a sparse EP model (module docstring), for C ≥ 1 independent blocks.

    :param kernel: a GPflow kernel (one output) or ``SharedIndependent`` / ``SeparateIndependent``.
    :param inducing_variable: ``InducingPoints`` (with a plain kernel) or GPflow's
        ``SharedIndependentInducingVariables`` / ``SeparateIndependentInducingVariables``.
    :param posterior_precision: Λ_u, [M, M] (one block) or [C, M, M] (a tensor or variable).
    :param posterior_shift: η_u, [M, 1] or [C, M, 1].
    :param mean_function: added to the latent mean (None: zero).
    :param jitter: added to K_uu's diagonal (default ``gpflow.config.default_jitter()``).
    :param precompute_cache: GPflow's ``PrecomputeCacheType`` (or None: no cache until ``update_cache``).
    """

    @check_shapes(
        "posterior_precision: [M_M_or_C_M_M...]",
        "posterior_shift: [M_1_or_C_M_1...]",
    )
    def __init__(
        self,
        kernel: Kernel,
        inducing_variable: InducingVariables,
        posterior_precision: TensorType,
        posterior_shift: TensorType,
        mean_function: Optional[MeanFunction] = None,
        jitter: Optional[float] = None,
        *,
        precompute_cache: Optional[PrecomputeCacheType],
    ):
        super().__init__(kernel, inducing_variable, mean_function=mean_function)
        self.posterior_precision = posterior_precision
        self.posterior_shift = posterior_shift
        self.jitter = default_jitter() if jitter is None else float(jitter)
        if precompute_cache is not None:
            self.update_cache(precompute_cache)

    @check_shapes("return[0]: [C, M, M]", "return[1]: [C, M, 1]")
    def natural_parameters(self) -> Tuple[tf.Tensor, tf.Tensor]:
        """Λ_u [C, M, M] and η_u [C, M, 1] (C = 1 for one block)."""
        M = tf.shape(self.posterior_shift)[-2]
        return tf.reshape(self.posterior_precision, [-1, M, M]), tf.reshape(self.posterior_shift, [-1, M, 1])

    @check_shapes("return[0]: [B, M, M]")
    def whitened(self) -> Tuple[tf.Tensor, WhitenedGaussian]:
        """L = chol(K_uu) at the current kernel and inducing inputs, and q(v): Λ_v = LᵀΛ_uL, η_v = Lᵀη_u."""
        L = tf.linalg.cholesky(block_Kuu(self.X_data, self.kernel, jitter=self.jitter))
        Lambda_u, eta_u = self.natural_parameters()
        Lambda_v = tf.matmul(L, tf.matmul(Lambda_u, L), transpose_a=True)
        return L, WhitenedGaussian(Lambda_v, tf.matmul(L, eta_u, transpose_a=True))

    @check_shapes("return[0]: [C, M, 1]", "return[1]: [C, M, M]")
    def _precompute(self) -> Tuple[PrecomputedValue, ...]:
        """α = L⁻ᵀB⁻¹Lᵀη_u = K_uu⁻¹μ_u [C, M, 1] and Q⁻¹ = L⁻ᵀ(I - B⁻¹)L⁻¹ [C, M, M] (module docstring)."""
        L, q = self.whitened()  # L [B, M, M] broadcasts against q's C blocks
        alpha = tf.linalg.triangular_solve(L, q.mean, adjoint=True)
        B_inv = q.covariance()
        half = tf.linalg.triangular_solve(L, eye_like(B_inv) - B_inv, adjoint=True)  # L⁻ᵀ(I - B⁻¹)
        Qinv = tf.linalg.triangular_solve(L, tf.linalg.matrix_transpose(half), adjoint=True)
        return PrecomputedValue.wrap_alpha_Qinv(alpha, Qinv)

    @check_shapes(
        "mean: [C, N]",
        "cov: [C, N, N] if full_cov",
        "cov: [C, N] if not full_cov",
        "return[0]: [N, C]",
        "return[1]: [N, C, N, C] if full_cov and full_output_cov",
        "return[1]: [N, C, C] if (not full_cov) and full_output_cov",
        "return[1]: [C, N, N] if full_cov and (not full_output_cov)",
        "return[1]: [N, C] if (not full_cov) and (not full_output_cov)",
    )
    def _outputs(self, mean, cov, full_cov: bool, full_output_cov: bool) -> MeanAndVariance:
        """Blocks [C, ...] as GPflow's outputs: mean [N, C], independent outputs expanded as GPflow's SVGP does."""
        cov = cov if full_cov else tf.linalg.matrix_transpose(cov)
        return tf.transpose(mean), expand_independent_outputs(cov, full_cov, full_output_cov)

    @inherit_check_shapes
    def _conditional_with_precompute(
        self,
        cache: Tuple[tf.Tensor, ...],
        Xnew: TensorType,
        full_cov: bool = False,
        full_output_cov: bool = False,
    ) -> MeanAndVariance:
        """k*ᵀα and k** - k*ᵀQ⁻¹k* per block from the cache (α [C, M, 1], Q⁻¹ [C, M, M])."""
        alpha, Qinv = cache
        Kuf = block_Kuf(self.X_data, self.kernel, Xnew)  # [B, M, N]
        Kff = block_Kff(self.kernel, Xnew, full_cov)
        mean = tf.matmul(Kuf, alpha, transpose_a=True)[..., 0]  # [C, N]
        Qinv_Kuf = tf.matmul(Qinv, Kuf)
        if full_cov:
            cov = Kff - tf.matmul(Kuf, Qinv_Kuf, transpose_a=True)
        else:
            cov = Kff - tf.reduce_sum(Kuf * Qinv_Kuf, axis=-2)
        return self._outputs(mean, cov, full_cov, full_output_cov)

    @inherit_check_shapes
    def _conditional_fused(
        self, Xnew: TensorType, full_cov: bool = False, full_output_cov: bool = False
    ) -> MeanAndVariance:
        """The whitened predictive (module docstring), without a cache."""
        L, q = self.whitened()
        A_star = tf.linalg.triangular_solve(L, block_Kuf(self.X_data, self.kernel, Xnew))  # a* = L⁻¹k*, [B, M, N]
        mean, cov = q.predict(A_star, block_Kff(self.kernel, Xnew, full_cov), full_cov=full_cov)
        return self._outputs(mean, cov, full_cov, full_output_cov)
