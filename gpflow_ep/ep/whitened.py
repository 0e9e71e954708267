r"""
Posterior algebra of inducing-point EP models, in whitened coordinates (the inducing-point model of
Hernández-Lobato & Hernández-Lobato 2016, Sec. 2, with v = L⁻¹u).

With L = chol(K_uu) and v = L⁻¹u (prior N(0, I)), every site acts on a projection h_i = a_iᵀv,
a_i = L⁻¹k_i. The sites' natural parameters add up to a Gaussian in v:

    q(v) ∝ N(v; 0, I) exp(-½ vᵀΛv + ηᵀv),   Λ = A T Aᵀ = Σ_i τ_i a_i a_iᵀ,   η = A ν,

so q(v) = N(B⁻¹η, B⁻¹) with B = I + Λ (eigenvalues ≥ 1 when every τ_i ≥ 0). With L_B = chol(B),
W = L_B⁻¹A and c = L_B⁻¹η, the marginals of the projections are

    σ_i² = ‖W_{:,i}‖²,   h_i = W_{:,i}ᵀ c,

and the normaliser term of the EP energy (Hernández-Lobato & Hernández-Lobato 2016, eqs. 26–28;
eq. 29 with its factor ½ and sign corrected) is

    g(q) - g(prior) = -Σ_j log (L_B)_jj + ½ ‖c‖².

Everything costs O(nm²); no inverse is formed. q is improper only with negative site
precisions; then B is factorised only once known to be positive definite (TensorFlow reports a failed
Cholesky factorisation on stderr; :meth:`WhitenedGaussian.from_sites`), and an improper q is
flagged, never propagated as NaN.

Every matrix may carry leading batch dimensions: C independent blocks v = (v^1, …, v^C) (a GP per
class in :class:`~gpflow_ep.models.SEPMGPC`), Λ [C, M, M], A [C, M, P] with one column per (block,
point) *pair*. Several sites may act on one pair (their natural parameters add up on it, the
``site_pair`` map of :class:`WhitenedAlgebra`); the marginals are then computed once per pair, so a
step costs O(C m² P) whatever the number of sites. When the blocks share their prior (one kernel
and one set of inducing inputs for all classes), A is one block [1, M, P] that broadcasts against
the C blocks of q: L⁻¹K_uf is computed once, not C times.
"""

from typing import NamedTuple, Optional

import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes

from .algebra import (
    SUFFICIENT_MARGIN,
    JointPosterior,
    SiteAlgebra,
    SiteMarginals,
    SitePosterior,
    centred_natural_mean,
    eye_like,
    project_sites,
    safe_cholesky,
    shape_of,
)

__all__ = ["WhitenedGaussian", "WhitenedAlgebra", "Projections", "SitePairs", "blocked", "flat", "eye_like"]


class Projections(NamedTuple):
    """Moments under q(v) of projections h = Aᵀv, and their half-solves W = L_B⁻¹A (batch dims first)."""

    mean: tf.Tensor  # [..., N, 1]  Wᵀc
    var: tf.Tensor  # [..., N, 1]   ‖W_{:,i}‖²
    half: tf.Tensor  # [..., M, N]  W


class WhitenedGaussian:
    """
    q(v) ∝ N(v; 0, I) exp(-½ vᵀΛv + ηᵀv) for an [..., M, M] ``Lambda`` and [..., M, 1] ``eta``
    (independent blocks along the leading dimensions; ``proper`` when every block is).
    """

    @check_shapes("Lambda: [batch..., M, M]", "eta: [batch..., M, 1]")
    def __init__(self, Lambda, eta, maybe_indefinite=False, sufficient=None):
        """
        ``maybe_indefinite``, ``sufficient``: as for :func:`~gpflow_ep.ep.algebra.safe_cholesky` — whether
        I + Λ may be indefinite (negative site precisions), and a cheap sufficient test of its
        definiteness; by default Λ is taken to be positive semi-definite and I + Λ factorised directly.
        """
        #: L_B = chol(I + Λ) (the identity when q is improper)
        self.cholesky, self.proper = safe_cholesky(eye_like(Lambda) + Lambda, maybe_indefinite, sufficient)
        #: c = L_B⁻¹η
        self.half_mean = tf.linalg.triangular_solve(self.cholesky, eta)

    @staticmethod
    @check_shapes("A: [broadcast batch..., M, N]", "precision: [batch..., N, 1]", "natural_mean: [batch..., N, 1]")
    def from_sites(A, precision, natural_mean) -> "WhitenedGaussian":
        """
        Λ = A T Aᵀ, η = A ν from [..., M, N] projections and [..., N, 1] sites (one per column).
        With every τ_i ≥ 0, I + Λ is positive definite and factorised directly; with negative ones
        it may not be, and is factorised only once known to be (:func:`~gpflow_ep.ep.algebra.safe_cholesky`):
        first by λ_min(I + Λ) ≥ 1 - Σ_{τ_i < 0} (−τ_i) ‖a_i‖² > 0 (O(MN), only then computed).
        """

        def negative_mass_below_one():
            column_norms = tf.reduce_sum(tf.square(A), axis=-2)[..., None]  # ‖a_i‖², [..., N, 1]
            mass = tf.reduce_sum(tf.nn.relu(-precision) * column_norms, axis=[-2, -1])
            return tf.reduce_all(mass < 1.0 - SUFFICIENT_MARGIN)

        Lambda, eta = project_sites(A, precision, natural_mean)
        return WhitenedGaussian(Lambda, eta, tf.reduce_any(precision < 0.0), negative_mass_below_one)

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

    @check_shapes(
        "A: [broadcast batch..., M, N]",
        "return.mean: [batch..., N, 1]",
        "return.var: [batch..., N, 1]",
        "return.half: [batch..., M, N]",
    )
    def projections(self, A) -> Projections:
        """Mean, variance and half-solve of the projections h = Aᵀv under q (A may be one block shared by all)."""
        W = self.half_solve(A)
        return Projections(
            tf.matmul(W, self.half_mean, transpose_a=True), tf.reduce_sum(tf.square(W), axis=-2)[..., None], W
        )

    def project(self, A):
        """Mean and variance of the projections h = Aᵀv, each [..., N, 1]."""
        p = self.projections(A)
        return p.mean, p.var

    @property
    def log_normaliser_ratio(self):
        return -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(self.cholesky))) + 0.5 * tf.reduce_sum(
            tf.square(self.half_mean)
        )

    @property
    def mean(self):
        """E[v] = B⁻¹η, [..., M, 1]."""
        return self.solve(self.half_mean)

    def covariance(self):
        """Cov[v] = B⁻¹, [..., M, M]."""
        return tf.linalg.cholesky_solve(self.cholesky, eye_like(self.cholesky))

    def predict(self, A_star, Kss, full_cov: bool = False):
        """
        q(f*) for f* = a*ᵀv + (prior residual): mean a*ᵀE[v], covariance
        K** - A*ᵀA* + (L_B⁻¹A*)ᵀ(L_B⁻¹A*) (the whitened SVGP predictive).
        """
        W = self.half_solve(A_star)
        mean = tf.matmul(W, self.half_mean, transpose_a=True)[..., 0]
        if full_cov:
            cov = Kss - tf.matmul(A_star, A_star, transpose_a=True) + tf.matmul(W, W, transpose_a=True)
        else:
            cov = Kss - tf.reduce_sum(tf.square(A_star), axis=-2) + tf.reduce_sum(tf.square(W), axis=-2)
        return mean, cov


class SitePairs:
    """
    Which (block, point) pair each site acts on (module docstring): ``index`` [S] into the C·P pairs
    in block-major order (pair c·P + j is point j of block c), of which there are ``num_pairs``.
    ``SitePairs()`` is the plain layout: one block, site i on point i.
    """

    def __init__(self, index=None, num_pairs=None):
        self.index, self.num_pairs = index, num_pairs

    @property
    def plain(self) -> bool:
        return self.index is None

    def gather(self, pair_values):
        """The rows [C·P, ...] of pairs as rows [S, ...] of sites."""
        return pair_values if self.plain else tf.gather(pair_values, self.index)

    def sum(self, site_values):
        """The rows [S, ...] of sites summed onto their pairs, [C·P, ...]."""
        return site_values if self.plain else tf.math.unsorted_segment_sum(site_values, self.index, self.num_pairs)

    def all(self, site_flags):
        """[C·P, 1] bool: every site of the pair is flagged (pairs without sites count as flagged)."""
        if self.plain:
            return site_flags
        missing = tf.math.unsorted_segment_sum(tf.cast(~site_flags, tf.int32), self.index, self.num_pairs)
        return tf.equal(missing, 0)


def blocked(pair_values, A):
    """
    Pair rows [C·P, k] as [C, P, k] for projections A [C, M, P] or one block [1, M, P] shared by
    the C blocks (unchanged when A is [M, P]).
    """
    shape = [shape_of(A)[-1], shape_of(pair_values)[-1]]
    return tf.reshape(pair_values, shape if A.shape.rank == 2 else [-1] + shape)


def flat(values):
    """[C, P, k] (or [P, k]) as pair rows [C·P, k]."""
    return tf.reshape(values, [-1, shape_of(values)[-1]])


class WhitenedAlgebra(SiteAlgebra):
    """
    The posterior algebra of an inducing-point model (:class:`~gpflow_ep.ep.SiteAlgebra`): x = v,
    h_i = a_iᵀv + m(x_i) with the whitened projections A = L⁻¹K_uf [M, N] and prior means m [N, 1]
    of the sites; or, with ``pairs`` (:class:`SitePairs`), A [C, M, P] per (block, point) pair and
    site i acting on pair ``pairs.index[i]`` (module docstring), ``prior_mean`` still per site.
    One-site-at-a-time schedules (:meth:`joint`) need the plain layout.
    """

    @check_shapes("A: [batch..., M, P]", "prior_mean: [S, 1]")
    def __init__(self, A, prior_mean, pairs: Optional[SitePairs] = None):
        self.A, self.prior_mean = A, prior_mean
        self.pairs = pairs = SitePairs() if pairs is None else pairs
        self.plain = pairs.plain and A.shape.rank == 2
        self.site_rows = tf.transpose(A) if self.plain else None
        self.site_offsets = prior_mean

    def factorise(self, precision, natural_mean) -> WhitenedGaussian:
        """Sites act on f; q(v) sees the sites of f - m(X), (τ, ν - τ m), summed on their pairs."""
        return self._factorise_centred(precision, centred_natural_mean(precision, natural_mean, self.prior_mean))

    def _factorise_centred(self, precision, centred):
        tau, nu = self.pairs.sum(precision), self.pairs.sum(centred)
        return WhitenedGaussian.from_sites(self.A, blocked(tau, self.A), blocked(nu, self.A))

    @inherit_check_shapes
    def posterior(self, precision, natural_mean) -> SitePosterior:
        """q(v) for the centred sites, with the marginals of every site's projection (one per pair)."""
        centred = centred_natural_mean(precision, natural_mean, self.prior_mean)
        q = self._factorise_centred(precision, centred)
        mean, var = self.site_projections(q)
        return SitePosterior(mean, var, precision, centred, self.prior_mean, q.log_normaliser_ratio, q.proper, q)

    def site_projections(self, q: WhitenedGaussian):
        """Mean and variance of every site's a_iᵀv under ``q`` (computed once per pair), [S, 1] each."""
        mean, var = q.project(self.A)
        return self.pairs.gather(flat(mean)), self.pairs.gather(flat(var))

    @inherit_check_shapes
    def joint(self, precision, natural_mean) -> JointPosterior:
        self._require_plain()
        q = self.factorise(precision, natural_mean)
        return JointPosterior(q.covariance(), q.mean, q.proper)

    def prior_marginals(self, precision) -> SiteMarginals:
        """q(v) = N(0, I): h_i ~ N(m_i, ‖a_i‖²)."""
        var = tf.reduce_sum(tf.square(self.A), axis=-2)[..., None]  # [(B), P, 1]
        if not self.pairs.plain:  # one shared block stands for all C: one row per pair
            var = tf.tile(var, [self.pairs.num_pairs // tf.shape(var)[-2] // tf.shape(var)[0], 1, 1])
        var = self.pairs.gather(flat(var))
        return SiteMarginals(self.prior_mean, var, tf.constant(True))

    def prior_joint(self, precision) -> JointPosterior:
        self._require_plain()
        M = tf.shape(self.A)[0]
        return JointPosterior(tf.eye(M, dtype=self.A.dtype), tf.zeros([M, 1], self.A.dtype), tf.constant(True))

    def _require_plain(self):
        if not self.plain:
            raise ValueError("schedule: sites on (block, point) pairs need the parallel schedule")
