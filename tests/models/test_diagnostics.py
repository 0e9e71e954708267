"""
EPDiagnostics (gpflow_ep.models.diagnostics): every group of values comes with a count, and what was
not attempted is reported as not attempted, never as a failure or a NaN.
"""

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC, SEPGPC
from gpflow_ep.models.diagnostics import EPDiagnostics
from gpflow_ep.optimizers import MinibatchEP
from gpflow_ep.training import make_dataset


def _kernel():
    return gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0])


def test_after_the_readmes_minibatch_loop_the_diagnostics_report_the_refreshes_and_no_run():
    """The README's SVGP → SEPGPC loop (MinibatchEP().loss_closure over make_dataset batches, Adam): only
    refreshes happened, so nothing about a full run (no converged=False, no NaN evidence) is reported."""
    X, Y = two_dimensional(60, seed=4)
    model = SEPGPC(_kernel(), Probit(), X[:8].copy(), num_data=len(X))
    loss = MinibatchEP().loss_closure(model, iter(make_dataset((X, Y), batch_size=20, seed=0)))
    optimizer = tf_keras.optimizers.Adam(0.01)
    for _ in range(5):
        optimizer.minimize(loss, model.trainable_variables)
    values = model.ep_diagnostics.as_dict()
    assert values["refreshes"] == 5 and values["runs"] == 0
    assert values["refresh_max_change"] > 0.0 and values["refresh_skipped"] == values["refresh_skipped_total"] == 0
    for name in ("converged", "sweeps", "max_change", "num_skipped", "num_rejected"):
        assert values[name] is None, name
    text = repr(model.ep_diagnostics)
    assert "minibatch refreshes=5" in text and "no full EP run" in text
    assert "nan" not in text and "converged" not in text and "\n" not in text


def test_a_full_run_is_reported_with_its_outcome():
    X, Y = two_dimensional(40, seed=1)
    model = SEPGPC(_kernel(), Probit(), X[:8].copy(), num_data=len(X))
    run = model.run_ep((X, Y))
    values = model.ep_diagnostics.as_dict()
    assert values["runs"] == 1 and values["converged"] is True and values["sweeps"] == int(run.sweeps)
    assert values["refreshes"] == 0 and values["refresh_max_change"] is None
    text = repr(model.ep_diagnostics)
    assert "full EP runs=1" in text and "converged=True" in text and "refresh" not in text


def test_a_fresh_model_has_nothing_to_report():
    X, Y = two_dimensional(20, seed=1)
    diagnostics = EPGPC((X, Y), _kernel(), Probit()).ep_diagnostics
    assert repr(diagnostics) == "EPDiagnostics(nothing yet: no full EP run, no minibatch refresh)"
    assert [k for k, v in diagnostics.as_dict().items() if v is not None] == ["runs", "refreshes"]


def test_the_nested_loss_records_its_ep_runs_and_nothing_else():
    """Each evaluation of a nested EPGPC's loss runs EP once (recorded as a run); the evaluation of the
    objective itself records nothing: in alternated mode the loss leaves every EP state variable as it was."""
    X, Y = two_dimensional(30, seed=2)
    model = EPGPC((X, Y), _kernel(), Probit())
    model.training_loss()
    model.training_loss()
    assert model.ep_diagnostics.as_dict()["runs"] == 2
    alternated = EPGPC((X, Y), _kernel(), Probit(), ep_mode="alternated")
    alternated.run_ep()
    before = [v.numpy().copy() for v in alternated.ep_state.variables]
    alternated.training_loss()
    for a, b in zip(before, alternated.ep_state.variables):
        np.testing.assert_array_equal(a, b.numpy())


def test_refresh_totals_count_every_refresh():
    """The last refresh's values and the totals over all of them (a rejected refresh skips its whole batch)."""
    diagnostics = EPDiagnostics()
    diagnostics.record_refresh(tf.constant(3), tf.constant(0.5, tf.float64), tf.constant(False))
    diagnostics.record_refresh(tf.constant(20), tf.constant(0.0, tf.float64), tf.constant(True))
    diagnostics.record_refresh(tf.constant(0), tf.constant(1e-3, tf.float64), tf.constant(False))
    values = diagnostics.as_dict()
    assert values["refreshes"] == 3 and values["refresh_skipped"] == 0 and values["refresh_rejected"] == 0
    assert values["refresh_skipped_total"] == 23 and values["refreshes_rejected"] == 1
    np.testing.assert_equal(values["refresh_max_change"], 1e-3)
    text = repr(diagnostics)
    assert "all refreshes: skipped 23 updates, rejected 1" in text and "no full EP run" in text
