"""
The minibatch site refresh as an optimiser step (``gpflow_ep/optimizers/minibatch_ep.py``): the
refresh writes the state, the objectives never do, and ``fit``'s one step builds a batch's frame once
with or without a ``tf.distribute`` strategy.
"""

import warnings

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import SEPGPC
from gpflow_ep.optimizers import MinibatchEP
from gpflow_ep.training import make_dataset, make_train_step


@pytest.fixture(scope="module")
def data():
    return two_dimensional(60, seed=4)


def _model(data, **options):
    X, _ = data
    kernel = gpflow.kernels.SquaredExponential(variance=1.5, lengthscales=[0.9, 1.2])
    return SEPGPC(kernel, Probit(), X[::6].copy(), num_data=len(X), **options)


def _state(model):
    return [v.numpy().copy() for v in model.variables]


def _refreshed(data, batches):
    """A model after refreshes of ``batches`` (site indices), so that its sites and q are not zero."""
    X, Y = data
    m = _model(data)
    for idx in batches:
        MinibatchEP().step(m, (X[idx], Y[idx], idx))
    return m


def test_the_objectives_write_nothing(data):
    """
    ``maximum_log_likelihood_objective`` and ``training_loss`` of a minibatch ``(X, Y, index)`` are F_M
    at the stored state: no variable changes, two calls agree bit for bit, and the value is
    ``minibatch_objective``'s. (Before, they refreshed the batch's sites first: a loss that wrote state.)
    """
    X, Y = data
    m = _refreshed(data, [np.arange(0, 60, 2)])
    idx = np.arange(1, 60, 3)
    batch = (X[idx], Y[idx], idx)
    before = _state(m)
    first = m.maximum_log_likelihood_objective(batch).numpy()
    second = m.maximum_log_likelihood_objective(batch).numpy()
    loss = m.training_loss(batch).numpy()
    for v, b in zip(m.variables, before):
        np.testing.assert_array_equal(v.numpy(), b, err_msg=v.name)
    assert first == second == m.minibatch_objective(batch).numpy()
    np.testing.assert_allclose(loss, -(first + m.log_prior_density().numpy()), rtol=1e-15)


def test_step_is_the_models_refresh(data):
    """``MinibatchEP().step`` writes exactly what the model's ``apply_refresh(propose_refresh(batch))`` writes
    (eager and compiled)."""
    X, Y = data
    a, b = _refreshed(data, [np.arange(30)]), _refreshed(data, [np.arange(30)])
    idx = np.arange(20, 50)
    batch = (X[idx], Y[idx], idx)
    optimizer = MinibatchEP()
    assert int(optimizer.step(a, batch)) == int(b.apply_refresh(b.propose_refresh(batch)[0]).num_skipped) == 0
    for x, y in zip(a.variables, b.variables):
        np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=x.name)
    compiled = tf.function(lambda batch: optimizer.step(a, batch), autograph=False)
    idx = np.arange(0, 60, 4)
    compiled((tf.constant(X[idx]), tf.constant(Y[idx]), tf.constant(idx)))
    b.apply_refresh(b.propose_refresh((X[idx], Y[idx], idx))[0])
    for x, y in zip(a.variables, b.variables):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-13, atol=1e-13, err_msg=x.name)


def test_loss_closure_refreshes_then_returns_the_loss_at_the_refreshed_q(data):
    """
    Each call of ``loss_closure`` takes the next batch, refreshes it and returns, at the refreshed q,
    the reported loss -(log Ẑ_M + log prior) (the minibatch evidence estimate) with the gradient of
    -(F_M + log prior): on a twin, the value of ``MinibatchEP().step`` then
    ``-(minibatch_log_marginal_likelihood + log_prior_density)`` and the gradient of
    ``training_loss`` (round-off only: 1e-12 relative on the value, 1e-10 on gradients).
    """
    X, Y = data
    a, b = _refreshed(data, [np.arange(40)]), _refreshed(data, [np.arange(40)])
    batches = [np.arange(10, 34), np.arange(30, 54)]
    closure = MinibatchEP().loss_closure(a, iter([(X[i], Y[i], i) for i in batches]))
    for idx in batches:
        with tf.GradientTape() as tape:
            ours = closure()
        g_ours = tape.gradient(ours, a.trainable_variables)
        batch = (X[idx], Y[idx], idx)
        MinibatchEP().step(b, batch)
        with tf.GradientTape() as tape:
            reference = b.training_loss(batch)
        g_reference = tape.gradient(reference, b.trainable_variables)
        reported = -(b.minibatch_log_marginal_likelihood(batch) + b.log_prior_density())
        np.testing.assert_allclose(ours, reported, rtol=1e-12)
        assert abs(float(ours) - float(reference)) > 1.0  # the value is not -F_M's
        for x, y in zip(g_ours, g_reference):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
    for x, y in zip(a.sites.read(), b.sites.read()):
        np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-13)


def test_a_plain_loop_over_the_closure_trains(data):
    """The documented loop (``docs/guide/sparse_training.md``): Adam over ``loss_closure`` lowers the full-data loss."""
    X, Y = data
    m = _model(data)
    adam = tf_keras.optimizers.Adam(0.05)
    loss = MinibatchEP().loss_closure(m, iter(make_dataset((X, Y), batch_size=30, seed=0)))
    losses = []
    for _ in range(40):
        adam.minimize(loss, m.trainable_variables)
        losses.append(float(m.training_loss((X, Y, np.arange(len(X), dtype=np.int32)))))
    assert np.all(m.sites.precision.numpy() > 0.0)  # every site refreshed (probit sites are positive)
    assert losses[-1] < losses[0]


def test_errors_name_the_argument(data):
    X, Y = data
    with pytest.raises(ValueError, match="model must be a minibatch EP model"):
        MinibatchEP().step(gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), Probit(), X[:5]), (X, Y))
    m = _model(data)
    with pytest.raises(ValueError, match=r"\(X, Y, index\)"):
        MinibatchEP().loss_closure(m, (X[:10], Y[:10]))
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope(), pytest.raises(ValueError, match="replica context"):
        MinibatchEP().step(m, (X[:10], Y[:10], np.arange(10)))


def _op_count(step, batch, op_type: str) -> int:
    """``op_type`` nodes of a compiled step's graph, including its nested functions (conds, replica functions)."""
    graph_def = step.get_concrete_function(batch).graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return sum(n.op == op_type for n in nodes)


def test_one_step_for_one_device_or_several_builds_the_frame_once(data):
    """
    ``fit``'s step is one function with or without a strategy, and it factorises K_uu once: three
    Choleskys per step (K_uu, q at the stored state, q after the refresh), the same under a
    ``MirroredStrategy``. (Before, the distributed step rebuilt the frame for its gradient: four
    Choleskys, K_uu factorised twice.)
    """
    X, Y = data
    batch = next(iter(make_dataset((X, Y), 20, seed=0)))
    counts = []
    for strategy in (None, tf.distribute.MirroredStrategy(["/cpu:0"])):
        with strategy.scope() if strategy is not None else tf.name_scope("one_device"):
            m = _model(data)
            optimizer = tf_keras.optimizers.Adam(0.01)
        step = make_train_step(m, optimizer, strategy=strategy)
        counts.append(_op_count(step, batch, "Cholesky"))
    assert counts == [3, 3]


def test_the_guide_snippets_run():
    """docs/guide/sparse_training.md's two code blocks run in order (training shortened to a few steps)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "sparse_training.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 2 and "<!-- snippet: sparse-training -->" in text
    namespace = {}
    for code in blocks:
        code = code.replace("range(200)", "range(3)").replace(".take(10)", ".take(2)")
        exec(compile(code, "docs/guide/sparse_training.md", "exec"), namespace)
    assert int(namespace["model"].ep_diagnostics.refreshes.numpy()) == 5  # 3 loop steps, 2 explicit refreshes


def test_the_models_own_closure_over_minibatches_warns_that_it_does_not_refresh(data):
    """
    An SVGP loop kept unchanged (``model.training_loss_closure(batches)``) would train against the
    initial sites: the model's closure of its pure objective warns and names MinibatchEP; a single
    batch (the explicit two-step loop) and MinibatchEP's own closure do not warn.
    """
    X, Y = data
    model = _model(data)
    with pytest.warns(UserWarning, match=r"MinibatchEP\(\)\.loss_closure"):
        model.training_loss_closure(iter(make_dataset((X, Y), batch_size=20)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.training_loss_closure((X[:20], Y[:20], np.arange(20)))
        MinibatchEP().loss_closure(model, iter(make_dataset((X, Y), batch_size=20)))
