r"""
Kernel expectations ("Psi statistics") of the squared-exponential ARD kernel under a diagonal
Gaussian input, vectorised over the inputs: the expectations of Bui et al. 2016, App. D, Eqs. (3)–(5), in
the closed forms of Titsias & Lawrence (2010).

For h ~ N(μ, diag s) in R^Q, k(a, b) = σ_f² exp(-½ Σ_q (a_q - b_q)²/ℓ_q²) and inducing inputs z_m:

    ψ₀ = E[k(h, h)] = σ_f²,
    ψ₁[m] = E[k(z_m, h)] = σ_f² Π_q (1 + s_q/ℓ_q²)^{-½} exp(-½ Σ_q (μ_q - z_mq)²/(ℓ_q² + s_q)),
    Ψ₂[m, m'] = E[k(z_m, h) k(h, z_m')]
              = σ_f⁴ Π_q (1 + 2s_q/ℓ_q²)^{-½} exp(-Σ_q (z_mq - z_m'q)²/(4ℓ_q²) - Σ_q (μ_q - z̄_q)²/(ℓ_q² + 2s_q)),

z̄ = (z_m + z_m')/2. GPflow computes the same quantities one input at a time in
``gpflow.expectations`` (the test oracle); here the N inputs of a minibatch are one tensor
operation and Ψ₂ costs O(N M² Q).

Ψ₂ is the one [N, M, M] tensor of a DGP-AEP step, so it is built in as few passes over it as
possible. Expanding the two squares, its exponent is a per-(input, row) term, the same term of the
column, and one cross term,

    log Ψ₂[n, m, m'] = s_{n,m} + s_{n,m'} + Σ_q u_{n,q} z_mq z_m'q,
    w = 1/(ℓ² + 2s),  u = ½(1/ℓ² - w),
    s_{n,m} = Σ_q [w_q μ_q z_mq - ¼ w_q z_mq² - z_mq²/(4ℓ_q²)] + ½ r_n,
    r_n = log σ_f⁴ - ½ Σ_q log(1 + 2s_q/ℓ_q²) - Σ_q w_q μ_q²,

which is one batched [M, Q + 2] × [Q + 2, M] product per input followed by one exp; and the only
use of Ψ₂ in DGP-AEP, the traces tr(C_k Ψ₂) against a few fixed [M, M] matrices C_k
(:func:`psi2_traces`), is one [N, M²] × [M², K] product.

The GPs of a layer are one batch: GPflow's ``SharedIndependent`` / ``SeparateIndependent`` kernel and
inducing inputs [M, Q] (shared) or [P, M, Q] (one set per GP) give the statistics of all of them at
once, with a leading dimension P; it is 1 when the GPs share the kernel and the inducing inputs (the
statistics are then the same for every GP and computed once).
"""

from typing import NamedTuple, Tuple

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_float
from gpflow.kernels import Kernel, SeparateIndependent, SharedIndependent, SquaredExponential

__all__ = ["PsiStatistics", "psi_statistics", "psi2_traces", "stacked_se_parameters"]


class PsiStatistics(NamedTuple):
    """ψ₀ [..., N], ψ₁ [..., N, M] and Ψ₂ [..., N, M, M] of a kernel under N Gaussian inputs."""

    psi0: tf.Tensor
    psi1: tf.Tensor
    psi2: tf.Tensor


def stacked_se_parameters(kernel: Kernel, input_dim: int) -> Tuple[tf.Tensor, tf.Tensor]:
    """
    σ_f² [P] and the lengthscales [P, Q] (Q = ``input_dim``; a scalar lengthscale repeated) of a
    ``SquaredExponential`` (P = 1), a ``SharedIndependent`` one (P = 1) or a ``SeparateIndependent``
    list of them (P kernels).
    """
    if isinstance(kernel, SharedIndependent):
        kernel = kernel.kernel
    kernels = kernel.kernels if isinstance(kernel, SeparateIndependent) else [kernel]
    for k in kernels:
        if not isinstance(k, SquaredExponential):
            raise ValueError(
                f"kernel: the Psi statistics are implemented for SquaredExponential; got {type(k).__name__}"
            )
    variances = tf.stack([tf.convert_to_tensor(k.variance) for k in kernels])
    ones = tf.ones([input_dim], dtype=variances.dtype)
    return variances, tf.stack([tf.convert_to_tensor(k.lengthscales) * ones for k in kernels])


@check_shapes(
    "mean: [N, Q]",
    "var: [N, Q]",
    "Z: [batch..., M, Q]",
)
def psi_statistics(kernel: Kernel, mean, var, Z) -> PsiStatistics:
    """
    ψ₀, ψ₁, Ψ₂ of ``kernel`` under the inputs N(``mean``_n, diag ``var``_n), for inducing inputs ``Z``.
    ``var = 0`` gives ψ₁ = k(X, Z) and Ψ₂ = k kᵀ.

    ``kernel`` is a ``gpflow.kernels.SquaredExponential`` (ARD or not, without ``active_dims``) and ``Z``
    [M, Q]: the statistics are [N], [N, M] and [N, M, M]. For the GPs of a layer, ``kernel`` may be GPflow's
    ``SharedIndependent`` or ``SeparateIndependent`` (P kernels) and ``Z`` [M, Q] or [P, M, Q] (one set
    per GP); then every statistic has a leading dimension P, 1 when both are shared.
    """
    mean, var, Z = (tf.convert_to_tensor(t, dtype=default_float()) for t in (mean, var, Z))
    variances, lengthscales = stacked_se_parameters(kernel, mean.shape[-1])
    batched = isinstance(kernel, (SharedIndependent, SeparateIndependent)) or Z.shape.rank == 3
    Z = Z if Z.shape.rank == 3 else Z[None]  # [Pz, M, Q]
    psi = _batched_psi_statistics(variances, tf.square(lengthscales), mean, var, Z)
    return psi if batched else PsiStatistics(*(t[0] for t in psi))


@check_shapes(
    "variances: [Pk]",
    "ell2: [Pk, Q]",
    "mean: [N, Q]",
    "var: [N, Q]",
    "Z: [Pz, M, Q]",
    "return.psi0: [P, N]",
    "return.psi1: [P, N, M]",
    "return.psi2: [P, N, M, M]",
)
def _batched_psi_statistics(variances, ell2, mean, var, Z) -> PsiStatistics:
    """The statistics of P = max(Pk, Pz) GPs (Pk kernels' σ_f², ℓ² against Pz sets of Z; module docstring)."""
    ell2 = ell2[:, None, :]  # [Pk, 1, Q]

    # ψ₁: denominators ℓ² + s  [Pk, N, Q]
    d1 = ell2 + var[None]
    log_det1 = -0.5 * tf.reduce_sum(tf.math.log(d1 / ell2), axis=-1)  # [Pk, N]
    sq1 = tf.reduce_sum(
        tf.square(mean[None, :, None, :] - Z[:, None, :, :]) / d1[:, :, None, :], axis=-1
    )  # [P, N, M]
    psi1 = variances[:, None, None] * tf.exp(log_det1[..., None] - 0.5 * sq1)

    # Ψ₂ = exp(X_n Y_nᵀ) with X_n = [z u_n, s_n, 1], Y_n = [z, 1, s_n] (module docstring)
    w = 1.0 / (ell2 + 2.0 * var[None])  # [Pk, N, Q]
    u = 0.5 * (1.0 / ell2 - w)  # [Pk, N, Q], ≥ 0
    Z2 = tf.square(Z)
    r = (
        2.0 * tf.math.log(variances)[:, None]
        - 0.5 * tf.reduce_sum(tf.math.log(1.0 + 2.0 * var[None] / ell2), axis=-1)
        - tf.reduce_sum(w * tf.square(mean[None]), axis=-1)
    )  # [Pk, N]
    s = (
        tf.matmul(w * mean[None], Z, transpose_b=True)
        - 0.25 * tf.matmul(w, Z2, transpose_b=True)
        - 0.25 * tf.reduce_sum(Z2 / ell2, axis=-1)[:, None, :]
        + 0.5 * r[..., None]
    )[..., None]  # [P, N, M, 1]
    ones = tf.ones_like(s)
    Z_n = Z[:, None, :, :] * tf.ones_like(s)  # [P, N, M, Q]
    rows = tf.concat([Z_n * u[:, :, None, :], s, ones], axis=-1)
    columns = tf.concat([Z_n, ones, s], axis=-1)
    psi2 = tf.exp(tf.matmul(rows, columns, transpose_b=True))
    psi0 = tf.broadcast_to(variances[:, None], tf.shape(psi1)[:2])
    return PsiStatistics(psi0, psi1, psi2)


@check_shapes("psi2: [batch..., N, M, M]", "matrices: [batch..., K, M, M]", "return: [batch..., N, K]")
def psi2_traces(psi2, matrices):
    """
    Σ_{m,m'} C_k[m, m'] Ψ₂[n, m, m'] = tr(C_k Ψ₂,n) (Ψ₂ is symmetric) for every n and k, in one pass over
    Ψ₂ (for each leading index: a batch of GPs with their own Ψ₂ and matrices).
    """
    shape = tf.shape(psi2)
    flat_psi2 = tf.reshape(psi2, tf.concat([shape[:-2], [shape[-2] * shape[-1]]], axis=0))
    m_shape = tf.shape(matrices)
    flat_matrices = tf.reshape(matrices, tf.concat([m_shape[:-2], [m_shape[-2] * m_shape[-1]]], axis=0))
    return tf.matmul(flat_psi2, flat_matrices, transpose_b=True)
