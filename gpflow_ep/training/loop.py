"""
:func:`fit`, the training loop: a loop over callbacks (:mod:`gpflow_ep.training.callbacks`) around
the compiled step (:mod:`gpflow_ep.training.step`) on the batches of :mod:`gpflow_ep.training.data`.
"""

import time
from typing import Callable, List, Optional, Sequence

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from ..progress import is_terminal
from ..validation import check_positive_int
from .callbacks import (
    AlternatedEP,
    Callback,
    CallbackList,
    Checkpointing,
    Monitoring,
    NonFiniteStepReport,
    ProgressDisplay,
)
from .data import check_batch, training_batches
from .kinds import runs_batch_ep
from .state import FitResult, TrainingState
from .step import make_train_step, run_step

__all__ = ["fit"]


def fit(
    model,
    data,
    *,
    optimizer=None,
    batch_size: Optional[int] = None,
    epochs: Optional[float] = None,
    iterations: Optional[int] = None,
    time_budget: Optional[float] = None,
    ep_every: Optional[int] = None,
    strategy: Optional[tf.distribute.Strategy] = None,
    monitor: Optional[Callable] = None,
    progress: Optional[bool] = None,
    seed: int = 0,
    train_step: Optional[Callable] = None,
    checkpoint_dir: Optional[str] = None,
    checkpoint_every: Optional[int] = None,
    callbacks: Sequence[Callback] = (),
) -> FitResult:
    """
    Train ``model`` on ``data`` (:mod:`gpflow_ep.training`: what a step does for each kind of model).

    :param data: arrays ``(X, Y)`` (minibatches are drawn with indices) or a ``tf.data.Dataset``
        of ``(X, Y, index)`` batches (``(X, Y)`` for models without minibatch EP).
    :param optimizer: a ``tf_keras`` optimiser (default Adam(0.01); :func:`paper_adadelta` is the
        SEP paper's); create it under ``strategy.scope()`` when distributing.
    :param batch_size: minibatch size (default: all data, i.e. batch gradient steps). A
        ``batch_size`` larger than the data uses all of it, as ``tf.data`` and Keras do.
    :param epochs, iterations, time_budget: stop at whichever comes first (default 1 epoch);
        ``epochs`` and ``iterations`` count from the start of training, including steps restored
        from ``checkpoint_dir``. An epoch is ceil(n / ``batch_size``) steps: every point once,
        the last batch holding the remainder (with a ``strategy``: n // ``batch_size`` steps of
        whole batches, see below). Fractional epochs are rounded up to whole steps.
    :param ep_every: for EP models that hold their data in ``ep_mode="alternated"``: run EP to
        convergence before the first step and then every this many steps (default 50). A model in
        ``ep_mode="nested"`` runs EP inside its loss at every step, so giving ``ep_every`` for it is
        a ``ValueError``; other models ignore it.
    :param strategy: a ``tf.distribute`` strategy (``MirroredStrategy`` over local devices,
        ``MultiWorkerMirroredStrategy`` over processes or machines); the batch is split over its
        replicas. Every batch is then whole (``make_dataset(drop_remainder=True)``), so each
        replica's share and the summed gradient are those of the single-device step; an epoch
        leaves out n mod ``batch_size`` points (a different random set each epoch) and ``fit``
        warns when it does.
    :param monitor: called as ``monitor(0)`` before the first step of a fresh run (the model
        before training) and ``monitor(step)`` after every step, e.g. a ``gpflow.monitor.Monitor``:
        a ``MonitorTaskGroup`` with period p then writes steps 0, p, 2p, ..., the step numbers
        GPflow's ``Scipy().minimize(..., step_callback=monitor)`` writes. ``fit`` warns when the
        period of a :func:`~gpflow_ep.monitor.ep_monitor` is longer than the run.
    :param progress: draw a progress bar (steps or time budget, elapsed time, last loss) on stderr:
        redrawn in place on a terminal, a new line every 30 s otherwise (:class:`ProgressBar`).
        ``None`` (default): only when stderr is a terminal (as Keras), so logs and CI stay quiet;
        ``True``/``False`` force it on or off.
    :param seed: the seed of the minibatch shuffling: with the same seed two runs are identical.
    :param train_step: a step from :func:`make_train_step` for this model, optimiser and
        strategy, to reuse across ``fit`` calls (each call otherwise compiles a new one, traced
        once for the batches' ``element_spec``, the last batch of an epoch included).
    :param checkpoint_dir: save the model (parameters, sites and all EP state), the optimiser and
        the step count there with a ``tf.train.CheckpointManager`` every ``checkpoint_every``
        steps (default: every epoch, or 100 steps with a Dataset) and at the end; if the directory
        already holds a checkpoint, training resumes from it: the same call after an interruption
        ends where an uninterrupted run would (same minibatches, same numbers). With a
        multi-worker strategy only the chief writes there (the others write to a temporary directory).
    :param checkpoint_every: the checkpoint interval in steps.
    :param callbacks: the user's :class:`~gpflow_ep.training.Callback` objects, called after
        ``fit``'s own (module :mod:`~gpflow_ep.training.callbacks`: ``on_train_begin(state)``,
        ``on_step_begin(step, state)``, ``on_step_end(step, state)``, ``on_train_end(state)``).

    The loss of a step (``FitResult.losses``, the progress bar) is the model's training loss; for
    sparse EP models it is the minibatch estimate of -log Z_EP - log p(θ) on the scale of the full
    data, while the gradient step follows -F_M (module docstring).

    Array data are validated before anything is compiled (``ValueError`` naming what is wrong:
    labels, shapes, NaN/Inf, empty data); batches of a user's Dataset are validated as they are
    drawn. A step whose loss or new parameters are not finite is not applied: the model keeps its
    last finite state, the step is counted in ``FitResult.rejected_steps`` and a
    :class:`NonFiniteStepWarning` is issued. EP options (power, damping, ...) are the model's
    ``ep_settings``, and ``ep_mode`` and the damping of the minibatch refresh (``minibatch_damping``)
    the model's own.
    """
    optimizer = _check_optimizer(optimizer)
    own = _own_callbacks(model, monitor, progress, _check_ep_every(model, ep_every))
    user = _check_callbacks(callbacks)
    epochs = None if epochs is None else _positive_number(epochs, "epochs")
    time_budget = None if time_budget is None else _positive_number(time_budget, "time_budget")
    batches = training_batches(model, data, batch_size, seed=seed, whole_batches=strategy is not None)
    limit = _step_limit(epochs, iterations, time_budget, batches.steps_per_epoch)
    if checkpoint_every is not None:
        checkpoint_every = check_positive_int(checkpoint_every, "checkpoint_every")
    if checkpoint_dir is not None:  # first: restoring sets the step count the others start from
        every = checkpoint_every or batches.steps_per_epoch or 100
        own.insert(0, Checkpointing(model, optimizer, checkpoint_dir, every, strategy))
    callbacks = CallbackList(own + user)

    state = TrainingState(model, FitResult(), limit, time_budget)
    result = state.result
    callbacks.on_train_begin(state)
    dataset = batches.dataset
    if result.initial_step:  # the batches the restored steps used, drawn again (same seed, same order)
        dataset = dataset.skip(result.initial_step)
    if strategy is not None:
        dataset = strategy.experimental_distribute_dataset(dataset)
    step = train_step or make_train_step(model, optimizer, strategy=strategy, batch_spec=dataset.element_spec)
    iterator, start = iter(dataset), time.perf_counter()
    while result.steps < limit and (time_budget is None or time.perf_counter() - start < time_budget):
        batch = _next_batch(iterator, first=result.steps == result.initial_step)
        if batch is None:
            break
        if batches.user_dataset and strategy is None:
            check_batch(model, batch)
        callbacks.on_step_begin(result.steps, state)
        outcome = run_step(step, batch, strategy=strategy, steps_done=result.steps, checkpoint_dir=checkpoint_dir)
        state.record(outcome, time.perf_counter() - start)
        callbacks.on_step_end(result.steps, state)
    result.seconds = time.perf_counter() - start
    if batches.steps_per_epoch:
        result.epochs = result.steps / batches.steps_per_epoch
    callbacks.on_train_end(state)
    return result


def _check_optimizer(optimizer):
    """The optimiser (default Adam(0.01)), unless it is not one (``ValueError`` naming ``optimizer``)."""
    optimizer = optimizer or tf_keras.optimizers.Adam(0.01)
    if not callable(getattr(optimizer, "apply_gradients", None)):
        raise ValueError(
            f"optimizer must be an optimiser object with apply_gradients (e.g. tf_keras.optimizers.Adam(0.01)); "
            f"got {optimizer!r}"
        )
    return optimizer


def _positive_number(value, name: str) -> float:
    """A finite number > 0 (``epochs``, ``time_budget``), else a ``ValueError`` naming it."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not np.isfinite(number) or number <= 0:
        raise ValueError(f"{name} must be a positive number; got {value!r}")
    return number


def _check_ep_every(model, ep_every: Optional[int]) -> int:
    """``ep_every`` applies to EP models that hold their data in ``ep_mode="alternated"`` (default 50)."""
    if ep_every is None:
        return 50
    ep_every = check_positive_int(ep_every, "ep_every")
    if runs_batch_ep(model) and model.ep_mode != "alternated":
        raise ValueError(
            f"ep_every: {type(model).__name__} is in ep_mode={model.ep_mode!r}: its training loss runs EP "
            "to convergence (warm-started) at every step, so fit runs no separate EP and ep_every has no effect; "
            "leave ep_every out, or build the model with ep_mode='alternated' to run EP every ep_every steps"
        )
    return ep_every


def _check_callbacks(callbacks) -> List[Callback]:
    """The user's callbacks as a list (``ValueError`` naming ``callbacks`` for anything but Callback objects)."""
    if isinstance(callbacks, Callback) or not isinstance(callbacks, (list, tuple)):
        raise ValueError(f"callbacks must be a list of gpflow_ep.training.Callback objects; got {callbacks!r}")
    for callback in callbacks:
        if not isinstance(callback, Callback):
            raise ValueError(
                "callbacks must be gpflow_ep.training.Callback objects (subclass Callback and override the hooks "
                f"you need); got {callback!r}"
            )
    return list(callbacks)


def _own_callbacks(model, monitor, progress: Optional[bool], ep_every: int) -> List[Callback]:
    """``fit``'s callbacks, in the order they are called: alternated EP, monitor, progress bar, finite guard report."""
    own: List[Callback] = []
    if runs_batch_ep(model) and model.ep_mode == "alternated":
        own.append(AlternatedEP(model, ep_every))
    if monitor is not None:
        own.append(Monitoring(monitor))
    if is_terminal() if progress is None else bool(progress):
        own.append(ProgressDisplay())
    return own + [NonFiniteStepReport()]


def _step_limit(epochs, iterations, time_budget, steps_per_epoch: Optional[int]) -> float:
    """The step count at which training stops (∞ with a time budget alone; default one epoch)."""
    if iterations is None and epochs is None and time_budget is None:
        epochs = 1
    limit = np.inf
    if iterations is not None:
        limit = check_positive_int(iterations, "iterations")
    if epochs is not None:
        if steps_per_epoch is None:
            raise ValueError("epochs needs array data (X, Y); with a Dataset give iterations or time_budget")
        limit = min(limit, int(np.ceil(epochs * steps_per_epoch)))
    return limit


def _next_batch(iterator, first: bool):
    """The next batch, None at the end of a finite dataset; a dataset without a single batch is a ``ValueError``."""
    try:
        return next(iterator)
    except (StopIteration, tf.errors.OutOfRangeError):
        if first:
            raise ValueError("data: the dataset yielded no batch (empty, or smaller than one batch)") from None
        return None
