r"""
Posterior algebra of inducing-point EP models, in whitened coordinates (SEP spec §1.6).

With L = chol(K_uu) and v = L⁻¹u (prior N(0, I)), every site acts on a projection h_i = a_iᵀv,
a_i = L⁻¹k_i. The sites' natural parameters add up to a Gaussian in v:

    q(v) ∝ N(v; 0, I) exp(-½ vᵀΛv + ηᵀv),   Λ = A T Aᵀ = Σ_i τ_i a_i a_iᵀ,   η = A ν,

so q(v) = N(B⁻¹η, B⁻¹) with B = I + Λ (eigenvalues ≥ 1 when every τ_i ≥ 0). With L_B = chol(B),
W = L_B⁻¹A and c = L_B⁻¹η, the marginals of the projections are (SEP spec §1.6)

    σ_i² = ‖W_{:,i}‖²,   h_i = W_{:,i}ᵀ c,

and the normaliser term of the EP energy (SEP spec §2.5, corrected eq. 29) is

    g(q) - g(prior) = -Σ_j log (L_B)_jj + ½ ‖c‖².

Everything costs O(nm²); no inverse is formed. A failed Cholesky (q improper, possible only with
negative site precisions) is detected and flagged, never propagated as NaN.
"""

import tensorflow as tf

__all__ = ["WhitenedGaussian"]


class WhitenedGaussian:
    """q(v) ∝ N(v; 0, I) exp(-½ vᵀΛv + ηᵀv) for an [M, M] ``Lambda`` and [M, 1] ``eta``."""

    def __init__(self, Lambda, eta):
        B = tf.eye(tf.shape(Lambda)[0], dtype=Lambda.dtype) + Lambda
        chol = tf.linalg.cholesky(B)
        ok = tf.reduce_all(tf.math.is_finite(chol)) & tf.reduce_all(tf.linalg.diag_part(chol) > 0.0)
        self.proper = ok
        self._L_B = tf.where(ok, chol, tf.eye(tf.shape(B)[0], dtype=B.dtype))
        self._c = tf.linalg.triangular_solve(self._L_B, eta)  # [M, 1]

    @staticmethod
    def from_sites(A, precision, natural_mean) -> "WhitenedGaussian":
        """Λ = A T Aᵀ, η = A ν from [M, N] projections and [N, 1] sites."""
        return WhitenedGaussian(tf.matmul(A * precision[:, 0][None, :], A, transpose_b=True), A @ natural_mean)

    def project(self, A):
        """Mean and variance of the projections h = Aᵀv, each [N, 1]."""
        W = tf.linalg.triangular_solve(self._L_B, A)
        return tf.matmul(W, self._c, transpose_a=True), tf.reduce_sum(tf.square(W), axis=0)[:, None]

    @property
    def log_normaliser_ratio(self):
        return -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(self._L_B))) + 0.5 * tf.reduce_sum(tf.square(self._c))

    @property
    def mean(self):
        """E[v] = B⁻¹η, [M, 1]."""
        return tf.linalg.triangular_solve(self._L_B, self._c, adjoint=True)

    def covariance(self):
        """Cov[v] = B⁻¹, [M, M]."""
        eye = tf.eye(tf.shape(self._L_B)[0], dtype=self._L_B.dtype)
        inv_chol = tf.linalg.triangular_solve(self._L_B, eye)
        return tf.matmul(inv_chol, inv_chol, transpose_a=True)

    def predict(self, A_star, Kss, full_cov: bool = False):
        """
        q(f*) for f* = a*ᵀv + (prior residual): mean a*ᵀE[v], covariance
        K** - A*ᵀA* + (L_B⁻¹A*)ᵀ(L_B⁻¹A*) (the whitened SVGP predictive).
        """
        W = tf.linalg.triangular_solve(self._L_B, A_star)
        mean = tf.matmul(W, self._c, transpose_a=True)[:, 0]
        if full_cov:
            cov = Kss - tf.matmul(A_star, A_star, transpose_a=True) + tf.matmul(W, W, transpose_a=True)
        else:
            cov = Kss - tf.reduce_sum(tf.square(A_star), axis=0) + tf.reduce_sum(tf.square(W), axis=0)
        return mean, cov
