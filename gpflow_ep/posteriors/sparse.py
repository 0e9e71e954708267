r"""
q(f) of a sparse EP model as GPflow's own SVGP posterior.

Sparse EP (Hernández-Lobato & Hernández-Lobato 2016, Sec. 2; Villacampa-Calvo & Hernández-Lobato
2017, Sec. 3, one block per class) keeps q(u) per block c as the prior times the sites' Gaussian in
u, in natural parameters (Λ_u, η_u):

    q(u^c) ∝ N(u^c; 0, K_uu) exp(-½ u^cᵀΛ_u u^c + η_uᵀu^c),   Σ_u = (K_uu⁻¹ + Λ_u)⁻¹,   μ_u = Σ_u η_u,

and predicts as an SVGP with that q(u) (the paper's eq. 5 with the FITC conditional p(f* | u)). So
the posterior is GPflow's (``gpflow.posteriors.create_posterior`` with ``whiten=False``: GPflow's
``IndependentPosteriorSingleOutput`` or ``IndependentPosteriorMultiOutput``, as ``SVGP.posterior()``
returns), given q(u) as ``q_mu`` [M, C] and a lower-triangular ``q_sqrt`` [C, M, M].

Both come from the natural parameters without an inverse: with L = chol(K_uu) and v = L⁻¹u, q(v)
has precision B = I + LᵀΛ_uL and shift Lᵀη_u, so μ_u = L B⁻¹Lᵀη_u and Σ_u = L B⁻¹ Lᵀ = (LR)(LR)ᵀ
with R the lower-triangular factor of B⁻¹: R = J chol(JBJ)⁻ᵀ J (J the reversal permutation; JBJ =
L_J L_Jᵀ gives B = (J L_J J)(J L_J J)ᵀ with J L_J J upper triangular, whose inverse transpose is
lower triangular). q(u)'s natural parameters are EP state and do not change with the kernel, but
q(u) itself does (through K_uu): ``q_mu`` and ``q_sqrt`` are deferred tensors (the mechanism of
GPflow's own ``Parameter``), computed from the current kernel, inducing inputs and natural
parameters whenever they are read, so ``update_cache()`` after training — new hyper-parameters, Z
or EP state — predicts as a freshly built posterior, as ``SVGP.posterior()``'s does.
"""

from typing import Optional, Tuple

import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import check_shapes
from gpflow.base import TensorType
from gpflow.config import default_jitter
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel
from gpflow.mean_functions import MeanFunction
from gpflow.posteriors import BasePosterior, PrecomputeCacheType, create_posterior

from ..covariances import block_Kuu

__all__ = ["sparse_ep_posterior", "q_from_natural_parameters"]


@check_shapes(
    "precision: [C, M, M]",
    "shift: [C, M, 1]",
    "return[0]: [M, C]",
    "return[1]: [C, M, M]",
)
def q_from_natural_parameters(
    kernel: Kernel, inducing_variable: InducingVariables, precision: TensorType, shift: TensorType
) -> Tuple[tf.Tensor, tf.Tensor]:
    """
    q(u) = N(μ_u, Σ_u) of every block from its natural parameters (module docstring): ``q_mu``
    [M, C] and the lower-triangular ``q_sqrt`` [C, M, M] with q_sqrt q_sqrtᵀ = Σ_u, in GPflow's layout.
    """
    L = tf.linalg.cholesky(block_Kuu(inducing_variable, kernel, jitter=default_jitter()))  # [1 or C, M, M]
    B = tf.matmul(L, tf.matmul(precision, L), transpose_a=True)
    B = tf.linalg.set_diag(B, tf.linalg.diag_part(B) + 1.0)  # I + LᵀΛ_uL, [C, M, M]
    L_J = tf.linalg.cholesky(tf.reverse(B, axis=[-2, -1]))  # chol(JBJ)
    identity = tf.eye(tf.shape(B)[-1], batch_shape=tf.shape(B)[:-2], dtype=B.dtype)
    R = tf.reverse(tf.linalg.triangular_solve(L_J, identity, adjoint=True), axis=[-2, -1])  # J L_J⁻ᵀ J
    q_sqrt = tf.matmul(L, R)  # lower triangular, q_sqrt q_sqrtᵀ = L B⁻¹ Lᵀ = Σ_u
    mean = tf.matmul(q_sqrt, tf.matmul(q_sqrt, shift, transpose_a=True))  # μ_u = Σ_u η_u, [C, M, 1]
    return tf.transpose(mean[..., 0]), q_sqrt


def sparse_ep_posterior(
    kernel: Kernel,
    inducing_variable: InducingVariables,
    precision: TensorType,
    shift: TensorType,
    mean_function: Optional[MeanFunction] = None,
    *,
    precompute_cache: Optional[PrecomputeCacheType],
) -> BasePosterior:
    """
    GPflow's posterior of q(f) = ∫ p(f | u) q(u) du for q(u) with natural parameters Λ_u = ``precision``
    ([C, M, M] or [M, M] for one block) and η_u = ``shift`` ([C, M, 1] or [M, 1]), tensors or the EP
    state's variables (module docstring): ``gpflow.posteriors.create_posterior(kernel,
    inducing_variable, q_mu, q_sqrt, whiten=False, mean_function, precompute_cache)``.
    """
    M = int(shift.shape[-2])
    C = 1 if len(shift.shape) == 2 else int(shift.shape[0])

    def natural_parameters():
        return tf.reshape(precision, [C, M, M]), tf.reshape(shift, [C, M, 1])

    def q_mu(_):
        return q_from_natural_parameters(kernel, inducing_variable, *natural_parameters())[0]

    def q_sqrt(_):
        return q_from_natural_parameters(kernel, inducing_variable, *natural_parameters())[1]

    track = [kernel, inducing_variable, precision, shift]
    return create_posterior(
        kernel,
        inducing_variable,
        tfp.util.DeferredTensor(shift, q_mu, shape=[M, C], also_track=track, name="q_mu"),
        tfp.util.DeferredTensor(precision, q_sqrt, shape=[C, M, M], also_track=track, name="q_sqrt"),
        whiten=False,
        mean_function=mean_function,
        precompute_cache=precompute_cache,
    )
