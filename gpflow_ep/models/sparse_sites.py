r"""
Sparse EP's state and algebra (Hernández-Lobato & Hernández-Lobato 2016, "Scalable Gaussian process
classification via expectation propagation", AISTATS; Sec. 2.1–2.3 and App. A): the sites, the
direction each was last updated with and q(u), in one module (:class:`SparseEPState`), and the pure
functions of a minibatch step, which take tensors, never a model:

* :func:`whitened_prior` — per (block, point) pair the whitened projections a_i = L⁻¹k_i, the FITC
  variances s_i = K_ii - k_iᵀK_uu⁻¹k_i (the paper's Sec. 2.1) and the prior means, from the prior
  blocks K_uu, K_uf, diag K_ff, m(X) of a model;
* :meth:`SparseEPState.frame` — a minibatch's :class:`Frame`: those quantities, the stored
  directions υ_o of its pairs and q(v) from the stored q(u);
* :func:`batch_cavities` — each batch site's cavity: q without the fraction β of the site's old
  contribution (on υ_o), evaluated on the fresh direction υ_n = K_uu⁻¹k_i;
* :func:`propose_refresh` — one damped EP update per site (:func:`refresh_damping`), the change of
  q(u) it makes and the pairs' new directions, as a :class:`~gpflow_ep.models.SiteRefresh`
  (nothing written); :meth:`SparseEPState.apply_refresh` writes one (or refuses it);
* :func:`surrogate_objective` — the minibatch objective F_M (the paper's eq. 6 with the data term
  scaled by n/(α|M|)) with its exact gradient;
* :func:`evidence_estimate` — an unbiased minibatch estimate of log Z_EP (the value to report: F_M's
  value is not an evidence).

Site layout. The algebra carries a leading dimension of C independent blocks of u (K_uu [C, M, M],
q(v) per block) and lets several sites act on one (block, point) *pair*
(:class:`~gpflow_ep.ep.whitened.SitePairs`): their natural parameters add up on the pair's projection, and
the pair keeps one direction (row c·n + i of ``site_directions``). q(u) is stored in u-space as
natural parameters, Λ_u = Σ_i τ_i υ_iυ_iᵀ and η_u = Σ_i (ν_i - τ_i m_i) υ_i, running sums that a
refresh of a batch changes in O(|M|m² + m³).

**Damping of a refresh** (:func:`refresh_damping`). The paper (App. A.4, eq. 25) damps each site as
ρ·new + (1 - ρ)·old with ρ = 0.5 for batch training, where every site is updated in parallel from
one q before q is rebuilt, and ρ = 0.99 with minibatches, "since q is reconstructed after each
minibatch and less damping is needed". A refresh of a fraction f = |B|/n of the sites moves q's
natural parameters by ρ Σ_{i∈B}(site_i^new - site_i^old), about ρ·f of a parallel sweep's change,
so a refresh of (nearly) all sites at ρ = 0.99 is the nearly undamped parallel EP the paper damps,
and it can oscillate, as undamped parallel EP does. The refresh therefore uses
ρ_eff = min(``minibatch_damping`` (the model's), ρ_batch / f), ρ_batch the batch-EP damping (``EPSettings.damping``):
ρ_eff·f never exceeds what a batch-EP sweep uses.
Minibatches with f ≤ ρ_batch / ``minibatch_damping`` keep ``minibatch_damping`` unchanged. Damping
does not move EP's fixed points (ibid.). Under ``tf.distribute`` f counts the sites of all replicas.
"""

from typing import NamedTuple, Optional, Tuple

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_float

from ..ep import EPSettings
from ..ep.algebra import shape_of
from ..ep.energy import cavity_log_normaliser_gap
from ..ep.sites import cavity_distribution
from ..ep.update import accept_proposal, propose_sites
from ..ep.whitened import Projections, SitePairs, WhitenedGaussian, blocked, eye_like, flat
from .ep_state import EPState
from .minibatch import SiteRefresh

__all__ = [
    "BatchCavities",
    "Frame",
    "PriorBlocks",
    "SiteBatch",
    "SparseEPState",
    "WhitenedPrior",
    "BatchTilted",
    "batch_cavities",
    "batch_tilted",
    "evidence_estimate",
    "propose_refresh",
    "refresh_damping",
    "sites_in_sync",
    "surrogate_objective",
    "whitened_prior",
]


class SiteBatch(NamedTuple):
    """Validated data as the sites see it."""

    X: tf.Tensor  # [P, D] the points
    Y: tf.Tensor  # [S, 1] the sites' targets
    pairs: SitePairs  # the (block, point) pair each site acts on
    index: Optional[tf.Tensor] = None  # [S] int32: the sites (minibatch)
    pair_rows: Optional[tf.Tensor] = None  # [C·P] int32: the pairs' rows of ``site_directions`` (minibatch)


class PriorBlocks(NamedTuple):
    """The prior quantities of every block at a batch's points (a sparse model's prior hooks)."""

    Kuu: tf.Tensor  # [C, M, M], with jitter
    Kuf: tf.Tensor  # [C, M, P]
    Kff_diag: tf.Tensor  # [C, P]
    mean: tf.Tensor  # [C, P]


class WhitenedPrior(NamedTuple):
    """L = chol(K_uu) [C, M, M], A = L⁻¹K_uf [C, M, P], FITC variances s and prior means m [C·P, 1]."""

    L: tf.Tensor
    A: tf.Tensor
    s: tf.Tensor
    mean: tf.Tensor


class Frame(NamedTuple):
    """
    A minibatch's quantities at the current hyper-parameters (:meth:`SparseEPState.frame`), per
    block and (block, point) pair: L [C, M, M], A [C, M, P], U_old and pair rows [C·P, ...], all
    without gradient, the ``prior`` blocks they came from (with gradient) and the batch's sites.
    """

    sites: SiteBatch
    prior: PriorBlocks
    L: tf.Tensor
    A_new: tf.Tensor
    A_old: tf.Tensor
    U_old: tf.Tensor
    s: tf.Tensor
    prior_mean: tf.Tensor
    q: WhitenedGaussian
    same: Optional[tf.Tensor] = None  # True when A_old = A_new (all batch pairs on fresh directions)

    @property
    def pairs(self) -> SitePairs:
        return self.sites.pairs

    def with_q(self) -> "Frame":
        """The frame itself (its q is factorised when it is built)."""
        return self

    def after(self, accepted, A_refreshed, num_skipped, q_refreshed: WhitenedGaussian, change=None) -> "Frame":
        """
        The frame after a refresh was written (``accepted``) or not: then the pairs' projections are
        ``A_refreshed`` (from :func:`propose_refresh`) and q is ``q_refreshed``; else unchanged (q's
        u-space ``change`` is in ``q_refreshed`` already).
        """
        del change

        def pick(new, old):
            return tf.where(accepted, new, old)

        q = WhitenedGaussian.from_factor(
            pick(q_refreshed.cholesky, self.q.cholesky),
            pick(q_refreshed.half_mean, self.q.half_mean),
            pick(q_refreshed.proper, self.q.proper),
        )
        return self._replace(A_old=pick(A_refreshed, self.A_old), q=q, same=accepted & tf.equal(num_skipped, 0))


class BatchCavities(NamedTuple):
    """The batch sites' cavities on their fresh directions and the projections they came from."""

    cavity: object  # gpflow_ep.ep.sites.Cavity, one per site
    new: Projections  # q's projections on υ_n, per pair
    old: Projections  # q's projections on υ_o, per pair
    cross: tf.Tensor  # [C·P, 1] Cov_q(υ_nᵀu, υ_oᵀu)
    rows: Tuple[tf.Tensor, ...] = ()  # the batch sites' stored (τ, ν, dual, b)

    def site_gradient(self, frame: "Frame", on_pairs, g_m, g_v) -> tf.Tensor:
        """
        R = Σ_i ∂(g_m m_i + g_v v_i)/∂ã_i per pair, [C, M, P], of the sites' cavity mean m_i and variance
        v_i as functions of their fresh whitened projections ã_i (q(u) held in u-space):
        g_m (μ_v + d_i B⁻¹a_i^old) + 2 g_v (B⁻¹ã_i + c_i σ_no,i B⁻¹a_i^old) (:func:`surrogate_objective`).
        """
        cav, pairs, q = self.cavity, frame.pairs, frame.q
        G_m, G_v = on_pairs(g_m), on_pairs(g_v)
        G_old = on_pairs(g_m * cav.shift + 2.0 * g_v * cav.scale * pairs.gather(self.cross))
        V_new = q.solve(self.new.half)  # B⁻¹ã
        V_old = unless_same(frame.same, V_new, lambda: q.solve(self.old.half))
        return q.mean * G_m + V_old * G_old + 2.0 * V_new * G_v


class BatchTilted(NamedTuple):
    """The batch sites' tilted normalisers at their cavities, computed once for F_M and the evidence estimate."""

    valid: tf.Tensor  # [S, 1] bool: the sites whose cavity is proper (jointly, for factors of several sites)
    log_z: tf.Tensor  # [S, 1] log Z_i (power α), 0 where not valid
    d_mean: Optional[tf.Tensor] = None  # [S, 1] ∂log Z_i/∂m at the cavity (no gradient), when asked for
    d_var: Optional[tf.Tensor] = None  # [S, 1] ∂log Z_i/∂v


def batch_tilted(cavities: BatchCavities, factor, power: float, derivatives: bool = True) -> BatchTilted:
    r"""
    log Z_i of each batch site at its cavity (``cavities``), 0 where the cavity is improper, and,
    with ``derivatives``, its derivatives in the cavity's mean and variance (what F_M's gradient
    needs), from the tilted moments the EP update uses: Z(m, v) = ∫ t(f)^α N(f; m, v) df and
    ∂N/∂v = ½ ∂²N/∂m² give

        ∂log Z/∂m = d₁,     ∂log Z/∂v = ½(d₂ + d₁²),

    d₁, d₂ the first two derivatives of log Z in m (per site variable for factors of several, whose
    cavity is a product over them). The likelihood's parameters stay live in ``log_z``.
    """
    cav = cavities.cavity
    valid = factor.joint_validity(cav.valid)
    mean = tf.where(valid, cav.mean, tf.zeros_like(cav.mean))
    var = tf.where(valid, cav.var, tf.ones_like(cav.var))
    moments = factor.tilted(mean, var, power)
    zeros = tf.zeros_like(mean)
    log_z = tf.where(valid, moments.log_z, zeros)
    if not derivatives:
        return BatchTilted(valid, log_z)
    d_mean = tf.stop_gradient(tf.where(valid, moments.dlog_z, zeros))
    d_var = tf.stop_gradient(tf.where(valid, 0.5 * (moments.d2log_z + tf.square(moments.dlog_z)), zeros))
    return BatchTilted(valid, log_z, d_mean, d_var)


def unless_same(same, value, compute):
    """``value`` when ``same`` is a true tensor, else ``compute()`` (always ``compute()`` if ``same`` is None)."""
    return compute() if same is None else tf.cond(same, lambda: value, compute)


@check_shapes(
    "blocks.Kuu: [broadcast C, M, M]",
    "blocks.Kuf: [broadcast C, M, P]",
    "blocks.Kff_diag: [broadcast C, P]",
    "blocks.mean: [C, P]",
    "return.L: [broadcast C, M, M]",
    "return.A: [broadcast C, M, P]",
    "return.s: [CP, 1]",
    "return.mean: [CP, 1]",
)
def whitened_prior(blocks: PriorBlocks) -> WhitenedPrior:
    """
    Per (block, point) pair: L = chol(K_uu), A = L⁻¹K_uf, the FITC variances
    s = diag K_ff - ‖a‖² ≥ 0 (the paper's Sec. 2.1) and the prior means m, block-major pair rows.
    Blocks that share K_uu and K_uf ([1, M, M], [1, M, P]) are factorised and solved once; L and A
    stay one block (the algebra broadcasts them against the C blocks of q), s and m have C.
    """
    L = tf.linalg.cholesky(blocks.Kuu)
    A = tf.linalg.triangular_solve(L, blocks.Kuf)
    s = tf.maximum(blocks.Kff_diag - tf.reduce_sum(tf.square(A), axis=-2), 0.0)
    s = tf.broadcast_to(s, shape_of(blocks.mean))
    return WhitenedPrior(L, A, tf.reshape(s, [-1, 1]), tf.reshape(blocks.mean, [-1, 1]))


@check_shapes("L: [broadcast C, M, M]", "A: [broadcast C, M, P]", "return: [CP, M]")
def directions(L, A, num_blocks):
    """
    υ = L⁻ᵀa = K_uu⁻¹k of every pair, as rows [C·P, M] (block-major) for ``num_blocks`` = C;
    computed once when the blocks share L and A.
    """
    U = tf.linalg.matrix_transpose(tf.linalg.triangular_solve(L, A, adjoint=True))  # [B, P, M]
    return flat(tf.broadcast_to(U, [num_blocks] + shape_of(U)[1:]))


def refresh_damping(minibatch_damping: float, batch_damping: float, num_refreshed, num_sites: int) -> tf.Tensor:
    """
    ρ_eff = min(``minibatch_damping``, ρ_batch · n / |B|) of a refresh of ``num_refreshed`` = |B|
    of ``num_sites`` = n sites, ρ_batch = ``batch_damping`` (module docstring).
    """
    fraction = tf.cast(num_refreshed, tf.float64) / float(num_sites)
    return tf.minimum(tf.constant(minibatch_damping, tf.float64), batch_damping / tf.maximum(fraction, 1e-300))


def sites_in_sync(num_local):
    """The number of sites refreshed at once: summed over the replicas under ``tf.distribute``."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return num_local
    return context.all_reduce(tf.distribute.ReduceOp.SUM, num_local)


def batch_cavities(frame: Frame, precision, natural_mean, removed_fraction: float) -> BatchCavities:
    """
    The engine's cavity of each batch site's old contribution (on υ_o), evaluated on the fresh υ_n
    (:meth:`~gpflow_ep.ep.sites.Cavity.of` with Cov_q(υ_nᵀu, υ_oᵀu) = W_nᵀW_o); the projections are
    computed once per pair (once when ``frame.same`` says A_old = A_new).
    """
    new = frame.q.projections(frame.A_new)
    old = unless_same(frame.same, new, lambda: frame.q.projections(frame.A_old))
    cross = flat(tf.reduce_sum(new.half * old.half, axis=-2)[..., None])
    site = frame.pairs.gather
    cavity = cavity_distribution(
        site(flat(old.mean) + frame.prior_mean),
        site(flat(old.var)),
        precision,
        natural_mean,
        removed_fraction,
        of=(site(flat(new.mean) + frame.prior_mean), site(flat(new.var)), site(cross)),
    )
    return BatchCavities(cavity, new, old, cross)


@check_shapes(
    "site_rows[0]: [S, 1]",
    "site_rows[1]: [S, 1]",
    "return[0].index: [S]",
    "return[0].posterior_change[0]: [C, M, M]",
    "return[0].posterior_change[1]: [C, M, 1]",
    "return[0].num_skipped: []",
    "return[0].pair_state[0]: [CP, M]",
    "return[1]: [C, M, P]",
)
def propose_refresh(
    frame: Frame, cavities: BatchCavities, factor, site_rows: Tuple, settings: EPSettings, damping
) -> Tuple[SiteRefresh, tf.Tensor]:
    """
    One damped EP update of each site of ``frame``'s batch (nothing written): the engine's
    :func:`~gpflow_ep.ep.update.propose_sites` (power, relaxation, clipping) at ``cavities``, damped by
    ``damping``; a pair moves to its fresh direction when its sites are updated. Per block
    Λ_u += Σ τ_d υ_nυ_nᵀ - τ_o υ_oυ_oᵀ and η_u += Σ (ν_d - τ_d m) υ_n - (ν_o - τ_o m) υ_o, the
    sites' parameters summed on their pairs.

    :param site_rows: the batch sites' stored (τ, ν, dual, b) (:meth:`SparseEPState.site_rows`).
    :return: the refresh and Lᵀυ of each pair after it, [C, M, P].
    """
    tau_o, nu_o, dual_o, relaxation_o = site_rows
    proposal = propose_sites(cavities.cavity, tau_o, nu_o, factor, settings)
    ok = proposal.valid
    tau_d, nu_d = accept_proposal(tau_o, nu_o, proposal, tf.cast(damping, tau_o.dtype))
    pairs = frame.pairs
    pair_ok = pairs.all(ok)
    U_new = tf.where(pair_ok, directions(frame.L, frame.A_new, shape_of(frame.prior.mean)[0]), frame.U_old)
    site_mean = pairs.gather(frame.prior_mean)
    weights = [pairs.sum(t) for t in (tau_d, -tau_o)]
    shifts = [pairs.sum(t) for t in (nu_d - tau_d * site_mean, -(nu_o - tau_o * site_mean))]
    U_both = tf.concat([blocked(U_new, frame.A_new), blocked(frame.U_old, frame.A_new)], axis=-2)  # [C, 2P, M]
    w_both = tf.concat([blocked(w, frame.A_new) for w in weights], axis=-2)
    s_both = tf.concat([blocked(t, frame.A_new) for t in shifts], axis=-2)
    d_Lambda = tf.matmul(U_both * w_both, U_both, transpose_a=True)
    d_eta = tf.matmul(U_both, s_both, transpose_a=True)
    rows = [tau_d, nu_d, tf.where(ok, proposal.dual, dual_o)]
    if settings.relaxation is not None:  # b stays 0 without relaxation: no row to write
        rows.append(tf.where(ok, proposal.relaxation, relaxation_o))
    # the refresh is EP state, never differentiated (the likelihood's parameters are live here)
    refresh = SiteRefresh(
        frame.sites.index,
        tuple(tf.stop_gradient(t) for t in rows),
        (tf.stop_gradient(d_Lambda), tf.stop_gradient(d_eta)),
        tf.reduce_sum(tf.cast(~ok, tf.int32)),
        frame.sites.pair_rows,
        (tf.stop_gradient(U_new),),
    )
    A_refreshed = tf.where(tf.linalg.matrix_transpose(blocked(pair_ok, frame.A_new)), frame.A_new, frame.A_old)
    return refresh, A_refreshed


def surrogate_objective(frame, cavities, tilted: BatchTilted, scale) -> tf.Tensor:
    r"""
    F_M at ``frame``'s q with an exact gradient and no differentiation through Cholesky factors: F
    depends on the hyper-parameters ξ only through K_uu, K_uf, diag K_ff, m(X) and the likelihood,
    so it is returned as its value plus ⟨∂F/∂K, K(ξ) - K(ξ₀)⟩ for each of these (zero in value,
    exact in gradient at ξ₀):

        F = -½ log|K_uu| - ½ tr(K_uu⁻¹(Σ + μμᵀ)) + ``scale`` Σ_{i∈M} log Z_i(ξ),

    ``scale`` = n/(α|M|). With whitened quantities (a = L⁻¹k, Ã = L⁻¹K_uf, B = I + LᵀΛ_uL,
    μ_v = L⁻¹μ, g_m, g_v the derivatives of log Z_i in the cavity mean and variance, scaled, and
    the cavity's shift d_i and scale c_i):

        R  = ∂F/∂ã_i = g_m (μ_v + d_i B⁻¹a_i^old) + 2 g_v (B⁻¹ã_i + c_i σ_no,i B⁻¹a_i^old),
             (per-point sites; with tied sites g_m μ_c + 2 g_v Σ_c ã_i, the cavity's whitened moments:
             ``cavities.site_gradient``)
        ∂F/∂K_uf = L⁻ᵀ(R - 2Ã diag g_v),       ∂F/∂diag K_ff = g_v,      ∂F/∂m(X) = g_m,
        ∂F/∂K_uu = L⁻ᵀ[½(B⁻¹ + μ_vμ_vᵀ - I) - (R - Ã diag g_v)Ãᵀ]L⁻¹,

    the last from d(υ) = K_uu⁻¹(dk - dK_uu υ), ds_i = υ_iᵀdK_uuυ_i - 2υ_iᵀdk_i and
    d(-½log|K| - ½tr K⁻¹S) = ½tr[(K⁻¹SK⁻¹ - K⁻¹)dK]. Every term is linear in the sites' g_m, g_v
    given their pair's vectors, so the sites' contributions are summed on their pairs and each
    block's matrices are formed once, in O(C m² P). When the C blocks share one prior block (L
    [1, M, M]), ∂F/∂K_uu and ∂F/∂K_uf are the sums of the blocks' (linear in H and R), formed before
    the solves with L, and -½ log|K_uu| counts C times. Sites whose cavity is improper contribute 0.
    """
    pairs = frame.pairs
    log_z = tilted.log_z
    g_m, g_v = scale * tilted.d_mean, scale * tilted.d_var  # [S, 1]

    q, L, A = frame.q, frame.L, frame.A_new

    def on_pairs(site_values):  # [S, 1] summed on the pairs, as [C, 1, P]
        return tf.linalg.matrix_transpose(blocked(pairs.sum(site_values), A))

    G_m, G_v = on_pairs(g_m), on_pairs(g_v)
    mu_v = q.mean  # [C, M, 1]
    R = cavities.site_gradient(frame, on_pairs, g_m, g_v)
    B_inv = q.covariance()
    H = 0.5 * (B_inv - eye_like(B_inv) + mu_v * tf.linalg.matrix_transpose(mu_v))
    H -= tf.matmul(R - A * G_v, A, transpose_b=True)
    dKuf = R - 2.0 * A * G_v
    if L.shape[0] == 1:  # a prior block shared by the C blocks: its gradient is the sum of theirs
        H, dKuf = tf.reduce_sum(H, axis=0, keepdims=True), tf.reduce_sum(dKuf, axis=0, keepdims=True)
    half = tf.linalg.triangular_solve(L, H, adjoint=True)  # L⁻ᵀH
    dF_dKuu = tf.linalg.matrix_transpose(tf.linalg.triangular_solve(L, tf.linalg.matrix_transpose(half), adjoint=True))
    dF_dKuf = tf.linalg.triangular_solve(L, dKuf, adjoint=True)
    num_blocks = tf.cast(shape_of(mu_v)[0] // shape_of(L)[0], L.dtype)  # the C blocks of a shared log|K_uu|

    value = (
        -num_blocks * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)))
        - 0.5 * (tf.reduce_sum(tf.linalg.trace(B_inv)) + tf.reduce_sum(tf.square(mu_v)))
        + scale * tf.reduce_sum(log_z)
    )
    live = [
        (dF_dKuu, frame.prior.Kuu),
        (dF_dKuf, frame.prior.Kuf),
        (G_v[..., 0, :], frame.prior.Kff_diag),
        (G_m[..., 0, :], frame.prior.mean),
    ]
    return value + tf.add_n([tf.reduce_sum(g * (t - tf.stop_gradient(t))) for g, t in live])


def evidence_estimate(
    frame: Frame,
    cavities: BatchCavities,
    tilted: BatchTilted,
    factor,
    precision,
    natural_mean,
    settings: EPSettings,
    scale,
):
    r"""
    An unbiased minibatch estimate of the EP evidence at ``frame``'s q, on the scale of the full data.
    The power-EP energy (:mod:`gpflow_ep.ep.energy`; the paper's eqs. 26–29) is a global term plus
    one term per site,

        log Z_EP = [g(q) - g(prior)] + Σ_{i=1}^{n} T_i,     T_i = (1/α)[log Z_i + g(q^{\i}) - g(q_i)],

    and the estimate keeps the global term exact — it needs only q(u), which sums every site
    (g(q) - g(prior) = -Σ_j log(L_B)_jj + ½‖c‖², :class:`~gpflow_ep.ep.whitened.WhitenedGaussian`, summed over
    the blocks) — and estimates the sum by the batch's terms scaled by ``scale`` = n/|M| (sites):

        log Ẑ_M = [g(q) - g(prior)] + (n/|M|) Σ_{i∈M} T_i.

    For a batch M drawn uniformly without replacement (each of ``make_dataset``'s batches is),
    E_M[(n/|M|) Σ_{i∈M} T_i] = Σ_i T_i, so E_M[log Ẑ_M] = log Z_EP of the stored state; with M all
    sites it is that value. Its variance is the sampling variance of the T_i, (n²/|M|)(1 - |M|/n)
    Var_i(T_i): it falls with the batch size and vanishes at the full batch. Each T_i is taken at the
    site's cavity as F_M takes it: log Z_i at the cavity of its old contribution (on υ_o) evaluated
    on the fresh υ_n = K_uu⁻¹k_i (``cavities``), and g(q^{\i}) - g(q_i) from the site's marginal on
    υ_o, where its natural parameters act (:func:`~gpflow_ep.ep.energy.cavity_log_normaliser_gap`,
    centred on the prior mean as q(u) is). When every batch site is on its fresh direction — after
    a full EP run (``run_ep``) at the current hyper-parameters, or with the full batch after a
    refresh — T_i is the term of ``ep_log_marginal_likelihood`` and log Ẑ_M, with the full batch,
    equals the model's ``log_marginal_likelihood``. Sites whose cavity is improper contribute 0, as
    in the energy; an improper q has no evidence (-∞).

    :param tilted: the batch sites' log Z_i at ``cavities`` (:func:`batch_tilted`).
    :param factor: their likelihood factor (which sites count together).
    :param precision, natural_mean: the batch sites' τ and ν, [S, 1].
    :param scale: n/|M|, the number of sites over the batch's.
    """
    old = cavities.old
    pairs = frame.pairs
    centred = natural_mean - precision * pairs.gather(frame.prior_mean)  # q(u) holds the sites of f - m(X)
    gap = cavity_log_normaliser_gap(
        pairs.gather(flat(old.mean)), pairs.gather(flat(old.var)), precision, centred, settings.removed_fraction
    )
    terms = (tilted.log_z + gap) / settings.power
    valid = factor.joint_validity(tilted.valid & tf.math.is_finite(terms))
    site_terms = tf.reduce_sum(tf.where(valid, terms, tf.zeros_like(terms)))
    q = frame.q
    estimate = q.log_normaliser_ratio + tf.cast(scale, site_terms.dtype) * site_terms
    return tf.where(q.proper, estimate, tf.constant(-np.inf, estimate.dtype))


class PosteriorState(EPState):
    """
    The EP state of a sparse model: :class:`EPState`'s sites and diagnostics, and q(u) as natural
    parameters in u-space, ``posterior_precision`` Λ_u and ``posterior_shift`` η_u ([M, M] and [M, 1]
    for one block, [C, M, M] and [C, M, 1] for C), whatever stores the sites that make it up
    (:class:`SparseEPState`: one site per point; :class:`~gpflow_ep.models.tied_sites.TiedEPState`:
    one average site per block).
    """

    def __init__(self, num_sites: int, num_hyperparameters: int, num_blocks: int, num_inducing: int):
        super().__init__(num_sites, num_hyperparameters)
        C, M = num_blocks, num_inducing
        blocks = () if C == 1 else (C,)  # one GP: Λ_u [M, M], η_u [M, 1] as SVGP users expect
        self.posterior_precision = tf.Variable(
            np.zeros(blocks + (M, M)), dtype=default_float(), trainable=False, name="posterior_precision"
        )
        self.posterior_shift = tf.Variable(
            np.zeros(blocks + (M, 1)), dtype=default_float(), trainable=False, name="posterior_shift"
        )

    def stored_posterior(self) -> Tuple[tf.Tensor, tf.Tensor]:
        """The stored Λ_u [C, M, M] and η_u [C, M, 1]."""
        M = self.posterior_shift.shape[-2]
        return tf.reshape(self.posterior_precision, [-1, M, M]), tf.reshape(self.posterior_shift, [-1, M, 1])

    @check_shapes("L: [C, M, M]")
    def whitened(self, L, change: Optional[Tuple[tf.Tensor, tf.Tensor]] = None) -> WhitenedGaussian:
        """q(v) of v = L⁻¹u from the stored q(u) (plus ``change`` = (ΔΛ_u, Δη_u)): Λ_v = LᵀΛ_uL, η_v = Lᵀη_u."""
        return WhitenedGaussian(*self.whitened_natural(L, change))

    def whitened_natural(self, L, change: Optional[Tuple[tf.Tensor, tf.Tensor]] = None):
        """q(v)'s natural parameters Λ_v = LᵀΛ_uL [C, M, M] and η_v = Lᵀη_u [C, M, 1] (plus ``change``)."""
        Lambda_u, eta_u = self.stored_posterior()
        if change is not None:
            Lambda_u, eta_u = Lambda_u + change[0], eta_u + change[1]
        return tf.matmul(L, tf.matmul(Lambda_u, L), transpose_a=True), tf.matmul(L, eta_u, transpose_a=True)

    def assign_posterior(self, precision, shift) -> None:
        """Overwrite q(u) with Λ_u [C, M, M] and η_u [C, M, 1]."""
        self.posterior_precision.assign(tf.reshape(precision, self.posterior_precision.shape))
        self.posterior_shift.assign(tf.reshape(shift, self.posterior_shift.shape))


class SparseEPState(PosteriorState):
    """
    The EP state of a sparse model with one site per point (module docstring): :class:`PosteriorState`'s
    sites, diagnostics and q(u), and ``site_directions`` [C·n, M], the direction υ = K_uu⁻¹k each
    (block, point) pair's sites were last updated with (row c·n + i). Its methods read and write these
    variables only; everything they need of the model comes in as tensors.
    """

    def __init__(self, num_sites: int, num_hyperparameters: int, num_blocks: int, num_data: int, num_inducing: int):
        super().__init__(num_sites, num_hyperparameters, num_blocks, num_inducing)
        self.site_directions = tf.Variable(
            np.zeros((num_blocks * num_data, num_inducing)),
            dtype=default_float(),
            trainable=False,
            name="site_directions",
        )

    def site_rows(self, index, natural_only: bool = False) -> Tuple[tf.Tensor, ...]:
        """The stored (τ, ν, dual, b) of the sites ``index``; (τ, ν) only with ``natural_only``."""
        sites = self.sites
        variables = (sites.precision, sites.natural_mean) + (() if natural_only else (sites.dual, sites.relaxation))
        return tuple(tf.gather(v, index) for v in variables)

    def frame(self, sites: SiteBatch, blocks: PriorBlocks, settings: Optional[EPSettings] = None) -> Frame:
        """
        A minibatch's :class:`Frame` from its validated ``sites`` and the model's prior ``blocks``
        at its points (live, for the surrogate's gradient): L, the fresh projections a_n = L⁻¹k_i,
        s, m(X), the stored directions υ_o and a_o = Lᵀυ_o of its pairs, and q(v), all without gradient.
        """
        L, A_new, s, prior_mean = (tf.stop_gradient(t) for t in whitened_prior(blocks))
        U_old = tf.gather(self.site_directions, sites.pair_rows)  # [C·P, M]
        return Frame(
            sites=sites,
            prior=blocks,
            L=L,
            A_new=A_new,
            A_old=tf.matmul(L, blocked(U_old, A_new), transpose_a=True, transpose_b=True),  # Lᵀυ_o, [C, M, P]
            U_old=U_old,
            s=s,
            prior_mean=prior_mean,
            q=self.whitened(L),
        )

    def batch_cavities(self, frame: Frame, settings: EPSettings) -> BatchCavities:
        """The batch sites' cavities (:func:`batch_cavities`) from their stored rows, which they carry."""
        rows = self.site_rows(frame.sites.index)
        cavities = batch_cavities(frame, rows[0], rows[1], settings.removed_fraction)
        return cavities._replace(rows=rows)

    def propose_refresh(
        self, frame: Frame, cavities: BatchCavities, factor, settings: EPSettings, damping
    ) -> Tuple[SiteRefresh, tf.Tensor]:
        """One damped EP update of the batch's sites (:func:`propose_refresh`); a batch must not repeat a site."""
        index = frame.sites.index
        tf.debugging.assert_equal(
            tf.size(tf.unique(index).y), tf.size(index), message="a minibatch must not repeat a site index"
        )
        return propose_refresh(frame, cavities, factor, cavities.rows, settings, damping)

    def evidence_estimate(self, frame: Frame, cavities: BatchCavities, tilted, factor, settings: EPSettings, scale):
        """The minibatch estimate of log Z_EP (:func:`evidence_estimate`) at the batch sites' stored rows."""
        tau, nu = cavities.rows[:2]
        return evidence_estimate(frame, cavities, tilted, factor, tau, nu, settings, scale)

    def store_posterior(self, L, A, pair_precision, pair_shift) -> None:
        """
        q(u) from sites summed on their pairs (τ, ν - τm) at projections A = L⁻¹K_uf: per block
        Λ_u = L⁻ᵀ(A T Aᵀ)L⁻¹, η_u = L⁻ᵀ A (ν - τ m); directions υ = L⁻ᵀa of every pair. Nothing is
        written unless all of them are finite.
        """
        Lambda_v = tf.matmul(A * tf.linalg.matrix_transpose(blocked(pair_precision, A)), A, transpose_b=True)
        eta_v = A @ blocked(pair_shift, A)
        half = tf.linalg.triangular_solve(L, Lambda_v, adjoint=True)  # L⁻ᵀΛ_v
        values = (
            directions(L, A, shape_of(Lambda_v)[0]),
            tf.linalg.triangular_solve(L, tf.linalg.matrix_transpose(half), adjoint=True),
            tf.linalg.triangular_solve(L, eta_v, adjoint=True),
        )
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in values])
        for variable, value in zip((self.site_directions, self.posterior_precision, self.posterior_shift), values):
            variable.assign(tf.where(finite, tf.reshape(value, variable.shape), variable))

    @check_shapes("L: [C, M, M]")
    def apply_refresh(self, refresh: SiteRefresh, L) -> Tuple[tf.Tensor, tf.Tensor, WhitenedGaussian]:
        """
        Write a refresh (``scatter_update`` also works on mirrored variables): its rows of τ, ν,
        the dual and, when present, the relaxation b; the pairs' directions; then q's change.
        Records it in :attr:`diagnostics`. A refresh with any non-finite value, or that would leave
        q improper at L = chol(K_uu), is not written (``refresh_rejected`` = 1, every update of the
        batch counted as skipped). The one writer of a minibatch refresh.

        :return: (the number of site updates skipped, whether the refresh was written, the
            refreshed q(v) at L, factorised once).
        """
        q_new = self.whitened(L, refresh.posterior_change)
        accepted = refresh.is_finite() & q_new.proper
        skipped = tf.cond(accepted, lambda: self._write(refresh), lambda: self._reject(refresh.index))
        return skipped, accepted, q_new

    def _reject(self, index):
        self.diagnostics.record_refresh(tf.size(index), tf.zeros([], self.sites.precision.dtype), tf.constant(True))
        return tf.size(index)

    def _write(self, refresh: SiteRefresh):
        variables = (self.sites.precision, self.sites.natural_mean, self.sites.dual, self.sites.relaxation)
        changes = [
            tf.reshape(tf.abs(rows - tf.gather(variable, refresh.index)), [-1])
            for variable, rows in zip(variables[:2], refresh.site_state[:2])
        ]
        max_change = tf.reduce_max(tf.concat(changes + [tf.zeros([1], changes[0].dtype)], axis=0))
        self.diagnostics.record_refresh(refresh.num_skipped, max_change, tf.constant(False))
        for variable, rows in zip(variables, refresh.site_state):
            variable.scatter_update(tf.IndexedSlices(rows, refresh.index))
        self.site_directions.scatter_update(tf.IndexedSlices(refresh.pair_state[0], refresh.pair_index))
        d_Lambda, d_eta = refresh.posterior_change
        self.posterior_precision.assign_add(tf.reshape(d_Lambda, self.posterior_precision.shape))
        self.posterior_shift.assign_add(tf.reshape(d_eta, self.posterior_shift.shape))
        return refresh.num_skipped
