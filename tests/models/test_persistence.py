"""
Exact persistence of every trainable model the package offers (EPGPC, SEPGPC, SEPMGPC, DGPAEP and
GPflow's SVGP with the hinge likelihood): a ``tf.train.Checkpoint`` restored into a freshly built model
predicts bit-for-bit; ``fit(checkpoint_dir=...)`` resumed after an interruption ends bit-for-bit
where an uninterrupted run ends (sites, q(u), parameters, optimiser state); two seeded runs are
identical; ``deepcopy``, ``freeze`` and a ``tf.saved_model`` export of the compiled ``predict_y``
work. Exactness (``assert_array_equal``) is the claim: the same float64 operations in the same order.
"""

import os

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.likelihoods import BinaryHinge, MultiClassStep, Probit
from gpflow_ep.models import DGPAEP, EPGPC, SEPGPC, SEPMGPC
from gpflow_ep.training import fit

N = 40
MODELS = ["EPGPC", "SEPGPC", "SEPMGPC", "DGPAEP", "hinge SVGP"]
BATCH = {"EPGPC": None, "SEPGPC": 10, "SEPMGPC": 10, "DGPAEP": 10, "hinge SVGP": 10}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 2))
    Y = (X[:, :1] + 0.3 * rng.normal(size=(N, 1)) > 0).astype(np.float64)
    return X, Y, rng.normal(size=(9, 2))


def build(name, X, Y):
    kernel = gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0])
    if name == "EPGPC":  # alternated: fit runs EP every ep_every steps, so resuming must restore the sites
        return EPGPC((X, Y), kernel, Probit(), ep_mode="alternated")
    if name == "SEPGPC":
        return SEPGPC(kernel, Probit(), X[:8].copy(), num_data=N)
    if name == "SEPMGPC":  # the labels as two classes
        return SEPMGPC(kernel, MultiClassStep(2), X[:8].copy(), num_data=N)
    if name == "DGPAEP":
        return DGPAEP.from_data(X, Y, widths=[2, 1], num_inducing=8, likelihood=Probit())
    return gpflow.models.SVGP(kernel, BinaryHinge(), X[:8].copy(), num_data=N)


def train(name, X, Y, iterations, **kwargs):
    model = build(name, X, Y)
    return model, fit(model, (X, Y), batch_size=BATCH[name], iterations=iterations, ep_every=4, **kwargs)


def assert_same_state(a, b):
    assert len(a.variables) == len(b.variables)
    for x, y in zip(a.variables, b.variables):
        np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=x.name)


@pytest.mark.parametrize("name", MODELS)
def test_checkpoint_restores_predictions_bit_for_bit(data, name, tmp_path):
    X, Y, Xs = data
    model, _ = train(name, X, Y, 6)
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    fresh = build(name, X, Y)
    tf.train.Checkpoint(model=fresh).restore(path).assert_existing_objects_matched()
    assert_same_state(model, fresh)
    for a, b in zip(model.predict_y(Xs), fresh.predict_y(Xs)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def _slow(*names):
    """MODELS, those of ``names`` marked slow (SEPGPC's cases stay in the default run)."""
    return [pytest.param(n, marks=pytest.mark.slow) if n in names else n for n in MODELS]


@pytest.mark.parametrize("name", _slow("SEPMGPC", "EPGPC", "DGPAEP"))
def test_fit_resumes_from_its_checkpoint_where_it_stopped(data, name, tmp_path):
    """Interrupted after 7 of 12 steps (checkpoints at 3, 6 and 7), resumed in a fresh process state."""
    X, Y, _ = data
    uninterrupted, full = train(name, X, Y, 12)
    _, first = train(name, X, Y, 7, checkpoint_dir=str(tmp_path), checkpoint_every=3)
    assert first.initial_step == 0 and first.steps == 7
    assert sorted(os.listdir(tmp_path)).count("checkpoint") == 1
    resumed, second = train(name, X, Y, 12, checkpoint_dir=str(tmp_path))
    assert second.initial_step == 7 and second.steps == 12 and len(second.losses) == 5
    assert second.losses == full.losses[7:]
    assert_same_state(uninterrupted, resumed)


@pytest.mark.parametrize("name", _slow("SEPMGPC", "EPGPC", "DGPAEP"))
def test_two_seeded_fits_are_identical(data, name):
    X, Y, _ = data
    a, first = train(name, X, Y, 5, seed=3)
    b, second = train(name, X, Y, 5, seed=3)
    assert first.losses == second.losses
    assert_same_state(a, b)
    if BATCH[name] is not None:  # another seed draws other minibatches
        _, other = train(name, X, Y, 5, seed=4)
        assert other.losses != first.losses


@pytest.mark.parametrize("name", _slow("SEPMGPC"))
def test_deepcopy_freeze_and_saved_model_export(data, name, tmp_path):
    X, Y, Xs = data
    model, _ = train(name, X, Y, 4)
    expected = model.predict_y(Xs)[0].numpy()
    gpflow.utilities.print_summary(model)  # every variable prints (GPflow's formatter rejects e.g. all-NaN vectors)
    np.testing.assert_array_equal(gpflow.utilities.deepcopy(model).predict_y(Xs)[0].numpy(), expected)
    np.testing.assert_array_equal(gpflow.utilities.freeze(model).predict_y(Xs)[0].numpy(), expected)
    model.compiled_predict_y = tf.function(
        lambda Xnew: model.predict_y(Xnew), input_signature=[tf.TensorSpec([None, 2], tf.float64)]
    )
    tf.saved_model.save(model, str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    # a loaded graph is re-optimised (grappler may fuse or reorder float ops): equal to round-off
    np.testing.assert_allclose(loaded.compiled_predict_y(Xs)[0].numpy(), expected, rtol=0, atol=1e-14)
