"""
gpflow_ep.validation at every public entry point: bad labels, shapes, NaN/Inf, empty data and bad
settings are ValueErrors naming the argument on the eager path, through ``fit`` (arrays and
Datasets), through training-loss closures (GPflow's ``Scipy`` included) and through a compiled
``predict_y`` — never an error from inside a TensorFlow graph.
"""

import dataclasses

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.likelihoods import BinaryHinge, MultiClassHinge, NoisyStep, Probit
from gpflow_ep.models import DGPAEP, EPGPC, SEPGPC, RelaxedEP
from gpflow_ep.training import fit, make_dataset
from gpflow_ep.validation import check_training_data, model_input_dim

N = 30


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 2))
    return X, (X[:, :1] > 0).astype(np.float64)


def kernel():
    return gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0])


def build(name, X, Y):
    if name == "EPGPC":
        return EPGPC((X, Y), kernel(), Probit())
    if name == "SEPGPC":
        return SEPGPC(kernel(), Probit(), X[:6].copy(), num_data=N)
    if name == "DGPAEP":
        return DGPAEP.from_data(X, Y, widths=[2, 1], num_inducing=6, likelihood=Probit())
    return gpflow.models.SVGP(kernel(), BinaryHinge(), X[:6].copy(), num_data=N)


def with_nan(a, value=np.nan):
    a = a.copy()
    a[3, 0] = value
    return a


# (name, transform of (X, Y), expected message fragment)
BAD_DATA = [
    ("labels in {-1, +1}", lambda X, Y: (X, 2 * Y - 1), r"\(Y\) must contain only 0 and 1; found \[-1.0\]"),
    ("label 0.5", lambda X, Y: (X, np.where(Y > 0, 0.5, 0.0)), r"\(Y\) must contain only 0 and 1; found \[0.5\]"),
    ("Y of shape [N]", lambda X, Y: (X, Y[:, 0]), r"\(Y\) must have shape \[30, 1\]"),
    ("NaN in X", lambda X, Y: (with_nan(X), Y), r"\(X\) contains NaN or Inf"),
    ("Inf in X", lambda X, Y: (with_nan(X, np.inf), Y), r"\(X\) contains NaN or Inf"),
    ("NaN in Y", lambda X, Y: (X, with_nan(Y)), r"\(Y\) contains NaN or Inf"),
    ("3 columns", lambda X, Y: (np.hstack([X, X[:, :1]]), Y), r"\(X\) must have 2 columns"),
    ("rows differ", lambda X, Y: (X, Y[:-1]), r"\(Y\) must have shape \[30, 1\]"),
]


@pytest.mark.parametrize("case", BAD_DATA, ids=[c[0] for c in BAD_DATA])
@pytest.mark.parametrize("model_name", ["SEPGPC", "DGPAEP", "hinge SVGP", "EPGPC"])
def test_fit_refuses_bad_arrays_before_compiling(data, model_name, case):
    X, Y = data
    model = build(model_name, X, Y)
    before = [v.numpy().copy() for v in model.variables]
    with pytest.raises(ValueError, match=case[2]):
        fit(model, case[1](X, Y), batch_size=None if model_name == "EPGPC" else 10, iterations=2)
    for old, new in zip(before, model.variables):  # nothing was written
        np.testing.assert_array_equal(old, new.numpy())


@pytest.mark.parametrize("case", BAD_DATA[:6], ids=[c[0] for c in BAD_DATA[:6]])
@pytest.mark.parametrize("model_name", ["SEPGPC", "DGPAEP"])
def test_training_loss_closures_refuse_bad_data_for_scipy(data, model_name, case):
    """GPflow's Scipy compiles the closure: the check happens when the closure is made."""
    X, Y = data
    model = build(model_name, X, Y)
    with pytest.raises(ValueError, match=case[2]):
        gpflow.optimizers.Scipy().minimize(model.training_loss_closure(case[1](X, Y)), model.trainable_variables)


@pytest.mark.parametrize("case", BAD_DATA, ids=[c[0] for c in BAD_DATA])
@pytest.mark.parametrize("model_name", ["SEPGPC", "DGPAEP"])
def test_training_loss_called_directly_refuses_bad_data(data, model_name, case):
    """Before GPflow's own shape check, whose ShapeMismatchError is not a ValueError (Y of shape [N])."""
    X, Y = data
    model = build(model_name, X, Y)
    with pytest.raises(ValueError, match=case[2]):
        model.training_loss(case[1](X, Y))
    assert np.isfinite(model.training_loss((X, Y)).numpy())


def test_a_closure_over_a_dataset_iterator_checks_each_batch(data):
    X, Y = data
    model = build("SEPGPC", X, Y)
    good = model.training_loss_closure(iter(make_dataset((X, Y), 10)))
    assert np.isfinite(good().numpy())
    bad = model.training_loss_closure(iter(make_dataset((X, 2 * Y - 1), 10)))
    with pytest.raises(ValueError, match=r"batch\[1\] \(Y\) must contain only 0 and 1"):
        bad()


def test_fit_checks_a_users_dataset(data):
    X, Y = data
    model = build("SEPGPC", X, Y)
    without_index = tf.data.Dataset.from_tensor_slices((X, Y)).batch(10)
    with pytest.raises(ValueError, match=r"needs \(X, Y, index\) batches"):
        fit(model, without_index, iterations=2)
    bad_labels = make_dataset((X, 2 * Y - 1), 10)
    with pytest.raises(ValueError, match=r"must contain only 0 and 1"):
        fit(model, bad_labels, iterations=2)
    with pytest.raises(ValueError, match="the dataset yielded no batch"):
        fit(model, make_dataset((X, Y), 10).take(0), iterations=2)
    svgp = build("hinge SVGP", X, Y)  # models without minibatch EP take (X, Y) batches
    result = fit(svgp, tf.data.Dataset.from_tensor_slices((X, Y)).batch(10).repeat(), iterations=2)
    assert result.steps == 2


def test_fit_refuses_empty_data_and_bad_counts(data):
    X, Y = data
    model = build("SEPGPC", X, Y)
    with pytest.raises(ValueError, match="data is empty"):
        fit(model, (X[:0], Y[:0]), batch_size=10)
    for argument in ("iterations", "ep_every", "checkpoint_every"):
        with pytest.raises(ValueError, match=f"{argument} must be a positive integer; got 0"):
            fit(model, (X, Y), batch_size=10, **{argument: 0})


def test_multiclass_labels_are_checked_for_any_model(data):
    X, _ = data
    y = np.arange(N)[:, None] % 3
    svgp = gpflow.models.SVGP(kernel(), MultiClassHinge(3), X[:6].copy(), num_latent_gps=3, num_data=N)
    check_training_data(svgp, (X, y))
    with pytest.raises(ValueError, match=r"integer class labels in \[0, 3\); found \[3.0\]"):
        fit(svgp, (X, y + 1), batch_size=10)
    softmax = gpflow.models.SVGP(kernel(), gpflow.likelihoods.Softmax(3), X[:6].copy(), num_latent_gps=3)
    with pytest.raises(ValueError, match=r"integer class labels in \[0, 3\); found \[0.5\]"):
        check_training_data(softmax, (X, y * 0.5))


@pytest.mark.parametrize("model_name", ["EPGPC", "SEPGPC", "DGPAEP"])
def test_predict_names_xnew_eagerly_and_when_compiled(data, model_name):
    X, Y = data
    model = build(model_name, X, Y)
    assert model_input_dim(model) == 2
    with pytest.raises(ValueError, match=r"Xnew must have 2 columns \(the model's input dimension\); got shape"):
        model.predict_y(X[:, :1])
    with pytest.raises(ValueError, match="Xnew contains NaN or Inf"):
        model.predict_y(with_nan(X))
    compiled = tf.function(model.predict_y)
    with pytest.raises(ValueError, match=r"Xnew must have 2 columns"):  # at trace time
        compiled(tf.constant(X[:, :1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Xnew contains NaN or Inf"):  # values: at run time
        compiled(tf.constant(with_nan(X)))
    p, _ = compiled(tf.constant(X))
    assert np.all((p.numpy() >= 0) & (p.numpy() <= 1))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda X, Y: NoisyStep(epsilon=0.7), r"epsilon must lie in \(0, 0.5\); got 0.7"),
        (lambda X, Y: NoisyStep(epsilon=0.0), r"epsilon must lie in \(0, 0.5\); got 0.0"),
        (lambda X, Y: EPGPC((X, Y), kernel(), Probit(), power=1.5), r"power must lie in \(0.0, 1.0\]; got 1.5"),
        (lambda X, Y: EPGPC((X, Y), kernel(), Probit(), power=0.0), r"power must lie in \(0.0, 1.0\]; got 0.0"),
        (lambda X, Y: EPGPC((X, Y), kernel(), Probit(), damping=0.0), r"damping must lie in \(0.0, 1.0\]"),
        (lambda X, Y: RelaxedEP((X, Y), kernel(), Probit(), penalty=-1.0), "penalty"),
        (lambda X, Y: SEPGPC(kernel(), Probit(), X[:6], num_data=0), "num_data must be a positive integer; got 0"),
    ],
)
def test_bad_settings_are_value_errors_naming_them(data, make, match):
    with pytest.raises(ValueError, match=match):
        make(*data)


def test_float32_is_refused_with_a_clear_message(data):
    X, Y = data
    float32 = dataclasses.replace(gpflow.config.config(), float=np.float32)
    bernoulli = gpflow.likelihoods.Bernoulli
    builders = [
        Probit,
        NoisyStep,
        BinaryHinge,
        lambda: MultiClassHinge(3),
        lambda: EPGPC((X, Y), kernel(), bernoulli()),
        lambda: SEPGPC(kernel(), bernoulli(), X[:6], num_data=N),
        lambda: DGPAEP.from_data(X, Y, widths=[2, 1], num_inducing=6),
    ]
    with gpflow.config.as_context(float32):
        for build_one in builders:
            with pytest.raises(ValueError, match=r"needs float64, but gpflow.config.default_float\(\) is float32"):
                build_one()


def test_jitter_follows_gpflow_config(data):
    X, Y = data
    with gpflow.config.as_context(dataclasses.replace(gpflow.config.config(), jitter=1e-4)):
        sep = SEPGPC(kernel(), Probit(), X[:6], num_data=N)
        dgp = DGPAEP.from_data(X, Y, widths=[2, 1], num_inducing=6)
    assert sep.jitter == 1e-4 and all(layer.jitter == 1e-4 for layer in dgp.layers)
