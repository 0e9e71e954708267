"""Minibatch helpers of ``benchmarks/minibatch.py``: inducing inputs, optimisers, timed steps."""

import numpy as np
import pytest

from benchmarks import minibatch


def test_random_subset_draws_distinct_rows_in_their_order():
    X = np.arange(40.0).reshape(20, 2)
    Z = minibatch.random_subset(X, 5, seed=3)
    rows = Z[:, 0] / 2
    assert Z.shape == (5, 2) and len(set(rows)) == 5 and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(Z, X[rows.astype(int)])
    np.testing.assert_array_equal(Z, minibatch.random_subset(X, 5, seed=3))


def test_make_optimizer_reads_the_learning_rate_and_refuses_unknown_names():
    assert float(minibatch.make_optimizer("adam:0.05").learning_rate) == pytest.approx(0.05)
    assert float(minibatch.make_optimizer("adam").learning_rate) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="unknown optimiser"):
        minibatch.make_optimizer("sgd")


def test_timed_steps_take_the_median_after_the_compiling_chunk():
    calls = []
    timed = minibatch.TimedSteps(lambda batch: (calls.append(batch) or 1.0, 0, 1), iter(range(100)))
    timed.per_step = [10.0]  # the first (compiling) chunk
    timed.run(3)
    timed.run(2)
    assert calls == [0, 1, 2, 3, 4] and len(timed.per_step) == 3
    assert timed.median_per_step() == pytest.approx(np.median(timed.per_step[1:]))


class _FakeRunner:
    """A runner whose steps take ``seconds`` each (no model): for :func:`minibatch.race`'s bookkeeping."""

    def __init__(self, seconds: float):
        self.model, self.seconds, self.steps, self.train_seconds, self.per_step, self.skipped = (
            None,
            seconds,
            0,
            0.0,
            [],
            0,
        )

    def run(self, k: int) -> float:
        self.steps, self.train_seconds = self.steps + k, self.train_seconds + k * self.seconds
        self.per_step.append(self.seconds)
        return self.seconds


def test_race_trains_each_method_for_its_budget_and_times_the_side_by_side_chunks():
    runners = {"fast": _FakeRunner(0.125), "slow": _FakeRunner(0.25)}
    evaluate = lambda model: {"error": 0.5, "nll": 1.0}  # noqa: E731
    raced = minibatch.race(runners, evaluate, 3.0, 5, 10, np.inf, lambda message: None)
    fast, slow = raced["results"]["fast"], raced["results"]["slow"]
    # after the compiling step, chunks of 5 steps: 0.625 s (fast) until 3.125 s, 1.25 s (slow) until 3.75 s
    assert (fast["steps"], slow["steps"]) == (1 + 5 * 5, 1 + 3 * 5)
    assert (fast["train_seconds"], slow["train_seconds"]) == (3.125, 3.75)
    assert [len(c) for c in raced["curves"].values()] == [1 + 5, 1 + 3]
    assert fast["epochs_done"] == 2.6 and fast["epoch_time_s"] == 10 * 0.125 and slow["per_step_median_s"] == 0.25
    capped = minibatch.race({"fast": _FakeRunner(0.125)}, evaluate, 3.0, 5, 10, 11, lambda message: None)
    assert capped["results"]["fast"]["steps"] == 11


def test_minibatch_runner_counts_steps_and_seconds():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((20, 2)), (rng.random((20, 1)) > 0.5).astype(float)
    model = minibatch.sparse_model("SEP minibatch", 2, X[:3], 20)
    assert model.ep_settings.damping == minibatch.SEP_DAMPING
    runner = minibatch.MinibatchRunner(model, (X, Y), 5, "adam")
    per_step = runner.run(3)
    assert runner.steps == 3 and runner.skipped == 0 and runner.train_seconds == pytest.approx(3 * per_step)
