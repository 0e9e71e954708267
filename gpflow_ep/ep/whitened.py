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

from typing import NamedTuple

import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes

from .algebra import JointPosterior, SiteAlgebra, SiteMarginals

__all__ = ["WhitenedGaussian", "WhitenedAlgebra", "Projections"]


class Projections(NamedTuple):
    """Moments under q(v) of projections h = Aᵀv, and their half-solves W = L_B⁻¹A."""

    mean: tf.Tensor  # [N, 1]  Wᵀc
    var: tf.Tensor  # [N, 1]   ‖W_{:,i}‖²
    half: tf.Tensor  # [M, N]  W


class WhitenedGaussian:
    """q(v) ∝ N(v; 0, I) exp(-½ vᵀΛv + ηᵀv) for an [M, M] ``Lambda`` and [M, 1] ``eta``."""

    @check_shapes("Lambda: [M, M]", "eta: [M, 1]")
    def __init__(self, Lambda, eta):
        B = tf.eye(tf.shape(Lambda)[0], dtype=Lambda.dtype) + Lambda
        chol = tf.linalg.cholesky(B)
        ok = tf.reduce_all(tf.math.is_finite(chol)) & tf.reduce_all(tf.linalg.diag_part(chol) > 0.0)
        self.proper = ok
        #: L_B = chol(I + Λ) (the identity when q is improper)
        self.cholesky = tf.where(ok, chol, tf.eye(tf.shape(B)[0], dtype=B.dtype))
        #: c = L_B⁻¹η
        self.half_mean = tf.linalg.triangular_solve(self.cholesky, eta)

    @staticmethod
    @check_shapes("A: [M, N]", "precision: [N, 1]", "natural_mean: [N, 1]")
    def from_sites(A, precision, natural_mean) -> "WhitenedGaussian":
        """Λ = A T Aᵀ, η = A ν from [M, N] projections and [N, 1] sites."""
        return WhitenedGaussian(tf.matmul(A * precision[:, 0][None, :], A, transpose_b=True), A @ natural_mean)

    @staticmethod
    def from_factor(cholesky, half_mean, proper) -> "WhitenedGaussian":
        """q(v) from a stored factorisation: L_B = ``cholesky``, c = ``half_mean``, ``proper`` flag."""
        q = WhitenedGaussian.__new__(WhitenedGaussian)
        q.cholesky, q.half_mean, q.proper = cholesky, half_mean, proper
        return q

    def half_solve(self, A):
        """W = L_B⁻¹A."""
        return tf.linalg.triangular_solve(self.cholesky, A)

    def solve(self, half):
        """B⁻¹A from a half-solve W = L_B⁻¹A: L_B⁻ᵀW."""
        return tf.linalg.triangular_solve(self.cholesky, half, adjoint=True)

    @check_shapes("A: [M, N]", "return.mean: [N, 1]", "return.var: [N, 1]", "return.half: [M, N]")
    def projections(self, A) -> Projections:
        """Mean, variance and half-solve of the projections h = Aᵀv under q."""
        W = self.half_solve(A)
        return Projections(
            tf.matmul(W, self.half_mean, transpose_a=True), tf.reduce_sum(tf.square(W), axis=0)[:, None], W
        )

    def project(self, A):
        """Mean and variance of the projections h = Aᵀv, each [N, 1]."""
        p = self.projections(A)
        return p.mean, p.var

    @property
    def log_normaliser_ratio(self):
        return -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(self.cholesky))) + 0.5 * tf.reduce_sum(
            tf.square(self.half_mean)
        )

    @property
    def mean(self):
        """E[v] = B⁻¹η, [M, 1]."""
        return self.solve(self.half_mean)

    def covariance(self):
        """Cov[v] = B⁻¹, [M, M]."""
        eye = tf.eye(tf.shape(self.cholesky)[0], dtype=self.cholesky.dtype)
        return tf.linalg.cholesky_solve(self.cholesky, eye)

    def predict(self, A_star, Kss, full_cov: bool = False):
        """
        q(f*) for f* = a*ᵀv + (prior residual): mean a*ᵀE[v], covariance
        K** - A*ᵀA* + (L_B⁻¹A*)ᵀ(L_B⁻¹A*) (the whitened SVGP predictive).
        """
        W = self.half_solve(A_star)
        mean = tf.matmul(W, self.half_mean, transpose_a=True)[:, 0]
        if full_cov:
            cov = Kss - tf.matmul(A_star, A_star, transpose_a=True) + tf.matmul(W, W, transpose_a=True)
        else:
            cov = Kss - tf.reduce_sum(tf.square(A_star), axis=0) + tf.reduce_sum(tf.square(W), axis=0)
        return mean, cov


class WhitenedAlgebra(SiteAlgebra):
    """
    The posterior algebra of an inducing-point model (:class:`~gpflow_ep.ep.SiteAlgebra`): x = v,
    h_i = a_iᵀv + m(x_i) with the whitened projections A = L⁻¹K_uf [M, N] and prior means m.
    """

    @check_shapes("A: [M, N]", "prior_mean: [N, 1]")
    def __init__(self, A, prior_mean):
        self.A, self.prior_mean = A, prior_mean
        self.site_rows = tf.transpose(A)
        self.site_offsets = prior_mean

    def factorise(self, precision, natural_mean) -> WhitenedGaussian:
        """Sites act on f; q(v) sees the sites of f - m(X), (τ, ν - τ m)."""
        return WhitenedGaussian.from_sites(self.A, precision, natural_mean - precision * self.prior_mean)

    @inherit_check_shapes
    def marginals(self, precision, natural_mean) -> SiteMarginals:
        q = self.factorise(precision, natural_mean)
        mean, var = q.project(self.A)
        return SiteMarginals(mean + self.prior_mean, var, q.proper)

    @inherit_check_shapes
    def joint(self, precision, natural_mean) -> JointPosterior:
        q = self.factorise(precision, natural_mean)
        return JointPosterior(q.covariance(), q.mean, q.proper)

    def prior_marginals(self, precision) -> SiteMarginals:
        """q(v) = N(0, I): h_i ~ N(m_i, ‖a_i‖²)."""
        return SiteMarginals(self.prior_mean, tf.reduce_sum(tf.square(self.A), axis=0)[:, None], tf.constant(True))

    def prior_joint(self, precision) -> JointPosterior:
        M = tf.shape(self.A)[0]
        return JointPosterior(tf.eye(M, dtype=self.A.dtype), tf.zeros([M, 1], self.A.dtype), tf.constant(True))
