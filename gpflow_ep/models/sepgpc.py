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
``posterior_shift`` η_u, refreshed by every EP run), so it predicts without the training data,
like ``gpflow.models.SVGP``.
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
from gpflow.models import ExternalDataTrainingLossMixin, GPModel
from gpflow.models.util import InducingVariablesLike, inducingpoint_wrapper

from ..ep import WhitenedGaussian
from .ep_base import EPEngineMixin
from .ep_settings import EPSettings
from .validation import check_data, check_inputs, check_positive_int


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
        return self._run_ep_compiled(X, Y, self.ep_settings.updated(**settings))

    @tf.function
    def _run_ep_compiled(self, X, Y, settings: EPSettings):
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
        """q(u) in u-space: Λ_u = L⁻ᵀ(A T Aᵀ)L⁻¹, η_u = L⁻ᵀ A (ν - τ m)."""
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
