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
"""

from typing import NamedTuple

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.kernels import SquaredExponential

__all__ = ["PsiStatistics", "psi_statistics", "psi2_traces"]


class PsiStatistics(NamedTuple):
    """ψ₀ [N], ψ₁ [N, M] and Ψ₂ [N, M, M] of a kernel under N Gaussian inputs."""

    psi0: tf.Tensor
    psi1: tf.Tensor
    psi2: tf.Tensor


@check_shapes(
    "mean: [N, Q]",
    "var: [N, Q]",
    "Z: [M, Q]",
    "return.psi0: [N]",
    "return.psi1: [N, M]",
    "return.psi2: [N, M, M]",
)
def psi_statistics(kernel: SquaredExponential, mean, var, Z) -> PsiStatistics:
    """
    ψ₀, ψ₁, Ψ₂ of ``kernel`` (a ``gpflow.kernels.SquaredExponential``, ARD or not, without
    ``active_dims``) under the inputs N(``mean``_n, diag ``var``_n), for inducing inputs ``Z``.
    ``var = 0`` gives ψ₁ = k(X, Z) and Ψ₂ = k kᵀ.
    """
    if not isinstance(kernel, SquaredExponential):
        raise ValueError(
            f"kernel: the Psi statistics are implemented for SquaredExponential; got {type(kernel).__name__}"
        )
    variance = tf.convert_to_tensor(kernel.variance)
    ell2 = tf.square(tf.convert_to_tensor(kernel.lengthscales)) * tf.ones_like(mean[0])  # [Q]
    N = tf.shape(mean)[0]

    # ψ₁: denominators ℓ² + s  [N, Q]
    d1 = ell2 + var
    log_det1 = -0.5 * tf.reduce_sum(tf.math.log(d1 / ell2), axis=-1)  # [N]
    sq1 = tf.reduce_sum(tf.square(mean[:, None, :] - Z[None, :, :]) / d1[:, None, :], axis=-1)  # [N, M]
    psi1 = variance * tf.exp(log_det1[:, None] - 0.5 * sq1)

    # Ψ₂ = exp(X_n Y_nᵀ) with X_n = [z u_n, s_n, 1], Y_n = [z, 1, s_n] (module docstring)
    w = 1.0 / (ell2 + 2.0 * var)  # [N, Q]
    u = 0.5 * (1.0 / ell2 - w)  # [N, Q], ≥ 0
    Z2 = tf.square(Z)
    r = (
        2.0 * tf.math.log(variance)
        - 0.5 * tf.reduce_sum(tf.math.log(1.0 + 2.0 * var / ell2), axis=-1)
        - tf.reduce_sum(w * tf.square(mean), axis=-1)
    )  # [N]
    s = (
        tf.matmul(w * mean, Z, transpose_b=True)
        - 0.25 * tf.matmul(w, Z2, transpose_b=True)
        - 0.25 * tf.reduce_sum(Z2 / ell2, axis=-1)[None, :]
        + 0.5 * r[:, None]
    )[..., None]  # [N, M, 1]
    ones = tf.ones_like(s)
    Z_n = tf.broadcast_to(Z[None], tf.concat([[N], tf.shape(Z)], axis=0))  # [N, M, Q]
    rows = tf.concat([Z_n * u[:, None, :], s, ones], axis=-1)
    columns = tf.concat([Z_n, ones, s], axis=-1)
    psi2 = tf.exp(tf.matmul(rows, columns, transpose_b=True))
    psi0 = variance * tf.ones([N], dtype=mean.dtype)
    return PsiStatistics(psi0, psi1, psi2)


@check_shapes("psi2: [N, M, M]", "matrices: [K, M, M]", "return: [N, K]")
def psi2_traces(psi2, matrices):
    """Σ_{m,m'} C_k[m, m'] Ψ₂[n, m, m'] = tr(C_k Ψ₂,n) (Ψ₂ is symmetric) for every n and k, in one pass over Ψ₂."""
    shape = tf.shape(psi2)
    flat_psi2 = tf.reshape(psi2, [shape[0], shape[1] * shape[2]])
    flat_matrices = tf.reshape(matrices, [tf.shape(matrices)[0], shape[1] * shape[2]])
    return tf.matmul(flat_psi2, flat_matrices, transpose_b=True)
