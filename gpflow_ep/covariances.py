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

:func:`multioutput_kernel` and :func:`multioutput_inducing_variable` turn what a user passes for C
independent outputs (one kernel, a list, GPflow's multi-output objects, arrays of inducing inputs)
into GPflow's multi-output kernel and inducing variables.
"""

from typing import Sequence, Union

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow import covariances
from gpflow.inducing_variables import (
    InducingPoints,
    InducingVariables,
    SeparateIndependentInducingVariables,
    SharedIndependentInducingVariables,
)
from gpflow.kernels import Kernel, MultioutputKernel, SeparateIndependent, SharedIndependent

from .validation import check_inputs

__all__ = [
    "block_Kuu",
    "block_Kuf",
    "block_Kff",
    "shares_blocks",
    "multioutput_kernel",
    "multioutput_inducing_variable",
]


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


def multioutput_kernel(
    kernel: Union[Kernel, Sequence[Kernel]], num_outputs: int, per: str = "output"
) -> MultioutputKernel:
    """
    The kernel of ``num_outputs`` = C independent outputs as GPflow's multi-output kernel:
    ``SharedIndependent`` or ``SeparateIndependent`` as given (output_dim C), one plain kernel as
    ``SharedIndependent`` (shared hyper-parameters), a sequence of C kernels as ``SeparateIndependent``.
    ``per`` names an output in the error messages ("class", ...).
    """
    C = num_outputs
    if isinstance(kernel, (list, tuple)):
        if len(kernel) != C or not all(isinstance(k, Kernel) for k in kernel):
            raise ValueError(f"kernel: give one kernel or {C} (one per {per}); got {len(kernel)}")
        return SeparateIndependent(list(kernel))
    if isinstance(kernel, SharedIndependent):
        if kernel.output_dim != C:
            raise ValueError(f"kernel: SharedIndependent has output_dim {kernel.output_dim}; give {C} (one per {per})")
        return kernel
    if isinstance(kernel, SeparateIndependent):
        if len(kernel.kernels) != C:
            raise ValueError(f"kernel: SeparateIndependent has {len(kernel.kernels)} kernels; give one per {per} ({C})")
        return kernel
    if isinstance(kernel, MultioutputKernel) or not isinstance(kernel, Kernel):
        raise ValueError(
            f"kernel: give a GPflow kernel, a sequence of one per {per}, or a SharedIndependent / "
            f"SeparateIndependent kernel; got {type(kernel).__name__}"
        )
    return SharedIndependent(kernel, output_dim=C)


def multioutput_inducing_variable(inducing_variable, num_outputs: int, per: str = "output") -> InducingVariables:
    """
    The inducing inputs of ``num_outputs`` = C independent outputs as GPflow's multi-output inducing
    variables: ``SharedIndependentInducingVariables`` / ``SeparateIndependentInducingVariables`` as given
    (C sets of the same size M), one ``InducingPoints`` shared by all outputs, an [M, D] array as C
    trainable copies and a sequence of C arrays (or ``InducingPoints``) as separate inducing inputs.
    """
    C = num_outputs
    if isinstance(inducing_variable, InducingPoints):
        inducing_variable = SharedIndependentInducingVariables(inducing_variable)
    elif isinstance(inducing_variable, (list, tuple)):
        parts = [z if isinstance(z, InducingPoints) else InducingPoints(z) for z in inducing_variable]
        for c, part in enumerate(parts):  # GPflow's check of equal columns is not a ValueError
            if part.Z.shape[-1] != parts[0].Z.shape[-1]:
                raise ValueError(
                    f"inducing_variable[{c}]: Z (inducing points) has {part.Z.shape[-1]} columns but "
                    f"inducing_variable[0] has {parts[0].Z.shape[-1]}"
                )
        inducing_variable = SeparateIndependentInducingVariables(parts)
    elif not isinstance(inducing_variable, InducingVariables):
        Z = check_inputs(inducing_variable, "inducing_variable")
        inducing_variable = SeparateIndependentInducingVariables([InducingPoints(np.array(Z)) for _ in range(C)])
    if isinstance(inducing_variable, SeparateIndependentInducingVariables):
        parts = inducing_variable.inducing_variable_list
        if len(parts) != C:
            raise ValueError(f"inducing_variable has {len(parts)} sets of inducing inputs; give {C} (one per {per})")
        sizes = {int(iv.num_inducing) for iv in parts}
        if len(sizes) != 1:
            raise ValueError(f"inducing_variable: every {per} needs the same number of inducing inputs; got {sizes}")
    elif not isinstance(inducing_variable, SharedIndependentInducingVariables):
        raise ValueError(
            "inducing_variable: give an [M, D] array, a sequence of them, InducingPoints or GPflow's Shared- or "
            f"SeparateIndependentInducingVariables; got {type(inducing_variable).__name__}"
        )
    return inducing_variable
