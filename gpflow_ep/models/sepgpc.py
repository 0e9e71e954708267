r"""
SEPGPC: scalable sparse EP classification (Hernández-Lobato & Hernández-Lobato 2016; SEP spec).

Inducing values u = f(Z) keep their FITC conditionals p(f_i | u) = N(υ_iᵀu, s_i),
s_i = K_ii - k_iᵀK_uu⁻¹k_i (spec §1.2), and are *not* marginalised, so every likelihood term
ϕ_i(u) = ∫ p(y_i | f) N(f; υ_iᵀu, s_i) df depends on u through one projection. Its EP site is
one scalar Gaussian in h_i = υ_iᵀu (spec §1.4): O(n) site memory, O(nm²) per sweep. In whitened
coordinates v = L⁻¹u the projections are a_i = L⁻¹k_i and q(v) is
:class:`~gpflow_ep.ep.WhitenedGaussian` (spec §1.6). The site update is the engine's, with the
FITC variance s_i added to the cavity inside the likelihood's tilted moments (spec §2.2: the
probit's b_i = 1 + s_i + σ²_{\i}).

The evidence log Z_q (spec §2.5, with the corrected eq. 29) is the engine's EP energy;
``training_loss(data)`` is -log Z_q with the sites held fixed, whose gradient equals the paper's
eq. (4) at an EP fixed point (spec §2.6, "exact" variant). ``ep_mode="nested"`` (default) runs
EP to convergence inside the loss — the batch "FITC-EP"/GFITC training of the paper, driven by
``gpflow.optimizers.Scipy``; at convergence SEP equals GFITC (spec T2).

The model keeps q(u) as natural parameters in u-space (``posterior_precision`` Λ_u,
``posterior_shift`` η_u), so it predicts without the training data, like ``gpflow.models.SVGP``.

**Minibatches** (spec §3; the :class:`~gpflow_ep.models.MinibatchEP` interface, its refresh in
``sep_refresh.py`` and its surrogate in ``sep_surrogate.py``): every site also
keeps the direction υ_i it was last updated with (``site_directions`` U, O(nm) memory), and
Λ_u = Σ_i τ_i υ_iυ_iᵀ, η_u = Σ_i ν_i υ_i are running sums. A refresh of the sites of a batch
``(X, Y, index)`` costs O(|M|m² + m³): the cavity removes the fraction β of the site's old
contribution (τ_o, ν_o on υ_o) from q — the engine's rank-one downdate
(:func:`~gpflow_ep.ep.cavity_distribution`) — evaluated on the fresh direction υ_n = K_uu⁻¹k_i
(:meth:`~gpflow_ep.ep.Cavity.of`); the new site is the engine's :func:`~gpflow_ep.ep.propose_sites`
(power, relaxation and clipping included), damped by ``minibatch_damping`` (0.99 in the paper), or
by the batch damping when the batch holds most sites (:func:`~gpflow_ep.models.sep_refresh.refresh_damping`).
With fixed hyper-parameters this reaches the batch fixed point. The gradient step then uses the
surrogate F_M of spec §2.6 at the refreshed q: q and the cavities of the batch frozen, the data
term scaled by n/(α|M|); its gradient is an unbiased estimate of the paper's eq. (4)/(6).
``training_loss((X, Y, index))`` does both (refresh, then -F_M), so a plain GPflow loop over
``(X, Y, index)`` batches trains the model; F_M's *value* is not an evidence; use
:meth:`log_marginal_likelihood` on the full data for that.

**Blocks and pairs.** The algebra carries a leading dimension of C independent blocks of u
(K_uu [C, M, M], q(v) per block) and lets several sites act on one (block, point) *pair*
(:class:`~gpflow_ep.ep.SitePairs`): their natural parameters add up on the pair's projection,
which is computed once, and the pair keeps one direction (row c·n + i of ``site_directions``).
Here C = 1 and each site has its own pair; :class:`~gpflow_ep.models.SEPMGPC` has one block per
class and 2(C - 1) sites on C pairs per point, and overrides only the ``_block_*`` prior hooks and
``_site_data``.
"""

from typing import Optional

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow import covariances
from gpflow.base import InputData, MeanAndVariance
from gpflow.config import default_float, default_jitter
from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction
from gpflow.models import GPModel
from gpflow.models.util import InducingVariablesLike, inducingpoint_wrapper

from ..ep import (
    EPRun,
    EPSettings,
    SitePairs,
    WhitenedAlgebra,
    WhitenedGaussian,
    blocked,
    ep_log_marginal_likelihood,
    flat,
    warn_if_not_converged,
)
from ..validation import check_inducing_variable, check_positive_int, check_training_data
from .ep_base import CheckedExternalDataTrainingLossMixin, EPModel, EPPosteriorBase, compiled_per_model
from .ep_state import ep_state_attribute
from .sep_refresh import SEPRefresh
from .sep_surrogate import PriorBlocks, SiteBatch, surrogate_objective


class SEPGPC(EPModel, SEPRefresh, GPModel, CheckedExternalDataTrainingLossMixin):
    """
    Sparse EP with inducing points, a drop-in for ``gpflow.models.SVGP``.

    :param kernel: any GPflow kernel.
    :param likelihood: a scalar likelihood (``Probit`` in the paper).
    :param inducing_variable: ``InducingPoints`` or an [M, D] array of inducing inputs Z.
    :param num_data: n, the number of training points (one site each).
    :param mean_function: GPflow mean function (default zero).
    :param jitter: added to K_uu (default ``gpflow.config.default_jitter()``).
    :param ep_options: the options of :class:`~gpflow_ep.ep.EPSettings` (the SEP paper uses
        ``damping=0.5`` for batch EP and ``minibatch_damping=0.99``, the default).
    """

    def __init__(
        self,
        kernel: Kernel,
        likelihood: Likelihood,
        inducing_variable: InducingVariablesLike,
        num_data: int,
        mean_function: Optional[MeanFunction] = None,
        *,
        jitter: Optional[float] = None,
        **ep_options,
    ):
        num_data = check_positive_int(num_data, "num_data")
        settings = self._check_schedule(EPSettings().updated(**ep_options))
        super().__init__(kernel, likelihood, mean_function, num_latent_gps=1)
        self.inducing_variable = inducingpoint_wrapper(check_inducing_variable(inducing_variable))
        self.num_data = num_data
        #: one site per point here; a model whose points have several sites (SEPMGPC) says how many
        self.num_sites = self._num_sites(num_data)
        self.jitter = default_jitter() if jitter is None else float(jitter)
        self._init_ep(self.num_sites, settings)
        C, M = self.num_blocks, self.inducing_variable.num_inducing // self.num_blocks
        blocks = () if C == 1 else (C,)  # one GP: Λ_u [M, M], η_u [M, 1] as SVGP users expect
        self.ep_state.posterior_precision = tf.Variable(
            np.zeros(blocks + (M, M)), dtype=default_float(), trainable=False, name="posterior_precision"
        )
        self.ep_state.posterior_shift = tf.Variable(
            np.zeros(blocks + (M, 1)), dtype=default_float(), trainable=False, name="posterior_shift"
        )
        #: the direction υ = K_uu⁻¹k each (block, point) pair's sites were last updated with, row c·n + i
        self.ep_state.site_directions = tf.Variable(
            np.zeros((C * num_data, M)), dtype=default_float(), trainable=False, name="site_directions"
        )

    posterior_precision = ep_state_attribute("posterior_precision", "Λ_u, q(u)'s precision (EP state).")
    posterior_shift = ep_state_attribute("posterior_shift", "η_u, q(u)'s precision times mean (EP state).")
    site_directions = ep_state_attribute(
        "site_directions", "υ = K_uu⁻¹k of each (block, point) pair's last update, row c·n + i (EP state)."
    )

    # ---------------------------------------------------------------- data

    #: C, the independent blocks of u (one GP here; one per class in SEPMGPC)
    num_blocks = 1

    def _num_sites(self, num_data: int) -> int:
        return num_data

    def _check_full_data(self, data) -> "SiteBatch":
        """Batch EP needs all n points, in the order of the sites, on every path (eager or compiled)."""
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise ValueError("data must be (X, Y) with all num_data points, or a minibatch (X, Y, index)")
        if tf.executing_eagerly():
            check_training_data(self, tuple(data))
        rows = tf.convert_to_tensor(data[0]).shape[0]
        if rows != self.num_data:
            got = "an unknown number of" if rows is None else str(rows)
            raise ValueError(
                f"data: batch EP (run_ep, log_marginal_likelihood, training_loss((X, Y))) needs all "
                f"num_data={self.num_data} points in order; got {got} rows. For minibatches pass (X, Y, index) "
                "batches (gpflow_ep.training.make_dataset gives them) or train with gpflow_ep.training.fit."
            )
        return self._site_data(*data)

    def _check_minibatch(self, batch) -> "SiteBatch":
        if not isinstance(batch, (tuple, list)) or len(batch) != 3:
            raise ValueError("batch must be (X, Y, index) with the rows' indices")
        X, Y, index = batch
        if tf.executing_eagerly():
            check_training_data(self, (X, Y), "batch")
            idx = np.asarray(index).reshape(-1)
            if idx.shape[0] != np.shape(X)[0] or not np.issubdtype(idx.dtype, np.integer):
                raise ValueError("batch[2] (index) must hold one integer index per row of X")
            if idx.size and (idx.min() < 0 or idx.max() >= self.num_data):
                raise ValueError(f"batch[2] (index) must lie in [0, num_data={self.num_data})")
            if np.unique(idx).size != idx.size:
                raise ValueError("batch[2] (index): a minibatch must not repeat a site index")
        return self._site_data(X, Y, tf.reshape(index, [-1]))

    def _site_data(self, X, Y, index=None) -> "SiteBatch":
        """
        Validated points (X, Y) as their sites see them (:class:`SiteBatch`); with the points'
        ``index``, the sites' indices and the rows of their pairs. One site per point here, on
        the point's only pair; SEPMGPC has several per point.
        """
        X, Y = tf.convert_to_tensor(X, default_float()), tf.cast(Y, default_float())
        if index is None:
            return SiteBatch(X, Y, SitePairs())
        index = tf.cast(index, tf.int32)
        return SiteBatch(X, Y, SitePairs(), index, index)

    def validate_training_data(self, data) -> None:
        """Eager validation of the data of ``training_loss`` (all n points, or a minibatch with indices)."""
        if isinstance(data, (tuple, list)) and len(data) == 3:
            self._check_minibatch(data)
        else:
            self._check_full_data(data)

    # ---------------------------------------------------------------- posterior algebra

    def _block_Kuu(self):
        """K_uu of every block (with jitter), [C, M, M]."""
        return covariances.Kuu(self.inducing_variable, self.kernel, jitter=self.jitter)[None]

    def _block_Kuf(self, X):
        """K_uf of every block at the points X, [C, M, P]."""
        return covariances.Kuf(self.inducing_variable, self.kernel, X)[None]

    def _block_Kff(self, X, full_cov: bool):
        """The prior covariance of every block's f at X, [C, P, P], or its diagonal [C, P]."""
        return self.kernel(X, full_cov=full_cov)[None]

    def _block_mean(self, X):
        """The prior mean of every block's f at X, [C, P]."""
        return tf.transpose(self.mean_function(X))

    def _chol_Kuu(self):
        return tf.linalg.cholesky(self._block_Kuu())

    def _prior_blocks(self, X) -> PriorBlocks:
        """The prior's K_uu, K_uf, diag K_ff and m of every block at the points X."""
        return PriorBlocks(
            self._block_Kuu(), self._block_Kuf(X), self._block_Kff(X, full_cov=False), self._block_mean(X)
        )

    def _prior(self, X, blocks: Optional[PriorBlocks] = None):
        """
        Per (block, point) pair: L = chol(K_uu) [C, M, M], A = L⁻¹K_uf [C, M, P], FITC variances
        s = diag K_ff - ‖a‖² ≥ 0 and prior means m, each [C·P, 1] (block-major pair rows), from
        ``blocks`` (default: computed at X).
        """
        b = self._prior_blocks(X) if blocks is None else blocks
        L = tf.linalg.cholesky(b.Kuu)
        A = tf.linalg.triangular_solve(L, b.Kuf)
        s = tf.maximum(b.Kff_diag - tf.reduce_sum(tf.square(A), axis=-2), 0.0)
        return L, A, tf.reshape(s, [-1, 1]), tf.reshape(b.mean, [-1, 1])

    def _algebra(self, A, prior_mean, pairs: SitePairs) -> WhitenedAlgebra:
        """The engine's algebra of the sites (plain [M, P] projections when there is one block)."""
        plain = pairs.plain and self.num_blocks == 1
        return WhitenedAlgebra(A[0] if plain else A, pairs.gather(prior_mean), pairs)

    # ---------------------------------------------------------------- running EP

    def run_ep(self, data, **overrides) -> EPRun:
        """
        Run EP to convergence on ``data = (X, Y)`` (all n points) with the hyper-parameters held
        fixed; store the sites, q(u) and :attr:`ep_diagnostics`. Keyword arguments override options
        of :attr:`ep_settings` for this run only. Warns (``EPConvergenceWarning``) when EP did not
        converge (eagerly; inside a compiled loss the outcome is in :attr:`ep_diagnostics`).
        """
        sites = self._check_full_data(data)
        settings = self._check_schedule(self.ep_settings.updated(**overrides))
        run = self._run_ep_compiled(sites.X, sites.Y, sites.pairs.index, settings)
        warn_if_not_converged(run, settings, f"{type(self).__name__}.run_ep")
        return run

    def _run_ep_sites(self, sites: "SiteBatch") -> EPRun:
        """``run_ep`` on validated site data (the model's settings): the nested loss's run."""
        run = self._run_ep_compiled(sites.X, sites.Y, sites.pairs.index, self.ep_settings)
        warn_if_not_converged(run, self.ep_settings, f"{type(self).__name__} nested training loss")
        return run

    def _pairs(self, X, site_pair) -> SitePairs:
        """The :class:`SitePairs` of the points X from the pair index of their sites (None: plain)."""
        if site_pair is None:
            return SitePairs()
        return SitePairs(site_pair, self.num_blocks * tf.shape(X)[0])

    @staticmethod
    def _check_schedule(settings: EPSettings) -> EPSettings:
        if settings.schedule == "convergent":
            raise ValueError(
                "schedule: the convergent double loop needs the normaliser of q over all sites, which the "
                "inducing-point algebra does not provide; use 'parallel' or 'sequential' (or EPGPC)"
            )
        return settings

    @compiled_per_model
    def _run_ep_compiled(self, X, Y, site_pair, settings: EPSettings) -> EPRun:
        pairs = self._pairs(X, site_pair)
        L, A, s, prior_mean = (tf.stop_gradient(t) for t in self._prior(X))
        run = self._run_schedule(self._algebra(A, prior_mean, pairs), self._factor(X, Y, pairs.gather(s)), settings)
        centred = run.natural_mean - run.precision * pairs.gather(prior_mean)
        self._store_posterior(L, A, pairs.sum(run.precision), pairs.sum(centred))
        return run

    def _store_posterior(self, L, A, pair_precision, pair_shift):
        """
        q(u) in u-space from the sites summed on their pairs (τ, ν - τm): per block
        Λ_u = L⁻ᵀ(A T Aᵀ)L⁻¹, η_u = L⁻ᵀ A (ν - τ m); directions υ = L⁻ᵀa of every pair.
        Nothing is written unless all of them are finite.
        """
        directions = flat(tf.linalg.matrix_transpose(tf.linalg.triangular_solve(L, A, adjoint=True)))
        Lambda_v = tf.matmul(A * tf.linalg.matrix_transpose(blocked(pair_precision, A)), A, transpose_b=True)
        eta_v = A @ blocked(pair_shift, A)
        half = tf.linalg.triangular_solve(L, Lambda_v, adjoint=True)  # L⁻ᵀΛ_v
        values = (
            directions,
            tf.linalg.triangular_solve(L, tf.linalg.matrix_transpose(half), adjoint=True),
            tf.linalg.triangular_solve(L, eta_v, adjoint=True),
        )
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in values])
        for variable, value in zip((self.site_directions, self.posterior_precision, self.posterior_shift), values):
            variable.assign(tf.where(finite, tf.reshape(value, variable.shape), variable))

    # ---------------------------------------------------------------- objective

    @check_shapes("return: []")
    def log_marginal_likelihood(self, data) -> tf.Tensor:
        """log Z_q at the stored sites, differentiable in hyper-parameters and Z (sites fixed)."""
        return self._log_marginal_likelihood_sites(self._check_full_data(data))

    def _log_marginal_likelihood_sites(self, sites: "SiteBatch") -> tf.Tensor:
        _, A, s, prior_mean = self._prior(sites.X)
        algebra = self._algebra(A, prior_mean, sites.pairs)
        factor = self._factor(sites.X, sites.Y, sites.pairs.gather(s))
        return ep_log_marginal_likelihood(algebra, factor, *self.sites.read(), self.ep_settings).log_marginal_likelihood

    @check_shapes("return: []")
    def maximum_log_likelihood_objective(self, data) -> tf.Tensor:  # type: ignore[override]
        """
        ``data = (X, Y)`` (all n points): log Z_q (in nested mode after EP is run to convergence).
        ``data = (X, Y, index)`` (a minibatch): the batch's sites are refreshed, then F_M at the
        refreshed q (:meth:`refresh_and_objective`).
        """
        if isinstance(data, (tuple, list)) and len(data) == 3:
            return self.refresh_and_objective(data)[0]
        sites = self._check_full_data(data)
        return self._evidence_objective(
            lambda: self._run_ep_sites(sites), lambda: self._log_marginal_likelihood_sites(sites)
        )

    # ---------------------------------------------------------------- prediction

    def _stored_posterior(self):
        """The stored Λ_u [C, M, M] and η_u [C, M, 1]."""
        C, M = self.num_blocks, self.site_directions.shape[-1]
        return tf.reshape(self.posterior_precision, [C, M, M]), tf.reshape(self.posterior_shift, [C, M, 1])

    def _posterior_v(self, L, posterior_precision=None, posterior_shift=None) -> WhitenedGaussian:
        """q(v) from q(u) (default: the stored one): Λ_v = LᵀΛ_uL, η_v = Lᵀη_u, per block."""
        Lambda_u, eta_u = self._stored_posterior()
        Lambda_u = Lambda_u if posterior_precision is None else posterior_precision
        eta_u = eta_u if posterior_shift is None else posterior_shift
        Lambda_v = tf.matmul(L, tf.matmul(Lambda_u, L), transpose_a=True)
        return WhitenedGaussian(Lambda_v, tf.matmul(L, eta_u, transpose_a=True))

    @property
    def q_mu(self):
        """E[u] under q, [M, C] (C = 1 here; for ``gpflow.conditionals.conditional`` with ``white=False``)."""
        L = self._chol_Kuu()
        return tf.transpose((L @ self._posterior_v(L).mean)[..., 0])

    @property
    def q_sqrt(self):
        """Lower-triangular square roots of Cov[u] per block, [C, M, M]."""
        L = self._chol_Kuu()
        cov = L @ self._posterior_v(L).covariance() @ tf.linalg.matrix_transpose(L)
        return tf.linalg.cholesky(0.5 * (cov + tf.linalg.matrix_transpose(cov)))

    def posterior(self) -> "SEPPosterior":
        """q(f) from the stored q(u), factorised once for repeated predictions (like ``SVGP.posterior()``)."""
        return SEPPosterior(self)

    @inherit_check_shapes
    def predict_f(self, Xnew: InputData, full_cov: bool = False, full_output_cov: bool = False) -> MeanAndVariance:
        """q(f*) = ∫ p(f* | u) q(u) du from the stored q(u) (the whitened SVGP predictive)."""
        return self.posterior().predict_f(Xnew, full_cov=full_cov, full_output_cov=full_output_cov)

    # ---------------------------------------------------------------- minibatches (spec §3)

    @check_shapes("return: []")
    def minibatch_objective(self, batch) -> tf.Tensor:
        """
        F_M (spec §2.6) for ``batch = (X, Y, index)`` at the stored sites: with q(u) (μ, Σ) and each
        batch site's cavity frozen,

            F = -½ log|K_uu| - ½ tr(K_uu⁻¹(Σ + μμᵀ)) + n/(α|M|) Σ_{i∈M} log Z_i(ξ),

        log Z_i the tilted normaliser (power α) at the cavity evaluated on the fresh
        υ_i(ξ) = K_uu⁻¹k_i (mean υ_iᵀμ + shift_i υ_iᵀw_i, variance s_i + υ_iᵀΣυ_i +
        scale_i (υ_iᵀw_i)², w_i = Συ_i^old). Its gradient is an unbiased estimate of the gradient
        of log Z_q at an EP fixed point (the paper's eq. 6); its value is not an evidence. Sites
        whose cavity is improper contribute 0.
        """
        sites = self._check_minibatch(batch)
        self._check_surrogate_settings(self.ep_settings)
        return surrogate_objective(self, sites, self._minibatch_frame(sites), self.ep_settings)

    @check_shapes("return[0]: []", "return[1]: []")
    def refresh_and_objective(self, batch):
        """
        One minibatch step's model part (spec §3): refresh the batch's sites, rebuild q, and return
        F_M at the refreshed q and the number of skipped updates. Shares the kernel matrices,
        chol(K_uu) and the projections between the two halves. A refresh whose q would be improper
        (possible only with negative site precisions) is not applied: all its updates count as
        skipped and F_M is taken at the unchanged q.
        """
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            raise ValueError(
                "SEPGPC's minibatch training loss refreshes sites, which needs the replicas' refreshes merged: "
                "train with gpflow_ep.training.fit(model, data, strategy=...)"
            )
        sites = self._check_minibatch(batch)
        settings = self.ep_settings
        self._check_surrogate_settings(settings)
        refresh, fr, A_site = self._propose_refresh(sites, settings)
        d_Lambda, d_eta = refresh.posterior_change
        Lambda_u, eta_u = self._stored_posterior()
        q_new = self._posterior_v(fr.L, Lambda_u + d_Lambda, eta_u + d_eta)

        def accepted():
            self._write_refresh(refresh)
            return q_new.cholesky, q_new.half_mean, q_new.proper, A_site, refresh.num_skipped

        def rejected():  # nothing written; the unchanged q and every update counted as skipped
            self._reject_refresh(sites.index)
            return fr.q.cholesky, fr.q.half_mean, fr.q.proper, fr.A_old, tf.size(sites.index)

        cholesky, half_mean, proper, A_old, num_skipped = tf.cond(
            q_new.proper & refresh.is_finite(), accepted, rejected
        )
        refreshed = fr._replace(
            A_old=A_old,
            q=WhitenedGaussian.from_factor(cholesky, half_mean, proper),
            same=tf.equal(num_skipped, 0),
        )
        return surrogate_objective(self, sites, refreshed, settings), num_skipped

    def reproject_sites(self, data, chunk_size: int = 10000) -> None:
        """
        Put every site on the direction of the current hyper-parameters and inducing inputs,
        υ_i = K_uu⁻¹k_i, and rebuild Λ_u, η_u from the unchanged sites (the batch model's
        semantics), in O(nm²) for ``data = (X, Y)``. Optional: minibatch sites keep the direction
        they were last updated with, as in the paper (spec §3); this re-projection also removes the
        slow round-off drift of the running sums (spec §3 [A]).
        """
        self._reproject(self._check_full_data(data), check_positive_int(chunk_size, "chunk_size"))

    def _reproject(self, sites: "SiteBatch", chunk_size: int) -> None:
        """``reproject_sites`` on validated full data, ``chunk_size`` points at a time."""
        L = self._chol_Kuu()
        tau, nu = self.sites.read()
        C, N = self.num_blocks, self.num_data
        prior_mean = tf.reshape(self._block_mean(sites.X), [-1, 1])
        pair_tau = tf.reshape(sites.pairs.sum(tau), [C, N])
        pair_shift = tf.reshape(sites.pairs.sum(nu - tau * sites.pairs.gather(prior_mean)), [C, N])
        M = self.site_directions.shape[-1]
        Lambda = tf.zeros((C, M, M), default_float())
        eta = tf.zeros((C, M, 1), default_float())
        for start in range(0, N, chunk_size):
            stop = min(start + chunk_size, N)
            U = self._directions(L, sites.X[start:stop])  # [C, P, M]
            Lambda += tf.matmul(U * pair_tau[:, start:stop, None], U, transpose_a=True)
            eta += tf.matmul(U, pair_shift[:, start:stop, None], transpose_a=True)
            rows = (tf.range(C)[:, None] * N + tf.range(start, stop)[None, :])[..., None]
            self.site_directions.scatter_nd_update(rows, U)
        self.posterior_precision.assign(tf.reshape(Lambda, self.posterior_precision.shape))
        self.posterior_shift.assign(tf.reshape(eta, self.posterior_shift.shape))

    def _directions(self, L, X):
        """υ = K_uu⁻¹k(X) = L⁻ᵀL⁻¹k(X) of every block, as rows [C, P, M]."""
        Kuf = self._block_Kuf(X)
        solved = tf.linalg.triangular_solve(L, tf.linalg.triangular_solve(L, Kuf), adjoint=True)
        return tf.linalg.matrix_transpose(solved)

    @staticmethod
    def _check_surrogate_settings(settings: EPSettings) -> None:
        if settings.cavity == "full" and settings.power != 1.0:
            raise ValueError(
                "cavity: the minibatch objective F_M is derived for the fractional cavity; with cavity='full' and "
                "power < 1 its gradient does not match the evidence's (measured), so minibatch training refuses it. "
                "Use cavity='fractional' or batch EP (run_ep / nested training)."
            )


class SEPPosterior(EPPosteriorBase):
    """q(f) of a :class:`SEPGPC`: chol(K_uu) and q(v) factorised once."""

    def __init__(self, model: SEPGPC):
        super().__init__(model)
        self._L = model._chol_Kuu()
        self._q = model._posterior_v(self._L)

    def _predict_blocks(self, Xnew, full_cov: bool):
        """q(f*) - m of every block: means [C, N], covariances [C, N, N] or variances [C, N]."""
        model = self.model
        A_star = tf.linalg.triangular_solve(self._L, model._block_Kuf(Xnew))
        return self._q.predict(A_star, model._block_Kff(Xnew, full_cov), full_cov=full_cov)

    def _predict_latent(self, Xnew, full_cov: bool):
        mean, cov = self._predict_blocks(Xnew, full_cov)
        return mean[0], cov[0]
