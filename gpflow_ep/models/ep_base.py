"""
What every EP model shares: its EP state, settings and diagnostics, and the EP lifecycle, written
once — run EP (compiled when called eagerly, inline when traced), decide whether the stored sites
are current for the hyper-parameters, store a run, compute the evidence log Z_EP. A model supplies
its site problem (:class:`SiteProblem`: the engine's posterior algebra of its prior and the factor
of its data, :meth:`EPModel.site_problem`) and what it keeps besides the sites
(:meth:`EPModel.store_site_state`); nothing else about running EP.
"""

import abc
import contextlib
import warnings
from typing import Any, NamedTuple, Optional, Tuple

import gpflow
import tensorflow as tf
from gpflow.base import InputData, MeanAndVariance
from gpflow.config import default_float
from gpflow.likelihoods import Likelihood
from gpflow.models import ExternalDataTrainingLossMixin, InternalDataTrainingLossMixin
from gpflow.posteriors import AbstractPosterior, PrecomputeCacheType
from gpflow.utilities import assert_params_false
from tensorflow.python.data.ops.iterator_ops import OwnedIterator as DatasetOwnedIterator

try:  # TensorFlow's pause of every active GradientTape (no public equivalent; see EPModel._execute)
    from tensorflow.python.eager.record import stop_recording as _stop_recording
except ImportError:  # pragma: no cover - an older or newer TensorFlow without it: record as before
    _stop_recording = contextlib.nullcontext

from ..ep import (
    EPRun,
    EPSettings,
    SiteAlgebra,
    SiteFactor,
    ep_log_marginal_likelihood,
    get_schedule,
    has_tilted_moments,
    predictive_moments,
    run_ep,
    tilted_moments,
)
from ..ep.convergence import EPConvergenceWarning, non_convergence_message, warn_if_not_converged
from ..validation import check_choice, check_prediction_inputs, model_input_dim, require_float64
from .ep_state import EPState, OutOfSummary, ep_state_attribute

#: how a model's training loss uses EP: "nested", it first runs EP to convergence from the stored
#: sites (warm-started) and stores them; "alternated", it uses the stored sites, which EP runs
#: (:class:`gpflow_ep.optimizers.EP`, ``fit``'s ``ep_every``) refresh between hyper-parameter steps
EP_MODES = ("nested", "alternated")

#: The EP models' objectives are written without Python control flow on tensors (``tf.cond`` and
#: ``tf.while_loop`` are explicit), so AutoGraph, which ``tf.function`` applies by default (GPflow's
#: ``training_loss_closure``, ``Scipy().minimize``), is told not to convert them: converting the
#: engine costs seconds on the first compiled call in a fresh process and changes nothing.
not_converted = tf.autograph.experimental.do_not_convert


class SiteProblem(NamedTuple):
    """
    What EP needs of a model at its current hyper-parameters: the ``algebra`` of its prior
    (:class:`~gpflow_ep.ep.SiteAlgebra`: sites → q), the ``factor`` of its data (the terms the
    sites approximate) and ``state``, anything the model keeps from it besides the sites
    (:meth:`EPModel.store_site_state`).
    """

    algebra: SiteAlgebra
    factor: SiteFactor
    state: Any = None


class EPModel:
    """
    Base (mixin) of the GPflow models whose likelihood terms are EP sites: they have ``sites``,
    ``ep_settings`` (:class:`~gpflow_ep.ep.EPSettings`), ``ep_diagnostics``, ``run_ep`` and the
    evidence log Z_EP as their training objective. Subclasses call :meth:`_init_ep` from
    ``__init__`` and implement :meth:`site_problem`.

    The EP state (sites, diagnostics, and a model's own, e.g. SEPGPC's q(u)) lives in one module,
    :attr:`ep_state`, that checkpoints and ``model.variables`` include and GPflow's
    ``print_summary(model)`` leaves out, so the summary lists the model's parameters as for any
    GPflow model; ``print_summary(model.ep_state)`` or :meth:`ep_state_summary` shows the state
    (:mod:`gpflow_ep.models.ep_state`). GPflow's ``parameter_dict``/``multiple_assign`` copy a
    model's parameters; ``multiple_assign(new.ep_state, parameter_dict(trained.ep_state))`` copies
    its EP state (a model whose EP state was never fitted warns once when it first predicts).
    """

    #: "sites": predict from q; "dual": mean from the per-site statistics (see ``PowerEP``)
    predict_with = "sites"

    sites = ep_state_attribute(
        "sites", "The EP sites (:class:`~gpflow_ep.ep.sites.SiteParameters`): τ, ν, dual, relaxation."
    )
    ep_diagnostics = ep_state_attribute("diagnostics", "What EP did on this model (:class:`EPDiagnostics`).")
    sites_fitted_for = ep_state_attribute(
        "sites_fitted_for",
        "The hyper-parameters (every ``Parameter``'s unconstrained value, flattened) of the last full EP run: "
        "the sites are EP's fixed point for these values (:meth:`ep_state_is_current`).",
    )
    sites_fitted = ep_state_attribute("sites_fitted", "1 once a full EP run stored its sites, else 0.")

    def _init_ep(
        self, num_sites: int, settings: EPSettings, state: Optional[EPState] = None, ep_mode: str = "nested"
    ) -> None:
        """
        Settings, EP mode and EP state (``state``: a model's own :class:`EPState` subclass, default a
        plain one).
        """
        require_float64(type(self).__name__)
        self.ep_mode = check_choice(ep_mode, "ep_mode", EP_MODES)
        self.ep_settings = self.check_settings(settings)
        state = EPState(num_sites, int(self._hyperparameter_values().shape[0])) if state is None else state
        self._ep_state = OutOfSummary(state=state)
        self._warned_unfitted = False
        self._unfitted_expected = False

    @property
    def ep_state(self) -> EPState:
        """The model's EP state (:class:`~gpflow_ep.models.ep_state.EPState`): ``print_summary(model.ep_state)``."""
        return self._ep_state["state"]

    def ep_state_summary(self, fmt: Optional[str] = None) -> str:
        """
        The table of the EP state's variables (GPflow's ``tabulate_module_summary`` of :attr:`ep_state`),
        which ``print_summary(model)`` leaves out; ``fmt`` as there (e.g. "simple", "html").
        """
        return gpflow.utilities.tabulate_module_summary(self.ep_state, fmt)

    # ---------------------------------------------------------------- what a model supplies

    @abc.abstractmethod
    def site_problem(self, *site_data, fixed: bool = False) -> SiteProblem:
        """
        The :class:`SiteProblem` at the current hyper-parameters for the model's data (held data:
        no arguments; a sparse model: the tensors of its sites). ``fixed``: cut from the
        hyper-parameters' gradient (an EP run holds them fixed); else differentiable (the evidence).
        """

    def store_site_state(self, run: EPRun, problem: SiteProblem) -> None:
        """Store what the model keeps of a full EP run besides the sites (``problem.state``); nothing by default."""
        del run, problem

    def check_settings(self, settings: EPSettings) -> EPSettings:
        """
        The settings, or a ``ValueError`` naming the option this model cannot run (default: the schedule
        exists and runs them, :meth:`~gpflow_ep.ep.Schedule.check_settings`).
        """
        get_schedule(settings.schedule).check_settings(settings)
        return settings

    # ---------------------------------------------------------------- the EP lifecycle

    def _hyperparameter_values(self) -> tf.Tensor:
        """Every ``Parameter``'s unconstrained value, flattened into one vector (what EP's fixed point depends on)."""
        values = [tf.reshape(tf.cast(p.unconstrained_variable, default_float()), [-1]) for p in self.parameters]
        return tf.stop_gradient(tf.concat(values + [tf.zeros([0], default_float())], axis=0))

    def ep_state_is_current(self) -> tf.Tensor:
        """
        True (a boolean tensor) when the hyper-parameters are exactly those of the last full EP run
        that stored its sites (``run_ep`` or the nested loss); False before the first run and after
        any ``Parameter`` changed (an optimiser step, an ``assign``). A model without parameters
        (``gpflow.utilities.freeze`` replaced them by constants) cannot change: once fitted, its
        stored sites are current.
        """
        if not self.parameters:
            return tf.equal(self.sites_fitted, 1)
        values = self._hyperparameter_values()
        if values.shape != self.sites_fitted_for.shape:  # a parameter was replaced by one of another shape
            return tf.constant(False)
        return tf.equal(self.sites_fitted, 1) & tf.reduce_all(tf.equal(values, self.sites_fitted_for))

    def ep_state_is_fitted(self) -> tf.Tensor:
        """True (a boolean tensor) once a full EP run or a minibatch refresh has written the EP state."""
        return tf.equal(self.sites_fitted, 1) | (self.ep_diagnostics.refreshes > 0)

    def _execute(self, settings: EPSettings, store: bool, *site_data) -> EPRun:
        """
        EP from the stored sites on the model's :meth:`site_problem`, its hyper-parameters held
        fixed: one compiled function (traced once per settings, ``store`` and data signature) when
        called eagerly, inline when traced (the nested training loss), as GPflow compiles where it is
        called. With ``store`` the outcome is stored (:meth:`_store_run`), else nothing is written
        (the fixed point of :meth:`fixed_point_sites`).
        """
        if not tf.executing_eagerly():
            return self._execute_inline(settings, store, *site_data)
        # Nothing of the run is differentiated (the sites are held fixed), but under a user's
        # GradientTape TensorFlow would record the call and build the gradient graph of the run's
        # while loop, intermediates included, a graph as large as the run's own
        # (tests/models/test_ep_base.py checks that the tape watches nothing of the run).
        compiled = self._execute_compiled  # this model's own tf.function (TensorFlow keeps one per instance)
        # TensorFlow's frequent-retracing detector is keyed by the code object, which every model's
        # compiled run shares, so the first run of each of five models built in a row would read as
        # retracing of one function; each model's function still traces once per settings
        # (tests/integration/test_retracing.py checks both, and fails if this attribute stops working).
        compiled._omit_frequent_tracing_warning = True
        with _stop_recording():
            return compiled(settings, store, *site_data)

    @tf.function(autograph=False)
    def _execute_compiled(self, settings: EPSettings, store: bool, *site_data) -> EPRun:
        """The compiled EP run of :meth:`_execute` (one ``tf.function`` per model)."""
        return self._execute_inline(settings, store, *site_data)

    def solve(self, problem: SiteProblem, settings: EPSettings) -> EPRun:
        """
        EP on ``problem`` from the stored sites with ``settings`` (nothing written): the engine's
        :func:`~gpflow_ep.ep.run_ep`. A model whose sites are not one per factor (tied sites) runs its own.
        """
        return run_ep(problem.algebra, problem.factor, *self.sites.read(), settings)

    def _execute_inline(self, settings: EPSettings, store: bool, *site_data) -> EPRun:
        problem = self.site_problem(*site_data, fixed=True)
        run = self.solve(problem, settings)
        if not store:
            return run
        run = self._store_run(run)
        self.store_site_state(run, problem)
        return run

    def _store_run(self, run: EPRun) -> EPRun:
        """
        The bookkeeping of every full EP run, whichever schedule made it: store the sites, mark
        them fitted for the current hyper-parameters (:meth:`ep_state_is_current`) and record
        :attr:`ep_diagnostics`. A run at non-finite hyper-parameters, or that ends with any
        non-finite site state (overflowing kernel matrices), is not stored: the model keeps its
        sites and the run is reported as not converged.
        """
        state = (run.precision, run.natural_mean, run.dual, run.relaxation)
        hyperparameters = self._hyperparameter_values()
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in state + (hyperparameters,)])
        stored = (self.sites.precision, self.sites.natural_mean, self.sites.dual, self.sites.relaxation)
        kept = [tf.where(finite, value, variable) for variable, value in zip(stored, state)]
        self.sites.store(*kept)
        self.sites_fitted_for.assign(tf.where(finite, hyperparameters, self.sites_fitted_for))
        self.sites_fitted.assign(tf.maximum(self.sites_fitted, tf.cast(finite, tf.int32)))
        run = run._replace(
            precision=kept[0], natural_mean=kept[1], dual=kept[2], relaxation=kept[3], converged=run.converged & finite
        )
        self.ep_diagnostics.record(run)
        return run

    @not_converted
    def _run(self, settings: EPSettings, where: str, *site_data) -> EPRun:
        """
        A stored EP run (:meth:`_execute`) that says when it did not converge: called eagerly, an
        ``EPConvergenceWarning`` every time; inside a compiled function (a training loss under
        ``Scipy().minimize`` or ``fit``), from the graph at run time, once until
        ``ep_diagnostics.reset()`` (``ep_diagnostics.runs_not_converged`` counts every such run).
        """
        run = self._execute(settings, True, *site_data)
        where = f"{type(self).__name__}{where}"
        if tf.executing_eagerly():
            warn_if_not_converged(run, settings, where, stacklevel=4)
        else:
            self._warn_at_run_time(run, settings, where)
        return run

    def _warn_at_run_time(self, run: EPRun, settings: EPSettings, where: str) -> None:
        """Put a warning of a non-converged run into the compiled graph (a ``tf.py_function`` run at each call)."""
        diagnostics = self.ep_diagnostics

        def warn(*values):
            record = tf.nest.pack_sequence_as(run, values)
            if bool(record.converged.numpy()) or diagnostics.warned_not_converged:
                return tf.constant(False)
            diagnostics.warned_not_converged = True
            message = non_convergence_message(record, settings, where)
            count = int(diagnostics.runs_not_converged.numpy())
            warnings.warn(
                f"{message} ({count} run(s) inside the compiled training loss did not converge so far; "
                "model.ep_diagnostics.runs_not_converged counts them, and this warning comes once until "
                "model.ep_diagnostics.reset())",
                EPConvergenceWarning,
                stacklevel=2,
            )
            return tf.constant(True)

        tf.py_function(warn, tf.nest.flatten(run), tf.bool)

    @not_converted
    def fixed_point_sites(self, *site_data) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """
        (τ, ν, dual) of EP's fixed point at the current hyper-parameters, computed without writing
        anything: the stored sites when :meth:`ep_state_is_current`, else an EP run from them with
        the model's settings (the sites ``run_ep()`` would store).
        """
        stored = (*self.sites.read(), tf.stop_gradient(tf.convert_to_tensor(self.sites.dual)))

        def solve():
            run = self._execute(self.ep_settings, False, *site_data)
            return run.precision, run.natural_mean, run.dual

        return tf.cond(self.ep_state_is_current(), lambda: stored, solve)

    @not_converted
    def _evidence(self, *site_data) -> tf.Tensor:
        """log Z_EP at the stored sites, differentiable in the hyper-parameters (sites fixed)."""
        problem = self.site_problem(*site_data)
        energy = ep_log_marginal_likelihood(problem.algebra, problem.factor, *self.sites.read(), self.ep_settings)
        return energy.log_marginal_likelihood

    @not_converted
    def _objective(self, *site_data) -> tf.Tensor:
        """
        The training objective log Z_EP at the stored sites; in ``ep_mode="nested"`` after a stored EP
        run has brought them to the fixed point of the current hyper-parameters (that run is the only
        write: the objective itself writes nothing).
        """
        if self.ep_mode == "nested":
            self._run(self.ep_settings, " nested training loss", *site_data)
        return self._evidence(*site_data)

    # ---------------------------------------------------------------- prediction

    @property
    def predicts_fixed_point(self) -> bool:
        """
        Whether the model predicts from EP's fixed point at the current hyper-parameters, computed when
        the stored sites are not current: a model that holds its data (``EPGPC``, ``EPGP``,
        ``SpikeSlabRegression``) in ``ep_mode="nested"``. Otherwise (alternated mode, or a sparse model,
        whose data come in batches) it predicts from its stored EP state as it is.
        """
        return self.ep_mode == "nested" and isinstance(self, InternalDataTrainingLossMixin)

    def current_sites(self) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """
        (τ, ν, dual) the model predicts from (:attr:`predicts_fixed_point`): EP's fixed point at the
        current hyper-parameters (:meth:`fixed_point_sites`: the stored sites when they are current, as
        after training or ``run_ep()``, else computed and not stored), or the stored sites. The stored
        sites are returned as the site variables themselves, so a posterior built from them follows
        later EP updates (``update_cache()``).
        """
        if self.predicts_fixed_point and not (tf.executing_eagerly() and bool(self.ep_state_is_current())):
            return self.fixed_point_sites()
        return self.sites.precision, self.sites.natural_mean, self.sites.dual

    @abc.abstractmethod
    def posterior_at(self, sites, precompute_cache: Optional[PrecomputeCacheType]) -> AbstractPosterior:
        """
        The model's q(f) (a ``gpflow.posteriors.AbstractPosterior``) at ``sites`` = (τ, ν, dual), tensors
        or the site variables (:meth:`current_sites`), with GPflow's ``precompute_cache``.
        """

    def posterior(self, precompute_cache: PrecomputeCacheType = PrecomputeCacheType.TENSOR) -> AbstractPosterior:
        """
        q(f) as a GPflow posterior, as GPflow's ``SVGP.posterior()`` and ``VGP.posterior()``, at the sites
        :meth:`current_sites` gives: ``precompute_cache`` is GPflow's ``PrecomputeCacheType`` (TENSOR,
        VARIABLE or NOCACHE); built from the site variables, ``update_cache()`` after further training
        follows both the new hyper-parameters and the new EP state. A model that predicts from its
        stored state warns once when that was never fitted (:meth:`warn_if_unfitted`).
        """
        if not self.predicts_fixed_point:
            self.warn_if_unfitted()
        return self.posterior_at(self.current_sites(), precompute_cache)

    def predict_f(self, Xnew: InputData, full_cov: bool = False, full_output_cov: bool = False) -> MeanAndVariance:
        """
        q(f*) at ``Xnew`` [N, D] (validated first: a ``ValueError`` naming it):
        ``posterior(NOCACHE).fused_predict_f``, as GPflow's SVGP and VGP predict. Prediction never
        writes to the model; a model that computes EP's fixed point for it (:meth:`current_sites`)
        costs an EP run per call while its hyper-parameters differ from the last run's. (The shapes are
        checked by GPflow's posterior, after the validation.)
        """
        Xnew = check_prediction_inputs(Xnew, model_input_dim(self))
        posterior = self.posterior(PrecomputeCacheType.NOCACHE)
        return posterior.fused_predict_f(Xnew, full_cov=full_cov, full_output_cov=full_output_cov)

    def predict_y(self, Xnew, full_cov: bool = False, full_output_cov: bool = False) -> MeanAndVariance:
        """
        Mean and variance of y* under p(y* | x*) = ∫ p(y* | f) q(f* = f) df, [N, 1] each (or the
        likelihood's [N, C] for multi-class likelihoods): :func:`~gpflow_ep.ep.predictive_moments`,
        closed forms where the likelihood has them (probit, noisy step, hinge, Gaussian, Laplace,
        Student-t, Poisson, exponential and gamma with the exp link, ordinal), else the adaptive
        quadrature, 1e-8 relative; GPflow's default, a 20-point Gauss–Hermite rule, is not (e.g. the
        Poisson variance is 0.4 % off under a predictive sd of 3). Marginals only, as GPflow.
        """
        assert_params_false(self.predict_y, full_cov=full_cov, full_output_cov=full_output_cov)
        mean, var = self.predict_f(Xnew)
        return predictive_moments(self.likelihood, Xnew, mean, var)

    def predict_log_density(self, data, full_cov: bool = False, full_output_cov: bool = False) -> tf.Tensor:
        """
        log p(y* | x*) = log ∫ p(y* | f) q(f* = f) df for each test point, [N]: the likelihood's
        tilted normaliser at power 1 with the predictive as the "cavity"
        (:func:`~gpflow_ep.ep.tilted_moments`: closed forms for the probit, Gaussian, Laplace,
        logistic and Student-t where registered, else the adaptive quadrature accurate to 1e-8
        relative, which resolves a likelihood much narrower than the predictive; GPflow's default
        is a 20-point Gauss–Hermite rule, which does not). Likelihoods without scalar tilted moments
        (``MultiClassStep``) use their own ``predict_log_density``. Independent outputs only, as GPflow.
        """
        if full_cov or full_output_cov:
            raise NotImplementedError("predict_log_density: only for independent outputs (full_cov=False)")
        X, Y = data
        if not _has_scalar_moments(self.likelihood):
            return super().predict_log_density(data, full_cov=full_cov, full_output_cov=full_output_cov)
        mean, var = self.predict_f(X)
        Y = tf.cast(Y, mean.dtype)
        return tilted_moments(self.likelihood, tf.convert_to_tensor(X, mean.dtype), Y, mean, var, 1.0).log_z[:, 0]

    @contextlib.contextmanager
    def predicting_as_stored(self):
        """
        A context in which predictions read the stored EP state without :meth:`warn_if_unfitted`'s
        warning, and without using up its one warning: for a caller that evaluates the model as it
        stands by design, as a TensorBoard monitor does at step 0 (an unfitted model predicting
        from the prior).
        """
        previous, self._unfitted_expected = self._unfitted_expected, True
        try:
            yield self
        finally:
            self._unfitted_expected = previous

    def warn_if_unfitted(self) -> None:
        """
        Warn once (eagerly) when a model predicts from an EP state that no EP update produced: no EP
        run, training loss or minibatch refresh wrote it, so it predicts from the prior — a model
        never fitted, or a copy of a trained model's parameters alone
        (``multiple_assign(new, parameter_dict(trained))``). EP state written by training, with
        minibatches or not, is the model's trained state and predicts without a warning.
        """
        if self._warned_unfitted or self._unfitted_expected or not tf.executing_eagerly():
            return
        if bool(self.ep_state_is_fitted()):
            return
        self._warned_unfitted = True
        warnings.warn(
            f"{type(self).__name__}: predicting from an EP state that was never fitted (no run_ep, training loss "
            "or minibatch refresh wrote it), i.e. from the prior. Fit the model, or copy a trained model's EP "
            "state with its parameters: "
            "gpflow.utilities.multiple_assign(model.ep_state, gpflow.utilities.parameter_dict(trained.ep_state)).",
            UserWarning,
            stacklevel=3,
        )


def _has_scalar_moments(likelihood: Likelihood) -> bool:
    return getattr(likelihood, "latent_dim", 1) in (None, 1) and has_tilted_moments(likelihood)


def check_ep_likelihood(likelihood, name: str = "likelihood") -> Likelihood:
    """
    The likelihood, if EP has moments for it here: a GPflow likelihood of one latent function
    per site with tilted moments (:func:`~gpflow_ep.ep.has_tilted_moments`); else a ``ValueError``.
    """
    if not isinstance(likelihood, Likelihood):
        raise ValueError(f"{name} must be a gpflow.likelihoods.Likelihood; got {type(likelihood).__name__}")
    latent_dim = getattr(likelihood, "latent_dim", 1)
    if not _has_scalar_moments(likelihood):
        raise ValueError(
            f"{name}: EP has no site moments for {type(likelihood).__name__}"
            + (f" ({latent_dim} latent functions per point)" if latent_dim not in (None, 1) else "")
            + ": use a scalar likelihood (any gpflow.likelihoods.ScalarLikelihood, or one with moments registered "
            "with gpflow_ep.ep.tilted_moments); for multi-class data gpflow_ep.models.SEPMGPC with "
            "gpflow_ep.likelihoods.MultiClassStep"
        )
    return likelihood


class CheckedExternalDataTrainingLossMixin(ExternalDataTrainingLossMixin):
    """
    GPflow's ``ExternalDataTrainingLossMixin`` with the data validated eagerly, before anything is
    compiled: ``training_loss(data)`` checks it when called eagerly (before GPflow's own shape check,
    whose ``ShapeMismatchError`` is not a ``ValueError``), ``training_loss_closure(data)`` checks array
    data once when the closure is made, and each batch of a ``tf.data`` iterator as it is drawn (when
    the closure is called eagerly), so bad labels, shapes or NaN give a ``ValueError`` naming the
    argument, never an error from inside a compiled graph. Subclasses implement
    ``validate_training_data(data)`` (eager, raises ValueError).
    """

    @abc.abstractmethod
    def validate_training_data(self, data) -> None:
        """Raise a ValueError naming what is wrong with ``data`` (training data or a minibatch; call eagerly)."""

    def training_loss(self, data) -> tf.Tensor:
        if tf.executing_eagerly():
            self.validate_training_data(data)
        return super().training_loss(data)

    def training_loss_closure(self, data, *, compile: bool = True):
        if not isinstance(data, DatasetOwnedIterator):
            self.validate_training_data(data)
            return super().training_loss_closure(data, compile=compile)
        unchecked = super().training_loss  # each batch is checked below, once
        loss = unchecked
        if compile:  # through a lambda, as GPflow's own closure does (https://github.com/GPflow/GPflow/issues/1929)
            loss = tf.function(lambda batch: unchecked(batch), input_signature=[data.element_spec])

        def closure() -> tf.Tensor:
            batch = next(data)
            if tf.executing_eagerly():
                self.validate_training_data(batch)
            return loss(batch)

        return closure
