"""
What every EP model shares: its sites, settings and diagnostics, and the wiring of the one EP
engine (schedule dispatch, evidence). A model adds only its posterior algebra
(:class:`~gpflow_ep.ep.SiteAlgebra`) and the factors of its sites.
"""

import abc
from typing import Optional

import gpflow
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_float
from gpflow.models import ExternalDataTrainingLossMixin
from tensorflow.python.data.ops.iterator_ops import OwnedIterator as DatasetOwnedIterator

from ..ep import EPRun, EPSettings, LikelihoodFactor, SiteAlgebra, run_ep
from ..validation import check_prediction_inputs, model_input_dim, require_float64
from .ep_state import EPState, OutOfSummary, ep_state_attribute


class EPModel:
    """
    Base (mixin) of the GPflow models whose likelihood terms are EP sites (``self.likelihood`` is
    a GPflow likelihood): they have ``sites``, ``ep_settings`` (:class:`~gpflow_ep.ep.EPSettings`),
    ``ep_diagnostics`` and ``run_ep``. Subclasses call :meth:`_init_ep` from ``__init__``.

    The EP state (sites, diagnostics, and a model's own, e.g. SEPGPC's q(u)) lives in one module,
    :attr:`ep_state`, that checkpoints and ``model.variables`` include and GPflow's
    ``print_summary(model)`` leaves out, so the summary lists the model's parameters as for any
    GPflow model; ``print_summary(model.ep_state)`` or :meth:`ep_state_summary` shows the state
    (:mod:`gpflow_ep.models.ep_state`).
    """

    #: "sites": predict from q; "dual": mean from the per-site statistics (see ``PowerEP``)
    predict_with = "sites"

    sites = ep_state_attribute("sites", "The EP sites (:class:`~gpflow_ep.ep.SiteParameters`): τ, ν, dual, relaxation.")
    ep_diagnostics = ep_state_attribute("diagnostics", "What EP did on this model (:class:`EPDiagnostics`).")
    sites_fitted_for = ep_state_attribute(
        "sites_fitted_for",
        "The hyper-parameters (every ``Parameter``'s unconstrained value, flattened) of the last full EP run: "
        "the sites are EP's fixed point for these values (:meth:`ep_state_is_current`).",
    )
    sites_fitted = ep_state_attribute("sites_fitted", "1 once a full EP run stored its sites, else 0.")

    def _init_ep(self, num_sites: int, settings: EPSettings, state: Optional[EPState] = None) -> None:
        """Settings and EP state (``state``: a model's own :class:`EPState` subclass, default a plain one)."""
        require_float64(type(self).__name__)
        self.ep_settings = settings
        state = EPState(num_sites, int(self._hyperparameter_values().shape[0])) if state is None else state
        self._ep_state = OutOfSummary(state=state)

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

    def _hyperparameter_values(self) -> tf.Tensor:
        """Every ``Parameter``'s unconstrained value, flattened into one vector (what EP's fixed point depends on)."""
        values = [tf.reshape(tf.cast(p.unconstrained_variable, default_float()), [-1]) for p in self.parameters]
        return tf.stop_gradient(tf.concat(values + [tf.zeros([0], default_float())], axis=0))

    def ep_state_is_current(self) -> tf.Tensor:
        """
        True (a boolean tensor) when the hyper-parameters are exactly those of the last full EP run
        that stored its sites (``run_ep`` or the nested loss); False before the first run and after
        any ``Parameter`` changed (an optimiser step, an ``assign``).
        """
        values = self._hyperparameter_values()
        if values.shape != self.sites_fitted_for.shape:  # a parameter was replaced by one of another shape
            return tf.constant(False)
        return tf.equal(self.sites_fitted, 1) & tf.reduce_all(tf.equal(values, self.sites_fitted_for))

    def _factor(self, X, Y, extra_var=None) -> LikelihoodFactor:
        return LikelihoodFactor(self.likelihood, X, Y, extra_var)

    def _run_schedule(self, algebra: SiteAlgebra, factor: LikelihoodFactor, settings: EPSettings) -> EPRun:
        """Run ``settings.schedule`` from the stored sites and store the outcome (:meth:`_store_run`)."""
        tau, nu = self.sites.read()
        return self._store_run(run_ep(algebra, factor, tau, nu, settings))

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
        for variable, value in zip(stored, kept):
            variable.assign(value)
        self.sites_fitted_for.assign(tf.where(finite, hyperparameters, self.sites_fitted_for))
        self.sites_fitted.assign(tf.maximum(self.sites_fitted, tf.cast(finite, tf.int32)))
        run = run._replace(
            precision=kept[0], natural_mean=kept[1], dual=kept[2], relaxation=kept[3], converged=run.converged & finite
        )
        self.ep_diagnostics.record(run)
        return run

    def _evidence_objective(self, run, evidence) -> tf.Tensor:
        """
        The training objective log Z_EP: ``evidence()`` (in ``ep_mode="nested"`` after ``run()``
        has brought the sites to the fixed point of the current hyper-parameters), recorded in
        :attr:`ep_diagnostics` as the evidence of the last loss evaluation.
        """
        if self.ep_settings.ep_mode == "nested":
            run()
        value = evidence()
        self.ep_diagnostics.record_evidence(value)
        return value


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
        if compile:  # through a lambda, as GPflow's own closure does (GPflow issue #1929)
            loss = tf.function(lambda batch: unchecked(batch), input_signature=[data.element_spec])

        def closure() -> tf.Tensor:
            batch = next(data)
            if tf.executing_eagerly():
                self.validate_training_data(batch)
            return loss(batch)

        return closure


class EPPosteriorBase(abc.ABC):
    """
    q(f*) of an EP model with its factorisation done once (the analogue of GPflow's ``posterior()``
    objects): subclasses give the latent predictive without the mean function.
    """

    def __init__(self, model):
        self.model = model

    @abc.abstractmethod
    def _predict_latent(self, Xnew: tf.Tensor, full_cov: bool):
        """(mean [N], covariance [N, N] or variance [N]) of f*(Xnew) - m(Xnew)."""

    @check_shapes(
        "Xnew: [N, D]",
        "return[0]: [N, 1]",
        "return[1]: [N, 1] if (not full_cov)",
        "return[1]: [1, N, N] if full_cov",
    )
    def predict_f(self, Xnew, full_cov: bool = False, full_output_cov: bool = False):
        Xnew = check_prediction_inputs(Xnew, model_input_dim(self.model))
        mean, cov = self._predict_latent(Xnew, full_cov)
        mean = mean[:, None] + self.model.mean_function(Xnew)
        return mean, (cov[None] if full_cov else cov[:, None])
