r"""
TensorBoard monitoring of EP models: ``gpflow.monitor`` tasks, so they compose with GPflow's
``Monitor``, ``MonitorTaskGroup``, ``ModelToTensorBoard`` and ``ImageToTensorBoard``, and run from
:func:`gpflow_ep.training.fit` (``monitor=``) or as the ``step_callback`` of
``gpflow.optimizers.Scipy().minimize``.

* :class:`EPDiagnosticsToTensorBoard` writes, for any model with EP sites (``EPGPC``, ``PowerEP``,
  ``RelaxedEP``, ``SEPGPC``, ``SEPMGPC``, ``SpikeSlabRegression``), the scalars

  ============================== =======================================================
  ``ep/log_marginal_likelihood`` log Z_EP (the negative EP energy) at the stored sites
                                 and the current hyper-parameters; for ``SEPGPC`` only
                                 when the task is given ``data``
  ``ep/damping``                 the damping of a batch EP run in force (the schedule's
                                 default, 0.8 parallel or 1 sequential, when not given);
                                 minibatch models add ``ep/minibatch_damping``
  ``ep/power``                   α (1 for EP)
  ``ep/converged``               once a full EP run happened (``run_ep``, the nested loss,
  ``ep/sweeps``                  ``optimizers.EP``): whether the last one met its tolerance
  ``ep/max_change``              (1/0), its sweeps (or outer iterations), the schedule's
  ``ep/skipped``                 convergence measure at its last sweep, its site updates
  ``ep/rejected``                skipped (improper cavity/tilted) and undone (q improper)
  ``ep/runs_not_converged``      runs that did not converge, and runs in which robust EP's
  ``ep/fallbacks``               double loop took over, since the diagnostics' last reset
  ``ep/refreshes``               once a minibatch refresh happened: refreshes so far, and
  ``ep/refresh_skipped``         the last refresh's skipped updates, whether it was
  ``ep/refresh_rejected``        rejected (1) and its largest site change
  ``ep/refresh_max_change``
  ============================== =======================================================

  Nothing is written for what did not happen: a model trained only by minibatch refreshes has no
  ``ep/converged`` (no full run was attempted, so none failed), and a model never refreshed has no
  ``ep/refresh_…``. Also the histograms ``ep/site_precision`` and ``ep/site_natural_mean`` (τ and ν
  of every site; not for tied sites, which keep none per point), plus ``ep/relaxation`` for relaxed EP
  (the per-site b).
* :class:`HeldOutToTensorBoard` writes ``<name>/error`` and ``<name>/nlpd`` (classification) or
  ``<name>/rmse`` and ``<name>/nlpd`` (regression) of any GPflow model on held-out data
  (:func:`gpflow_ep.evaluation.held_out_metrics`).
* :func:`ep_monitor` builds a ``gpflow.monitor.Monitor`` of both (and the model's parameters
  with ``ModelToTensorBoard``) in one line.

The tasks read the model's stored state; they never run EP. A model in ``ep_mode="nested"``
re-runs EP when it predicts, so :class:`HeldOutToTensorBoard` on such a model brings its sites to
the fixed point of the current hyper-parameters (as the next loss evaluation would).
"""

import contextlib
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
from gpflow.monitor import ModelToTensorBoard, Monitor, MonitorTaskGroup, ToTensorBoard

from .evaluation import held_out_metrics
from .models.ep_base import EPModel
from .models.minibatch import MinibatchEPModel
from .validation import check_positive_int

__all__ = [
    "EPDiagnosticsToTensorBoard",
    "HeldOutToTensorBoard",
    "PeriodicMonitor",
    "ep_monitor",
    "EP_SCALAR_TAGS",
    "EP_RUN_TAGS",
    "EP_REFRESH_TAGS",
]

#: the scalar tags of the last full EP run, written once a model had one, and their diagnostics
EP_RUN_TAGS = {
    "ep/converged": "converged",
    "ep/sweeps": "sweeps",
    "ep/max_change": "max_change",
    "ep/skipped": "num_skipped",
    "ep/rejected": "num_rejected",
    "ep/runs_not_converged": "runs_not_converged",
    "ep/fallbacks": "fallbacks",
}
#: the scalar tags of minibatch refreshes, written once a model had one, and their diagnostics
EP_REFRESH_TAGS = {
    "ep/refreshes": "refreshes",
    "ep/refresh_skipped": "refresh_skipped",
    "ep/refresh_rejected": "refresh_rejected",
    "ep/refresh_max_change": "refresh_max_change",
}
#: the scalar tags :class:`EPDiagnosticsToTensorBoard` writes for a batch EP model after a full run
EP_SCALAR_TAGS = ("ep/log_marginal_likelihood", *EP_RUN_TAGS, "ep/damping", "ep/power")


def _is_minibatch_ep(model) -> bool:
    return isinstance(model, MinibatchEPModel)


class EPDiagnosticsToTensorBoard(ToTensorBoard):
    """
    The EP diagnostics of ``model`` (module docstring) at every call.

    :param log_dir: the TensorBoard run directory.
    :param model: a model with ``ep_diagnostics``, ``ep_settings`` and ``sites``.
    :param data: for models whose evidence needs the data (``SEPGPC``: all ``(X, Y)`` in site
        order): log Z_EP is written only when given. Ignored by the others.
    :param histograms: also write the site histograms (default True).
    """

    def __init__(self, log_dir: str, model, data=None, histograms: bool = True):
        if not hasattr(model, "ep_diagnostics"):
            raise ValueError(
                f"model: {type(model).__name__} has no EP sites to monitor; use HeldOutToTensorBoard or "
                "gpflow.monitor.ModelToTensorBoard for it"
            )
        super().__init__(log_dir)
        self.model, self.data, self.histograms = model, data, histograms

    def _log_marginal_likelihood(self) -> Optional[float]:
        model = self.model
        if _is_minibatch_ep(model):
            return None if self.data is None else float(model.log_marginal_likelihood(self.data))
        return float(model.log_marginal_likelihood())

    def run(self, **unused_kwargs) -> None:
        model, step = self.model, self.current_step
        diagnostics, settings = model.ep_diagnostics, model.ep_settings
        values = diagnostics.as_dict()  # None for what did not happen (no full run, no refresh)
        log_z = self._log_marginal_likelihood()
        if log_z is not None:
            tf.summary.scalar("ep/log_marginal_likelihood", log_z, step=step)
        tf.summary.scalar("ep/damping", float(settings.damping), step=step)
        tf.summary.scalar("ep/power", float(settings.power), step=step)
        if _is_minibatch_ep(model):
            tf.summary.scalar("ep/minibatch_damping", float(model.minibatch_damping), step=step)
        for tags, count in ((EP_RUN_TAGS, "runs"), (EP_REFRESH_TAGS, "refreshes")):
            if values[count]:
                for tag, key in tags.items():
                    tf.summary.scalar(tag, float(values[key]), step=step)
        if self.histograms and model.sites.num_sites:  # tied sites keep no per-point site
            tau, nu = (t.numpy() for t in model.sites.read())
            tf.summary.histogram("ep/site_precision", tau, step=step)
            tf.summary.histogram("ep/site_natural_mean", nu, step=step)
            if settings.relaxation is not None:
                tf.summary.histogram("ep/relaxation", model.sites.relaxation.numpy(), step=step)


class HeldOutToTensorBoard(ToTensorBoard):
    """
    Error and NLPD (classification) or RMSE and NLPD (regression) of ``model`` on ``data = (X, Y)``
    as ``<name>/error`` (or ``<name>/rmse``) and ``<name>/nlpd``.

    An EP model is evaluated as it stands (:meth:`~gpflow_ep.models.ep_base.EPModel.predicting_as_stored`):
    at step 0 an unfitted one predicts from the prior without the warning its predictions give elsewhere.

    :param name: the tag prefix, e.g. "test" or "train".
    :param task: "binary", "multiclass" or "regression" (default: from the likelihood).
    """

    def __init__(self, log_dir: str, model, data, name: str = "test", task: Optional[str] = None):
        super().__init__(log_dir)
        X, Y = data
        self.model, self.X, self.Y, self.name, self.task = model, np.asarray(X), np.asarray(Y), name, task

    def run(self, **unused_kwargs) -> None:
        model = self.model  # the model as it stands: at step 0 an EP model may predict from the prior
        as_stored = model.predicting_as_stored() if isinstance(model, EPModel) else contextlib.nullcontext()
        with as_stored:
            metrics = held_out_metrics(model, self.X, self.Y, self.task)
        for key, value in metrics.items():
            tf.summary.scalar(f"{self.name}/{key}", value, step=self.current_step)


class PeriodicMonitor(Monitor):
    """
    A ``gpflow.monitor.Monitor`` of one ``MonitorTaskGroup``: ``tasks`` run at every step that is a
    multiple of ``period`` (step 0 included), and ``period`` is public, so
    :func:`gpflow_ep.training.fit` can warn when a run is shorter than it.
    """

    def __init__(self, tasks: Sequence, period: int):
        self.period = check_positive_int(period, "period")
        super().__init__(MonitorTaskGroup(list(tasks), period=self.period))


def ep_monitor(
    log_dir: str,
    model,
    *,
    test_data=None,
    train_data=None,
    period: int = 10,
    parameters: bool = True,
    extra_tasks: Sequence = (),
) -> Monitor:
    """
    A ``gpflow.monitor.Monitor`` that every ``period`` steps writes to ``log_dir``: the EP
    diagnostics (if ``model`` has EP sites; ``train_data`` gives ``SEPGPC`` its evidence),
    held-out metrics on ``test_data`` (as ``test/…``) and ``train_data`` (as ``train/…``), the
    model's parameters (``ModelToTensorBoard``, when ``parameters``), and ``extra_tasks``.
    Pass it as ``fit(..., monitor=...)`` or ``Scipy().minimize(..., step_callback=...)``; both
    write steps 0, ``period``, 2 ``period``, ... (``fit`` warns when ``period`` exceeds its steps).
    """
    tasks = list(extra_tasks)
    if hasattr(model, "ep_diagnostics"):
        tasks.append(EPDiagnosticsToTensorBoard(log_dir, model, data=train_data))
    if test_data is not None:
        tasks.append(HeldOutToTensorBoard(log_dir, model, test_data, "test"))
    if train_data is not None:
        tasks.append(HeldOutToTensorBoard(log_dir, model, train_data, "train"))
    if parameters:
        tasks.append(ModelToTensorBoard(log_dir, model))
    if not tasks:
        raise ValueError("ep_monitor: nothing to write (give test_data or train_data, or parameters=True)")
    return PeriodicMonitor(tasks, period)
