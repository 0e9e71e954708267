r"""
SpikeSlabRegression: Bayesian linear regression with a spike-and-slab prior on every weight, by EP
(Hernández-Lobato & Hernández-Lobato 2011).

    y = X w + ε,  ε ~ N(0, σ² I),   w_i ~ p_s N(0, v_s) + (1 - p_s) δ₀   independently.

EP keeps the Gaussian likelihood exact (the base factor of
:class:`~gpflow_ep.ep.LinearGaussianAlgebra`, d- or n-dimensional algebra chosen by shape) and
replaces each prior factor by a Gaussian site on w_i (:class:`SpikeSlabFactor`), so
q(w) = N(m, Σ). The engine's schedules run it:

* ``method="ep"`` — regular EP (R-EP, the paper's Sec. 2, damped): ``schedule="parallel"`` (default) or
  ``"sequential"``, damping τ (``damping``, the weight of the new site), site precisions clipped at
  ε (``epsilon``: a precision below ε becomes ε and the site keeps the tilted mean: the paper's
  constraints (13), the mean rule ours);
  converged when no marginal mean or variance of q moves by more than ``tol`` (1e-4) in a sweep
  (the engine's ``criterion="moments"``; the paper states no criterion), at most ``max_sweeps``
  (1000, the paper's) sweeps;
* ``method="convergent"`` — PC-EP, the provably convergent double loop of the paper's Sec. 3: the
  engine's compiled double loop (:mod:`gpflow_ep.ep.double_loop`, schedule ``"convergent"``) with the
  box ε ≤ τ_i ≤ v₂ᵢ - ε, an energy that never increases, stopped when no marginal mean or variance
  of q moves by more than ``tol`` (1e-4, as R-EP) over an outer step with the inner problem solved to ``tol``
  (the paper states no rule; its energy can fall sublinearly long after q has settled, while the
  marginal precisions of weights pinned at zero grow without bound). Its limit is a KKT point of
  the constrained problem, which need not be an EP fixed point (sites pinned at ε): the run's
  :class:`~gpflow_ep.ep.DoubleLoopInfo` (``run.info``: energies, active bounds, KKT residual)
  says where.

Every run is stored the same way (sites, :meth:`ep_state_is_current`, :attr:`ep_diagnostics`), and
a run that does not converge warns with an ``EPConvergenceWarning``. Both methods compile, so both
learn σ², v_s and p_s in ``ep_mode="nested"``.

Sites start at ν = 0, τ = 1/(p_s v_s) (our choice; the paper states none). The EP evidence
log Z_EP = -E (the paper's energy, eq. 9) is the training objective of σ², v_s and p_s (GPflow
``Parameter``\ s): its gradient with the sites held fixed is exact at a fixed point; in
``ep_mode="nested"`` (default, R-EP only) every evaluation of the loss first re-runs EP,
warm-started. Posterior summaries: :meth:`inclusion_probabilities` (π_i = sig(ℓ_i) of the tilted
distributions), :meth:`weight_moments`, ``posterior()`` (a GPflow posterior of f(x) = xᵀw),
``predict_f``/``predict_y`` and ``predict_log_density`` (the exact Gaussian predictive, as GPflow's
models have), in ``ep_mode="nested"`` at EP's fixed point for the current hyper-parameters.
"""

from typing import Optional

import numpy as np
import scipy.linalg
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import Parameter
from gpflow.config import default_float
from gpflow.models import BayesianModel, InternalDataTrainingLossMixin
from gpflow.posteriors import PrecomputeCacheType
from gpflow.utilities import positive
from tensorflow_probability import bijectors as tfb

from ..ep import EPRun, EPSettings, LinearGaussianAlgebra
from ..ep.linear_gaussian import FORMS
from ..ep.sites import cavity_distribution
from ..posteriors import LinearModelPosterior
from ..validation import check_choice, check_inputs, check_prediction_inputs, check_range
from .ep_base import EPModel, SiteProblem, not_converted
from .spike_slab_factor import SpikeSlabFactor

__all__ = ["SpikeSlabRegression", "exact_spike_slab_posterior"]

METHODS = ("ep", "convergent")


class SpikeSlabRegression(EPModel, BayesianModel, InternalDataTrainingLossMixin):
    """
    Spike-and-slab linear regression by EP or convergent double-loop EP (module docstring).

    :param data: (X [n, d], y [n, 1]).
    :param noise_variance: σ² > 0.
    :param slab_variance: v_s > 0.
    :param prior_inclusion: p_s ∈ (0, 1).
    :param method: "ep" (R-EP) or "convergent" (PC-EP).
    :param schedule: "parallel" or "sequential" (``method="ep"``).
    :param damping: τ ∈ (0, 1], the weight of the new site (1 = undamped; default 0.5).
    :param epsilon: ε > 0, the smallest site precision (default 1e-6).
    :param max_sweeps: the cap on sweeps (R-EP) or outer iterations (PC-EP), default 1000.
    :param tol: the convergence tolerance of q's moments (default 1e-4, for R-EP and PC-EP alike).
    :param form: "auto" (Woodbury when n < d and d > 200, see
        :class:`~gpflow_ep.ep.LinearGaussianAlgebra`), "weights" or "woodbury".
    """

    def __init__(
        self,
        data,
        noise_variance: float = 1.0,
        slab_variance: float = 1.0,
        prior_inclusion: float = 0.5,
        *,
        method: str = "ep",
        schedule: str = "parallel",
        damping: float = 0.5,
        epsilon: float = 1e-6,
        max_sweeps: int = 1000,
        tol: Optional[float] = None,
        form: str = "auto",
        ep_mode: str = "nested",
    ):
        super().__init__()
        X, y = self._check_data(data)
        self.method = check_choice(method, "method", METHODS)
        if method == "convergent" and schedule != "parallel":
            raise ValueError("schedule: the convergent method has its own double loop; leave schedule='parallel'")
        self.form = check_choice(form, "form", FORMS)
        for value, name in ((noise_variance, "noise_variance"), (slab_variance, "slab_variance")):
            check_range(value, name, 0.0, float("inf"), high_open=True)
        check_range(prior_inclusion, "prior_inclusion", 0.0, 1.0, high_open=True)
        self.data = (tf.constant(X, default_float()), tf.constant(y, default_float()))
        self.noise_variance = Parameter(noise_variance, transform=positive())
        self.slab_variance = Parameter(slab_variance, transform=positive())
        self.prior_inclusion = Parameter(prior_inclusion, transform=tfb.Sigmoid())
        settings = EPSettings(
            schedule="convergent" if method == "convergent" else schedule,
            damping=damping,
            min_precision=check_range(epsilon, "epsilon", 0.0, float("inf"), high_open=True),
            max_sweeps=max_sweeps,
            tol=1e-4 if tol is None else tol,
            criterion="moments",
        )
        self._init_ep(X.shape[1], settings, ep_mode=ep_mode)
        self.reset_sites()

    @staticmethod
    def _check_data(data):
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise ValueError("data must be a tuple (X, y)")
        X = check_inputs(data[0], "data[0] (X)")
        y = np.asarray(data[1], dtype=np.float64)
        if y.shape != (X.shape[0], 1):
            raise ValueError(f"data[1] (y) must have shape [{X.shape[0]}, 1]; got {y.shape}")
        y = check_inputs(y, "data[1] (y)")
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"data[0] (X) must have at least one row and one column; got shape {X.shape}")
        return X, y

    # ---------------------------------------------------------------- EP

    def reset_sites(self) -> None:
        """The initial sites ν = 0, τ = 1/(p_s v_s) (each site the prior's variance p_s v_s; not in the paper)."""
        d = self.sites.num_sites
        precision = tf.fill([d, 1], 1.0 / (self.prior_inclusion * self.slab_variance))
        self.sites.assign(precision, tf.zeros([d, 1], default_float()))

    def site_problem(self, fixed: bool = False) -> SiteProblem:
        """
        The linear-Gaussian algebra of y = Xw + noise (:class:`~gpflow_ep.ep.LinearGaussianAlgebra`)
        and the spike-and-slab prior factor of w (the factor the sites approximate).
        """
        algebra = LinearGaussianAlgebra(*self.data, self.noise_variance, form=self.form)
        return SiteProblem(algebra, SpikeSlabFactor(self.slab_variance, self.prior_inclusion))

    def run_ep(self, **overrides) -> EPRun:
        """
        Run the model's method from the stored sites (``overrides`` change :attr:`ep_settings` for
        this run only) and store the sites and diagnostics, as every EP model does (after a run
        :meth:`ep_state_is_current` is True until a hyper-parameter changes). PC-EP's own record
        (energies, active bounds) is the returned run's ``info``.

        :warns EPConvergenceWarning: when the run did not converge.
        """
        return self._run(self.check_settings(self.ep_settings.updated(**overrides)), ".run_ep")

    # ---------------------------------------------------------------- objective

    @check_shapes("return: []")
    def log_marginal_likelihood(self) -> tf.Tensor:
        """log Z_EP = log Z(ṽ) + Σ_i z̃_i = -E at the stored sites (the paper's eq. 9), differentiable in
        σ², v_s, p_s with the sites held fixed."""
        return self._evidence()

    @not_converted
    @check_shapes("return: []")
    def maximum_log_likelihood_objective(self) -> tf.Tensor:  # type: ignore[override]
        return self._objective()

    # ---------------------------------------------------------------- posterior summaries

    @check_shapes("return[0]: [D, 1]", "return[1]: [D, 1]")
    def weight_moments(self):
        """Means and variances of q(w_i) at the sites the model predicts from (:meth:`current_sites`)."""
        q = self.site_problem().algebra.marginals(*self.current_sites()[:2])
        return q.mean, q.var

    @check_shapes("return: [D, 1]")
    def inclusion_probabilities(self) -> tf.Tensor:
        """π_i = P(w_i from the slab) under the tilted distribution of site i (at :meth:`current_sites`)."""
        tau, nu = (tf.convert_to_tensor(t) for t in self.current_sites()[:2])
        q = self.site_problem().algebra.marginals(tau, nu)
        cav = cavity_distribution(q.mean, q.var, tau, nu)
        return tf.sigmoid(self.site_problem().factor.inclusion_log_odds(cav.mean, cav.var))

    @staticmethod
    def _marginal_only(full_cov: bool, full_output_cov: bool) -> None:
        for value, name in ((full_cov, "full_cov"), (full_output_cov, "full_output_cov")):
            if value:
                raise ValueError(f"{name}: only marginal predictive variances are offered; leave {name}=False")

    def posterior_at(self, sites, precompute_cache: Optional[PrecomputeCacheType]) -> LinearModelPosterior:
        """
        q(f*) for f* = x*ᵀw under q(w) = N(m, Σ) at ``sites`` (Hernández-Lobato & Hernández-Lobato
        2011, the EP posterior approximation of their eq. 4): mean x*ᵀm, covariance x*ᵀΣx*'
        (:class:`~gpflow_ep.posteriors.LinearModelPosterior`).
        """
        precision, natural_mean, _ = sites
        X, y = self.data
        return LinearModelPosterior(
            X, y, self.noise_variance, precision, natural_mean, self.form, precompute_cache=precompute_cache
        )

    def predict_y(self, Xnew, full_cov: bool = False, full_output_cov: bool = False):
        """The Gaussian predictive N(y* | x*ᵀm, x*ᵀΣx* + σ²): its mean and variance, each [N, 1]."""
        self._marginal_only(full_cov, full_output_cov)
        mean, var = self.predict_f(Xnew)
        return mean, var + self.noise_variance

    @check_shapes("return: [N]")
    def predict_log_density(self, data, full_cov: bool = False, full_output_cov: bool = False) -> tf.Tensor:
        """
        log N(y*_j | x*_jᵀm, x*_jᵀΣx*_j + σ²) per test point j, exact for the Gaussian predictive of
        :meth:`predict_y` (GPflow's ``predict_log_density`` contract: ``data = (X [N, D], Y [N, 1])``,
        one value per row).
        """
        self._marginal_only(full_cov, full_output_cov)
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise ValueError(f"data must be a tuple (X, Y) of arrays; got {type(data).__name__}")
        X = check_prediction_inputs(data[0], self.sites.num_sites, "data[0] (X)")
        Y = data[1] if tf.is_tensor(data[1]) else np.asarray(data[1])
        shape, n = tuple(Y.shape), X.shape[0]
        if len(shape) != 2 or shape[1] != 1 or (None not in (shape[0], n) and shape[0] != n):
            raise ValueError(f"data[1] (Y) must have shape [{n}, 1] (one row per row of X); got {shape}")
        if tf.executing_eagerly() or not tf.is_tensor(Y):
            Y = check_inputs(Y, "data[1] (Y)")
        mean, var = self.predict_y(X)
        Y = tf.convert_to_tensor(Y, mean.dtype)
        log_density = -0.5 * (np.log(2.0 * np.pi) + tf.math.log(var) + tf.square(Y - mean) / var)
        return tf.reduce_sum(log_density, axis=-1)


def exact_spike_slab_posterior(X, y, noise_variance: float, slab_variance: float, prior_inclusion: float):
    """
    The exact posterior of the spike-and-slab model by enumerating the 2^d inclusion patterns
    (d ≤ 16): (log p(y), E[w], Var[w], P(w_i ≠ 0)), each over the d weights. The reference of the
    exactness tests and of the benchmark's accuracy columns.
    """
    X, y = np.asarray(X, np.float64), np.asarray(y, np.float64).reshape(-1)
    n, d = X.shape
    if d > 16:
        raise ValueError(f"X: exact enumeration needs d ≤ 16; got d = {d}")
    log_weights, means, seconds, patterns = [], [], [], []
    for code in range(2**d):
        z = np.array([(code >> i) & 1 for i in range(d)], dtype=bool)
        Xz = X[:, z]
        C = noise_variance * np.eye(n) + slab_variance * Xz @ Xz.T
        L = np.linalg.cholesky(C)
        a = np.linalg.solve(L, y)
        log_lik = -0.5 * n * np.log(2 * np.pi) - np.sum(np.log(np.diag(L))) - 0.5 * a @ a
        k = int(z.sum())
        log_weights.append(k * np.log(prior_inclusion) + (d - k) * np.log1p(-prior_inclusion) + log_lik)
        m, s = np.zeros(d), np.zeros(d)
        if k:
            A = Xz.T @ Xz / noise_variance + np.eye(k) / slab_variance
            LA = np.linalg.cholesky(A)  # Var = A⁻¹: its diagonal is the squared column norms of L_A⁻¹
            m[z] = scipy.linalg.cho_solve((LA, True), Xz.T @ y / noise_variance)
            s[z] = np.sum(np.square(scipy.linalg.solve_triangular(LA, np.eye(k), lower=True)), axis=0) + m[z] ** 2
        means.append(m)
        seconds.append(s)
        patterns.append(z)
    log_weights = np.asarray(log_weights)
    top = log_weights.max()
    weights = np.exp(log_weights - top)
    log_evidence = top + np.log(weights.sum())
    weights /= weights.sum()
    mean = weights @ np.asarray(means)
    return log_evidence, mean, weights @ np.asarray(seconds) - mean**2, weights @ np.asarray(patterns, dtype=np.float64)
