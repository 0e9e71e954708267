r"""
EPGP: full-GP expectation propagation for any scalar likelihood — classification, regression,
robust regression, counts, ordinal data (Minka 2001; Rasmussen & Williams 2006, Sec. 3.6).

Model: f ~ GP(m(·), k(·, ·)), y_i | f ~ p(y_i | f(x_i)). EP replaces every likelihood term by a
Gaussian site in natural parameters (τ_i, ν_i) (:mod:`gpflow_ep.ep.sites`), so

    q(f) ∝ N(f; m_X, K) Π_i exp(-½ τ_i f_i² + ν_i f_i) = N(f; μ, Σ),

and the evidence is the (power-)EP energy log Z_EP of :mod:`gpflow_ep.ep.energy` (Minka 2004;
Rasmussen & Williams 2006, eq. 3.65). Hyper-parameters are learned by the gradient of log Z_EP with
the sites held fixed, exact at an EP fixed point. In ``ep_mode="nested"`` (default) every evaluation
of the training loss first re-runs EP to convergence, warm-started from the stored sites, inside the
compiled graph, so

    gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables)

works as for ``gpflow.models.VGP``. In ``ep_mode="alternated"`` the loss uses the stored sites and
:class:`gpflow_ep.optimizers.EP` refreshes them between hyper-parameter steps.

Power EP (``power=α < 1``, Minka 2004) and relaxed EP (``relaxation``, Qi & Guo 2012) are options of
the same engine; :class:`~gpflow_ep.models.EPGPC`, :class:`~gpflow_ep.models.PowerEP` and
:class:`~gpflow_ep.models.RelaxedEP` are this model under the names and defaults of their papers.
The tilted moments are the likelihood's closed form where one is registered
(:func:`~gpflow_ep.ep.tilted_moments`: ``Probit``, ``NoisyStep``, ``Gaussian``, ``Laplace``, ...)
and the adaptive quadrature of its log density otherwise. A likelihood that is not log-concave
(Student-t, noisy step) runs, unless a ``schedule`` is given, parallel EP that falls back to the
convergent double loop when it does not converge (:mod:`gpflow_ep.models.default_settings`); the
fractional, more strongly damped updates of :func:`~gpflow_ep.ep.robust_settings` (Jylänki, Vanhatalo
& Vehtari 2011) converge more often still, to power EP's fixed point.
"""

from typing import Optional

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import RegressionData
from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction
from gpflow.models import GPModel, InternalDataTrainingLossMixin
from gpflow.models.util import data_input_to_tensor
from gpflow.posteriors import PrecomputeCacheType

from ..ep import EPRun, GPAlgebra, LikelihoodFactor
from ..likelihoods.targets import check_targets
from ..posteriors import EPGPPosterior
from ..validation import check_choice, check_data, check_kernel_inputs
from .default_settings import default_ep_settings, run_settings
from .ep_base import EPModel, SiteProblem, check_ep_likelihood

__all__ = ["EPGP", "PREDICT_WITH"]

#: the predictors of the latent mean: q's ("sites") or Minka's from the per-site statistics ("dual")
PREDICT_WITH = ("sites", "dual")


class EPGP(EPModel, GPModel, InternalDataTrainingLossMixin):
    """
    Full-GP EP for any scalar likelihood, a drop-in for ``gpflow.models.VGP``.

    :param data: (X [N, D], Y [N, 1]); Y in the likelihood's support (binary likelihoods: Y in
        {0, 1}; checked, a ``ValueError`` naming ``data[1] (Y)`` otherwise).
    :param kernel: any GPflow kernel.
    :param likelihood: a scalar likelihood EP has moments for: ``gpflow_ep.likelihoods.Probit``,
        ``NoisyStep``, ``Laplace``, the hinge, or any ``gpflow.likelihoods.ScalarLikelihood``
        (``Gaussian``, ``StudentT``, ``Poisson``, ``Ordinal``, ``Bernoulli``, ...); others are refused.
    :param mean_function: GPflow mean function (default zero).
    :param predict_with: "sites" (default, the posterior q) or "dual" (Minka's toolbox predictor
        μ* = m(x*) + Σ_j a_j k(x*, x_j), with a_j = ∂log Z_j/∂(cavity mean) from the last visit,
        kept in ``sites.dual``; the variance always comes from q).
    :param ep_mode: "nested" (default: the training loss first runs EP to convergence, warm-started)
        or "alternated" (the loss uses the stored sites, refreshed by :class:`gpflow_ep.optimizers.EP`).
    :param ep_options: the EP options of :class:`~gpflow_ep.ep.EPSettings` as keyword arguments
        (``power``, ``cavity``, ``schedule``, ``damping``, ``max_sweeps``, ``tol``,
        ``criterion``, ``relaxation``, ``min_precision``); they are kept as :attr:`ep_settings`.
        Without a ``schedule``, a likelihood that is not log-concave (``StudentT``, ``NoisyStep``, ...)
        runs ``schedule="robust"`` (parallel EP falling back to the convergent double loop) and any
        other parallel EP (:mod:`gpflow_ep.models.default_settings`).
    """

    def __init__(
        self,
        data: RegressionData,
        kernel: Kernel,
        likelihood: Likelihood,
        mean_function: Optional[MeanFunction] = None,
        *,
        predict_with: str = "sites",
        ep_mode: str = "nested",
        **ep_options,
    ):
        check_ep_likelihood(likelihood)
        X, Y = check_data(data, likelihood)
        check_targets(likelihood, Y, "data[1] (Y)")
        check_kernel_inputs(kernel, X.shape[1], "kernel", "data[0] (X)")
        self.predict_with = check_choice(predict_with, "predict_with", PREDICT_WITH)
        super().__init__(kernel, likelihood, mean_function, num_latent_gps=1)
        self.data = data_input_to_tensor((X, Y))
        self.num_data = X.shape[0]
        #: whether the user named the schedule (else it is the likelihood's default, kept so by run_ep's overrides)
        self._schedule_given = ep_options.get("schedule") is not None
        self._init_ep(self.num_data, default_ep_settings(likelihood, ep_options), ep_mode=ep_mode)

    # ---------------------------------------------------------------- the site problem

    def site_problem(self, fixed: bool = False) -> SiteProblem:
        """The GP prior N(m_X, K) (:class:`~gpflow_ep.ep.GPAlgebra`) and the factor of the data."""
        X, Y = self.data
        K, m = self.kernel(X), self.mean_function(X)
        if fixed:
            K, m = tf.stop_gradient(K), tf.stop_gradient(m)
        return SiteProblem(GPAlgebra(K, m), LikelihoodFactor(self.likelihood, X, Y))

    def prior_algebra(self) -> GPAlgebra:
        """The site algebra of the GP prior N(m_X, K) at the current hyper-parameters (differentiable)."""
        return self.site_problem().algebra

    # ---------------------------------------------------------------- running EP

    def run_ep(self, **overrides) -> EPRun:
        """
        Run EP to convergence from the stored sites with the hyper-parameters held fixed; store the
        sites and :attr:`ep_diagnostics`. Keyword arguments override options of
        :attr:`ep_settings` for this run only (``EPSettings.updated``): ``run_ep(power=0.5)``
        gives the sites of a model built with ``power=0.5``. Compiled when called eagerly, inline
        inside a compiled function (the nested training loss).

        :return: the :class:`~gpflow_ep.ep.EPRun` (tensors).
        :warns EPConvergenceWarning: when the run did not converge (eagerly; inside a compiled loss
            the outcome is in :attr:`ep_diagnostics`).
        """
        settings = run_settings(self.ep_settings, overrides, self._schedule_given)
        return self._run(self.check_settings(settings), ".run_ep")

    # ---------------------------------------------------------------- objective

    @check_shapes("return: []")
    def log_marginal_likelihood(self) -> tf.Tensor:
        """log Z_EP at the stored sites, differentiable in the hyper-parameters (sites fixed)."""
        return self._evidence()

    @check_shapes("return: []")
    def maximum_log_likelihood_objective(self) -> tf.Tensor:  # type: ignore[override]
        return self._objective()

    # ---------------------------------------------------------------- prediction

    def posterior_at(self, sites, precompute_cache: Optional[PrecomputeCacheType]) -> EPGPPosterior:
        """
        q(f*) at ``sites`` = (τ, ν, dual) as a GPflow posterior (:class:`~gpflow_ep.posteriors.EPGPPosterior`;
        R&W Alg. 3.6 generalised to sites of any sign), with Minka's dual mean when
        ``predict_with="dual"``.
        """
        precision, natural_mean, dual = sites
        dual = dual if self.predict_with == "dual" else None
        return EPGPPosterior(
            self.kernel,
            self.data[0],
            precision,
            natural_mean,
            self.mean_function,
            dual,
            precompute_cache=precompute_cache,
        )
