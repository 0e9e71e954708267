r"""
EPGPC: Gaussian-process classification (or any scalar-likelihood GP) with expectation propagation.

Model (Rasmussen & Williams 2006, Sec. 3.6; Qi & Guo 2012, Sec. 4): f ~ GP(m(·), k(·, ·)),
y_i | f ~ p(y_i | f(x_i)). EP replaces every
likelihood term by a Gaussian site in natural parameters (τ_i, ν_i) (:mod:`gpflow_ep.ep.sites`), so

    q(f) ∝ N(f; m_X, K) Π_i exp(-½ τ_i f_i² + ν_i f_i) = N(f; μ, Σ),

and the evidence is the (power-)EP energy log Z_EP of :mod:`gpflow_ep.ep.energy` (Minka 2004;
Rasmussen & Williams 2006, eq. 3.65). Hyper-parameters are learned by the gradient of log Z_EP
with the sites held fixed,
exact at an EP fixed point. In ``ep_mode="nested"`` (default) every evaluation of the training loss
first re-runs EP to convergence, warm-started from the stored sites, inside the compiled graph, so

    gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables)

works as for ``gpflow.models.VGP``. In ``ep_mode="alternated"`` the loss uses the stored sites and
:class:`gpflow_ep.optimizers.EP` refreshes them between hyper-parameter steps.

Power EP (``power=α < 1``) is an option of the same engine, not a separate implementation.
"""

from typing import Optional

import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.base import InputData, MeanAndVariance, RegressionData
from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction
from gpflow.models import GPModel, InternalDataTrainingLossMixin
from gpflow.models.util import data_input_to_tensor

from ..ep import (
    EPRun,
    EPSettings,
    GPAlgebra,
    ep_log_marginal_likelihood,
    get_schedule,
    run_ep,
    warn_if_not_converged,
)
from ..validation import check_data, check_kernel_inputs
from .ep_base import EPModel, EPPosteriorBase


class EPGPC(EPModel, GPModel, InternalDataTrainingLossMixin):
    """
    Full-GP expectation propagation, a drop-in for ``gpflow.models.VGP``.

    :param data: (X, Y) with X [N, D] and Y [N, 1]; binary likelihoods take Y in {0, 1}.
    :param kernel: any GPflow kernel.
    :param likelihood: a scalar likelihood: ``gpflow_ep.likelihoods.Probit``/``NoisyStep`` (closed
        form) or any ``gpflow.likelihoods.ScalarLikelihood`` (adaptive Gauss–Hermite).
    :param mean_function: GPflow mean function (default zero).
    :param ep_options: the EP options of :class:`~gpflow_ep.ep.EPSettings` as keyword arguments
        (``power``, ``cavity``, ``schedule``, ``damping``, ``max_sweeps``, ``tol``,
        ``criterion``, ``ep_mode``, ``relaxation``, ``min_precision``); they are kept as
        :attr:`ep_settings`.
    """

    def __init__(
        self,
        data: RegressionData,
        kernel: Kernel,
        likelihood: Likelihood,
        mean_function: Optional[MeanFunction] = None,
        **ep_options,
    ):
        X, Y = check_data(data, likelihood)
        check_kernel_inputs(kernel, X.shape[1], "kernel", "data[0] (X)")
        settings = EPSettings().updated(**ep_options)
        get_schedule(settings.schedule)  # a ValueError naming ``schedule`` when none is registered under the name
        super().__init__(kernel, likelihood, mean_function, num_latent_gps=1)
        self.data = data_input_to_tensor((X, Y))
        self.num_data = X.shape[0]
        self._init_ep(self.num_data, settings)

    # ---------------------------------------------------------------- posterior algebra

    def _prior(self):
        X = self.data[0]
        return self.kernel(X), self.mean_function(X)

    def prior_algebra(self) -> GPAlgebra:
        """The site algebra of the GP prior N(m_X, K) at the current hyper-parameters (differentiable)."""
        return GPAlgebra(*self._prior())

    def _fixed_algebra(self) -> GPAlgebra:
        """The algebra at the current hyper-parameters, cut from their gradient (an EP run holds them fixed)."""
        return GPAlgebra(*(tf.stop_gradient(t) for t in self._prior()))

    # ---------------------------------------------------------------- running EP

    def run_ep(self, **overrides) -> EPRun:
        """
        Run EP to convergence from the stored sites with the hyper-parameters held fixed; store the
        sites and :attr:`ep_diagnostics`. Keyword arguments override options of
        :attr:`ep_settings` for this run only (``EPSettings.updated``): ``run_ep(power=0.5)``
        gives the sites of a model built with ``power=0.5``.

        A schedule that compiles (:attr:`~gpflow_ep.ep.Schedule.compiled`) runs as one compiled
        function, traced once per model and settings, when called eagerly, and inline when called
        inside a compiled function (the nested training loss); an eager-only schedule (the
        convergent double loop) runs eagerly.

        :return: the :class:`~gpflow_ep.ep.EPRun` (tensors).
        :warns EPConvergenceWarning: when the run did not converge (eagerly; inside a compiled loss
            the outcome is in :attr:`ep_diagnostics`).
        """
        settings = self.ep_settings.updated(**overrides)
        if get_schedule(settings.schedule).compiled and tf.executing_eagerly():
            run = self._run_ep_compiled(settings)
        else:
            run = self._run_ep_inline(settings)
        warn_if_not_converged(run, settings, f"{type(self).__name__}.run_ep")
        return run

    def _run_ep_inline(self, settings: EPSettings) -> EPRun:
        return self._run_schedule(self._fixed_algebra(), self._factor(*self.data), settings)

    @tf.function(autograph=False)
    def _run_ep_compiled(self, settings: EPSettings) -> EPRun:
        return self._run_ep_inline(settings)

    # ---------------------------------------------------------------- objective

    @check_shapes("return: []")
    def log_marginal_likelihood(self) -> tf.Tensor:
        """log Z_EP at the stored sites, differentiable in the hyper-parameters (sites fixed)."""
        energy = ep_log_marginal_likelihood(
            self.prior_algebra(), self._factor(*self.data), *self.sites.read(), self.ep_settings
        )
        return energy.log_marginal_likelihood

    @check_shapes("return: []")
    def maximum_log_likelihood_objective(self) -> tf.Tensor:  # type: ignore[override]
        return self._evidence_objective(self.run_ep, self.log_marginal_likelihood)

    # ---------------------------------------------------------------- prediction

    def posterior(self) -> "EPPosterior":
        """The EP posterior at the stored sites, factorised once for repeated predictions."""
        return EPPosterior(self)

    def current_sites(self):
        """
        (τ, ν, dual) of EP's fixed point at the current hyper-parameters, computed without writing
        anything: the stored sites when :meth:`ep_state_is_current`, else an EP run from them
        (the sites ``run_ep()`` would store). The convergent double loop runs eagerly only; inside a
        compiled function it gives the stored sites.
        """
        stored = (*self.sites.read(), tf.stop_gradient(tf.convert_to_tensor(self.sites.dual)))
        if not get_schedule(self.ep_settings.schedule).compiled:
            if not tf.executing_eagerly() or bool(self.ep_state_is_current()):
                return stored
            return self._fixed_point(self.ep_settings)
        fixed_point = self._fixed_point_compiled if tf.executing_eagerly() else self._fixed_point
        return tf.cond(self.ep_state_is_current(), lambda: stored, lambda: fixed_point(self.ep_settings))

    def _fixed_point(self, settings: EPSettings):
        run = run_ep(self._fixed_algebra(), self._factor(*self.data), *self.sites.read(), settings)
        return run.precision, run.natural_mean, run.dual

    @tf.function(autograph=False)
    def _fixed_point_compiled(self, settings: EPSettings):
        return self._fixed_point(settings)

    @inherit_check_shapes
    def predict_f(self, Xnew: InputData, full_cov: bool = False, full_output_cov: bool = False) -> MeanAndVariance:
        """
        Predictive moments of f(x*) (R&W Alg. 3.6 generalised to sites of any sign). Prediction
        never writes to the model. In nested mode it uses EP's fixed point at the current
        hyper-parameters (:meth:`current_sites`: the stored sites when they are current, as after
        training or ``run_ep()``; otherwise computed, not stored, at the cost of an EP run per
        call); in alternated mode the stored sites, as they are.
        """
        sites = self.current_sites() if self.ep_settings.ep_mode == "nested" else None
        return EPPosterior(self, sites).predict_f(Xnew, full_cov=full_cov, full_output_cov=full_output_cov)


class EPPosterior(EPPosteriorBase):
    """q(f) of an EP model, factorised once (the analogue of GPflow's ``posterior()`` objects)."""

    def __init__(self, model: EPGPC, sites=None):
        """:param sites: (τ, ν, dual) to predict from (default: the model's stored sites)."""
        super().__init__(model)
        if sites is None:
            sites = (*model.sites.read(), tf.convert_to_tensor(model.sites.dual))
        self.factorisation = model.prior_algebra().posterior(*sites[:2]).factorisation
        self.dual = sites[2]

    def _predict_latent(self, Xnew, full_cov: bool):
        model = self.model
        Kxs = model.kernel(model.data[0], Xnew)
        mean, cov = self.factorisation.predict(Kxs, model.kernel(Xnew, full_cov=full_cov), full_cov=full_cov)
        if model.predict_with == "dual":
            mean = tf.linalg.matvec(Kxs, self.dual[:, 0], transpose_a=True)
        return mean, cov
