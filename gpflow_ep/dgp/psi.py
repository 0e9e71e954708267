r"""
Kernel expectations ("Psi statistics") of the squared-exponential ARD kernel under a diagonal
Gaussian input, vectorised over the inputs (DGP-AEP spec §2.4).

For h ~ N(μ, diag s) in R^Q, k(a, b) = σ_f² exp(-½ Σ_q (a_q - b_q)²/ℓ_q²) and inducing inputs z_m:

    ψ₀ = E[k(h, h)] = σ_f²,
    ψ₁[m] = E[k(z_m, h)] = σ_f² Π_q (1 + s_q/ℓ_q²)^{-½} exp(-½ Σ_q (μ_q - z_mq)²/(ℓ_q² + s_q)),
    Ψ₂[m, m'] = E[k(z_m, h) k(h, z_m')]
              = σ_f⁴ Π_q (1 + 2s_q/ℓ_q²)^{-½} exp(-Σ_q (z_mq - z_m'q)²/(4ℓ_q²) - Σ_q (μ_q - z̄_q)²/(ℓ_q² + 2s_q)),

z̄ = (z_m + z_m')/2. GPflow computes the same quantities one input at a time in
``gpflow.expectations`` (the test oracle); here the N inputs of a minibatch are one tensor
operation and Ψ₂ costs O(N M² Q).
"""

from typing import NamedTuple

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.kernels import SquaredExponential

__all__ = ["PsiStatistics", "psi_statistics"]


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

    # Ψ₂: Σ_q w (μ - z̄)² = Σ w μ² - 2 Σ (wμ) z̄ + Σ w z̄²,  w = 1/(ℓ² + 2s)
    w = 1.0 / (ell2 + 2.0 * var)  # [N, Q]
    log_det2 = -0.5 * tf.reduce_sum(tf.math.log(1.0 + 2.0 * var / ell2), axis=-1)  # [N]
    z_bar = 0.5 * (Z[:, None, :] + Z[None, :, :])  # [M, M, Q]
    z_diff = tf.reduce_sum(tf.square(Z[:, None, :] - Z[None, :, :]) / (4.0 * ell2), axis=-1)  # [M, M]
    quad = (
        tf.reduce_sum(w * tf.square(mean), axis=-1)[:, None, None]
        - 2.0 * tf.einsum("nq,abq->nab", w * mean, z_bar)
        + tf.einsum("nq,abq->nab", w, tf.square(z_bar))
    )
    psi2 = tf.square(variance) * tf.exp(log_det2[:, None, None] - z_diff[None] - quad)
    psi0 = variance * tf.ones([N], dtype=mean.dtype)
    return PsiStatistics(psi0, psi1, psi2)
