r"""
Training and evaluation of one model of a comparison.

Each model is trained by L-BFGS-B on its training loss through GPflow's ``Scipy`` optimiser
(its compiled loss-and-gradient, ``Scipy.eval_func``) until L-BFGS-B's own convergence test
holds, at most ``maxiter`` iterations; the row says whether it converged and why it stopped.
The training loss is −(objective + log p(θ)), the model's objective (the table's) and the log
density of the hyper-priors. After every iteration a callback draws the progress bar, which shows
the objective at the iterate (the training loss without the hyper-prior: the table's number, which
its last line shows) and, every ``log_every`` iterations, writes TensorBoard summaries
(``train/loss``, the EP diagnostics of :mod:`gpflow_ep.monitor`, ``test/…`` metrics); the time spent
in the callback is not counted as training time. An EP model is then brought to the EP fixed point
of its final hyper-parameters before it is evaluated; the row's ``ep_converged`` says whether every
full EP run converged, those inside the training loss and this last one
(``ep_diagnostics.runs_not_converged`` is 0), not only the last.
"""

import math
import sys
import time
from pathlib import Path
from typing import Optional

import gpflow
import numpy as np
import scipy.optimize
import tensorflow as tf

from ..evaluation import held_out_metrics
from ..models import SEPGP
from ..monitor import EPDiagnosticsToTensorBoard, HeldOutToTensorBoard
from ..progress import ProgressBar
from .data import TaskData
from .models import MODELS, apply_prior, build_model, hyperparameters, kernel_summary, objective

__all__ = ["train_one", "stop_reason", "every_ep_run_converged"]


class _Callback:
    """Progress bar and TensorBoard summaries after every L-BFGS-B iteration (module docstring)."""

    def __init__(self, name, model, td: TaskData, maxiter, log_dir, log_every, progress):
        self.step, self.seconds, self.last_loss, self.log_every = 0, 0.0, math.nan, log_every
        self.model = model
        self.bar = ProgressBar(maxiter, None, width=20, quantity="objective") if progress else None
        self.start = time.perf_counter()
        self.tasks = []
        if log_dir is not None:
            run_dir = str(Path(log_dir) / name)
            self.writer = tf.summary.create_file_writer(run_dir)
            test = (td.split.X_test, td.labels(td.split.Y_test))
            if hasattr(model, "ep_diagnostics"):
                data = (td.split.X_train, td.split.Y_train) if isinstance(model, SEPGP) else None
                self.tasks.append(EPDiagnosticsToTensorBoard(run_dir, model, data=data, histograms=True))
            self.tasks.append(HeldOutToTensorBoard(run_dir, model, test, "test", td.task))

    def __call__(self, x) -> None:
        begin = time.perf_counter()
        self.step += 1
        if self.tasks and (self.step % self.log_every == 0 or self.step == 1):
            with self.writer.as_default():
                tf.summary.scalar("train/loss", self.last_loss, step=self.step)
            self.writer.flush()
            for task in self.tasks:
                task(self.step)
        if self.bar is not None:
            self.bar.update(self.step, self.objective(), time.perf_counter() - self.start)
        self.seconds += time.perf_counter() - begin

    def objective(self) -> float:
        """The objective at the last evaluated parameters: −(training loss) − log p(θ) (module docstring)."""
        return -self.last_loss - float(self.model.log_prior_density())

    def close(self, result: scipy.optimize.OptimizeResult, objective: float) -> None:
        """
        Finish the bar with the row's ``objective`` and L-BFGS-B's outcome (``stop_reason``), also
        when it stopped before ``maxiter``.
        """
        if self.bar is not None:
            self.bar.close(self.step, objective, time.perf_counter() - self.start, stop_reason(result))


def stop_reason(result: scipy.optimize.OptimizeResult) -> str:
    """Why L-BFGS-B stopped, in words: "converged (L-BFGS-B: <scipy's message>)" or "stopped (…)"."""
    return f"{'converged' if result.success else 'stopped'} (L-BFGS-B: {result.message})"


def _minimise(loss, variables, maxiter: int, callback: _Callback):
    """L-BFGS-B on GPflow's compiled loss and gradient; the callback sees every accepted iterate."""
    optimizer = gpflow.optimizers.Scipy()
    func = optimizer.eval_func(loss, variables, tf_fun_args={}, compile=True)

    def recorded(x):
        value, grad = func(x)
        callback.last_loss = float(value)
        return value, grad

    x0 = optimizer.initial_parameters(variables).numpy()
    result = scipy.optimize.minimize(
        recorded, x0, jac=True, method="L-BFGS-B", callback=callback, options=dict(maxiter=int(maxiter))
    )
    optimizer.assign_tensors(variables, optimizer.unpack_tensors(variables, result.x))
    return result


def _to_fixed_point(model, td: TaskData) -> None:
    """Bring an EP model's sites to the fixed point of its final hyper-parameters (a model without EP: nothing)."""
    if not (hasattr(model, "ep_diagnostics") and hasattr(model, "run_ep")):
        return
    if isinstance(model, SEPGP):
        model.run_ep((td.split.X_train, td.split.Y_train))
    else:
        model.run_ep()


def every_ep_run_converged(model) -> Optional[bool]:
    """
    Whether every full EP run of ``model`` converged (``ep_diagnostics.runs_not_converged`` is 0): those
    inside its training loss and the run to the fixed point, not only the last; ``None`` without EP runs.
    """
    diagnostics = getattr(model, "ep_diagnostics", None)
    if diagnostics is None or int(diagnostics.runs.numpy()) == 0:
        return None
    return int(diagnostics.runs_not_converged.numpy()) == 0


def train_one(
    name: str,
    td: TaskData,
    *,
    num_inducing: int = 50,
    maxiter: int = 1000,
    seed: int = 0,
    prior: str = "lognormal",
    log_dir=None,
    log_every: int = 5,
    progress: bool = False,
):
    """
    Build model ``name`` for ``td``, train it (module docstring) and evaluate it on the test part.

    :return: ``(row, model)``, the trained model and its result row: the model, task and data;
        test metrics (``test_error`` or ``test_rmse``, in the target's units, and ``test_nlpd``, with
        ``test_nlpd_se`` the standard error of that mean over the test points);
        ``train_time_s`` (wall clock of the optimisation, tf.function compilation included,
        monitoring excluded); the objective and its kind; ``iterations``, ``converged`` and
        ``stop_reason`` of L-BFGS-B; for EP models ``ep_diagnostics`` and ``ep_converged``, whether
        every full EP run converged (:func:`every_ep_run_converged`); the learned ``hyperparameters``
        and a ``kernel`` summary.
    """
    tf.random.set_seed(seed)
    model, loss = build_model(name, td, num_inducing, seed)
    apply_prior(model, prior, td.split.X_train.shape[1])
    if progress:
        print(f"{name}:", file=sys.stderr)
    callback = _Callback(name, model, td, maxiter, log_dir, log_every, progress)
    start = time.perf_counter()
    result = _minimise(loss, model.trainable_variables, maxiter, callback)
    wall = time.perf_counter() - start
    _to_fixed_point(model, td)
    test = (td.split.X_test, td.labels(td.split.Y_test))
    metrics = held_out_metrics(model, *test, td.task)
    log_density = np.asarray(model.predict_log_density(test)).ravel()  # the units' shift is a constant
    nlpd_se = float(np.std(log_density, ddof=1) / math.sqrt(log_density.size)) if log_density.size > 1 else math.nan
    if td.task == "regression":  # back to the target's units
        metrics = {"rmse": metrics["rmse"] * td.y_scale, "nlpd": metrics["nlpd"] + math.log(td.y_scale)}
    row = {
        "model": name,
        "task": td.task,
        **{f"test_{k}": float(v) for k, v in metrics.items()},
        "test_nlpd_se": nlpd_se,
        "train_time_s": float(wall - callback.seconds),
        "objective": objective(model, td),
        "objective_kind": MODELS[td.task][name].objective_kind,
        "iterations": int(result.nit),
        "converged": bool(result.success),
        "stop_reason": stop_reason(result),
        "ep_converged": every_ep_run_converged(model),
        "kernel": kernel_summary(model),
        "hyperparameters": hyperparameters(model),
        "prior": prior,
        "dataset": td.split.name,
        "source": td.source,
        "split": int(td.split.split),
        "num_train": int(td.split.X_train.shape[0]),
        "num_test": int(td.split.X_test.shape[0]),
        "input_dim": int(td.split.X_train.shape[1]),
    }
    if hasattr(model, "ep_diagnostics"):
        row["ep_diagnostics"] = model.ep_diagnostics.as_dict()
    if hasattr(model, "inducing_variable"):
        row["num_inducing"] = int(model.inducing_variable.num_inducing)
    callback.close(result, row["objective"])
    if log_dir is not None:  # the final state, after the EP fixed point
        for task in callback.tasks:
            task(callback.step + 1)
    return row, model
