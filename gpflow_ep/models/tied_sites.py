r"""
Tied sites for sparse EP: stochastic EP (Li, Hernández-Lobato & Turner 2015, "Stochastic expectation
propagation", NeurIPS; below "Li et al.") on the inducing values u of sparse EP
(Hernández-Lobato & Hernández-Lobato 2016, Sec. 2).

Instead of one site per point, the n points share one *average site* ḡ(u) = exp(-½uᵀΛ̄u + η̄ᵀu)
per block of u (Li et al., Sec. 3):

    q(u) ∝ p(u) ḡ(u)ⁿ,

kept as q's natural parameters Λ_u = nΛ̄ and η_u = nη̄ (:class:`TiedEPState`: O(C·M²) numbers,
whatever n; ḡ is Λ_u/n, η_u/n). The cavity of a point removes the fraction β of its copy of ḡ
(β = α, or 1 for ``cavity="full"``; Li et al., Alg. 1),

    q^{\i}(u) ∝ p(u) ḡ(u)^{n-β},

the same for every point: in the whitened coordinates v = L⁻¹u (L = chol K_uu) its precision is
I + κLᵀΛ_uL and its shift κLᵀη_u, κ = (n - β)/n (:meth:`TiedEPState.frame`).

**Refresh.** A minibatch B of points is refreshed as the per-point refresh refreshes it, from the
tied cavity: each of a point's sites takes the engine's update (:func:`~gpflow_ep.ep.update.propose_sites`:
power α, clipping; the tilted moments of the likelihood with the point's FITC variance at the cavity
projected on its fresh direction υ_i = K_uu⁻¹k_i), its new parameters (τ_i, ν_i) are summed in
u-space into the point's factor f_i = (Σ τ υυᵀ, Σ (ν - τm)υ), and ḡ moves towards the batch's average
(Li et al.'s minibatch update, in natural parameters):

    ḡ ← ḡ + ε (avg_{i∈B} f_i - ḡ),     ε = ρ|B|/n,

so q changes by ρ Σ_{i∈B} (f_i - ḡ): the change the per-point refresh makes when every old site is ḡ,
ρ the refresh's damping (:func:`~gpflow_ep.models.sparse_sites.refresh_damping`). A point whose
update is skipped (an improper cavity or tilted distribution) contributes no change. The change is a
sum over points, so replicas under ``tf.distribute`` sum theirs. Batch EP (:func:`run_tied_ep`)
iterates the full-batch refresh, ρ the batch damping, to the fixed point

    Λ̄ = (1/n) Σ_i Σ_{sites of i} τ υυᵀ,    η̄ = (1/n) Σ_i Σ_{sites of i} (ν - τm) υ,

at the tied cavity. With one site per point (SEPGP, SEPGPC) and every point the same, every
per-point site is ḡ at per-point EP's fixed point, so the two fixed points coincide. A point with
several sites (SEPMGPC: C - 1 factors, 2(C - 1) sites) is one tied unit: its cavity removes all of
its sites, not one factor's.

**Evidence.** The (power-)EP energy with every point's site ḡ and every cavity q^{\i} (Li et al.,
Sec. 3; the energy of :mod:`gpflow_ep.ep.energy`),

    log Z_EP = [g(q) - g(p)] + (n/α)[g(q^{\i}) - g(q)] + (1/α) Σ_i log Z_i,

g the log normaliser, Z_i = ∫ p(y_i | f)^α q^{\i}(f_i) df_i (the product over a point's sites), and
its minibatch estimate replaces Σ_i by (n/|B|) Σ_{i∈B} (:func:`tied_evidence_estimate`, unbiased).
The minibatch objective F_M is sparse EP's (:func:`~gpflow_ep.models.sparse_sites.surrogate_objective`)
with the tied cavity, held fixed in u-space.
"""

from typing import NamedTuple, Optional, Tuple

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes

from ..ep import EPRun, EPSettings
from ..ep.algebra import shape_of
from ..ep.run import measure_code
from ..ep.sites import Cavity
from ..ep.update import propose_sites
from ..ep.whitened import Projections, WhitenedGaussian, blocked, flat
from ..summaries import summary_repr
from .minibatch import SiteRefresh
from .sparse_sites import PosteriorState, PriorBlocks, SiteBatch, batch_tilted, whitened_prior

__all__ = ["TiedEPState", "TiedFrame", "TiedCavities", "TiedInfo", "run_tied_ep", "tied_evidence_estimate"]


class TiedFrame(NamedTuple):
    """
    A minibatch's quantities for tied sites (:meth:`TiedEPState.frame`): as
    :class:`~gpflow_ep.models.sparse_sites.Frame` (L, the fresh projections A = L⁻¹K_uf, FITC variances,
    prior means, q(v)), and q's whitened natural parameters and the tied cavity q^{\\i}(v). A refresh needs
    the cavity alone, so q is factorised only when asked for (:meth:`with_q`) or after a refresh.
    """

    sites: SiteBatch
    prior: PriorBlocks
    L: tf.Tensor
    A_new: tf.Tensor
    s: tf.Tensor
    prior_mean: tf.Tensor
    q: Optional[WhitenedGaussian]  # None until factorised
    natural: Tuple[tf.Tensor, tf.Tensor]  # q(v)'s Λ_v [C, M, M] and η_v [C, M, 1]
    cavity: WhitenedGaussian
    kappa: float  # (n - β)/n: the cavity's natural parameters are κ times q's

    @property
    def pairs(self):
        return self.sites.pairs

    def with_q(self) -> "TiedFrame":
        """The frame with q(v) factorised (once)."""
        return self if self.q is not None else self._replace(q=WhitenedGaussian(*self.natural))

    def after(self, accepted, A_refreshed, num_skipped, q_refreshed: WhitenedGaussian, change) -> "TiedFrame":
        """The frame after a refresh with q's u-space change ``change`` was written (``accepted``) or not."""
        del A_refreshed, num_skipped  # tied sites keep no per-point direction
        d_Lambda, d_eta = (tf.where(accepted, c, tf.zeros_like(c)) for c in change)
        Lambda_v = self.natural[0] + tf.matmul(self.L, tf.matmul(d_Lambda, self.L), transpose_a=True)
        eta_v = self.natural[1] + tf.matmul(self.L, d_eta, transpose_a=True)
        def unchanged():  # q as it was (factorised only for a refresh that was not written)
            old = self.with_q().q
            return old.cholesky, old.half_mean, tf.convert_to_tensor(old.proper)

        refreshed = (q_refreshed.cholesky, q_refreshed.half_mean, tf.convert_to_tensor(q_refreshed.proper))
        q = WhitenedGaussian.from_factor(*tf.cond(accepted, lambda: refreshed, unchanged))
        cavity = WhitenedGaussian(self.kappa * Lambda_v, self.kappa * eta_v)
        return self._replace(q=q, natural=(Lambda_v, eta_v), cavity=cavity)


class TiedCavities(NamedTuple):
    """The batch sites' cavities under the tied cavity q^{\\i}, on their fresh directions."""

    cavity: Cavity  # one per site
    projections: Projections  # the tied cavity's projections on υ_n, per pair

    def site_gradient(self, frame: TiedFrame, on_pairs, g_m, g_v) -> tf.Tensor:
        """
        R = Σ_i ∂(g_m m_i + g_v v_i)/∂ã_i per pair, [C, M, P], for the cavity mean m_i = ãᵀμ_c and variance
        v_i = ãᵀΣ_cã (the tied cavity's whitened moments, held in u-space): g_m μ_c + 2 g_v Σ_c ã.
        """
        cavity = frame.cavity
        return cavity.mean * on_pairs(g_m) + 2.0 * cavity.solve(self.projections.half) * on_pairs(g_v)


class TiedInfo(NamedTuple):
    """What a batch run of tied sites (:func:`run_tied_ep`) records beyond the core: q(v) at its end."""

    precision: tf.Tensor  # [C, M, M] Λ_v = LᵀΛ_uL
    shift: tf.Tensor  # [C, M, 1] η_v = Lᵀη_u

    def __repr__(self) -> str:
        return summary_repr(self)


def _tied_cavities(cavity_q: WhitenedGaussian, A, prior_mean, pairs) -> TiedCavities:
    """Every site's cavity on its pair's fresh projection: the tied cavity's marginal there, plus the prior mean."""
    projections = cavity_q.projections(A)
    mean = pairs.gather(flat(projections.mean) + prior_mean)
    var = pairs.gather(flat(projections.var))
    valid = tf.broadcast_to(cavity_q.proper, shape_of(mean)) & tf.math.is_finite(mean) & tf.math.is_finite(var)
    zero = tf.zeros_like(mean)
    cavity = Cavity(tf.where(valid, mean, zero), tf.where(valid, var, tf.ones_like(var)), valid, zero, zero)
    return TiedCavities(cavity, projections)


def _propose(cavities: TiedCavities, factor, settings: EPSettings):
    """The engine's undamped update of every site at its tied cavity (no site of its own to relax towards)."""
    zeros = tf.zeros_like(cavities.cavity.var)
    return propose_sites(cavities.cavity, zeros, zeros, factor, settings)


def _points_factor_change(proposal, pairs, A, prior_mean, num_points_ok, Lambda_v, eta_v, num_data: int):
    r"""
    Σ_{i∈B ok} (f_i - ḡ) in whitened coordinates, per block: Σ τ a aᵀ - n_ok Λ_v/n and
    Σ (ν - τm) a - n_ok η_v/n over the points whose update is valid (``proposal.valid``, per site and,
    through the factor's joint validity, per point; ``num_points_ok`` = n_ok).
    """
    ok = proposal.valid
    tau = tf.where(ok, proposal.precision, tf.zeros_like(proposal.precision))
    shift = tf.where(ok, proposal.natural_mean - proposal.precision * pairs.gather(prior_mean), tf.zeros_like(tau))
    w = tf.linalg.matrix_transpose(blocked(pairs.sum(tau), A))  # [C, 1, P]
    b = blocked(pairs.sum(shift), A)  # [C, P, 1]
    d_Lambda = tf.matmul(A * w, A, transpose_b=True) - num_points_ok * Lambda_v / num_data
    d_eta = tf.matmul(A, b) - num_points_ok * eta_v / num_data
    return d_Lambda, d_eta


def _num_points_ok(proposal, sites_per_point: int):
    """The points whose sites were all updated (sites of a point share their validity)."""
    return tf.reduce_sum(tf.cast(proposal.valid, proposal.precision.dtype)) / float(sites_per_point)


class TiedEPState(PosteriorState):
    """
    The EP state of a sparse model with tied sites (module docstring): q(u) = p(u) ḡ(u)ⁿ as its natural
    parameters Λ_u = nΛ̄, η_u = nη̄ (:class:`~gpflow_ep.models.sparse_sites.PosteriorState`), the
    diagnostics and the fitted-for record; no per-point variable (its per-site arrays are empty).

    :param num_data: n, the points the average site stands for.
    :param sites_per_point: the sites of a point (1, or 2(C - 1) for SEPMGPC's factors).
    """

    def __init__(
        self, num_hyperparameters: int, num_blocks: int, num_inducing: int, num_data: int, sites_per_point: int = 1
    ):
        super().__init__(0, num_hyperparameters, num_blocks, num_inducing)
        self.num_data = int(num_data)
        self.sites_per_point = int(sites_per_point)

    def kappa(self, settings: EPSettings) -> float:
        """κ = (n - β)/n: the cavity keeps n - β of the n copies of ḡ."""
        return (self.num_data - settings.removed_fraction) / self.num_data

    def frame(self, sites: SiteBatch, blocks: PriorBlocks, settings: EPSettings) -> TiedFrame:
        """
        A minibatch's :class:`TiedFrame` from its validated ``sites`` and the model's prior ``blocks`` at its
        points (live, for the surrogate's gradient): L, A = L⁻¹K_uf, s, m(X), q(v) and the tied cavity, all
        without gradient.
        """
        L, A, s, prior_mean = (tf.stop_gradient(t) for t in whitened_prior(blocks))
        Lambda_v, eta_v = self.whitened_natural(L)
        kappa = self.kappa(settings)
        return TiedFrame(
            sites=sites,
            prior=blocks,
            L=L,
            A_new=A,
            s=s,
            prior_mean=prior_mean,
            q=None,
            natural=(Lambda_v, eta_v),
            cavity=WhitenedGaussian(kappa * Lambda_v, kappa * eta_v),
            kappa=kappa,
        )

    def batch_cavities(self, frame: TiedFrame, settings: EPSettings) -> TiedCavities:
        """The batch sites' cavities: the tied cavity on their fresh projections."""
        del settings
        return _tied_cavities(frame.cavity, frame.A_new, frame.prior_mean, frame.pairs)

    @check_shapes(
        "return[0].posterior_change[0]: [C, M, M]",
        "return[0].posterior_change[1]: [C, M, 1]",
        "return[0].num_skipped: []",
    )
    def propose_refresh(
        self, frame: TiedFrame, cavities: TiedCavities, factor, settings: EPSettings, damping
    ) -> Tuple[SiteRefresh, tf.Tensor]:
        """
        One damped refresh of the average site from the batch (module docstring), nothing written: the change
        ρ Σ_{i∈B} (f_i - ḡ) of q(u)'s natural parameters, per block, in u-space.
        """
        proposal = _propose(cavities, factor, settings)
        n_ok = _num_points_ok(proposal, self.sites_per_point)
        d_Lambda_v, d_eta_v = _points_factor_change(
            proposal, frame.pairs, frame.A_new, frame.prior_mean, n_ok, *frame.natural, self.num_data
        )
        rho = tf.cast(damping, d_Lambda_v.dtype)
        d_Lambda, d_eta = _to_u_space(frame.L, rho * d_Lambda_v, rho * d_eta_v)
        refresh = SiteRefresh(
            index=None,
            site_state=(),
            posterior_change=(tf.stop_gradient(d_Lambda), tf.stop_gradient(d_eta)),
            num_skipped=tf.reduce_sum(tf.cast(~proposal.valid, tf.int32)),
        )
        return refresh, frame.A_new

    @check_shapes("L: [C, M, M]")
    def apply_refresh(self, refresh: SiteRefresh, L) -> Tuple[tf.Tensor, tf.Tensor, WhitenedGaussian]:
        """
        Write a (merged) refresh: q(u)'s change, unless it holds a non-finite value or leaves q improper at
        L = chol(K_uu) (then nothing is written, ``refresh_rejected`` = 1). Records it in :attr:`diagnostics`
        (the largest change of the average site's natural parameters, ḡ = q/n).

        :return: (site updates skipped, whether the refresh was written, the refreshed q(v) at L).
        """
        q_new = self.whitened(L, refresh.posterior_change)
        accepted = refresh.is_finite() & q_new.proper
        d_Lambda, d_eta = refresh.posterior_change
        dtype = d_Lambda.dtype
        change = tf.maximum(tf.reduce_max(tf.abs(d_Lambda)), tf.reduce_max(tf.abs(d_eta))) / self.num_data

        def write():
            self.posterior_precision.assign_add(tf.reshape(d_Lambda, self.posterior_precision.shape))
            self.posterior_shift.assign_add(tf.reshape(d_eta, self.posterior_shift.shape))
            self.diagnostics.record_refresh(refresh.num_skipped, change, tf.constant(False))
            return refresh.num_skipped

        def reject():
            self.diagnostics.record_refresh(refresh.num_skipped, tf.zeros([], dtype), tf.constant(True))
            return refresh.num_skipped

        skipped = tf.cond(accepted, write, reject)
        return skipped, accepted, q_new

    def evidence_estimate(self, frame: TiedFrame, cavities: TiedCavities, tilted, factor, settings, scale):
        """The minibatch estimate of log Z_EP with tied sites (:func:`tied_evidence_estimate`)."""
        del cavities
        return tied_evidence_estimate(frame.q, frame.cavity, tilted, factor, settings, scale, self.num_data)

    def evidence(self, prior, pairs, factor, settings: EPSettings) -> tf.Tensor:
        """
        log Z_EP of the stored average site on all n points (:func:`tied_evidence_estimate` with the full
        batch), differentiable in the hyper-parameters through ``prior`` (the points' live
        :class:`~gpflow_ep.models.sparse_sites.WhitenedPrior`) with ḡ held fixed in u-space.
        """
        Lambda_v, eta_v = self.whitened_natural(prior.L)
        kappa = self.kappa(settings)
        q, cavity = WhitenedGaussian(Lambda_v, eta_v), WhitenedGaussian(kappa * Lambda_v, kappa * eta_v)
        tilted = batch_tilted(_tied_cavities(cavity, prior.A, prior.mean, pairs), factor, settings.power, False)
        return tied_evidence_estimate(q, cavity, tilted, factor, settings, 1.0, self.num_data)

    def store_run(self, L, info: TiedInfo) -> None:
        """q(u) from a batch run's end, Λ_u = L⁻ᵀΛ_vL⁻¹ and η_u = L⁻ᵀη_v; nothing is written unless finite."""
        Lambda_u, eta_u = _to_u_space(L, info.precision, info.shift)
        finite = tf.reduce_all(tf.math.is_finite(Lambda_u)) & tf.reduce_all(tf.math.is_finite(eta_u))
        Lambda_old, eta_old = self.stored_posterior()
        self.assign_posterior(tf.where(finite, Lambda_u, Lambda_old), tf.where(finite, eta_u, eta_old))


def _to_u_space(L, Lambda_v, eta_v):
    """
    Whitened natural parameters back in u-space: L⁻ᵀΛ_vL⁻¹ and L⁻ᵀη_v, the precision symmetrised.

    Λ_v is symmetric only to round-off, and a refresh's change holds -ρ(|B|/n)Λ_v, Λ_v = LᵀΛ_uL from the
    stored Λ_u: a map that returned the transpose, L⁻ᵀΛ_vᵀL⁻¹, would turn that into -ρ(|B|/n)Λ_uᵀ and grow the
    round-off's antisymmetric part of Λ_u by (1 + ρ|B|/n) at every refresh. Storing ½(X + Xᵀ) keeps Λ_u
    exactly symmetric.
    """
    half = tf.linalg.triangular_solve(L, Lambda_v, adjoint=True)  # L⁻ᵀΛ_v
    Lambda_u = tf.linalg.triangular_solve(L, tf.linalg.matrix_transpose(half), adjoint=True)  # L⁻ᵀ(L⁻ᵀΛ_v)ᵀ
    Lambda_u = 0.5 * (Lambda_u + tf.linalg.matrix_transpose(Lambda_u))
    return Lambda_u, tf.linalg.triangular_solve(L, eta_v, adjoint=True)


def tied_evidence_estimate(q: WhitenedGaussian, cavity: WhitenedGaussian, tilted, factor, settings, scale, num_data):
    r"""
    log Ẑ_M = [g(q) - g(p)] + (n/α)[g(q^{\i}) - g(q)] + (``scale``/α) Σ_{sites in M} log Z_i (module
    docstring), ``scale`` = n/|M| points: unbiased over uniformly drawn batches, the EP energy of the
    tied state with the full batch. Sites whose cavity is improper contribute 0; an improper q or
    cavity has no evidence (-∞).
    """
    alpha = settings.power
    log_z = tilted.log_z / alpha
    valid = factor.joint_validity(tilted.valid & tf.math.is_finite(log_z))
    site_terms = tf.reduce_sum(tf.where(valid, log_z, tf.zeros_like(log_z)))
    gap = cavity.log_normaliser_ratio - q.log_normaliser_ratio
    estimate = q.log_normaliser_ratio + (float(num_data) / alpha) * gap + tf.cast(scale, site_terms.dtype) * site_terms
    proper = tf.reduce_all(q.proper) & tf.reduce_all(cavity.proper)
    return tf.where(proper, estimate, tf.constant(-np.inf, estimate.dtype))


def run_tied_ep(
    L, A, prior_mean, pairs, factor, Lambda_v, eta_v, settings: EPSettings, num_data: int, sites_per_point: int
) -> EPRun:
    r"""
    Batch EP with tied sites (module docstring): the full-batch refresh of the average site, damped by
    ``settings.damping`` (halved after a sweep that would leave q improper, which is not taken), repeated
    until no natural parameter of the whitened average site, Λ_v/n and η_v/n, moves by more than
    ``settings.tol`` in a sweep and no site update was skipped, or ``settings.max_sweeps`` sweeps.

    :param L, A, prior_mean, pairs, factor: the whitened prior of all n points and their sites' factor.
    :param Lambda_v, eta_v: q(v)'s natural parameters to start from, [C, M, M] and [C, M, 1].
    :return: the run's record; its ``info`` (:class:`TiedInfo`) holds q(v) at the end (per-site fields empty).
    """
    kappa = (num_data - settings.removed_fraction) / num_data
    dtype = Lambda_v.dtype
    empty = tf.zeros([0, 1], dtype)
    history = tf.zeros([settings.max_sweeps], dtype)

    def sweep(state):
        step, Lambda, eta, _, history, skipped_total, rejected, damping, _ = state
        cavities = _tied_cavities(WhitenedGaussian(kappa * Lambda, kappa * eta), A, prior_mean, pairs)
        proposal = _propose(cavities, factor, settings)
        n_ok = _num_points_ok(proposal, sites_per_point)
        d_Lambda, d_eta = _points_factor_change(proposal, pairs, A, prior_mean, n_ok, Lambda, eta, num_data)
        new_Lambda, new_eta = Lambda + damping * d_Lambda, eta + damping * d_eta
        finite = tf.reduce_all(tf.math.is_finite(new_Lambda)) & tf.reduce_all(tf.math.is_finite(new_eta))
        proper = finite & tf.reduce_all(WhitenedGaussian(new_Lambda, new_eta).proper)
        change = damping * tf.maximum(tf.reduce_max(tf.abs(d_Lambda)), tf.reduce_max(tf.abs(d_eta))) / num_data
        skipped = tf.reduce_sum(tf.cast(~proposal.valid, tf.int32))
        history = tf.tensor_scatter_nd_update(history, [[step]], [tf.where(proper, change, -tf.ones_like(change))])
        return (
            step + 1,
            tf.where(proper, new_Lambda, Lambda),
            tf.where(proper, new_eta, eta),
            tf.where(proper, change, tf.constant(np.inf, dtype)),
            history,
            skipped_total + skipped,
            rejected + tf.cast(~proper, tf.int32),
            tf.where(proper, damping, 0.5 * damping),
            skipped,
        )

    def not_done(step, _Lambda, _eta, change, _history, _skipped_total, _rejected, _damping, skipped_now):
        converged = (change <= settings.tol) & tf.equal(skipped_now, 0)
        return (step < settings.max_sweeps) & ~converged

    start = (
        tf.constant(0),
        Lambda_v,
        eta_v,
        tf.constant(np.inf, dtype),
        history,
        tf.constant(0),
        tf.constant(0),
        tf.constant(settings.damping, dtype),
        tf.constant(0),
    )
    step, Lambda_v, eta_v, change, history, skipped_total, rejected, _, skipped_now = tf.while_loop(
        not_done, lambda *s: sweep(s), start
    )
    return EPRun(
        precision=empty,
        natural_mean=empty,
        converged=(change <= settings.tol) & tf.equal(skipped_now, 0),
        sweeps=step,
        measure=tf.constant(measure_code("average site")),
        max_change=change,
        history=history,
        num_skipped=skipped_total,
        num_rejected=rejected,
        dual=empty,
        relaxation=empty,
        info=TiedInfo(Lambda_v, eta_v),
    )
