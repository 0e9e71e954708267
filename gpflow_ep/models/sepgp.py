r"""
SEPGP: scalable sparse EP with inducing points for any scalar likelihood (Hernández-Lobato &
Hernández-Lobato 2016, "Scalable Gaussian process classification via expectation propagation",
AISTATS) — the implementation of :class:`~gpflow_ep.models.SEPGPC` (the paper's classifier, under its
name) and of :class:`~gpflow_ep.models.SEPMGPC` (C blocks of u).

Inducing values u = f(Z) keep their FITC conditionals p(f_i | u) = N(υ_iᵀu, s_i),
s_i = K_ii - k_iᵀK_uu⁻¹k_i (the paper's Sec. 2.1), and are *not* marginalised, so every likelihood
term ϕ_i(u) = ∫ p(y_i | f) N(f; υ_iᵀu, s_i) df depends on u through one projection. Its EP site is
one scalar Gaussian in h_i = υ_iᵀu (eq. 2): O(n) site memory, O(nm²) per sweep. In whitened
coordinates v = L⁻¹u the projections are a_i = L⁻¹k_i and q(v) is
:class:`~gpflow_ep.ep.whitened.WhitenedGaussian`. The site update is the engine's, with the FITC variance
s_i added to the cavity inside the likelihood's tilted moments (App. A.2: the probit's
b_i = 1 + s_i + σ²_{\i}).

The evidence log Z_q (the paper's eq. 29, with ½ on its quadratic terms and -½ log(1 - ν̃σ²)) is
the engine's EP energy; ``training_loss((X, Y))`` is -log Z_q with the sites held fixed, whose
gradient equals the paper's eq. (4) at an EP fixed point. ``ep_mode="nested"`` (default) runs EP
to convergence inside the loss — the batch "FITC-EP"/GFITC training of the paper, driven by
``gpflow.optimizers.Scipy``; at convergence SEP equals GFITC (Naish-Guzman & Holden 2008).

The model keeps q(u) as natural parameters in u-space (``ep_state.posterior_precision`` Λ_u,
``ep_state.posterior_shift`` η_u), so it predicts without the training data, like ``gpflow.models.SVGP``.
Its EP state — the sites, the direction each site was last updated with and q(u) — is one module,
``model.ep_state`` (:class:`~gpflow_ep.models.sparse_sites.SparseEPState`), and the algebra of a
minibatch step is the pure functions of :mod:`gpflow_ep.models.sparse_sites`. The model itself
gives the prior blocks (K_uu, K_uf, diag K_ff and the prior mean of every block of u) and its sites'
layout.

**Minibatches** (the paper's Sec. 2.3): a step on ``(X, Y, index)`` refreshes the batch's sites —
one damped EP update each from the stored q, which reaches the batch fixed point at fixed
hyper-parameters — then takes a gradient step on the surrogate F_M at the refreshed q (the data
term scaled by n/(α|M|); its gradient is an unbiased estimate of the paper's eq. (4)/(6)). The
refresh is an optimiser step, :class:`gpflow_ep.optimizers.MinibatchEP`, as GPflow pairs
``NaturalGradient`` with Adam; :func:`gpflow_ep.training.fit` and
``MinibatchEP().loss_closure(model, batches)`` (a plain GPflow loop) do both.
``training_loss((X, Y, index))`` is -F_M at the stored state (no refresh); F_M's *value* is not
an evidence: what ``fit`` and ``loss_closure`` report is :meth:`minibatch_log_marginal_likelihood`,
an unbiased minibatch estimate of log Z_EP, and :meth:`log_marginal_likelihood` on the full data
is the exact value.

**Blocks and pairs.** The algebra carries a leading dimension of C independent blocks of u and
lets several sites act on one (block, point) pair (:class:`~gpflow_ep.ep.whitened.SitePairs`). Here C = 1
and each site has its own pair; :class:`~gpflow_ep.models.SEPMGPC` has one block per class and
2(C - 1) sites on C pairs per point, and overrides only the prior blocks and ``_site_data``.
"""

import warnings
from typing import Optional, Tuple, Union

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_float, default_jitter
from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction
from gpflow.models import GPModel
from gpflow.models.util import InducingVariablesLike, inducingpoint_wrapper
from gpflow.posteriors import PrecomputeCacheType

from ..covariances import block_Kff, block_Kuf, block_Kuu
from ..ep import EPRun, EPSettings, LikelihoodFactor, WhitenedAlgebra, get_schedule
from ..ep.algebra import shape_of
from ..ep.whitened import SitePairs
from ..likelihoods.targets import check_targets
from ..posteriors import q_from_natural_parameters, sparse_ep_posterior
from ..validation import check_choice, check_inducing_variable, check_positive_int, check_range, check_training_data
from .ep_base import (
    EP_MODES,
    CheckedExternalDataTrainingLossMixin,
    EPModel,
    SiteProblem,
    check_ep_likelihood,
    not_converted,
)
from .minibatch import AppliedRefresh, MinibatchEPModel, SiteRefresh
from .sparse_sites import (
    Frame,
    PriorBlocks,
    SiteBatch,
    SparseEPState,
    WhitenedPrior,
    batch_tilted,
    refresh_damping,
    sites_in_sync,
    surrogate_objective,
    whitened_prior,
)
from .tied_sites import TiedEPState, TiedFrame, run_tied_ep

#: how a sparse model keeps its sites: one per point (the SEP paper's) or one average site per block of u
SITE_LAYOUTS = ("per_point", "tied")


def _check_ep_mode(ep_mode: Optional[str], site_layout: str) -> str:
    """
    ``ep_mode``, by default "nested" for per-point sites (``training_loss((X, Y))`` on all the data runs
    batch EP) and "alternated" for tied ones (``training_loss((X, Y))`` is the minibatch objective of any
    batch, as SVGP's).
    """
    if ep_mode is None:
        return "alternated" if site_layout == "tied" else "nested"
    return check_choice(ep_mode, "ep_mode", EP_MODES)


class SEPGP(EPModel, MinibatchEPModel, GPModel, CheckedExternalDataTrainingLossMixin):
    r"""
    Sparse EP with inducing points for any scalar likelihood, a drop-in for ``gpflow.models.SVGP``.

    :param kernel: any GPflow kernel.
    :param likelihood: a scalar likelihood EP has moments for (``Probit`` in the paper; ``Gaussian``,
        ``StudentT``, ``gpflow_ep.likelihoods.Laplace``, ``Poisson``, ``Ordinal``, ``Bernoulli``, ...);
        Y is checked against its support wherever data enter eagerly.
    :param inducing_variable: ``InducingPoints`` or an [M, D] array of inducing inputs Z.
    :param num_data: n, the number of training points (one site each).
    :param mean_function: GPflow mean function (default zero).
    :param minibatch_damping: ρ of a minibatch site refresh (default 0.99, the SEP paper's; capped for
        large batches, :func:`~gpflow_ep.models.sparse_sites.refresh_damping`).
    :param ep_mode: "nested" (default: ``training_loss((X, Y))`` on all the data first runs batch EP to
        convergence, warm-started) or "alternated" (it uses the stored sites).
    :param ep_options: the options of a batch EP run, :class:`~gpflow_ep.ep.EPSettings` (the SEP paper
        uses ``damping=0.5`` for batch EP).

    **Two minibatch quantities.** A minibatch M of b of the n sites gives the gradient and the
    value to read separately. The gradient step follows F_M (:meth:`minibatch_objective`, the
    paper's eq. 6), whose gradient estimates the evidence's without bias at a fixed point but whose
    value moves with log|K_uu| and is no evidence. The value reported by
    :func:`gpflow_ep.training.fit` and ``MinibatchEP().loss_closure`` is
    :meth:`minibatch_log_marginal_likelihood`,

        log Ẑ_M = [g(q) - g(prior)] + (n/b) Σ_{i∈M} (1/α)[log Z_i + g(q^{\i}) - g(q_i)],

    the EP energy (eqs. 26–29) with its global term exact from q(u) and its per-site terms estimated
    from the batch: unbiased for log Z_EP of the stored sites over uniformly drawn batches, equal to
    :meth:`log_marginal_likelihood` with the full batch at an EP fixed point, with standard deviation
    n √((1 - b/n) S²/b) (S² the variance of the per-site terms), so it reads on the scale of the
    full data, next to SVGP's -ELBO.
    """

    def __init__(
        self,
        kernel: Kernel,
        likelihood: Likelihood,
        inducing_variable: InducingVariablesLike,
        num_data: int,
        mean_function: Optional[MeanFunction] = None,
        *,
        sites: str = "per_point",
        minibatch_damping: float = 0.99,
        ep_mode: Optional[str] = None,
        **ep_options,
    ):
        self._check_likelihood(likelihood)
        num_data = check_positive_int(num_data, "num_data")
        #: "per_point" (one site per point, the SEP paper's) or "tied" (one average site per block of u)
        self.site_layout = check_choice(sites, "sites", SITE_LAYOUTS)
        ep_mode = _check_ep_mode(ep_mode, self.site_layout)
        self.minibatch_damping = check_range(minibatch_damping, "minibatch_damping", 0.0, 1.0)
        settings = self._check_schedule(EPSettings().updated(**ep_options))
        super().__init__(kernel, likelihood, mean_function, num_latent_gps=1)
        self.inducing_variable = inducingpoint_wrapper(check_inducing_variable(inducing_variable))
        self.num_data = num_data
        #: one site per point here; a model whose points have several sites (SEPMGPC) says how many
        self.num_sites = self._num_sites(num_data)
        C, M = self.num_blocks, int(self.inducing_variable.num_inducing)
        hyperparameters = int(self._hyperparameter_values().shape[0])
        if self.tied:
            state = TiedEPState(hyperparameters, C, M, num_data, self.num_sites // num_data)
        else:
            state = SparseEPState(self.num_sites, hyperparameters, C, num_data, M)
        self._init_ep(self.num_sites, settings, state=state, ep_mode=ep_mode)

    @property
    def tied(self) -> bool:
        """Whether the sites are tied (``sites="tied"``): one average site per block of u."""
        return self.site_layout == "tied"

    @property
    def batches_carry_index(self) -> bool:
        """Per-point sites need each minibatch's site indices, ``(X, Y, index)``; tied sites take any ``(X, Y)``."""
        return not self.tied


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
            check_targets(self.likelihood, data[1], "data[1] (Y)")
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
        if self.tied:
            return self._check_tied_batch(batch)
        if not isinstance(batch, (tuple, list)) or len(batch) != 3:
            raise ValueError("batch must be (X, Y, index) with the rows' indices")
        X, Y, index = batch
        if tf.executing_eagerly():
            check_training_data(self, (X, Y), "batch")
            check_targets(self.likelihood, Y, "batch[1] (Y)")
            idx = np.asarray(index).reshape(-1)
            if idx.shape[0] != np.shape(X)[0] or not np.issubdtype(idx.dtype, np.integer):
                raise ValueError("batch[2] (index) must hold one integer index per row of X")
            if idx.size and (idx.min() < 0 or idx.max() >= self.num_data):
                raise ValueError(f"batch[2] (index) must lie in [0, num_data={self.num_data})")
            if np.unique(idx).size != idx.size:
                raise ValueError("batch[2] (index): a minibatch must not repeat a site index")
        return self._site_data(X, Y, tf.reshape(index, [-1]))

    def _check_tied_batch(self, batch) -> "SiteBatch":
        """A minibatch of tied sites: any (X, Y) of the data (an index, if given, is not needed)."""
        if not isinstance(batch, (tuple, list)) or len(batch) not in (2, 3):
            raise ValueError("batch must be (X, Y): a minibatch of any size")
        X, Y = batch[:2]
        if tf.executing_eagerly():
            check_training_data(self, (X, Y), "batch")
            check_targets(self.likelihood, Y, "batch[1] (Y)")
        return self._site_data(X, Y)

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
        """
        Eager validation of the data of ``training_loss``: all n points, or a minibatch with indices; with
        tied sites any minibatch (X, Y).
        """
        if self._is_minibatch(data):
            self._check_minibatch(data)
        else:
            self._check_full_data(data)

    def _is_minibatch(self, data) -> bool:
        """``(X, Y, index)``, or with tied sites in alternated mode any ``(X, Y)``; else all n points."""
        if isinstance(data, (tuple, list)) and len(data) == 3:
            return True
        return self.tied and self.ep_mode == "alternated"

    def training_loss_closure(self, data, *, compile: bool = True):
        """
        GPflow's closure of the pure objective: -F_M at the stored sites for ``(X, Y, index)`` batches
        (any ``(X, Y)`` batch with tied sites), -log Z_EP for all the data. It never refreshes sites, so an
        iterator of minibatches (an SVGP training loop kept unchanged) warns: train with
        ``gpflow_ep.optimizers.MinibatchEP().loss_closure(model, batches)`` or ``gpflow_ep.training.fit``.
        """
        spec = getattr(data, "element_spec", None)
        if isinstance(spec, tuple) and (len(spec) == 3 or self.tied):
            warnings.warn(
                f"{type(self).__name__}.training_loss_closure(batches) returns -F_M at the stored EP sites and never "
                "refreshes them, so minimising it alone trains the hyper-parameters against the initial sites. "
                "Use gpflow_ep.optimizers.MinibatchEP().loss_closure(model, batches), which refreshes each "
                "batch's sites and then returns the loss, or gpflow_ep.training.fit.",
                UserWarning,
                stacklevel=2,
            )
        return super().training_loss_closure(data, compile=compile)

    # ---------------------------------------------------------------- prior blocks (the model's hooks)

    def _block_Kuu(self) -> tf.Tensor:
        """
        K_uu of every block with GPflow's ``default_jitter()`` added, as in SVGP, [C, M, M], or [1, M, M]
        when shared (:mod:`gpflow_ep.covariances`).
        """
        return block_Kuu(self.inducing_variable, self.kernel, jitter=default_jitter())

    def _block_Kuf(self, X) -> tf.Tensor:
        """K_uf of every block at the points X, [C, M, P] (or [1, M, P] shared)."""
        return block_Kuf(self.inducing_variable, self.kernel, X)

    def _block_Kff(self, X, full_cov: bool) -> tf.Tensor:
        """The prior covariance of every block's f at X, [C, P, P], or its diagonal [C, P] (or one block shared)."""
        return block_Kff(self.kernel, X, full_cov)

    def _block_mean(self, X) -> tf.Tensor:
        """The prior mean of every block's f at X, [C, P]."""
        return tf.transpose(self.mean_function(X))

    def _prior_blocks(self, X) -> PriorBlocks:
        """The prior's K_uu, K_uf, diag K_ff and m of every block at the points X."""
        Kff = self._block_Kff(X, full_cov=False)
        return PriorBlocks(self._block_Kuu(), self._block_Kuf(X), Kff, self._block_mean(X))

    def _cholesky_Kuu(self) -> tf.Tensor:
        """L = chol(K_uu) of every block, [C, M, M] (or [1, M, M] shared)."""
        return tf.linalg.cholesky(self._block_Kuu())

    def _algebra(self, A, prior_mean, pairs: SitePairs) -> WhitenedAlgebra:
        """The engine's algebra of the sites (plain [M, P] projections when there is one block)."""
        plain = pairs.plain and self.num_blocks == 1
        return WhitenedAlgebra(A[0] if plain else A, pairs.gather(prior_mean), pairs)

    def _factor(self, X, Y, extra_var=None) -> LikelihoodFactor:
        """The factor of the likelihood terms at (X, Y), ``extra_var`` added to their cavity variances."""
        return LikelihoodFactor(self.likelihood, X, Y, extra_var)

    def _site_factor(self, sites: SiteBatch, fitc_variance):
        """The factors of ``sites`` with the FITC variances of their pairs added to the cavity."""
        return self._factor(sites.X, sites.Y, sites.pairs.gather(fitc_variance))

    # ---------------------------------------------------------------- running EP

    def run_ep(self, data, **overrides) -> EPRun:
        """
        Run EP to convergence on ``data = (X, Y)`` (all n points) with the hyper-parameters held
        fixed; store the sites, q(u) and :attr:`ep_diagnostics`. Keyword arguments override options
        of :attr:`ep_settings` for this run only. Compiled when called eagerly, inline inside a
        compiled function. Warns (``EPConvergenceWarning``) when EP did not converge (eagerly;
        inside a compiled loss the outcome is in :attr:`ep_diagnostics`).
        """
        sites = self._check_full_data(data)
        settings = self.check_settings(self.ep_settings.updated(**overrides))
        return self._run(settings, ".run_ep", sites.X, sites.Y, sites.pairs.index)

    def _check_likelihood(self, likelihood) -> None:
        """A ``ValueError`` unless EP has moments for ``likelihood`` (one scalar site per point here)."""
        check_ep_likelihood(likelihood)

    def check_settings(self, settings: EPSettings) -> EPSettings:
        settings = self._check_schedule(super().check_settings(settings))
        if self.tied:
            if settings.schedule != "parallel":
                raise ValueError(
                    f"schedule: tied sites are refreshed together (batch EP repeats the full-batch refresh of the "
                    f"average site), which is schedule='parallel'; got {settings.schedule!r}"
                )
            if settings.relaxation is not None:
                raise ValueError("relaxation: relaxed EP's per-site slack needs per-point sites; use sites='per_point'")
        return settings

    def site_problem(self, X, Y, site_pair=None, fixed: bool = False) -> SiteProblem:
        """
        The whitened algebra of the sites of the points X (their pairs from ``site_pair``) and their
        factor with the FITC variances s_i added to the cavity; ``state`` keeps the whitened prior and
        the pairs, from which :meth:`store_site_state` builds q(u).
        """
        pairs = self._pairs(X, site_pair)
        prior = whitened_prior(self._prior_blocks(X))
        if fixed:
            prior = WhitenedPrior(*(tf.stop_gradient(t) for t in prior))
        factor = self._site_factor(SiteBatch(X, Y, pairs), prior.s)
        return SiteProblem(self._algebra(prior.A, prior.mean, pairs), factor, (prior, pairs))

    def solve(self, problem: SiteProblem, settings: EPSettings) -> EPRun:
        """
        EP on ``problem``: the engine's run from the stored sites; with tied sites batch EP of the average
        site (:func:`~gpflow_ep.models.tied_sites.run_tied_ep`) from the stored q(u).
        """
        if not self.tied:
            return super().solve(problem, settings)
        prior, pairs = problem.state
        Lambda_v, eta_v = self.ep_state.whitened_natural(prior.L)
        sites_per_point = self.num_sites // self.num_data
        factor, n = problem.factor, self.num_data
        return run_tied_ep(prior.L, prior.A, prior.mean, pairs, factor, Lambda_v, eta_v, settings, n, sites_per_point)

    def store_site_state(self, run: EPRun, problem: SiteProblem) -> None:
        """q(u) (and the sites' directions) from the run's sites, summed on their pairs; tied: q(u) at its end."""
        prior, pairs = problem.state
        if self.tied:
            self.ep_state.store_run(prior.L, run.info)
            return
        centred = run.natural_mean - run.precision * pairs.gather(prior.mean)
        self.ep_state.store_posterior(prior.L, prior.A, pairs.sum(run.precision), pairs.sum(centred))

    def _pairs(self, X, site_pair) -> SitePairs:
        """The :class:`SitePairs` of the points X from the pair index of their sites (None: plain)."""
        if site_pair is None:
            return SitePairs()
        return SitePairs(site_pair, self.num_blocks * tf.shape(X)[0])

    @classmethod
    def _check_schedule(cls, settings: EPSettings) -> EPSettings:
        """The settings, unless their schedule needs what this algebra lacks (the schedule declares it)."""
        if get_schedule(settings.schedule).needs_log_normaliser:
            raise ValueError(
                f"schedule: {settings.schedule!r} needs the normaliser of q over all sites, which the "
                "inducing-point algebra does not provide; use 'parallel' or 'sequential' (or EPGPC; for robust EP "
                "with inducing points, gpflow_ep.ep.robust_settings(fallback=False))"
            )
        return settings

    # ---------------------------------------------------------------- objective

    @check_shapes("return: []")
    def log_marginal_likelihood(self, data) -> tf.Tensor:
        """
        log Z_q at the stored sites (all n points, ``data = (X, Y)``), differentiable in hyper-parameters
        and Z (sites fixed); with tied sites the EP energy of the average site
        (:func:`~gpflow_ep.models.tied_sites.tied_evidence_estimate` with the full batch).
        """
        sites = self._check_full_data(data)
        return self._evidence(sites.X, sites.Y, sites.pairs.index)

    @not_converted
    def _evidence(self, X, Y, site_pair=None) -> tf.Tensor:
        """log Z_EP at the stored state: the engine's energy of the sites, or of the tied average site."""
        if not self.tied:
            return super()._evidence(X, Y, site_pair)
        pairs = self._pairs(X, site_pair)
        prior = whitened_prior(self._prior_blocks(X))
        factor = self._site_factor(SiteBatch(X, Y, pairs), prior.s)
        return self.ep_state.evidence(prior, pairs, factor, self.ep_settings)

    @not_converted
    @check_shapes("return: []")
    def maximum_log_likelihood_objective(self, data) -> tf.Tensor:  # type: ignore[override]
        """
        ``data = (X, Y)`` (all n points): log Z_q (in nested mode after EP is run to convergence).
        ``data = (X, Y, index)`` (a minibatch): F_M at the stored state (:meth:`minibatch_objective`;
        nothing is written: the minibatch site refresh is :class:`gpflow_ep.optimizers.MinibatchEP`).
        With tied sites in alternated mode (their default) any minibatch ``(X, Y)``: F_M.
        """
        if self._is_minibatch(data):
            return self.minibatch_objective(data)
        sites = self._check_full_data(data)
        return self._objective(sites.X, sites.Y, sites.pairs.index)

    # ---------------------------------------------------------------- prediction

    @property
    def q_mu(self) -> tf.Tensor:
        """E[u] under q, [M, C] (C = 1 here), in ``SVGP.q_mu``'s layout (:mod:`gpflow_ep.posteriors.sparse`)."""
        return q_from_natural_parameters(self.kernel, self.inducing_variable, *self.ep_state.stored_posterior())[0]

    @property
    def q_sqrt(self) -> tf.Tensor:
        """Lower-triangular square roots of Cov[u] per block, [C, M, M], in ``SVGP.q_sqrt``'s layout."""
        return q_from_natural_parameters(self.kernel, self.inducing_variable, *self.ep_state.stored_posterior())[1]

    def posterior_at(self, sites, precompute_cache: Optional[PrecomputeCacheType]):
        """
        q(f) from the stored q(u) — the sum of the stored sites, kept in the EP state (``sites`` are
        those sites) — as GPflow's own SVGP posterior with ``q_mu``, ``q_sqrt`` from q(u)'s natural
        parameters Λ_u, η_u (:func:`~gpflow_ep.posteriors.sparse_ep_posterior`).
        """
        del sites  # summed into q(u) as they were stored
        return sparse_ep_posterior(
            self.kernel,
            self.inducing_variable,
            self.ep_state.posterior_precision,
            self.ep_state.posterior_shift,
            self.mean_function,
            precompute_cache=precompute_cache,
        )

    # ---------------------------------------------------------------- minibatches (the paper's Sec. 2.3)

    def minibatch_frame(self, batch) -> Union[Frame, TiedFrame]:
        """
        The frame of a minibatch (``(X, Y, index)``; ``(X, Y)`` with tied sites): its sites, the prior
        blocks at its points (live, for the surrogate's gradient), their whitened algebra and the stored
        state — q(v) and the stored directions (:class:`~gpflow_ep.models.sparse_sites.Frame`), or q(v) and
        the tied cavity (:class:`~gpflow_ep.models.tied_sites.TiedFrame`) — computed once for a whole step.
        """
        sites = self._check_minibatch(batch)
        return self.ep_state.frame(sites, self._prior_blocks(sites.X), self.ep_settings)

    def _frame(self, batch) -> Union[Frame, TiedFrame]:
        return batch if isinstance(batch, (Frame, TiedFrame)) else self.minibatch_frame(batch)

    @check_shapes(
        "return[0].posterior_change[0]: [C, M, M]",
        "return[0].posterior_change[1]: [C, M, 1]",
        "return[0].num_skipped: []",
    )
    def propose_refresh(self, batch) -> Tuple[SiteRefresh, tf.Tensor]:
        """
        One damped EP update (:func:`~gpflow_ep.models.sparse_sites.refresh_damping`) of each site of
        ``batch`` (or its frame) from the stored q, through the engine; writes nothing. Per-point sites
        (:func:`~gpflow_ep.models.sparse_sites.propose_refresh`): the refresh's ``site_state`` is (τ, ν,
        dual) of the batch's sites (and b with relaxation), ``pair_state`` the directions υ of their pairs
        (rows ``pair_index`` of ``ep_state.site_directions``) and ``posterior_change`` (ΔΛ_u, Δη_u) per
        block; tied sites (:meth:`~gpflow_ep.models.tied_sites.TiedEPState.propose_refresh`): q's change
        alone. Returns the refresh and Lᵀυ of each pair after it.
        """
        frame = self._frame(batch)
        settings = self.ep_settings
        cavities = self.ep_state.batch_cavities(frame, settings)
        refreshed = sites_in_sync(shape_of(frame.sites.X)[0])
        damping = refresh_damping(self.minibatch_damping, settings.damping, refreshed, self.num_data)
        factor = self._site_factor(frame.sites, frame.s)
        return self.ep_state.propose_refresh(frame, cavities, factor, settings, damping)

    def apply_refresh(self, refresh: SiteRefresh, cholesky: Optional[tf.Tensor] = None) -> AppliedRefresh:
        """
        Write a refresh (:meth:`~gpflow_ep.models.sparse_sites.SparseEPState.apply_refresh`: sites,
        directions, q's change and :attr:`ep_diagnostics`); one with a non-finite value, or whose q
        would be improper, is not written (``refresh_rejected`` = 1, all of the batch's updates
        counted as skipped). ``cholesky``: chol(K_uu) [C, M, M] when the caller has it (default:
        computed).
        """
        L = self._cholesky_Kuu() if cholesky is None else cholesky
        return AppliedRefresh(*self.ep_state.apply_refresh(refresh, L))

    @check_shapes("return: []")
    def minibatch_objective(self, batch) -> tf.Tensor:
        """
        F_M (the paper's eq. 6, :func:`~gpflow_ep.models.sparse_sites.surrogate_objective`) for
        ``batch = (X, Y, index)`` or its :class:`~gpflow_ep.models.sparse_sites.Frame`, at the stored
        sites: with q(u) (μ, Σ) and each batch site's cavity frozen,

            F = -½ log|K_uu| - ½ tr(K_uu⁻¹(Σ + μμᵀ)) + n/(α|M|) Σ_{i∈M} log Z_i(ξ),

        log Z_i the tilted normaliser (power α) at the cavity evaluated on the fresh
        υ_i(ξ) = K_uu⁻¹k_i. Its gradient is an unbiased estimate of the gradient of log Z_q at an EP
        fixed point; its value is not an evidence. Sites whose cavity is improper contribute 0.
        """
        self.check_minibatch_objective()
        return self._minibatch_terms(self._frame(batch), objective=True, evidence=False)[0]

    @check_shapes("return: []")
    def minibatch_log_marginal_likelihood(self, batch) -> tf.Tensor:
        """
        An unbiased estimate of log Z_EP, the evidence :meth:`log_marginal_likelihood` gives on all
        the data, from ``batch = (X, Y, index)`` or its :class:`~gpflow_ep.models.sparse_sites.Frame`
        at the stored sites (:func:`~gpflow_ep.models.sparse_sites.evidence_estimate`): the global
        term g(q) - g(prior) exact from the stored q(u), plus n/b times the b batch sites' energy
        terms at their cavities. Its mean over uniformly drawn batches is the evidence of the stored
        state (at an EP fixed point with fresh directions, ``log_marginal_likelihood(data)``), and
        with the full batch it is that value. It is the number to read (what ``fit`` and
        ``MinibatchEP().loss_closure`` report); it carries no gradient: train on
        :meth:`minibatch_objective`.
        """
        return self._minibatch_terms(self._frame(batch), objective=False, evidence=True)[1]

    def minibatch_objective_and_evidence(self, batch) -> Tuple[tf.Tensor, tf.Tensor]:
        """
        (:meth:`minibatch_objective`, :meth:`minibatch_log_marginal_likelihood`) of one batch or
        frame, sharing the batch's cavities and tilted normalisers (a training step needs both).
        """
        self.check_minibatch_objective()
        return self._minibatch_terms(self._frame(batch), objective=True, evidence=True)

    def _minibatch_terms(self, frame, objective: bool, evidence: bool):
        """F_M and/or log Ẑ_M (None for the one not asked for) from one set of the batch's cavities and log Z_i."""
        settings = self.ep_settings
        frame = frame.with_q()
        cavities = self.ep_state.batch_cavities(frame, settings)
        factor = self._site_factor(frame.sites, frame.s)
        tilted = batch_tilted(cavities, factor, settings.power, derivatives=objective)
        dtype = frame.L.dtype
        scale = tf.cast(self.num_sites, dtype) / tf.cast(shape_of(tilted.log_z)[0], dtype)  # n/|M|, in sites
        F = surrogate_objective(frame, cavities, tilted, scale / settings.power) if objective else None
        log_z = None
        if evidence:
            log_z = tf.stop_gradient(self.ep_state.evidence_estimate(frame, cavities, tilted, factor, settings, scale))
        return F, log_z

    def reproject_sites(self, data, chunk_size: int = 10000) -> None:
        """
        Put every site on the direction of the current hyper-parameters and inducing inputs,
        υ_i = K_uu⁻¹k_i, and rebuild Λ_u, η_u from the unchanged sites (the batch model's
        semantics), in O(nm²) for ``data = (X, Y)``. Optional: minibatch sites keep the direction
        they were last updated with, as in the paper (Sec. 2.3); this re-projection also removes the
        slow round-off drift of the running sums. Tied sites keep no directions: a ``ValueError``.
        """
        if self.tied:
            raise ValueError(
                "sites: tied sites keep one average site per block of u and no per-point directions to re-project"
            )
        self._reproject(self._check_full_data(data), check_positive_int(chunk_size, "chunk_size"))

    def _reproject(self, sites: SiteBatch, chunk_size: int) -> None:
        """``reproject_sites`` on validated full data, ``chunk_size`` points at a time."""
        L = self._cholesky_Kuu()
        tau, nu = self.sites.read()
        C, N = self.num_blocks, self.num_data
        prior_mean = tf.reshape(self._block_mean(sites.X), [-1, 1])
        pair_tau = tf.reshape(sites.pairs.sum(tau), [C, N])
        pair_shift = tf.reshape(sites.pairs.sum(nu - tau * sites.pairs.gather(prior_mean)), [C, N])
        directions = self.ep_state.site_directions
        M = directions.shape[-1]
        Lambda = tf.zeros((C, M, M), default_float())
        eta = tf.zeros((C, M, 1), default_float())
        for start in range(0, N, chunk_size):
            stop = min(start + chunk_size, N)
            Kuf = self._block_Kuf(sites.X[start:stop])
            solved = tf.linalg.triangular_solve(L, tf.linalg.triangular_solve(L, Kuf), adjoint=True)
            U = tf.linalg.matrix_transpose(solved)  # υ = K_uu⁻¹k of every block, [C, P, M] (or one shared)
            U = tf.broadcast_to(U, [C, stop - start, M])
            Lambda += tf.matmul(U * pair_tau[:, start:stop, None], U, transpose_a=True)
            eta += tf.matmul(U, pair_shift[:, start:stop, None], transpose_a=True)
            rows = (tf.range(C)[:, None] * N + tf.range(start, stop)[None, :])[..., None]
            directions.scatter_nd_update(rows, U)
        self.ep_state.assign_posterior(Lambda, eta)

    def check_minibatch_objective(self) -> None:
        """A ``ValueError`` unless the settings allow the minibatch objective F_M (eagerly, before a step)."""
        settings = self.ep_settings
        if settings.cavity == "full" and settings.power != 1.0:
            raise ValueError(
                "cavity: the minibatch objective F_M is derived for the fractional cavity; with cavity='full' and "
                "power < 1 its gradient is not the evidence's, so minibatch training refuses it. "
                "Use cavity='fractional' or batch EP (run_ep / nested training)."
            )
