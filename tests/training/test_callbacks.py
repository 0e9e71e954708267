"""
gpflow_ep.training.callbacks: each of fit's callbacks on its own (driven by hand, without fit), and
fit calling a user's callbacks in the documented order.
"""

import io
import warnings

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ep.likelihoods import Probit
from gpflow_ep.monitor import PeriodicMonitor
from gpflow_ep.training import (
    AlternatedEP,
    Callback,
    Checkpointing,
    FitResult,
    Monitoring,
    NonFiniteStepReport,
    NonFiniteStepWarning,
    ProgressDisplay,
    StepResult,
    TrainingState,
    fit,
)


def _outcome(loss: float, applied: bool = True, skipped: int = 0) -> StepResult:
    return StepResult(tf.constant(loss, tf.float64), tf.constant(skipped), tf.constant(applied))


def _run_steps(callback: Callback, state: TrainingState, outcomes) -> None:
    """What fit does around each step, by hand: on_step_begin, record the outcome, on_step_end."""
    for outcome in outcomes:
        callback.on_step_begin(state.steps, state)
        state.record(outcome, elapsed=float(state.steps + 1))
        callback.on_step_end(state.steps, state)


def _svgp(data):
    (X, Y), _ = data
    return gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), Probit(), X[:5].copy(), num_data=len(X))


class _CountsRuns:
    """A stand-in for a data-holding EP model: counts run_ep() calls."""

    def __init__(self):
        self.runs = []

    def run_ep(self):
        self.runs.append(None)


def test_alternated_ep_runs_ep_before_the_first_step_and_every_n_steps():
    model = _CountsRuns()
    callback, state = AlternatedEP(model, every=3), TrainingState(model, FitResult(), limit=7)
    seen = []
    for step in range(7):
        callback.on_step_begin(step, state)
        seen.append(len(model.runs))
    assert seen == [1, 1, 1, 2, 2, 2, 3]  # before steps 1, 4 and 7 (0, 3 and 6 steps done)
    with pytest.raises(ValueError, match="^ep_every must be"):
        AlternatedEP(model, every=0)


def test_checkpointing_saves_every_n_steps_and_at_the_end_and_restores_the_step_count(data, tmp_path):
    model, optimizer = _svgp(data), tf_keras.optimizers.Adam(0.01)
    callback, state = Checkpointing(model, optimizer, str(tmp_path), every=2), TrainingState(model, FitResult())
    callback.on_train_begin(state)
    assert state.result.initial_step == state.steps == 0  # an empty directory: a fresh run
    variance = model.kernel.variance
    for value in (2.0, 3.0, 4.0):  # steps 1 (not saved), 2 (saved), 3 (saved at the end)
        variance.assign(value)
        state.record(_outcome(1.0), elapsed=0.0)
        callback.on_step_end(state.steps, state)
        if state.steps == 2:
            assert tf.train.latest_checkpoint(str(tmp_path)).endswith("-2")
    callback.on_train_end(state)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("-3")
    variance.assign(10.0)
    resumed = TrainingState(model, FitResult())
    Checkpointing(model, optimizer, str(tmp_path), every=2).on_train_begin(resumed)
    assert resumed.result.initial_step == resumed.steps == 3
    np.testing.assert_allclose(variance.numpy(), 4.0, rtol=1e-15)


def test_monitoring_writes_step_0_of_a_fresh_run_and_every_step_and_warns_about_a_long_period():
    written = []
    callback = Monitoring(written.append)
    state = TrainingState(None, FitResult(), limit=3)
    callback.on_train_begin(state)
    _run_steps(callback, state, [_outcome(1.0)] * 3)
    callback.on_train_end(state)
    assert written == [0, 1, 2, 3]
    resumed = TrainingState(None, FitResult(steps=3, initial_step=3), limit=5)
    callback.on_train_begin(resumed)  # a resumed run: no step 0
    assert written == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="^monitor must be callable"):
        Monitoring(5)
    periodic = Monitoring(PeriodicMonitor([], period=10))
    with pytest.warns(UserWarning, match=r"monitor: its period \(10 steps\) is longer than this run \(steps 1 to 4\)"):
        periodic.on_train_begin(TrainingState(None, FitResult(), limit=4))
    timed = TrainingState(None, FitResult(steps=4), limit=np.inf, time_budget=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        periodic.on_train_begin(timed)  # the length of a run limited by time is known at its end only
    with pytest.warns(UserWarning, match=r"steps 1 to 4\), so it writes only step 0"):
        periodic.on_train_end(timed)


def test_progress_display_draws_the_steps_and_the_last_loss():
    stream = io.StringIO()
    callback, state = ProgressDisplay(stream), TrainingState(None, FitResult(), limit=4)
    callback.on_train_begin(state)
    _run_steps(callback, state, [_outcome(v) for v in (4.0, 3.0, 2.0, 1.5)])
    state.result.seconds = 4.0
    callback.on_train_end(state)
    lines = stream.getvalue().splitlines()  # not a terminal: the first update, then the final line
    assert lines[0].startswith("|" + "#" * 8 + "." * 22 + "|  25% step 1/4") and lines[0].endswith("loss 4")
    assert lines[-1].startswith("|" + "#" * 30 + "| 100% step 4/4") and lines[-1].endswith("loss 1.5")


def test_non_finite_step_report_counts_the_steps_not_applied_and_warns():
    callback, state = NonFiniteStepReport(), TrainingState(None, FitResult(), limit=4)
    _run_steps(callback, state, [_outcome(1.0), _outcome(np.nan, applied=False), _outcome(1.0), _outcome(0.5)])
    assert state.result.rejected_steps == 1 and state.steps == 4
    with pytest.warns(NonFiniteStepWarning, match="1 of 4 steps were not applied"):
        callback.on_train_end(state)
    clean = TrainingState(None, FitResult(), limit=1)
    _run_steps(callback, clean, [_outcome(1.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        callback.on_train_end(clean)


class _Recorder(Callback):
    def __init__(self):
        self.events = []

    def on_train_begin(self, state):
        self.events.append(("begin", state.steps))

    def on_step_begin(self, step, state):
        self.events.append(("step_begin", step))

    def on_step_end(self, step, state):
        self.events.append(("step_end", step, state.last_loss))

    def on_train_end(self, state):
        self.events.append(("end", state.steps, state.result.seconds > 0))


def test_fit_calls_a_users_callbacks_in_order_and_refuses_other_objects(data):
    (X, Y), _ = data
    model, recorder = _svgp(data), _Recorder()
    result = fit(model, (X, Y), batch_size=100, iterations=3, callbacks=[recorder])
    losses = result.losses
    assert recorder.events == [
        ("begin", 0),
        ("step_begin", 0),
        ("step_end", 1, losses[0]),
        ("step_begin", 1),
        ("step_end", 2, losses[1]),
        ("step_begin", 2),
        ("step_end", 3, losses[2]),
        ("end", 3, True),
    ]
    for bad in (recorder, [print], "callback"):
        with pytest.raises(ValueError, match="^callbacks must be"):
            fit(model, (X, Y), batch_size=100, iterations=1, callbacks=bad)


def test_the_monitoring_guides_callback_runs(data, tmp_path, monkeypatch):
    """docs/guide/monitoring.md's own callback, as written (one epoch): it writes the loss of every step."""
    import re
    from pathlib import Path

    from gpflow_ep.models import SEPGPC

    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "monitoring.md"
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", page.read_text(), re.S) if "class LossToTensorBoard" in b]
    (X, Y), _ = data
    model = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:10].copy(), num_data=len(X))
    monkeypatch.chdir(tmp_path)
    exec(compile(code.replace("epochs=10", "epochs=1"), str(page), "exec"), dict(model=model, X=X, Y=Y))
    events = [str(p) for p in (tmp_path / "runs" / "loss").rglob("events.out.tfevents*")]
    steps = [e.step for path in events for e in tf.compat.v1.train.summary_iterator(path) if e.summary.value]
    assert steps == [1, 2]  # 400 points in batches of 200
