r"""
Posterior algebra of a full GP with EP sites: q(g) ∝ N(g; 0, K) Π_i exp(-½ τ_i g_i² + ν_i g_i).

    Σ = (K⁻¹ + T)⁻¹,   μ = Σ ν,   T = diag(τ).

Sites with τ_i ≥ 0 are absorbed with the symmetric matrix of GPML / R&W Alg. 3.5,

    B = I + A₊ K A₊,   A₊ = diag(√τ₊),   Σ₊ = K - K A₊ B⁻¹ A₊ K,

which needs no jitter and no inverse of K. Sites with τ_i < 0 (likelihoods that are not
log-concave, such as ``NoisyStep``) are then removed as a rank-|J| downdate, J = {i : τ_i < 0},
A₋ = diag(√-τ_J):

    C = I - A₋ Σ₊[J, J] A₋,    Σ = Σ₊ + Σ₊[:, J] A₋ C⁻¹ A₋ Σ₊[J, :].

C is positive definite exactly when q is a proper Gaussian, so its Cholesky factor doubles as the
propriety test (TensorFlow fills a failed factor with NaNs; we test for that and never propagate
them). B is positive definite by construction and factorised directly. C may be indefinite, and
TensorFlow reports every failed factorisation on stderr, so C is factorised only once it is known to
be positive definite (:func:`~gpflow_ep.ep.algebra.safe_cholesky` with ``maybe_indefinite``): when
trace(A₋ Σ₊[J, J] A₋) < 1 (then every eigenvalue of C is positive; O(|J|)) or C is diagonally
dominant, else by its eigenvalues. Both factorisations are Cholesky decompositions; the cost is
O(n³) with an extra O(n²|J|) (and O(|J|³) for the eigenvalues when the cheap tests fail).

The normaliser needed by the EP energy is

    log|Σ| - log|K| = -log|B| - log|C|.
"""

import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes

from .algebra import (
    SUFFICIENT_MARGIN,
    JointPosterior,
    SiteAlgebra,
    SiteMarginals,
    SitePosterior,
    centred_natural_mean,
    safe_cholesky,
)

__all__ = ["GPSiteFactorisation", "GPAlgebra"]


class GPSiteFactorisation:
    """
    Factorised q(g) for fixed K and sites, with its marginals and predictions.

    ``mean``/``var`` are the marginals of q at the training inputs ([N, 1]); ``proper`` says
    whether q is a proper Gaussian (when it is not, the other outputs are finite but meaningless).
    """

    @check_shapes("K: [N, N]", "precision: [N, 1]", "natural_mean: [N, 1]")
    def __init__(self, K, precision, natural_mean):
        dtype = K.dtype
        tau = precision[:, 0]
        nu = natural_mean[:, 0]
        negative = tau < 0.0

        # positive part: B = I + A₊ K A₊, its diagonal set in place on A₊ K A₊ (A₊ K is also the
        # right-hand side of the solve), so that besides the Cholesky factor and the triangular solve
        # a factorisation makes few O(n²) passes over memory
        a_pos = tf.sqrt(tf.maximum(tau, 0.0))
        AK = a_pos[:, None] * K
        AKA = AK * a_pos[None, :]
        self._L_B, ok_B = safe_cholesky(tf.linalg.set_diag(AKA, tf.linalg.diag_part(AKA) + 1.0))
        self._a_pos = a_pos
        self._V = tf.linalg.triangular_solve(self._L_B, AK)  # L_B⁻¹ A₊ K
        self._nu_pos = tf.where(negative, tf.zeros_like(nu), nu)
        self._V_nu = tf.linalg.matvec(self._V, self._nu_pos)
        mean_pos = tf.linalg.matvec(K, self._nu_pos) - tf.linalg.matvec(self._V, self._V_nu, transpose_a=True)
        var_pos = tf.linalg.diag_part(K) - tf.reduce_sum(tf.square(self._V), axis=0)

        # negative part: rank-|J| downdate
        self._J = tf.where(negative)[:, 0]
        a_neg = tf.sqrt(-tf.gather(tau, self._J))
        nu_neg = tf.gather(nu, self._J)
        S_J = tf.gather(K, self._J, axis=1) - tf.matmul(
            self._V, tf.gather(self._V, self._J, axis=1), transpose_a=True
        )  # Σ₊[:, J], [N, |J|]
        P = tf.gather(S_J, self._J)  # Σ₊[J, J]
        C = tf.eye(tf.size(self._J), dtype=dtype) - a_neg[:, None] * P * a_neg[None, :]
        # C may be indefinite (q improper): decided before factorising (safe_cholesky), first by
        # λ_max(A₋ P A₋) ≤ trace(A₋ P A₋) = Σ_J -τ_j P_jj < 1, O(|J|)
        self._L_C, ok_C = safe_cholesky(
            C,
            maybe_indefinite=tf.size(self._J) > 0,
            sufficient=lambda: tf.reduce_sum(tf.square(a_neg) * tf.linalg.diag_part(P)) < 1.0 - SUFFICIENT_MARGIN,
        )
        self._a_neg = a_neg
        W = tf.linalg.triangular_solve(self._L_C, a_neg[:, None] * tf.transpose(S_J))  # [|J|, N]
        u = tf.linalg.triangular_solve(
            self._L_C, (a_neg * (tf.gather(mean_pos, self._J) + tf.linalg.matvec(P, nu_neg)))[:, None]
        )
        self._r = nu_neg + a_neg * tf.linalg.triangular_solve(self._L_C, u, adjoint=True)[:, 0]

        mean = mean_pos + tf.linalg.matvec(S_J, self._r)
        var = var_pos + tf.reduce_sum(tf.square(W), axis=0)
        self.proper = ok_B & ok_C & tf.reduce_all(var > 0.0)
        self.mean = mean[:, None]
        self.var = var[:, None]
        self._W = W
        self._S_J = S_J
        self._K = K
        self._nu = nu

    @property
    def log_det_ratio(self) -> tf.Tensor:
        """log|Σ| - log|K| = -log|B| - log|C|."""
        return -2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(self._L_B))) - 2.0 * tf.reduce_sum(
            tf.math.log(tf.linalg.diag_part(self._L_C))
        )

    @property
    def log_normaliser_ratio(self) -> tf.Tensor:
        """g(q) - g(prior) = ½ (log|Σ| - log|K|) + ½ νᵀ Σ ν for Gaussian log-normalisers g."""
        return 0.5 * self.log_det_ratio + 0.5 * tf.reduce_sum(self._nu * self.mean[:, 0])

    def covariance(self) -> tf.Tensor:
        """The full Σ = K - VᵀV + WᵀW, [N, N]."""
        return self._K - tf.matmul(self._V, self._V, transpose_a=True) + tf.matmul(self._W, self._W, transpose_a=True)

    @check_shapes("Kxs: [N, M]", "Kss: [M, M] if full_cov", "Kss: [M] if not full_cov")
    def predict(self, Kxs, Kss, full_cov: bool = False):
        """
        Mean and (co)variance of g(x*) under q, given k(X, x*) and k(x*, x*).

        Positive sites: the GPML predictive (R&W Alg. 3.6); negative sites (the index set J): the
        same low-rank downdate as for the training marginals, with the rows J of Σ₊'s cross-covariance
        with x* in place of the rows J of Σ₊.
        """
        Vs = tf.linalg.triangular_solve(self._L_B, self._a_pos[:, None] * Kxs)
        mean = tf.linalg.matvec(Kxs, self._nu_pos, transpose_a=True) - tf.linalg.matvec(
            Vs, self._V_nu, transpose_a=True
        )
        cov_Js = tf.gather(Kxs, self._J) - tf.matmul(tf.gather(self._V, self._J, axis=1), Vs, transpose_a=True)
        mean = mean + tf.linalg.matvec(cov_Js, self._r, transpose_a=True)
        Ws = tf.linalg.triangular_solve(self._L_C, self._a_neg[:, None] * cov_Js)
        if full_cov:
            cov = Kss - tf.matmul(Vs, Vs, transpose_a=True) + tf.matmul(Ws, Ws, transpose_a=True)
        else:
            cov = Kss - tf.reduce_sum(tf.square(Vs), axis=0) + tf.reduce_sum(tf.square(Ws), axis=0)
        return mean, cov


class GPAlgebra(SiteAlgebra):
    """
    The posterior algebra of a full GP (:class:`~gpflow_ep.ep.SiteAlgebra`): x = f, h_i = f_i,
    prior N(m_X, K). Sites act on f; the factorisation works on g = f - m_X, whose sites are
    (τ, ν - τ m).
    """

    @check_shapes("K: [N, N]", "prior_mean: [N, 1]")
    def __init__(self, K, prior_mean):
        self.K, self.prior_mean = K, prior_mean

    @inherit_check_shapes
    def posterior(self, precision, natural_mean) -> SitePosterior:
        """q(g) for the sites (τ, ν - τ m) on g = f - m, factorised (:class:`GPSiteFactorisation`)."""
        centred = centred_natural_mean(precision, natural_mean, self.prior_mean)
        q = GPSiteFactorisation(self.K, precision, centred)
        return SitePosterior(q.mean, q.var, precision, centred, self.prior_mean, q.log_normaliser_ratio, q.proper, q)

    @inherit_check_shapes
    def joint(self, precision, natural_mean) -> JointPosterior:
        q = self.posterior(precision, natural_mean)
        return JointPosterior(q.factorisation.covariance(), q.mean + self.prior_mean, q.proper)

    def prior_marginals(self, precision) -> SiteMarginals:
        return SiteMarginals(self.prior_mean, tf.linalg.diag_part(self.K)[:, None], tf.constant(True))

    def prior_joint(self, precision) -> JointPosterior:
        return JointPosterior(self.K, self.prior_mean, tf.constant(True))
