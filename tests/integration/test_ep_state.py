"""
Where EP models keep their EP state (gpflow_ep.models.ep_state): ``print_summary(model)`` reads like a
GPflow model's (its Parameters only), ``print_summary(model.ep_state)`` / ``ep_state_summary()`` show
the state, and the state stays in ``model.variables`` and in checkpoints, restored bit for bit.
(deepcopy, freeze and saved_model export: tests/models/test_persistence.py.)
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import MultiClassStep, Probit
from gpflow_ep.models import DGPAEP, EPGPC, SEPGP, SEPGPC, SEPMGPC, SpikeSlabRegression

N = 30
MODELS = ["EPGPC", "SEPGPC", "SEPMGPC", "DGPAEP", "SpikeSlabRegression"]


@pytest.fixture(scope="module")
def data():
    return two_dimensional(N, seed=6)


def build(name, X, Y):
    kernel = gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0])
    if name == "EPGPC":
        return EPGPC((X, Y), kernel, Probit())
    if name == "SEPGPC":
        return SEPGPC(kernel, Probit(), X[:6].copy(), num_data=N)
    if name == "SEPMGPC":
        return SEPMGPC(kernel, MultiClassStep(2), X[:6].copy(), num_data=N)
    if name == "DGPAEP":
        return DGPAEP.from_data(X, Y, widths=[2, 1], num_inducing=6, likelihood=Probit())
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(N, 4))
    return SpikeSlabRegression((Xs, Xs[:, :1] + 0.1 * rng.normal(size=(N, 1))), 0.01, 1.0, 0.3)


def run_ep(model, X, Y):
    if isinstance(model, SEPGP):
        model.run_ep((X, Y))
    elif hasattr(model, "run_ep"):
        model.run_ep()


def _summary_rows(module):
    return dict(gpflow.utilities.leaf_components(module))


@pytest.mark.parametrize("name", MODELS)
def test_print_summary_lists_the_parameters_and_no_ep_state(data, name):
    X, Y = data
    model = build(name, X, Y)
    run_ep(model, X, Y)
    rows = gpflow.utilities.leaf_components(model)
    assert all(isinstance(v, gpflow.Parameter) for v in rows.values()), [p for p, v in rows.items()]
    assert {id(v) for v in rows.values()} == {id(p) for p in model.parameters}
    table = gpflow.utilities.tabulate_module_summary(model)
    assert "ResourceVariable" not in table and "sites" not in table


@pytest.mark.parametrize("name", [n for n in MODELS if n != "DGPAEP"])
def test_the_ep_state_is_one_module_with_its_own_summary(data, name):
    X, Y = data
    model = build(name, X, Y)
    run_ep(model, X, Y)
    state = model.ep_state
    assert state.sites is model.sites and state.diagnostics is model.ep_diagnostics
    rows = _summary_rows(state)
    assert f"{type(state).__name__}.sites.precision" in rows and f"{type(state).__name__}.diagnostics.runs" in rows
    assert not any(v.trainable for v in rows.values())
    summary = model.ep_state_summary()
    assert "sites.precision" in summary and "diagnostics.converged" in summary
    if isinstance(model, SEPGP):
        names = ("posterior_precision", "posterior_shift", "site_directions")  # SparseEPState: q(u) and directions
        assert {f"{type(state).__name__}.{name}" for name in names} <= set(rows)
    # still the model's variables (tf.Module), so code that saves or restores model.variables keeps the state
    assert {id(v) for v in state.variables} <= {id(v) for v in model.variables}
    assert not {id(v) for v in state.variables} & {id(v) for v in model.trainable_variables}


@pytest.mark.parametrize("name", [n for n in MODELS if n != "DGPAEP"])
def test_checkpoint_restores_the_ep_state_bit_for_bit(data, name, tmp_path):
    X, Y = data
    model = build(name, X, Y)
    run_ep(model, X, Y)
    saved = [v.numpy().copy() for v in model.ep_state.variables]
    assert saved and any(np.any(s != 0) for s in saved)
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    fresh = build(name, X, Y)
    tf.train.Checkpoint(model=fresh).restore(path).assert_consumed()
    assert len(fresh.ep_state.variables) == len(saved)
    for value, variable in zip(saved, fresh.ep_state.variables):
        np.testing.assert_array_equal(value, variable.numpy(), err_msg=variable.name)
