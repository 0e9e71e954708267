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
operation.

Ψ₂ is the one large tensor of a DGP-AEP step ([N, M, M] per GP), and its only use in DGP-AEP is the
traces tr(C_k Ψ₂) against a few [M, M] matrices C_k (:func:`psi_traces`). It is symmetric, so it is
computed on the P = M(M + 1)/2 pairs m ≤ m' only, and its exponent for all inputs and pairs is one
matrix product: with σ = z_m + z_m' (so z̄ = σ/2) and w = 1/(ℓ² + 2s), expanding the square,

    log Ψ₂[n, (m, m')] = Σ_q [w_nq μ_nq σ_q - ¼ w_nq σ_q²] + r_n + d_mm',
    r_n = log σ_f⁴ - ½ Σ_q log(1 + 2s_nq/ℓ_q²) - Σ_q w_nq μ_nq²,
    d_mm' = -¼ Σ_q (z_mq - z_m'q)²/ℓ_q²,

an [N, 2Q + 2] × [2Q + 2, P] product (rows [wμ, -¼w, r, 1], columns [σ, σ², 1, d]) followed by one
exp; the traces are then one [N, P] × [P, K] product against the pair weights of the C_k
(C[m, m'] + C[m', m] off the diagonal). The cost is O(N M² Q), and the largest tensor is [N, P].

The GPs of a layer are one batch: GPflow's ``SharedIndependent`` / ``SeparateIndependent`` kernel and
inducing inputs [M, Q] (shared) or [B, M, Q] (one set per GP) give the statistics of all of them at
once, with a leading dimension B; it is 1 when the GPs share the kernel and the inducing inputs (the
statistics are then the same for every GP and computed once).
"""

from typing import NamedTuple, Tuple

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_float
from gpflow.kernels import Kernel, SeparateIndependent, SharedIndependent, SquaredExponential

__all__ = ["PsiStatistics", "PsiTraces", "psi_statistics", "psi_traces", "stacked_se_parameters"]


class PsiStatistics(NamedTuple):
    """ψ₀ [..., N], ψ₁ [..., N, M] and Ψ₂ [..., N, M, M] of a kernel under N Gaussian inputs."""

    psi0: tf.Tensor
    psi1: tf.Tensor
    psi2: tf.Tensor


class PsiTraces(NamedTuple):
    """ψ₀ [..., N], ψ₁ [..., N, M] and tr(C_k Ψ₂) [..., N, K] for K matrices C_k."""

    psi0: tf.Tensor
    psi1: tf.Tensor
    traces: tf.Tensor


def stacked_se_parameters(kernel: Kernel, input_dim: int) -> Tuple[tf.Tensor, tf.Tensor]:
    """
    σ_f² [B] and the lengthscales [B, Q] (Q = ``input_dim``; a scalar lengthscale repeated) of a
    ``SquaredExponential`` (B = 1), a ``SharedIndependent`` one (B = 1) or a ``SeparateIndependent``
    list of them (B kernels).
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


def _pairs(M: int) -> Tuple[np.ndarray, np.ndarray]:
    """The pairs m ≤ m' (row-major upper triangle, diagonal included): indices [P] each."""
    return np.triu_indices(M)


@check_shapes(
    "mean: [N, Q]",
    "var: [N, Q]",
    "Z: [batch..., M, Q]",
)
def psi_statistics(kernel: Kernel, mean, var, Z) -> PsiStatistics:
    """
    ψ₀, ψ₁, Ψ₂ of ``kernel`` under the inputs N(``mean``_n, diag ``var``_n), for inducing inputs ``Z``.
    ``var = 0`` gives ψ₁ = k(X, Z) and Ψ₂ = k kᵀ.

    ``kernel`` is a ``gpflow.kernels.SquaredExponential`` (ARD or not, without ``active_dims``), or GPflow's
    ``SharedIndependent`` one, and ``Z`` [M, Q]: the statistics are [N], [N, M] and [N, M, M]. For several
    GPs, ``kernel`` may be GPflow's ``SeparateIndependent`` (B kernels) and/or ``Z`` [B, M, Q] (one set per
    GP); then every statistic has a leading dimension B.
    """
    parts = _pair_statistics(kernel, mean, var, Z)
    M = int(parts.psi1.shape[-1])
    full = np.zeros((M, M), dtype=np.int64)
    i, j = _pairs(M)
    full[i, j] = full[j, i] = np.arange(i.size)
    log_psi2 = tf.matmul(parts.rows, parts.columns, transpose_b=True)  # [(B,) N, P]
    return PsiStatistics(parts.psi0, parts.psi1, tf.exp(tf.gather(log_psi2, full, axis=-1)))


@check_shapes(
    "mean: [N, Q]",
    "var: [N, Q]",
    "Z: [z_batch..., M, Q]",
    "matrices: [batch..., K, M, M]",
)
def psi_traces(kernel: Kernel, mean, var, Z, matrices) -> PsiTraces:
    """
    ψ₀, ψ₁ and tr(C_k Ψ₂) = Σ_{m,m'} C_k[m, m'] Ψ₂[n, m, m'] for every input n and each of the K
    ``matrices`` C_k, without forming Ψ₂ (module docstring). Arguments and leading dimensions as
    :func:`psi_statistics`; with B GPs the matrices are [B, K, M, M] (each GP's own) and the traces
    [B, N, K]; for one kernel and one Z, [K, M, M] and [N, K].
    """
    parts = _pair_statistics(kernel, mean, var, Z)
    matrices = tf.convert_to_tensor(matrices, dtype=parts.psi1.dtype)
    M = int(parts.psi1.shape[-1])
    i, j = _pairs(M)
    symmetric = matrices + tf.linalg.matrix_transpose(matrices)  # Ψ₂ is symmetric: C + Cᵀ on the pairs
    flat = tf.reshape(symmetric, tf.concat([tf.shape(matrices)[:-2], [M * M]], axis=0))
    halve_diagonal = tf.constant(np.where(i == j, 0.5, 1.0), dtype=flat.dtype)
    weights = halve_diagonal * tf.gather(flat, i * M + j, axis=-1)  # [(B,) K, P]
    return PsiTraces(parts.psi0, parts.psi1, _traces(parts.rows, parts.columns, weights))


#: the largest [N, P] block of Ψ₂ (bytes) :func:`psi_traces` works on at once
CHUNK_BYTES = 4 * 2**20


def _traces(rows, columns, weights):
    """
    exp(rows columnsᵀ) weightsᵀ, [(B,) N, K], in chunks of the N inputs whose [(B,) chunk, P] blocks of Ψ₂
    stay within :data:`CHUNK_BYTES` (a CPU cache's size rather than the whole minibatch's tensor).
    """
    N, P = rows.shape[-2], columns.shape[-2]
    batch = int(np.prod(columns.shape[:-2], dtype=np.int64)) * rows.dtype.size
    size = max(1, CHUNK_BYTES // (batch * P))
    if N is None or N <= size:
        return tf.matmul(tf.exp(tf.matmul(rows, columns, transpose_b=True)), weights, transpose_b=True)
    chunks = [rows[..., start : start + size, :] for start in range(0, N, size)]
    return tf.concat(
        [tf.matmul(tf.exp(tf.matmul(chunk, columns, transpose_b=True)), weights, transpose_b=True) for chunk in chunks],
        axis=-2,
    )


class _PairStatistics(NamedTuple):
    psi0: tf.Tensor  # [(B,) N]
    psi1: tf.Tensor  # [(B,) N, M]
    rows: tf.Tensor  # [(B,) N, F]
    columns: tf.Tensor  # [(B,) P, F]: log Ψ₂ [(B,) N, P] = rows columnsᵀ


def _pair_statistics(kernel: Kernel, mean, var, Z) -> _PairStatistics:
    """
    ψ₀, ψ₁ and the factors of log Ψ₂ on the pairs m ≤ m' (module docstring); with a leading dimension B
    for several kernels (``SeparateIndependent``) or several sets of Z ([B, M, Q]).
    """
    mean, var, Z = (tf.convert_to_tensor(t, dtype=default_float()) for t in (mean, var, Z))
    variances, lengthscales = stacked_se_parameters(kernel, mean.shape[-1])
    if not (isinstance(kernel, SeparateIndependent) or Z.shape.rank == 3):  # one GP: 2-D throughout
        variances, ell2 = variances[0], tf.square(lengthscales[0])  # [], [Q]
    else:
        variances, ell2 = variances[:, None], tf.square(lengthscales)[:, None, :]  # [Bk, 1], [Bk, 1, Q]
        mean, var = mean[None], var[None]

    # log ψ₁ = rows₁ columns₁ᵀ: -½Σ(μ - z)²/d = Σ (μ/d) z - ½ Σ (1/d) z² - ½ Σ μ²/d, d = ℓ² + s
    d1 = ell2 + var  # [(Bk,) N, Q]
    c1 = (
        tf.math.log(variances)
        - 0.5 * tf.reduce_sum(tf.math.log(d1 / ell2), axis=-1)
        - 0.5 * tf.reduce_sum(tf.square(mean) / d1, axis=-1)
    )[..., None]
    rows1 = tf.concat([mean / d1, -0.5 / d1, c1], axis=-1)  # [(Bk,) N, 2Q+1]
    columns1 = tf.concat([Z, tf.square(Z), tf.ones_like(Z[..., :1])], axis=-1)  # [(Bz,) M, 2Q+1]
    psi1 = tf.exp(tf.matmul(rows1, columns1, transpose_b=True))  # [(B,) N, M]
    psi0 = variances * tf.ones_like(psi1[..., 0])

    # log Ψ₂ on the pairs: rows [wμ, -¼w, r, 1] [(Bk,) N, 2Q+2] times columns [σ, σ², 1, d] [(B,) P, 2Q+2]
    w = 1.0 / (ell2 + 2.0 * var)  # [(Bk,) N, Q]
    r = (
        2.0 * tf.math.log(variances)
        - 0.5 * tf.reduce_sum(tf.math.log(1.0 + 2.0 * var / ell2), axis=-1)
        - tf.reduce_sum(w * tf.square(mean), axis=-1)
    )[..., None]  # [(Bk,) N, 1]
    rows = tf.concat([w * mean, -0.25 * w, r, tf.ones_like(r)], axis=-1)
    i, j = _pairs(int(Z.shape[-2]))
    z_i, z_j = tf.gather(Z, i, axis=-2), tf.gather(Z, j, axis=-2)  # [(Bz,) P, Q]
    d = -0.25 * tf.reduce_sum(tf.square(z_i - z_j) / ell2, axis=-1, keepdims=True)  # [(B,) P, 1]
    sigma = (z_i + z_j) * tf.ones_like(d)  # [(B,) P, Q]
    columns = tf.concat([sigma, tf.square(sigma), tf.ones_like(d), d], axis=-1)
    return _PairStatistics(psi0, psi1, rows, columns)
