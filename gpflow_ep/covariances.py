r"""
The prior covariances of independent outputs as blocks with a leading block dimension, through
GPflow's own ``gpflow.covariances.Kuu`` / ``Kuf`` dispatch (as GPflow's multi-output SVGP uses it).

A sparse model of C independent outputs f^c with inducing values u^c = f^c(Z_c) has a block-diagonal
K_uu; its algebra works on the blocks, [B, M, M], [B, M, N] and diag K_ff [B, N]. B is C when the
outputs differ in kernel or inducing inputs, and 1 when they share both (one GPflow kernel with
``InducingPoints``, or ``SharedIndependent`` with ``SharedIndependentInducingVariables``): then
K_uu is factorised once and L⁻¹K_uf computed once for all outputs, and the per-output algebra
broadcasts the single block against its C posteriors (TensorFlow's ``matmul``, ``triangular_solve``
and ``cholesky_solve`` broadcast batch dimensions). Each of K_uu, K_uf, K_ff has its own B:
``SharedIndependent`` with ``SeparateIndependentInducingVariables`` gives K_uu, K_uf per output
and one diag K_ff.
"""

import tensorflow as tf
from check_shapes import check_shapes
from gpflow import covariances
from gpflow.inducing_variables import InducingVariables, SharedIndependentInducingVariables
from gpflow.kernels import Kernel, MultioutputKernel, SeparateIndependent, SharedIndependent

__all__ = ["block_Kuu", "block_Kuf", "block_Kff", "shares_blocks"]


def shares_blocks(kernel: Kernel, inducing_variable: InducingVariables) -> bool:
    """True when every output has the same K_uu and K_uf (one kernel and one set of inducing inputs)."""
    if isinstance(kernel, SharedIndependent):
        return isinstance(inducing_variable, SharedIndependentInducingVariables)
    return not isinstance(kernel, MultioutputKernel)


def _blocks(K: tf.Tensor) -> tf.Tensor:
    """One block [M, ...] as [1, M, ...]; blocks [B, M, ...] unchanged."""
    return K if K.shape.rank == 3 else K[None]


@check_shapes("return: [B, M, M]")
def block_Kuu(inducing_variable: InducingVariables, kernel: Kernel, *, jitter: float = 0.0) -> tf.Tensor:
    """K_uu + jitter·I of every block: ``gpflow.covariances.Kuu``, [1, M, M] when the outputs share it."""
    return _blocks(covariances.Kuu(inducing_variable, kernel, jitter=jitter))


@check_shapes("X: [N, D]", "return: [B, M, N]")
def block_Kuf(inducing_variable: InducingVariables, kernel: Kernel, X) -> tf.Tensor:
    """K_uf of every block at the points X: ``gpflow.covariances.Kuf``, [1, M, N] when shared."""
    return _blocks(covariances.Kuf(inducing_variable, kernel, X))


@check_shapes("X: [N, D]", "return: [B, N, N] if full_cov", "return: [B, N] if not full_cov")
def block_Kff(kernel: Kernel, X, full_cov: bool = False) -> tf.Tensor:
    """K_ff (or its diagonal) of every output's kernel at X: [C, ...] for ``SeparateIndependent``, else [1, ...]."""
    if isinstance(kernel, SeparateIndependent):
        return tf.stack([k(X, full_cov=full_cov) for k in kernel.kernels], axis=0)
    if isinstance(kernel, SharedIndependent):
        return kernel.kernel(X, full_cov=full_cov)[None]
    return kernel(X, full_cov=full_cov)[None]
