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

**Minibatches** (spec §3): every site also keeps the direction υ_i it was last updated with
(``site_directions`` U, O(nm) memory), and Λ_u = Σ_i τ_i υ_iυ_iᵀ, η_u = Σ_i ν_i υ_i are running
sums. :meth:`update_sites` refreshes the sites of a batch ``(X, Y, index)`` in O(|M|m² + m³): the
cavity is q with the site's old contribution (τ_o, ν_o, υ_o) removed, projected on the fresh
υ_n = K_uu⁻¹k_i; the new site is the engine's (damped, ρ = 0.99 in the paper). With fixed
hyper-parameters this reaches the batch fixed point. ``training_loss((X, Y, index))`` is then the
surrogate -F_M of spec §2.6: q and the cavities of the batch frozen, the data term scaled by
n/|M|; its gradient is an unbiased estimate of the paper's eq. (4)/(6). F_M's *value* is not an
evidence; use :meth:`log_marginal_likelihood` on the full data for that.
"""

from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow import covariances
from gpflow.base import InputData, MeanAndVariance
from gpflow.config import default_float, default_jitter
from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction
from gpflow.models import ExternalDataTrainingLossMixin, GPModel
from gpflow.models.util import InducingVariablesLike, inducingpoint_wrapper

from ..ep import WhitenedGaussian
from ..ep.sites import damp, site_update
from .ep_base import EPEngineMixin
from .ep_settings import EPSettings
from .validation import check_data, check_inputs, check_positive_int, check_range


class SEPGPC(EPEngineMixin, GPModel, ExternalDataTrainingLossMixin):
    """
    Sparse EP with inducing points, a drop-in for ``gpflow.models.SVGP``.

    :param kernel: any GPflow kernel.
    :param likelihood: a scalar likelihood (``Probit`` in the paper).
    :param inducing_variable: ``InducingPoints`` or an [M, D] array of inducing inputs Z.
    :param num_data: n, the number of training points (one site each).
    :param mean_function: GPflow mean function (default zero).
    :param jitter: added to K_uu (default ``gpflow.config.default_jitter()``).
    Other keyword arguments are the EP settings of :class:`~gpflow_ep.models.EPGPC`; the parallel
    schedule's damping defaults to the paper's ρ = 0.5.
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
        power: float = 1.0,
        schedule: str = "parallel",
        damping: Optional[float] = 0.5,
        max_sweeps: int = 100,
        tol: float = 1e-6,
        ep_mode: str = "nested",
        criterion: str = "sites",
    ):
        num_data = check_positive_int(num_data, "num_data")
        settings = EPSettings(power, "fractional", schedule, damping, max_sweeps, tol, ep_mode, criterion)
        super().__init__(kernel, likelihood, mean_function, num_latent_gps=1)
        self.inducing_variable = inducingpoint_wrapper(inducing_variable)
        self.num_data = num_data
        self.jitter = default_jitter() if jitter is None else float(jitter)
        self._init_ep(num_data, settings)
        M = self.inducing_variable.num_inducing
        self.posterior_precision = tf.Variable(
            np.zeros((M, M)), dtype=default_float(), trainable=False, name="posterior_precision"
        )
        self.posterior_shift = tf.Variable(
            np.zeros((M, 1)), dtype=default_float(), trainable=False, name="posterior_shift"
        )
        self.site_directions = tf.Variable(
            np.zeros((num_data, M)), dtype=default_float(), trainable=False, name="site_directions"
        )

    # ---------------------------------------------------------------- data

    def _check_batch_data(self, data):
        """Batch EP needs all n points, in the order of the sites."""
        if tf.executing_eagerly():
            X, Y = check_data(tuple(data[:2]), self.likelihood)
            if X.shape[0] != self.num_data:
                raise ValueError(f"data: batch EP needs all num_data={self.num_data} points; got {X.shape[0]}")
        X, Y = data[0], data[1]
        return tf.convert_to_tensor(X, default_float()), tf.convert_to_tensor(Y, default_float())

    # ---------------------------------------------------------------- posterior algebra

    def _chol_Kuu(self):
        Kuu = covariances.Kuu(self.inducing_variable, self.kernel, jitter=self.jitter)
        return tf.linalg.cholesky(Kuu)

    def _prior(self, X):
        """L = chol(K_uu), A = L⁻¹K_uf, FITC variances s = diag K_ff - ‖a_i‖² ≥ 0, prior mean m(X)."""
        L = self._chol_Kuu()
        A = tf.linalg.triangular_solve(L, covariances.Kuf(self.inducing_variable, self.kernel, X))
        s = tf.maximum(self.kernel(X, full_cov=False) - tf.reduce_sum(tf.square(A), axis=0), 0.0)[:, None]
        return L, A, s, self.mean_function(X)

    @staticmethod
    def _q(A, prior_mean, precision, natural_mean) -> WhitenedGaussian:
        """Sites act on f; the algebra works on f - m(X), whose sites are (τ, ν - τ m)."""
        return WhitenedGaussian.from_sites(A, precision, natural_mean - precision * prior_mean)

    # ---------------------------------------------------------------- running EP

    def run_ep(self, data, **settings):
        """
        Run EP to convergence on ``data = (X, Y)`` (all n points) with the hyper-parameters held
        fixed; store the sites, q(u) and :attr:`ep_diagnostics`. Keyword arguments override
        :attr:`ep_settings` for this run.
        """
        X, Y = self._check_batch_data(data)
        return self._run_ep_compiled(X, Y, *self.ep_settings.updated(**settings).as_key())

    @tf.function
    def _run_ep_compiled(self, X, Y, *settings_key):
        settings = EPSettings(*settings_key)
        L, A, s, prior_mean = (tf.stop_gradient(t) for t in self._prior(X))

        def marginals(tau, nu):
            q = self._q(A, prior_mean, tau, nu)
            mean, var = q.project(A)
            return mean + prior_mean, var, q.proper

        def joint(tau, nu):  # the state is q(v); site i projects on a_i, plus its prior mean
            q = self._q(A, prior_mean, tau, nu)
            return q.covariance(), q.mean, q.proper

        propose = self._propose_fn(X, Y, s)
        run = self._run_schedule(settings, propose, marginals, joint, projection=tf.transpose(A), offset=prior_mean)
        self._store_posterior(L, A, prior_mean, run.precision, run.natural_mean)
        return run

    def _store_posterior(self, L, A, prior_mean, precision, natural_mean):
        """q(u) in u-space: Λ_u = L⁻ᵀ(A T Aᵀ)L⁻¹, η_u = L⁻ᵀ A (ν - τ m); directions υ_i = L⁻ᵀa_i."""
        self.site_directions.assign(tf.transpose(tf.linalg.triangular_solve(L, A, adjoint=True)))
        Lambda_v = tf.matmul(A * precision[:, 0][None, :], A, transpose_b=True)
        eta_v = A @ (natural_mean - precision * prior_mean)
        half = tf.linalg.triangular_solve(L, Lambda_v, adjoint=True)  # L⁻ᵀΛ_v
        self.posterior_precision.assign(tf.linalg.triangular_solve(L, tf.transpose(half), adjoint=True))
        self.posterior_shift.assign(tf.linalg.triangular_solve(L, eta_v, adjoint=True))

    # ---------------------------------------------------------------- objective

    def log_marginal_likelihood(self, data) -> tf.Tensor:
        """log Z_q at the stored sites, differentiable in hyper-parameters and Z (sites fixed)."""
        X, Y = self._check_batch_data(data)
        _, A, s, prior_mean = self._prior(X)
        tau, nu = self.sites.read()
        q = self._q(A, prior_mean, tau, nu)
        mean, var = q.project(A)
        log_z = self._evidence(
            q.log_normaliser_ratio, mean, var, tau, nu - tau * prior_mean, self._tilted_fn(X, Y, s), prior_mean
        )
        return tf.where(q.proper, log_z, tf.constant(-np.inf, log_z.dtype))

    @check_shapes("return: []")
    def maximum_log_likelihood_objective(self, data) -> tf.Tensor:  # type: ignore[override]
        """log Z_q for full data ``(X, Y)``; the surrogate F_M for a minibatch ``(X, Y, index)``."""
        if len(data) == 3:
            return self.surrogate_objective(data)
        if self.ep_settings.ep_mode == "nested":
            self.run_ep(data)
        return self.log_marginal_likelihood(data)

    # ---------------------------------------------------------------- prediction

    def _posterior_v(self, L) -> WhitenedGaussian:
        """q(v) from the stored q(u): Λ_v = LᵀΛ_uL, η_v = Lᵀη_u."""
        Lambda_v = tf.matmul(L, tf.matmul(self.posterior_precision, L), transpose_a=True)
        return WhitenedGaussian(Lambda_v, tf.matmul(L, self.posterior_shift, transpose_a=True))

    @property
    def q_mu(self):
        """E[u] under q, [M, 1] (for ``gpflow.conditionals.conditional`` with ``white=False``)."""
        L = self._chol_Kuu()
        return L @ self._posterior_v(L).mean

    @property
    def q_sqrt(self):
        """A lower-triangular square root of Cov[u], [1, M, M]."""
        L = self._chol_Kuu()
        cov = L @ self._posterior_v(L).covariance() @ tf.transpose(L)
        return tf.linalg.cholesky(0.5 * (cov + tf.transpose(cov)))[None]

    @inherit_check_shapes
    def predict_f(self, Xnew: InputData, full_cov: bool = False, full_output_cov: bool = False) -> MeanAndVariance:
        """q(f*) = ∫ p(f* | u) q(u) du from the stored q(u) (the whitened SVGP predictive)."""
        if tf.executing_eagerly():
            check_inputs(Xnew, "Xnew")
        Xnew = tf.convert_to_tensor(Xnew, default_float())
        L = self._chol_Kuu()
        A_star = tf.linalg.triangular_solve(L, covariances.Kuf(self.inducing_variable, self.kernel, Xnew))
        Kss = self.kernel(Xnew, full_cov=full_cov)
        mean, cov = self._posterior_v(L).predict(A_star, Kss, full_cov=full_cov)
        mean = mean[:, None] + self.mean_function(Xnew)
        return mean, (cov[None] if full_cov else cov[:, None])

    # ---------------------------------------------------------------- minibatches (spec §3)

    @staticmethod
    def _check_minibatch(batch):
        if len(batch) != 3:
            raise ValueError("batch must be (X, Y, index) with the rows' site indices")
        X, Y, index = batch
        return (
            tf.convert_to_tensor(X, default_float()),
            tf.convert_to_tensor(Y, default_float()),
            tf.reshape(tf.cast(index, tf.int32), [-1]),
        )

    def _minibatch_frame(self, X, index):
        """
        Everything a minibatch step needs at the current hyper-parameters, without gradient:
        L = chol(K_uu), fresh projections a_n = L⁻¹k_i (υ_n = L⁻ᵀa_n = K_uu⁻¹k_i), FITC variances
        s, prior means m(X), the stored directions υ_o and a_o = Lᵀυ_o, and q(v) from Λ_u, η_u.
        """
        L, A_new, s, prior_mean = (tf.stop_gradient(t) for t in self._prior(X))
        U_old = tf.gather(self.site_directions, index)  # [B, M]
        return _Frame(
            L=L,
            A_new=A_new,
            A_old=tf.matmul(L, U_old, transpose_a=True, transpose_b=True),  # Lᵀυ_o, [M, B]
            U_old=U_old,
            s=s,
            prior_mean=prior_mean,
            q=self._posterior_v(L),
        )

    @staticmethod
    def _minibatch_cavity(q, A_new, A_old, precision, centred_natural_mean, same=None) -> "_Cavity":
        """
        q ÷ (old site on υ_o), projected on υ_n (spec §3), with σ_ab = υ_aᵀΣυ_b and h = υᵀμ:

            h_{\\i} = h_n + σ_no d,  σ²_{\\i} = σ_nn + c σ_no²,
            d = (τ_o h_o - ν_o)/den,  c = τ_o/den,  den = 1 - τ_o σ_oo.

        ``same`` (a boolean scalar tensor, optional) says that A_old = A_new, saving a solve.
        """
        W_new = tf.linalg.triangular_solve(q._L_B, A_new)
        W_old = _unless_same(same, W_new, lambda: tf.linalg.triangular_solve(q._L_B, A_old))
        h_new = tf.matmul(W_new, q._c, transpose_a=True)
        h_old = tf.matmul(W_old, q._c, transpose_a=True)
        s_nn = tf.reduce_sum(tf.square(W_new), axis=0)[:, None]
        s_oo = tf.reduce_sum(tf.square(W_old), axis=0)[:, None]
        s_no = tf.reduce_sum(W_new * W_old, axis=0)[:, None]
        den = 1.0 - precision * s_oo
        valid = den > 0.0
        safe = tf.where(valid, den, tf.ones_like(den))
        d = (precision * h_old - centred_natural_mean) / safe
        c = precision / safe
        mean = h_new + s_no * d
        var = s_nn + c * tf.square(s_no)
        valid = valid & (var >= 0.0) & tf.math.is_finite(mean) & tf.math.is_finite(var)
        return _Cavity(mean=mean, var=var, valid=valid, W_new=W_new, W_old=W_old, d=d, c=c, s_no=s_no)

    def update_sites(self, batch, damping: float = 0.99):
        """
        Refresh the sites of ``batch = (X, Y, index)`` by one damped EP update each and update
        q(u) (Λ_u, η_u, U) accordingly, with the hyper-parameters held fixed.

        :return: the number of skipped site updates (improper cavity or tilted distribution).
        """
        check_range(damping, "damping", 0.0, 1.0)
        X, Y, index = self._check_minibatch(batch)
        return self._update_sites_compiled(X, Y, index, float(damping))

    @tf.function
    def _update_sites_compiled(self, X, Y, index, damping):
        deltas, skipped, _ = self._site_deltas(X, Y, index, damping)
        self._apply_site_deltas(index, *deltas)
        return skipped

    def _site_deltas(self, X, Y, index, damping):
        """
        New sites of the batch and the change of (Λ_u, η_u) they make (no state is written);
        also the frame they were computed in and the batch's stored directions after the update
        (whitened, Lᵀυ), which a following surrogate step reuses.
        """
        tf.debugging.assert_equal(
            tf.size(tf.unique(index).y), tf.size(index), message="a minibatch must not repeat a site index"
        )
        fr = self._minibatch_frame(X, index)
        tau_o = tf.gather(self.sites.precision, index)
        nu_o = tf.gather(self.sites.natural_mean, index)
        cav = self._minibatch_cavity(fr.q, fr.A_new, fr.A_old, tau_o, nu_o - tau_o * fr.prior_mean)
        tilted = self._tilted_fn(X, Y, fr.s)(cav.mean + fr.prior_mean, cav.var)
        tau_new, nu_new, ok = site_update(cav.mean + fr.prior_mean, cav.var, tilted, self.ep_settings.power)
        ok = ok & cav.valid
        tau_d = tf.where(ok, damp(tau_o, tau_new, damping), tau_o)
        nu_d = tf.where(ok, damp(nu_o, nu_new, damping), nu_o)
        U_new = tf.transpose(tf.linalg.triangular_solve(fr.L, fr.A_new, adjoint=True))  # υ_n = L⁻ᵀ a_n
        U_new = tf.where(ok, U_new, fr.U_old)
        # Λ_u += Σ τ_d υ_nυ_nᵀ - τ_o υ_oυ_oᵀ ;  η_u += Σ (ν_d - τ_d m) υ_n - (ν_o - τ_o m) υ_o  (one product each)
        U_both = tf.concat([U_new, fr.U_old], axis=0)
        weights = tf.concat([tau_d, -tau_o], axis=0)
        shifts = tf.concat([nu_d - tau_d * fr.prior_mean, -(nu_o - tau_o * fr.prior_mean)], axis=0)
        d_Lambda = tf.matmul(U_both * weights, U_both, transpose_a=True)
        d_eta = tf.matmul(U_both, shifts, transpose_a=True)
        skipped = tf.reduce_sum(tf.cast(~ok, tf.int32))
        A_site = tf.where(tf.transpose(ok), fr.A_new, fr.A_old)  # Lᵀυ of each batch site after the update
        return (tau_d, nu_d, U_new, d_Lambda, d_eta), skipped, (fr, A_site)

    def _apply_site_deltas(self, index, tau, nu, U, d_Lambda, d_eta):
        """Write a batch's new sites and q(u)'s change (``scatter_update`` also works on mirrored variables)."""
        for variable, values in [(self.sites.precision, tau), (self.sites.natural_mean, nu), (self.site_directions, U)]:
            variable.scatter_update(tf.IndexedSlices(values, index))
        self.posterior_precision.assign_add(d_Lambda)
        self.posterior_shift.assign_add(d_eta)

    def reproject_sites(self, data, chunk_size: int = 10000) -> None:
        """
        Put every site on the direction of the current hyper-parameters and inducing inputs,
        υ_i = K_uu⁻¹k_i, and rebuild Λ_u, η_u from the unchanged sites (the batch model's
        semantics), in O(nm²) for ``data = (X, Y)``. Optional: minibatch sites keep the direction
        they were last updated with, as in the paper (spec §3); this re-projection also removes the
        slow round-off drift of the running sums (spec §3 [A]).
        """
        X = np.asarray(data[0], dtype=np.float64)
        L = self._chol_Kuu()
        tau, nu = self.sites.read()
        M = self.inducing_variable.num_inducing
        Lambda = tf.zeros((M, M), default_float())
        eta = tf.zeros((M, 1), default_float())
        for start in range(0, X.shape[0], chunk_size):
            Xc = tf.constant(X[start : start + chunk_size])
            U = self._directions(L, Xc)
            t, n_ = tau[start : start + chunk_size], nu[start : start + chunk_size]
            centred = n_ - t * self.mean_function(Xc)
            Lambda += tf.matmul(U * t, U, transpose_a=True)
            eta += tf.matmul(U, centred, transpose_a=True)
            self.site_directions[start : start + chunk_size].assign(U)
        self.posterior_precision.assign(Lambda)
        self.posterior_shift.assign(eta)

    def _directions(self, L, X):
        """υ_i = K_uu⁻¹k_i = L⁻ᵀL⁻¹k_i as rows, [N, M]."""
        Kuf = covariances.Kuf(self.inducing_variable, self.kernel, X)
        return tf.transpose(tf.linalg.triangular_solve(L, tf.linalg.triangular_solve(L, Kuf), adjoint=True))

    def surrogate_objective(self, batch) -> tf.Tensor:
        """
        F_M (spec §2.6) for ``batch = (X, Y, index)`` at the stored sites: with q(u) (μ, Σ) and each
        batch site's cavity frozen,

            F = -½ log|K_uu| - ½ tr(K_uu⁻¹(Σ + μμᵀ)) + (n/|M|) Σ_{i∈M} log Z_i(ξ),

        log Z_i the tilted normaliser at the cavity projected on the fresh υ_i(ξ) = K_uu⁻¹k_i
        (mean υ_iᵀμ + d_i υ_iᵀw_i, variance s_i + υ_iᵀΣυ_i + c_i (υ_iᵀw_i)², w_i = Συ_i^old).
        Its gradient is an unbiased estimate of the gradient of log Z_q at an EP fixed point (the
        paper's eq. 6); its value is not an evidence. Sites whose cavity is improper contribute 0.
        """
        X, Y, index = self._check_minibatch(batch)
        return self._surrogate(X, Y, index, self._minibatch_frame(X, index))

    def _refresh_and_surrogate(self, X, Y, index, damping):
        """
        One minibatch step (spec §3): refresh the batch's sites, rebuild q, and return F_M at the
        refreshed q and the number of skipped updates. Shares the kernel matrices, chol(K_uu) and
        the projections between the two halves.
        """
        deltas, skipped, (fr, A_site) = self._site_deltas(X, Y, index, damping)
        self._apply_site_deltas(index, *deltas)
        refreshed = fr._replace(A_old=A_site, q=self._posterior_v(fr.L), same=tf.equal(skipped, 0))
        return self._surrogate(X, Y, index, refreshed), skipped

    def _surrogate(self, X, Y, index, fr: "_Frame") -> tf.Tensor:
        r"""
        F_M with an exact gradient and no differentiation through Cholesky factors: F depends on the
        hyper-parameters ξ only through K_uu, K_uf, diag K_ff, m(X) and the likelihood, so it is
        returned as its value plus ⟨∂F/∂K, K(ξ) - K(ξ₀)⟩ for each of these (zero in value, exact
        in gradient at ξ₀). With whitened quantities (a = L⁻¹k, Ã = L⁻¹K_uf, B = I + LᵀΛ_uL,
        μ_v = L⁻¹μ, g_m, g_v the derivatives of log Z_i in the cavity mean and variance, scaled by
        n/|M|):

            R  = ∂F/∂ã_i = g_m (μ_v + d_i B⁻¹a_i^old) + 2 g_v (B⁻¹ã_i + c_i σ_no,i B⁻¹a_i^old),
            ∂F/∂K_uf = L⁻ᵀ(R - 2Ã diag g_v),       ∂F/∂diag K_ff = g_v,      ∂F/∂m(X) = g_m,
            ∂F/∂K_uu = L⁻ᵀ[½(B⁻¹ + μ_vμ_vᵀ - I) - (R - Ã diag g_v)Ãᵀ]L⁻¹,

        the last from d(υ) = K_uu⁻¹(dk - dK_uu υ), ds_i = υ_iᵀdK_uuυ_i - 2υ_iᵀdk_i and
        d(-½log|K| - ½tr K⁻¹S) = ½tr[(K⁻¹SK⁻¹ - K⁻¹)dK].
        """
        tau = tf.gather(self.sites.precision, index)
        nu = tf.gather(self.sites.natural_mean, index)
        cav = self._minibatch_cavity(fr.q, fr.A_new, fr.A_old, tau, nu - tau * fr.prior_mean, fr.same)
        mean = tf.where(cav.valid, cav.mean + fr.prior_mean, 0.0)
        var = tf.where(cav.valid, cav.var, 1.0)
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch([mean, var])
            log_z = tf.where(cav.valid, self._tilted_fn(X, Y, fr.s)(mean, var).log_z, 0.0)
        g_m, g_v = (tf.stop_gradient(g) for g in tape.gradient(log_z, [mean, var]))
        scale = tf.cast(self.num_data, log_z.dtype) / tf.cast(tf.shape(X)[0], log_z.dtype)
        g_m, g_v = scale * g_m, scale * g_v  # [B, 1]

        L, L_B, A = fr.L, fr.q._L_B, fr.A_new
        mu_v = fr.q.mean
        V_new = tf.linalg.triangular_solve(L_B, cav.W_new, adjoint=True)  # B⁻¹ã
        V_old = _unless_same(fr.same, V_new, lambda: tf.linalg.triangular_solve(L_B, cav.W_old, adjoint=True))
        R = mu_v * tf.transpose(g_m) + V_old * tf.transpose(g_m * cav.d + 2.0 * g_v * cav.c * cav.s_no)
        R += 2.0 * V_new * tf.transpose(g_v)
        eye = tf.eye(tf.shape(L)[0], dtype=L.dtype)
        B_inv = tf.linalg.cholesky_solve(L_B, eye)
        H = 0.5 * (B_inv - eye + mu_v * tf.transpose(mu_v)) - tf.matmul(R - A * tf.transpose(g_v), A, transpose_b=True)
        half = tf.linalg.triangular_solve(L, H, adjoint=True)  # L⁻ᵀH
        dF_dKuu = tf.transpose(tf.linalg.triangular_solve(L, tf.transpose(half), adjoint=True))
        dF_dKuf = tf.linalg.triangular_solve(L, R - 2.0 * A * tf.transpose(g_v), adjoint=True)

        value = (
            -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)))
            - 0.5 * (tf.linalg.trace(B_inv) + tf.reduce_sum(tf.square(mu_v)))
            + scale * tf.reduce_sum(log_z)
        )
        live = [
            (dF_dKuu, covariances.Kuu(self.inducing_variable, self.kernel, jitter=self.jitter)),
            (dF_dKuf, covariances.Kuf(self.inducing_variable, self.kernel, X)),
            (g_v[:, 0], self.kernel(X, full_cov=False)),
            (g_m, self.mean_function(X)),
        ]
        return value + tf.add_n([tf.reduce_sum(g * (t - tf.stop_gradient(t))) for g, t in live])


class _Frame(NamedTuple):
    """A minibatch's quantities at the current hyper-parameters (see ``SEPGPC._minibatch_frame``)."""

    L: tf.Tensor
    A_new: tf.Tensor
    A_old: tf.Tensor
    U_old: tf.Tensor
    s: tf.Tensor
    prior_mean: tf.Tensor
    q: WhitenedGaussian
    same: Optional[tf.Tensor] = None  # True when A_old = A_new (all batch sites on fresh directions)


def _unless_same(same, value, compute):
    """``value`` when ``same`` is a true tensor, else ``compute()`` (always ``compute()`` if ``same`` is None)."""
    return compute() if same is None else tf.cond(same, lambda: value, compute)


class _Cavity(NamedTuple):
    """Minibatch cavities projected on the fresh directions (see ``SEPGPC._minibatch_cavity``)."""

    mean: tf.Tensor
    var: tf.Tensor
    valid: tf.Tensor
    W_new: tf.Tensor
    W_old: tf.Tensor
    d: tf.Tensor
    c: tf.Tensor
    s_no: tf.Tensor
