"""Label checks of the likelihoods, eager (ValueError) and inside a compiled graph (tf.debugging assertion)."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.likelihoods import BinaryHinge, MultiClassHinge, MultiClassStep, Probit, class_labels_to_index
from gpflow_ep.models import SEPGPC, SEPMGPC

C = 3
GOOD = np.array([[0.0], [2.0], [1.0], [2.0]])
BAD_CLASS_LABELS = {
    "too large": [[0.0], [3.0], [1.0], [2.0]],
    "negative": [[0.0], [-1.0], [1.0], [2.0]],
    "fractional": [[0.0], [0.5], [1.0], [2.0]],
    "NaN": [[0.0], [np.nan], [1.0], [2.0]],
}


def _moments(num_latent):
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, num_latent)), rng.uniform(0.1, 1.0, (4, num_latent))


def _class_terms():
    """The label-taking methods of the multi-class likelihoods, as functions of Y."""
    Fmu, Fvar = _moments(C)
    hinge, step = MultiClassHinge(C), MultiClassStep(C)
    return {
        "hinge variational_expectations": lambda Y: hinge.variational_expectations(None, Fmu, Fvar, Y),
        "hinge predict_log_density": lambda Y: hinge.predict_log_density(None, Fmu, Fvar, Y),
        "step predict_log_density": lambda Y: step.predict_log_density(None, Fmu, Fvar, Y),
    }


@pytest.mark.parametrize("term", list(_class_terms()))
@pytest.mark.parametrize("bad", list(BAD_CLASS_LABELS))
def test_bad_class_labels_fail_eagerly_and_compiled(term, bad):
    """
    Eager: a ValueError naming Y. Compiled (a user's own tf.function, labels a graph input): an
    InvalidArgumentError saying what labels are allowed, not tf.one_hot's silent row of zeros.
    """
    f = _class_terms()[term]
    Y = np.array(BAD_CLASS_LABELS[bad])
    with pytest.raises(ValueError, match=r"Y must hold integer class labels in \[0, 3\)"):
        f(Y)
    compiled = tf.function(f, input_signature=[tf.TensorSpec([None, 1], tf.float64)])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"class labels Y must be integers in \[0, 3\)"):
        compiled(tf.constant(Y))


@pytest.mark.parametrize("term", list(_class_terms()))
def test_good_class_labels_compile_to_the_eager_values(term):
    f = _class_terms()[term]
    compiled = tf.function(f, input_signature=[tf.TensorSpec([None, 1], tf.float64)])
    # the graph may reassociate the quadrature's sums (at most C x 32 terms per point): round-off of
    # order C x 32 x eps relative, so 1e-12 relative is far above it and far below any label mix-up
    np.testing.assert_allclose(compiled(tf.constant(GOOD)).numpy(), f(GOOD).numpy(), rtol=1e-12, atol=0)


def test_class_labels_to_index_accepts_integer_dtypes():
    np.testing.assert_array_equal(class_labels_to_index(tf.constant([[2], [0]], tf.int64), C).numpy(), [2, 0])


def _model(name, X):
    kernel, Z = gpflow.kernels.SquaredExponential(), X[:3].copy()
    if name == "SVGP + MultiClassHinge":
        return gpflow.models.SVGP(kernel, MultiClassHinge(C), Z, num_latent_gps=C)
    if name == "SEPMGPC":
        return SEPMGPC(kernel, MultiClassStep(C), Z, num_data=len(X))
    if name == "SEPGPC + BinaryHinge":
        return SEPGPC(kernel, BinaryHinge(), Z, num_data=len(X))
    return SEPGPC(kernel, Probit(), Z, num_data=len(X))


@pytest.mark.parametrize("name", ["SVGP + MultiClassHinge", "SEPMGPC", "SEPGPC + BinaryHinge", "SEPGPC + Probit"])
def test_compiled_training_losses_refuse_bad_labels(name):
    """
    The drop-in path, GPflow's compiled training-loss closure, with labels in a ``tf.Variable`` (the
    graph cannot see their values when it is traced): a label out of range fails with the label
    message before any op uses it (SEPMGPC's site gather had failed first with an index error).
    """
    X = np.random.default_rng(1).normal(size=(4, 2))
    binary = name.startswith("SEPGPC")
    good = (GOOD > 1).astype(float) if binary else GOOD
    model = _model(name, X)
    labels = tf.Variable(good)
    loss = model.training_loss_closure((X, labels), compile=True)
    assert np.isfinite(loss().numpy())
    labels.assign(np.array(BAD_CLASS_LABELS["too large"]) if not binary else good + 2)
    message = "binary labels Y must be 0 or 1" if binary else r"class labels Y must be integers in \[0, 3\)"
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        loss()
    if not binary:
        labels.assign(np.array(BAD_CLASS_LABELS["fractional"]))  # cast to int32 it would be a valid class
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            loss()


@pytest.mark.parametrize("likelihood", [BinaryHinge(), Probit()], ids=["BinaryHinge", "Probit"])
def test_bad_binary_labels_fail_compiled(likelihood):
    Fmu, Fvar = _moments(1)
    f = tf.function(
        lambda Y: likelihood.variational_expectations(None, Fmu, Fvar, Y),
        input_signature=[tf.TensorSpec([None, 1], tf.float64)],
    )
    assert np.all(np.isfinite(f(tf.constant([[0.0], [1.0], [1.0], [0.0]], tf.float64)).numpy()))
    with pytest.raises(tf.errors.InvalidArgumentError, match="binary labels Y must be 0 or 1"):
        f(tf.constant([[0.0], [2.0], [1.0], [0.0]], tf.float64))
