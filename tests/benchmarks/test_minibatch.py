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
