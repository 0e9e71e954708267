r"""
Posterior algebra of a linear-Gaussian model with EP sites on the weights (Hernández-Lobato & Hernández-Lobato 2011,
Sec. 2): the Gaussian likelihood N(y | Xw, σ²I) is the exact base factor and site i acts on w_i,

    q(w) ∝ N(y | Xw, σ² I) Π_i exp(ν_i w_i - ½ τ_i w_i²) ∝ N(w | m, Σ),
    A = Σ⁻¹ = σ⁻² XᵀX + diag(τ),   b = ν + σ⁻² Xᵀy,   m = A⁻¹ b.

Two forms, chosen by shape (``form="auto"``: Woodbury when n < d and d > ``WOODBURY_MIN_DIM``):

* ``"weights"`` (d-dimensional, O(d³)): Cholesky of A;
* ``"woodbury"`` (n-dimensional, O(d n² + n³); needs τ > 0): with D = diag(τ), μ̃ = ν/τ and
  K = σ²I + X D⁻¹ Xᵀ,  Σ_ii = 1/τ_i - x_{:,i}ᵀ K⁻¹ x_{:,i} / τ_i²,  m = μ̃ + D⁻¹ Xᵀ K⁻¹ (y - X μ̃).

The normaliser the EP energy needs (Hernández-Lobato & Hernández-Lobato 2011, eq. 10),
log Z(τ, ν) = log ∫ N(y | Xw, σ²I) Π_i exp(ν_i w_i - ½ τ_i w_i²) dw, in the same two forms:

    -n/2 log(2πσ²) - yᵀy/(2σ²) + d/2 log 2π - ½ log|A| + ½ bᵀm                      (weights)
    Σ_i [½ log 2π - ½ log τ_i + ν_i²/(2τ_i)] + log N(y | X μ̃, K)                    (Woodbury)

The Woodbury form is the cheaper one when n ≪ d, but not the better conditioned one: where sites
sit at the smallest precision ε, K holds σ²I + X D⁻¹Xᵀ with D⁻¹ up to 1/ε, so its condition number
is about ‖x‖²/(εσ²) (4·10¹⁰ in the spike-and-slab paper's setting), while the Cholesky of A is
insensitive to A's diagonal scaling. On that setting the convergent double loop's inner solve
failed (energy increases of 0.08, then NaN) in the Woodbury form and was monotone in the weights
form, so ``"auto"`` keeps the weights form up to d = ``WOODBURY_MIN_DIM``, where O(d³) is cheap.

The base factor alone is no proper Gaussian in w when d > n, so there is no "prior" state: a cold
start uses the model's initial sites (our choice; the paper states none), never flat ones.
"""

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes

from .algebra import JointPosterior, SiteAlgebra, SiteMarginals, SitePosterior, safe_cholesky
from .checks import check_choice

__all__ = ["LinearGaussianAlgebra", "FORMS", "WOODBURY_MIN_DIM"]

FORMS = ("auto", "weights", "woodbury")
#: ``form="auto"`` uses the Woodbury form only for n < d and d above this (module docstring)
WOODBURY_MIN_DIM = 200
_LOG_2PI = float(np.log(2.0 * np.pi))


class LinearGaussianAlgebra(SiteAlgebra):
    """q(w) for site natural parameters (τ, ν) on the d weights (module docstring)."""

    @check_shapes("X: [N, D]", "y: [N, 1]", "noise_variance: []")
    def __init__(self, X, y, noise_variance, form: str = "auto"):
        self.X, self.y, self.noise_variance = X, y, noise_variance
        form = check_choice(form, "form", FORMS)
        n, d = X.shape
        if form == "auto":
            form = "woodbury" if n < d and d > WOODBURY_MIN_DIM else "weights"
        self.form = form

    # ---------------------------------------------------------------- the two forms

    def _weights_form(self, precision, natural_mean):
        X, s2 = self.X, self.noise_variance
        A = tf.matmul(X, X, transpose_a=True) / s2 + tf.linalg.diag(precision[:, 0])
        # positive definite when every τ_i > 0; otherwise decided before factorising (safe_cholesky)
        L, ok = safe_cholesky(A, maybe_indefinite=tf.reduce_any(precision <= 0.0))
        b = natural_mean + tf.matmul(X, self.y, transpose_a=True) / s2
        mean = tf.linalg.cholesky_solve(L, b)
        L_inv = tf.linalg.triangular_solve(L, tf.eye(tf.shape(A)[0], dtype=A.dtype), lower=True)
        var = tf.reduce_sum(tf.square(L_inv), axis=0)[:, None]
        return L, L_inv, b, mean, var, ok

    def _woodbury_form(self, precision, natural_mean):
        X, s2 = self.X, self.noise_variance
        positive = tf.reduce_all(precision > 0.0)
        tau = tf.where(precision > 0.0, precision, tf.ones_like(precision))
        site_mean = natural_mean / tau
        XD = X / tf.transpose(tau)  # X D⁻¹, [n, d]
        K = s2 * tf.eye(tf.shape(X)[0], dtype=X.dtype) + tf.matmul(XD, X, transpose_b=True)
        L, ok = safe_cholesky(K)
        residual = self.y - tf.matmul(X, site_mean)
        alpha = tf.linalg.cholesky_solve(L, residual)
        mean = site_mean + tf.matmul(XD, alpha, transpose_a=True)
        V = tf.linalg.triangular_solve(L, XD, lower=True)  # L⁻¹ X D⁻¹
        var = 1.0 / tau - tf.reduce_sum(tf.square(V), axis=0)[:, None]
        return L, site_mean, residual, alpha, mean, var, ok & positive

    # ---------------------------------------------------------------- SiteAlgebra

    @inherit_check_shapes
    def posterior(self, precision, natural_mean) -> SitePosterior:
        """q(w) for the sites (no offsets: h_i = w_i), with the log normaliser log Z(τ, ν) of the module docstring."""
        n = tf.cast(tf.shape(self.X)[0], self.X.dtype)
        s2 = self.noise_variance
        if self.form == "woodbury":
            L, site_mean, residual, alpha, mean, var, ok = self._woodbury_form(precision, natural_mean)
            tau = tf.where(precision > 0.0, precision, tf.ones_like(precision))
            sites = tf.reduce_sum(0.5 * _LOG_2PI - 0.5 * tf.math.log(tau) + 0.5 * tf.square(natural_mean) / tau)
            log_det_K = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)))
            log_z = sites + (-0.5 * n * _LOG_2PI - 0.5 * log_det_K - 0.5 * tf.reduce_sum(residual * alpha))
        else:
            d = tf.cast(tf.shape(self.X)[1], self.X.dtype)
            L, _, b, mean, var, ok = self._weights_form(precision, natural_mean)
            log_det_A = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)))
            log_z = (
                -0.5 * n * tf.math.log(2.0 * np.pi * s2)
                - 0.5 * tf.reduce_sum(tf.square(self.y)) / s2
                + 0.5 * d * _LOG_2PI
                - 0.5 * log_det_A
                + 0.5 * tf.reduce_sum(b * mean)
            )
        offset = tf.zeros_like(precision)
        return SitePosterior(mean, var, precision, natural_mean, offset, log_z, ok & tf.reduce_all(var > 0.0))

    @inherit_check_shapes
    def joint(self, precision, natural_mean) -> JointPosterior:
        _, L_inv, _, mean, _, ok = self._weights_form(precision, natural_mean)
        return JointPosterior(tf.matmul(L_inv, L_inv, transpose_a=True), mean, ok)

    def prior_marginals(self, precision) -> SiteMarginals:
        """No prior state (module docstring): finite placeholders, flagged improper."""
        return SiteMarginals(tf.zeros_like(precision), tf.ones_like(precision), tf.constant(False))

    def prior_joint(self, precision) -> JointPosterior:
        d = tf.shape(precision)[0]
        return JointPosterior(tf.eye(d, dtype=precision.dtype), tf.zeros_like(precision), tf.constant(False))
