"""
What every EP model shares: its sites, settings and diagnostics, and the wiring of the one EP
engine (schedule dispatch, evidence). A model adds only its posterior algebra
(:class:`~gpflow_ep.ep.SiteAlgebra`) and the factors of its sites.
"""

import abc
import functools
import weakref

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_float

from ..ep import EPRun, EPSettings, LikelihoodFactor, SiteAlgebra, SiteParameters, ep_log_marginal_likelihood, run_ep
from ..validation import check_inputs
from .diagnostics import EPDiagnostics


class compiled_per_model:
    """
    ``@tf.function(autograph=False)`` for a model method, with one traced function per model
    instead of one per class. A model traces its EP run once per EP setting; TensorFlow counts
    tracings per *code object* and warns ("triggered tf.function retracing") after five, which a
    script with a few models would hit although nothing retraces needlessly. So each model's
    function gets its own code object (the method's, renamed ``<method>_<model id>``). The
    functions are held weakly, so they go with their model.
    """

    def __init__(self, method):
        self.method = method
        self._functions: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, method)

    def __get__(self, model, owner=None):
        if model is None:
            return self
        function = self._functions.get(model)
        if function is None:
            method, ref = self.method, weakref.ref(model)

            def call(*args):
                return method(ref(), *args)

            call.__code__ = call.__code__.replace(co_name=f"{self.method.__name__}_{id(model):x}")
            function = tf.function(call, autograph=False)
            self._functions[model] = function
        return function


class EPModel:
    """
    Base (mixin) of the GPflow models whose likelihood terms are EP sites (``self.likelihood`` is
    a GPflow likelihood): they have ``sites``, ``ep_settings`` (:class:`~gpflow_ep.ep.EPSettings`),
    ``ep_diagnostics`` and ``run_ep``. Subclasses call :meth:`_init_ep` from ``__init__``.
    """

    #: "sites": predict from q; "dual": mean from the per-site statistics (see ``PowerEP``)
    predict_with = "sites"

    def _init_ep(self, num_sites: int, settings: EPSettings) -> None:
        self.ep_settings = settings
        self.sites = SiteParameters(num_sites)
        self.ep_diagnostics = EPDiagnostics()

    def _factor(self, X, Y, extra_var=None) -> LikelihoodFactor:
        return LikelihoodFactor(self.likelihood, X, Y, extra_var)

    def _run_schedule(self, algebra: SiteAlgebra, factor: LikelihoodFactor, settings: EPSettings) -> EPRun:
        """Run ``settings.schedule`` from the stored sites and store the outcome on the model."""
        tau, nu = self.sites.read()
        run = run_ep(algebra, factor, tau, nu, settings)
        self.sites.assign(run.precision, run.natural_mean)
        self.sites.dual.assign(run.dual)
        self.sites.relaxation.assign(run.relaxation)
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

    def _evidence(self, log_normaliser_ratio, mean, var, precision, centred_natural_mean, factor, offset, proper):
        """
        The (power-)EP energy of :mod:`gpflow_ep.ep.energy` for the model's settings; -∞ when q is
        improper (possible only away from a fixed point), which has no evidence.
        """
        log_z, _ = ep_log_marginal_likelihood(
            log_normaliser_ratio, mean, var, precision, centred_natural_mean, factor, self.ep_settings, offset=offset
        )
        return tf.where(proper, log_z, tf.constant(-float("inf"), log_z.dtype))


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
        if tf.executing_eagerly():
            check_inputs(Xnew, "Xnew")
        Xnew = tf.convert_to_tensor(Xnew, default_float())
        mean, cov = self._predict_latent(Xnew, full_cov)
        mean = mean[:, None] + self.model.mean_function(Xnew)
        return mean, (cov[None] if full_cov else cov[:, None])
