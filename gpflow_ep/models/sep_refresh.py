r"""
SEPGPC's minibatch site refresh (SEP spec §3; the refresh half of the
:class:`~gpflow_ep.models.MinibatchEP` interface): the frame of a batch's quantities at the current
hyper-parameters, the engine's cavities on the stored and fresh directions, the proposal of one
damped EP update per site (nothing written) and its application to the sites, the pairs'
directions and q(u). A mixin of :class:`~gpflow_ep.models.SEPGPC`, whose prior and posterior
algebra (``_prior_blocks``, ``_prior``, ``_posterior_v``, ``_factor``) it uses.

**Damping of a refresh** (:func:`refresh_damping`). Hernández-Lobato & Hernández-Lobato (2016,
App. A.4, eq. 25) damp each site as ρ·new + (1 - ρ)·old with ρ = 0.5 for batch training, where
every site is updated in parallel from one q before q is rebuilt, and ρ = 0.99 with minibatches,
"since q is reconstructed after each minibatch and less damping is needed". A refresh of a fraction
f = |B|/n of the sites moves q's natural parameters by ρ Σ_{i∈B}(site_i^new - site_i^old), about
ρ·f of a parallel sweep's change, so a refresh of (nearly) all sites at ρ = 0.99 is the nearly
undamped parallel EP the paper damps, and it can oscillate (SEPMGPC on iris with the full batch:
the loss alternated by 17-45 nats every step, ``refresh_max_change`` stayed above 0.5). The refresh therefore uses
ρ_eff = min(``minibatch_damping``, ρ_batch / f), ρ_batch the model's batch-EP damping
(``EPSettings.damping``): ρ_eff·f never exceeds what a batch-EP sweep uses. Minibatches
with f ≤ ρ_batch / ``minibatch_damping`` (about half the data for ρ_batch = 0.5) keep
``minibatch_damping`` unchanged, and the full batch gets ρ_batch (or ``minibatch_damping`` if that
is smaller, as in the paper's batch SEP with ``minibatch_damping=0.5``). Damping does not move EP's
fixed points (the paper, ibid.). Under ``tf.distribute`` f counts the sites of all replicas.
"""

import tensorflow as tf
from check_shapes import check_shapes

from ..ep import EPSettings, accept_proposal, blocked, cavity_distribution, flat, propose_sites
from .minibatch import MinibatchEP, SiteRefresh
from .sep_surrogate import Frame, SiteBatch, unless_same

__all__ = ["SEPRefresh", "refresh_damping"]


def refresh_damping(settings: EPSettings, num_refreshed, num_sites: int) -> tf.Tensor:
    """
    ρ_eff = min(``minibatch_damping``, ρ_batch · n / |B|) of a refresh of ``num_refreshed`` = |B|
    of the model's ``num_sites`` = n sites, ρ_batch = ``settings.damping`` (module docstring).
    """
    fraction = tf.cast(num_refreshed, tf.float64) / float(num_sites)
    return tf.minimum(
        tf.constant(settings.minibatch_damping, tf.float64), settings.damping / tf.maximum(fraction, 1e-300)
    )


def _sites_in_sync(num_local):
    """The number of sites refreshed at once: summed over the replicas under ``tf.distribute``."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return num_local
    return context.all_reduce(tf.distribute.ReduceOp.SUM, num_local)


class SEPRefresh(MinibatchEP):
    """The minibatch refresh of :class:`~gpflow_ep.models.SEPGPC` (module docstring)."""

    def _minibatch_frame(self, sites: "SiteBatch") -> Frame:
        """
        Everything a minibatch step needs at the current hyper-parameters, without gradient, per
        (block, point) pair of the batch: L = chol(K_uu), fresh projections a_n = L⁻¹k_i
        (υ_n = L⁻ᵀa_n = K_uu⁻¹k_i), FITC variances s, prior means m(X), the stored directions υ_o
        and a_o = Lᵀυ_o, and q(v) from Λ_u, η_u.
        """
        blocks = self._prior_blocks(sites.X)  # live, for the surrogate's gradient
        L, A_new, s, prior_mean = (tf.stop_gradient(t) for t in self._prior(sites.X, blocks))
        U_old = tf.gather(self.site_directions, sites.pair_rows)  # [C·P, M]
        return Frame(
            prior=blocks,
            L=L,
            A_new=A_new,
            A_old=tf.matmul(L, blocked(U_old, A_new), transpose_a=True, transpose_b=True),  # Lᵀυ_o, [C, M, P]
            U_old=U_old,
            s=s,
            prior_mean=prior_mean,
            q=self._posterior_v(L),
            pairs=sites.pairs,
        )

    @staticmethod
    def _batch_cavities(fr: Frame, precision, natural_mean, settings: EPSettings, same=None):
        """
        The engine's cavity of each batch site's old contribution (on υ_o), evaluated on the fresh
        υ_n (:meth:`~gpflow_ep.ep.Cavity.of` with Cov_q(υ_nᵀu, υ_oᵀu) = W_nᵀW_o); the projections
        are computed once per pair. ``same`` (a boolean scalar tensor, optional) says that
        A_old = A_new, saving a solve.

        :return: (cavity on υ_n per site, projections on υ_n, projections on υ_o, cross-covariances
            per pair [C·P, 1]).
        """
        new = fr.q.projections(fr.A_new)
        old = unless_same(same, new, lambda: fr.q.projections(fr.A_old))
        cross = flat(tf.reduce_sum(new.half * old.half, axis=-2)[..., None])
        site = fr.pairs.gather
        cavity = cavity_distribution(
            site(flat(old.mean) + fr.prior_mean),
            site(flat(old.var)),
            precision,
            natural_mean,
            settings.removed_fraction,
            of=(site(flat(new.mean) + fr.prior_mean), site(flat(new.var)), site(cross)),
        )
        return cavity, new, old, cross

    def _propose_refresh(self, sites: "SiteBatch", settings: EPSettings):
        """
        The refresh of a batch (nothing written), the frame it used and Lᵀυ of each pair after it.
        """
        index = sites.index
        tf.debugging.assert_equal(
            tf.size(tf.unique(index).y), tf.size(index), message="a minibatch must not repeat a site index"
        )
        fr = self._minibatch_frame(sites)
        tau_o = tf.gather(self.sites.precision, index)
        nu_o = tf.gather(self.sites.natural_mean, index)
        cav, _, _, _ = self._batch_cavities(fr, tau_o, nu_o, settings)
        proposal = propose_sites(cav, tau_o, nu_o, self._factor(sites.X, sites.Y, fr.pairs.gather(fr.s)), settings)
        ok = proposal.valid
        damping = refresh_damping(settings, _sites_in_sync(tf.size(index)), self.num_sites)
        tau_d, nu_d = accept_proposal(tau_o, nu_o, proposal, tf.cast(damping, tau_o.dtype))
        # a pair moves to its fresh direction when its sites are updated (the factor updates a pair's sites together)
        pair_ok = fr.pairs.all(ok)
        U_new = flat(tf.linalg.matrix_transpose(tf.linalg.triangular_solve(fr.L, fr.A_new, adjoint=True)))
        U_new = tf.where(pair_ok, U_new, fr.U_old)  # υ_n = L⁻ᵀ a_n
        # per block, Λ_u += Σ τ_d υ_nυ_nᵀ - τ_o υ_oυ_oᵀ ;  η_u += Σ (ν_d - τ_d m) υ_n - (ν_o - τ_o m) υ_o,
        # the sites' parameters summed on their pairs (one product each)
        site_mean = fr.pairs.gather(fr.prior_mean)
        weights = [fr.pairs.sum(t) for t in (tau_d, -tau_o)]
        shifts = [fr.pairs.sum(t) for t in (nu_d - tau_d * site_mean, -(nu_o - tau_o * site_mean))]
        U_both = tf.concat([blocked(U_new, fr.A_new), blocked(fr.U_old, fr.A_new)], axis=-2)  # [C, 2P, M]
        w_both = tf.concat([blocked(w, fr.A_new) for w in weights], axis=-2)
        s_both = tf.concat([blocked(t, fr.A_new) for t in shifts], axis=-2)
        d_Lambda = tf.matmul(U_both * w_both, U_both, transpose_a=True)
        d_eta = tf.matmul(U_both, s_both, transpose_a=True)
        rows = [tau_d, nu_d, tf.where(ok, proposal.dual, tf.gather(self.sites.dual, index))]
        if settings.relaxation is not None:  # b stays 0 without relaxation: no row to write
            rows.append(tf.where(ok, proposal.relaxation, tf.gather(self.sites.relaxation, index)))
        # the refresh is EP state, never differentiated (the likelihood's parameters are live here)
        refresh = SiteRefresh(
            index,
            tuple(tf.stop_gradient(t) for t in rows),
            (tf.stop_gradient(d_Lambda), tf.stop_gradient(d_eta)),
            tf.reduce_sum(tf.cast(~ok, tf.int32)),
            sites.pair_rows,
            (tf.stop_gradient(U_new),),
        )
        A_site = tf.where(tf.linalg.matrix_transpose(blocked(pair_ok, fr.A_new)), fr.A_new, fr.A_old)
        return refresh, fr, A_site

    @check_shapes(
        "return.index: [B]",
        "return.posterior_change[0]: [C, M, M]",
        "return.posterior_change[1]: [C, M, 1]",
        "return.num_skipped: []",
        "return.pair_index: [P]",
        "return.pair_state[0]: [P, M]",
    )
    def propose_refresh(self, batch) -> SiteRefresh:
        """
        One damped EP update (:func:`refresh_damping`) of each site of ``batch = (X, Y, index)`` from
        the stored q, through the engine (module docstring); writes nothing. ``site_state`` is
        (τ, ν, dual) of the batch's sites, and b with relaxation; ``pair_state`` the directions υ of
        their pairs (rows ``pair_index`` of :attr:`site_directions`); ``posterior_change``
        (ΔΛ_u, Δη_u) per block.
        """
        return self._propose_refresh(self._check_minibatch(batch), self.ep_settings)[0]

    def apply_refresh(self, refresh: SiteRefresh) -> tf.Tensor:
        """
        Write a refresh (``scatter_update`` also works on mirrored variables): its rows of τ, ν,
        the dual and, when present, the relaxation b; the pairs' directions υ; then q's change.
        Records it in :attr:`ep_diagnostics` (``refreshes``, ``refresh_skipped``,
        ``refresh_max_change``: the largest change of a refreshed site's τ or ν). A refresh with any
        non-finite value is not written (``refresh_rejected`` = 1, every update of the batch
        counted as skipped).

        :return: the number of site updates skipped (all of the batch's when rejected).
        """
        return tf.cond(
            refresh.is_finite(), lambda: self._write_refresh(refresh), lambda: self._reject_refresh(refresh.index)
        )

    def _reject_refresh(self, index):
        self.ep_diagnostics.record_refresh(tf.size(index), tf.zeros([], self.sites.precision.dtype), tf.constant(True))
        return tf.size(index)

    def _write_refresh(self, refresh: SiteRefresh):
        variables = (self.sites.precision, self.sites.natural_mean, self.sites.dual, self.sites.relaxation)
        changes = [
            tf.reshape(tf.abs(rows - tf.gather(variable, refresh.index)), [-1])
            for variable, rows in zip(variables[:2], refresh.site_state[:2])
        ]
        max_change = tf.reduce_max(tf.concat(changes + [tf.zeros([1], changes[0].dtype)], axis=0))
        self.ep_diagnostics.record_refresh(refresh.num_skipped, max_change, tf.constant(False))
        for variable, rows in zip(variables, refresh.site_state):
            variable.scatter_update(tf.IndexedSlices(rows, refresh.index))
        self.site_directions.scatter_update(tf.IndexedSlices(refresh.pair_state[0], refresh.pair_index))
        d_Lambda, d_eta = refresh.posterior_change
        self.posterior_precision.assign_add(tf.reshape(d_Lambda, self.posterior_precision.shape))
        self.posterior_shift.assign_add(tf.reshape(d_eta, self.posterior_shift.shape))
        return refresh.num_skipped

    @check_shapes("return: []")
    def refresh_sites(self, batch) -> tf.Tensor:
        """``apply_refresh(propose_refresh(batch))``; returns the number of skipped site updates."""
        return self.apply_refresh(self.propose_refresh(batch))
