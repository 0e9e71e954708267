"""
The callbacks of :func:`~gpflow_ep.training.fit`, in the manner of Keras and GPflux: ``fit``'s loop
draws a batch, calls every callback's :meth:`Callback.on_step_begin`, runs the compiled step,
records its outcome in the :class:`~gpflow_ep.training.TrainingState` and calls
:meth:`Callback.on_step_end`; :meth:`Callback.on_train_begin` and :meth:`Callback.on_train_end`
frame the run. Everything else ``fit`` does is one of these:

* :class:`AlternatedEP` — EP to convergence every ``ep_every`` steps (``ep_mode="alternated"``);
* :class:`Checkpointing` — restore at the start, save every ``checkpoint_every`` steps and at the end;
* :class:`Monitoring` — a ``monitor(step)`` callable (a ``gpflow.monitor.Monitor``) at step 0 and after every step;
* :class:`ProgressDisplay` — the progress bar;
* :class:`NonFiniteStepReport` — counts the steps the finite guard undid and warns about them.

A callback of the user's (``fit(..., callbacks=[...])``) subclasses :class:`Callback` and overrides
the hooks it needs; ``fit`` calls them after its own, in the order given. A callback may read the
model and the state; it should not change the step count.
"""

import warnings
from typing import Callable, Optional, Sequence

import numpy as np

from ..monitor import PeriodicMonitor
from ..progress import ProgressBar
from ..validation import check_positive_int
from .checkpoint import TrainingCheckpoint
from .state import TrainingState

__all__ = [
    "AlternatedEP",
    "Callback",
    "CallbackList",
    "Checkpointing",
    "Monitoring",
    "NonFiniteStepReport",
    "NonFiniteStepWarning",
    "ProgressDisplay",
]


class NonFiniteStepWarning(UserWarning):
    """Some training steps were not applied because their loss or new parameters were not finite."""


class Callback:
    """
    The protocol of ``fit``'s callbacks; every hook does nothing unless overridden. ``step`` counts
    from the start of training (steps restored from a checkpoint included): in
    :meth:`on_step_begin` the steps done before this one, in :meth:`on_step_end` the steps done
    with it (so the first step of a fresh run is ``on_step_begin(0)``, ``on_step_end(1)``).
    """

    def on_train_begin(self, state: TrainingState) -> None:
        """Before the first step (after the data are checked and the step is built)."""

    def on_step_begin(self, step: int, state: TrainingState) -> None:
        """Before step ``step + 1`` runs, once its batch is drawn."""

    def on_step_end(self, step: int, state: TrainingState) -> None:
        """After a step ran and ``state`` recorded it (``state.outcome``, ``state.result``)."""

    def on_train_end(self, state: TrainingState) -> None:
        """After the last step (``state.result`` complete but for what later callbacks add)."""


class CallbackList(Callback):
    """Callbacks called in order, as one."""

    def __init__(self, callbacks: Sequence[Callback]):
        self.callbacks = list(callbacks)

    def on_train_begin(self, state: TrainingState) -> None:
        for callback in self.callbacks:
            callback.on_train_begin(state)

    def on_step_begin(self, step: int, state: TrainingState) -> None:
        for callback in self.callbacks:
            callback.on_step_begin(step, state)

    def on_step_end(self, step: int, state: TrainingState) -> None:
        for callback in self.callbacks:
            callback.on_step_end(step, state)

    def on_train_end(self, state: TrainingState) -> None:
        for callback in self.callbacks:
            callback.on_train_end(state)


#: the stack level of fit's caller for a warning issued in a hook that fit calls through its CallbackList
_FIT_CALLER = 4


class AlternatedEP(Callback):
    """
    Alternated EP for a model that holds its data (``ep_mode="alternated"``): ``model.run_ep()``
    (EP to convergence at the current hyper-parameters, warm-started from the stored sites) before
    the first step and then every ``every`` steps, i.e. before each step whose number of steps done
    is a multiple of ``every``; the gradient steps in between use the stored sites.
    """

    def __init__(self, model, every: int = 50):
        self.model, self.every = model, check_positive_int(every, "ep_every")

    def on_step_begin(self, step: int, state: TrainingState) -> None:
        if step % self.every == 0:
            self.model.run_ep()


class Checkpointing(Callback):
    """
    Saves the model (parameters, sites and all EP state), the optimiser and the step count to
    ``directory`` every ``every`` steps and at the end (:class:`~gpflow_ep.training.checkpoint.TrainingCheckpoint`);
    at the start restores the directory's latest checkpoint, if any, and sets the state's step
    count (``result.initial_step``) to it, so that the same ``fit`` call resumes an interrupted run.
    """

    def __init__(self, model, optimizer, directory: str, every: int, strategy=None):
        self.checkpoint = TrainingCheckpoint(model, optimizer, directory, strategy)
        self.every = check_positive_int(every, "checkpoint_every")

    def on_train_begin(self, state: TrainingState) -> None:
        state.result.initial_step = state.result.steps = self.checkpoint.restore()

    def on_step_end(self, step: int, state: TrainingState) -> None:
        if step % self.every == 0:
            self.checkpoint.save(step)

    def on_train_end(self, state: TrainingState) -> None:
        if state.steps % self.every != 0:
            self.checkpoint.save(state.steps)


class Monitoring(Callback):
    """
    Calls ``monitor(0)`` before the first step of a fresh run (the model before training, as
    ``Scipy().minimize(..., step_callback=monitor)`` writes a step 0) and ``monitor(step)`` after
    every step. Warns when a :class:`~gpflow_ep.monitor.PeriodicMonitor`'s period is longer than
    the run (at the start, or at the end of a run limited by time only).
    """

    def __init__(self, monitor: Callable[[int], None]):
        if not callable(monitor):
            raise ValueError(
                f"monitor must be callable as monitor(step), e.g. a gpflow.monitor.Monitor; got {monitor!r}"
            )
        self.monitor = monitor

    def on_train_begin(self, state: TrainingState) -> None:
        self.warn_if_never_runs(state.result.initial_step, state.limit)
        if state.result.initial_step == 0:
            self.monitor(0)

    def on_step_end(self, step: int, state: TrainingState) -> None:
        self.monitor(step)

    def on_train_end(self, state: TrainingState) -> None:
        if not np.isfinite(state.limit):  # a time budget: the run's length is known now
            self.warn_if_never_runs(state.result.initial_step, state.steps)

    def warn_if_never_runs(self, first_step: int, last_step: float) -> None:
        """Warn when a :class:`~gpflow_ep.monitor.PeriodicMonitor` runs at no step of ``(first_step, last_step]``."""
        if not isinstance(self.monitor, PeriodicMonitor) or not np.isfinite(last_step):
            return
        period = self.monitor.period
        if int(last_step) // period > first_step // period:
            return
        writes = "only step 0 (the model before training)" if first_step == 0 else "nothing"
        warnings.warn(
            f"monitor: its period ({period} steps) is longer than this run (steps {first_step + 1} to "
            f"{int(last_step)}), so it writes {writes}; give a smaller period or more iterations/epochs",
            UserWarning,
            stacklevel=_FIT_CALLER + 1,
        )


class ProgressDisplay(Callback):
    """
    A :class:`~gpflow_ep.progress.ProgressBar` on ``stream`` (default stderr): steps of the state's
    ``limit`` or time of its ``time_budget``, elapsed time and the latest step's loss.
    """

    def __init__(self, stream=None):
        self.stream = stream
        self.bar: Optional[ProgressBar] = None

    def on_train_begin(self, state: TrainingState) -> None:
        self.bar = ProgressBar(state.limit, state.time_budget, stream=self.stream)

    def on_step_end(self, step: int, state: TrainingState) -> None:
        self.bar.update(step, state.last_loss, state.elapsed)

    def on_train_end(self, state: TrainingState) -> None:
        self.bar.close(state.steps, state.last_loss, state.result.seconds)


class NonFiniteStepReport(Callback):
    """
    The finite guard's report: counts in ``result.rejected_steps`` the steps whose outcome says
    they were not applied (their loss or new parameters were not finite, so the compiled step
    restored the model and the optimiser) and issues a :class:`NonFiniteStepWarning` at the end
    when there were any.
    """

    def on_step_end(self, step: int, state: TrainingState) -> None:
        outcome = state.outcome
        state.result.rejected_steps += int(len(outcome) > 2 and not bool(outcome[2]))

    def on_train_end(self, state: TrainingState) -> None:
        result = state.result
        if result.rejected_steps:
            warnings.warn(
                f"fit: {result.rejected_steps} of {len(result.losses)} steps were not applied because their loss or "
                "new parameters were not finite; the model kept its last finite state (try a smaller learning rate)",
                NonFiniteStepWarning,
                stacklevel=_FIT_CALLER,
            )
