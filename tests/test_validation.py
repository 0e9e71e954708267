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
from gpflow.keras import tf_keras

from gpflow_ep.dgp import AEPLayer, TiedFactor
from gpflow_ep.kernels import DeepKernel, FeatureInducingPoints
from gpflow_ep.likelihoods import BinaryHinge, MultiClassHinge, MultiClassStep, NoisyStep, Probit
from gpflow_ep.models import DGPAEP, EPGPC, SEPGPC, SEPMGPC, PowerEP, RelaxedEP
from gpflow_ep.training import fit, make_dataset
from gpflow_ep.validation import check_inducing_inputs, check_kernel_inputs, check_training_data, model_input_dim

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
    # a model holding X names X; one with inducing inputs Z names both (either may be the one that is wrong)
    (
        "3 columns",
        lambda X, Y: (np.hstack([X, X[:, :1]]), Y),
        r"\(X\) must have 2 columns|Z \(inducing points\) has 2 columns but data\[0\] \(X\) has 3",
    ),
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
    """DGPAEP's layers take GPflow's jitter when built; a sparse model reads it when it computes, as SVGP: its
    q(u) before EP is the prior N(0, K_uu + jitter·I)."""
    X, Y = data
    sep = SEPGPC(kernel(), Probit(), X[:6], num_data=N)
    with gpflow.config.as_context(dataclasses.replace(gpflow.config.config(), jitter=1e-4)):
        dgp = DGPAEP.from_data(X, Y, widths=[2, 1], num_inducing=6)
        q_sqrt = sep.q_sqrt.numpy()[0]
    assert all(layer.jitter == 1e-4 for layer in dgp.layers)
    expected = sep.kernel(X[:6]).numpy() + 1e-4 * np.eye(6)
    np.testing.assert_allclose(q_sqrt @ q_sqrt.T, expected, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- kernels and inducing inputs against X

SE, Matern32 = gpflow.kernels.SquaredExponential, gpflow.kernels.Matern32
HOLDS_DATA = ("EPGPC", "PowerEP", "RelaxedEP")  # checked by the constructor; the others on the first batch


def class_labels(X):
    return ((X[:, :1] > 0).astype(int) + (X[:, 1:2] > 0).astype(int)).astype(np.float64)  # 0, 1, 2


def dgp_layer(kernel, Z, width=1, noise=None):
    M = np.shape(Z)[0]
    factor = TiedFactor(np.tile(np.eye(M), (width, 1, 1)), np.zeros((width, M, 1)), N)
    return AEPLayer([kernel] * width, [Z] * width, factor, noise)


def build_with(name, X, Y, kernel, Z):
    """``name`` with ``kernel`` and inducing inputs ``Z`` (a model on X's 2 columns otherwise)."""
    if name in HOLDS_DATA:
        return {"EPGPC": EPGPC, "PowerEP": PowerEP, "RelaxedEP": RelaxedEP}[name]((X, Y), kernel, Probit())
    if name == "SEPGPC":
        return SEPGPC(kernel, Probit(), Z, num_data=N)
    if name == "SEPMGPC":
        return SEPMGPC(kernel, MultiClassStep(3), Z, num_data=N)
    if name == "DGPAEP":  # a 2-layer DGP whose first layer has ``kernel`` and ``Z``
        return DGPAEP(
            [dgp_layer(kernel, Z, 2, 0.01), dgp_layer(SE(), X[:6, :2].copy())], gpflow.likelihoods.Gaussian(), N
        )
    return gpflow.models.SVGP(kernel, BinaryHinge(), Z, num_data=N)


def data_for(name, X, Y):
    return (X, class_labels(X)) if name == "SEPMGPC" else (X, Y)


KERNEL_NAME = {"DGPAEP": r"layers\[0\]\.kernels\[0\]"}
Z_NAME = {"DGPAEP": r"layers\[0\]\.inducing_variables\[0\]"}

# (kind, kernel, Z from X, expected message with {kernel}, {Z}, {X} for the arguments' names); X has 2 columns
MISMATCHES = [
    (
        "ARD lengthscales",
        lambda: SE(lengthscales=[1.0, 1.0, 1.0]),
        None,
        r"{kernel}: lengthscales has 3 entries but {X} has 2 columns",
    ),
    (
        "active_dims list",
        lambda: SE(active_dims=[5]),
        None,
        r"{kernel}: active_dims \[5\] out of range for {X} with 2 columns",
    ),
    (
        "Sum with a slice",
        lambda: SE(active_dims=[0]) + Matern32(active_dims=slice(1, 3)),
        None,
        r"{kernel}\.kernels\[1\]: active_dims slice\(1, 3, None\) out of range for {X} with 2 columns",
    ),
    (
        "Product, ARD on a slice",
        lambda: SE(active_dims=[0]) * Matern32(lengthscales=[1.0, 2.0], active_dims=slice(1, 2)),
        None,
        r"{kernel}\.kernels\[1\]: lengthscales has 2 entries but its active_dims slice\(1, 2, None\) pick 1 of the 2",
    ),
    (
        "Z with 3 columns",
        SE,
        lambda X: np.hstack([X[:6], X[:6, :1]]),
        r"{Z}: Z \(inducing points\) has 3 columns but {X} has 2",
    ),
]
MODELS = ["EPGPC", "PowerEP", "RelaxedEP", "SEPGPC", "SEPMGPC", "DGPAEP", "hinge SVGP"]
CASES = [
    pytest.param(model, *case[1:], id=f"{model}-{case[0]}")
    for model in MODELS
    for case in MISMATCHES
    if not (model in HOLDS_DATA and case[2] is not None)  # no Z
    and not (model == "DGPAEP" and case[0] in ("Sum with a slice", "Product, ARD on a slice"))  # SE layers only
]


@pytest.mark.parametrize("model_name, make_kernel, make_Z, message", CASES)
def test_a_kernel_or_z_that_does_not_fit_x_is_a_value_error_naming_it(data, model_name, make_kernel, make_Z, message):
    """
    Not a TensorFlow error from inside a kernel evaluation: a ValueError naming the argument, from
    the constructor of a model that holds X, else from the first batch (training loss and ``fit``).
    """
    X, Y = data
    names = dict(kernel=KERNEL_NAME.get(model_name, "kernel"), Z=Z_NAME.get(model_name, "inducing_variable"))
    match, in_batch = (message.format(**names, X=rf"{arg}\[0\] \(X\)") for arg in ("data", "(data|batch)"))
    Z = X[:6].copy() if make_Z is None else make_Z(X)
    if model_name in HOLDS_DATA:
        with pytest.raises(ValueError, match=match):
            build_with(model_name, X, Y, make_kernel(), Z)
        return
    model = build_with(model_name, X, Y, make_kernel(), Z)
    if model_name != "hinge SVGP":  # GPflow's own training loss is GPflow's
        with pytest.raises(ValueError, match=match):
            model.training_loss(data_for(model_name, X, Y))
        with pytest.raises(ValueError, match=in_batch):  # a minibatch as the first batch
            model.training_loss((*data_for(model_name, X[:10], Y[:10]), np.arange(10)))
    with pytest.raises(ValueError, match=match):
        fit(model, data_for(model_name, X, Y), batch_size=10, iterations=1)


@pytest.mark.parametrize(
    "model_name, match",
    [
        ("SEPGPC", r"inducing_variable: Z \(inducing points\) has no rows \(shape \(0, 2\)\)"),
        ("SEPMGPC", r"inducing_variable: Z \(inducing points\) has no rows"),
        ("DGPAEP", r"factor_cholesky is empty: a tied factor needs at least one inducing point"),
    ],
)
def test_zero_inducing_points_are_refused(data, model_name, match):
    """With no inducing point q(f) is the prior: a SEPGPC trained to a constant 0.5 without a word."""
    X, Y = data
    with pytest.raises(ValueError, match=match):
        build_with(model_name, X, Y, SE(), np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"inducing_variable: Z \(inducing points\) has no rows"):  # any model's Z
        check_inducing_inputs(gpflow.inducing_variables.InducingPoints(np.zeros((0, 2))), 2, source="data[0] (X)")


MATCHING_KERNELS = [
    ("scalar lengthscale", lambda: SE(lengthscales=0.7)),
    ("ARD lengthscales", lambda: SE(lengthscales=[0.7, 1.3])),
    (
        "Sum over active_dims subsets",
        lambda: SE(active_dims=[0]) + Matern32(lengthscales=[2.0], active_dims=slice(1, 2)),
    ),
    (
        "Product with Periodic and ARD Linear",
        lambda: gpflow.kernels.Periodic(SE(active_dims=[1])) * gpflow.kernels.Linear([1.0, 2.0]),
    ),
    ("kernel without lengthscales", lambda: gpflow.kernels.Polynomial(degree=2.0) + gpflow.kernels.White(0.1)),
]


@pytest.mark.parametrize("make_kernel", [k[1] for k in MATCHING_KERNELS], ids=[k[0] for k in MATCHING_KERNELS])
@pytest.mark.parametrize("model_name", ["EPGPC", "SEPGPC", "SEPMGPC", "hinge SVGP"])
def test_kernels_and_z_that_fit_x_are_accepted(data, model_name, make_kernel):
    X, Y = data
    model = build_with(model_name, X, Y, make_kernel(), X[:6].copy())
    if model_name == "EPGPC":
        assert np.isfinite(model.training_loss().numpy())
    elif model_name == "hinge SVGP":
        assert fit(model, (X, Y), batch_size=10, iterations=1).steps == 1
    else:
        assert np.isfinite(model.training_loss(data_for(model_name, X, Y)).numpy())


def test_sepmgpc_names_the_class_whose_kernel_or_z_does_not_fit(data):
    X, _ = data
    y = class_labels(X)
    model = SEPMGPC([SE(), SE(lengthscales=[1.0, 1.0, 1.0]), SE()], MultiClassStep(3), X[:6].copy(), num_data=N)
    with pytest.raises(ValueError, match=r"kernel\.kernels\[1\]: lengthscales has 3 entries but data\[0\] \(X\) has 2"):
        model.training_loss((X, y))
    Zs = [X[:6].copy(), X[:6].copy(), np.hstack([X[:6], X[:6, :1]])]
    with pytest.raises(ValueError, match=r"inducing_variable\[2\]: Z \(inducing points\) has 3 columns"):
        SEPMGPC(SE(), MultiClassStep(3), Zs, num_data=N)
    model = SEPMGPC(SE(), MultiClassStep(3), [X[:6, :1].copy()] * 3, num_data=N)
    with pytest.raises(ValueError, match=r"inducing_variable: Z \(inducing points\) has 1 columns but data"):
        model.training_loss((X, y))
    accepted = SEPMGPC(
        [SE(), SE(lengthscales=[1.0, 2.0]), SE(active_dims=[1])], MultiClassStep(3), X[:6].copy(), num_data=N
    )
    assert np.isfinite(accepted.training_loss((X, y)).numpy())


def test_dgp_layers_after_the_first_are_checked_against_the_hidden_width(data):
    """Layer l > 0 sees the D_{l-1} outputs of the layer below, not X; its Gaussian-input moments use every column."""
    X, _ = data
    first = dgp_layer(SE(lengthscales=[1.0, 1.0]), X[:6].copy(), width=3, noise=0.01)  # 3 hidden outputs
    Z3 = np.zeros((5, 3))
    bad = [
        (
            SE(lengthscales=[1.0, 1.0]),
            r"layers\[1\]\.kernels\[0\]: lengthscales has 2 entries but layers\[0\]'s output has 3",
        ),
        (
            SE(active_dims=[0, 2]),
            r"layers\[1\]\.kernels\[0\]: active_dims \[0, 2\] are not supported after the first layer",
        ),
    ]
    for kernel, match in bad:
        with pytest.raises(ValueError, match=match):
            DGPAEP([first, dgp_layer(kernel, Z3)], gpflow.likelihoods.Gaussian(), N)
    good = DGPAEP([first, dgp_layer(SE(lengthscales=[1.0, 2.0, 3.0]), Z3)], gpflow.likelihoods.Gaussian(), N)
    assert np.isfinite(good.training_loss(data).numpy())


def test_a_deep_kernel_is_checked_on_x_and_its_features(data):
    """DeepKernel: active_dims against X; the base kernel and FeatureInducingPoints against the network's F."""
    X, Y = data
    network = tf_keras.Sequential([tf_keras.layers.Dense(3)])
    network(tf.zeros([1, 2], tf.float64))  # built: F = 3 is known

    def svgp(base, Z):
        return gpflow.models.SVGP(DeepKernel(base, network), BinaryHinge(), Z, num_data=N)

    fit(
        svgp(SE(lengthscales=[1.0, 1.0, 1.0]), FeatureInducingPoints(np.zeros((4, 3)))),
        (X, Y),
        batch_size=10,
        iterations=1,
    )
    fit(svgp(SE(lengthscales=[1.0, 1.0, 1.0]), X[:4].copy()), (X, Y), batch_size=10, iterations=1)  # Z in input space
    with pytest.raises(
        ValueError, match=r"kernel\.base_kernel: lengthscales has 2 entries but the network's output has 3"
    ):
        fit(svgp(SE(lengthscales=[1.0, 1.0]), X[:4].copy()), (X, Y), batch_size=10, iterations=1)
    with pytest.raises(
        ValueError, match=r"inducing_variable: Z \(inducing points\) has 2 columns but the kernel network"
    ):
        fit(svgp(SE(), FeatureInducingPoints(np.zeros((4, 2)))), (X, Y), batch_size=10, iterations=1)


@pytest.mark.parametrize(
    "make_kernel, match",
    [
        (
            lambda: gpflow.kernels.Linear(variance=[1.0, 2.0, 3.0]),
            r"kernel: variance has 3 entries but X has 2 columns",
        ),
        (lambda: gpflow.kernels.ArcCosine(weight_variances=[1.0] * 3), r"kernel: weight_variances has 3 entries"),
        (lambda: gpflow.kernels.Periodic(SE(), period=[1.0] * 3), r"kernel: period has 3 entries but X has 2 columns"),
        (lambda: gpflow.kernels.Periodic(SE(lengthscales=[1.0] * 3)), r"kernel\.base_kernel: lengthscales has 3"),
        (lambda: SE(active_dims=slice(-3, None)), r"kernel: active_dims slice\(-3, None, None\) out of range for X"),
        (lambda: SE(active_dims=slice(2, None)), r"kernel: active_dims slice\(2, None, None\) out of range for X"),
        (
            lambda: SE() + SE() * Matern32(lengthscales=[1.0] * 3),
            r"kernel\.kernels\[1\]\.kernels\[1\]: lengthscales has 3",
        ),  # nested
        (
            lambda: gpflow.kernels.SeparateIndependent([SE(), SE(lengthscales=[1.0] * 3)]),
            r"kernel\.kernels\[1\]: lengthscales has 3 entries",
        ),
        (
            lambda: gpflow.kernels.SharedIndependent(SE(active_dims=[2]), output_dim=2),
            r"kernel: active_dims \[2\] out of range",
        ),  # one shared
        (lambda: DeepKernel(SE(lengthscales=[1.0] * 3), lambda X: X), None),  # features of unknown width: not checked
        (lambda: gpflow.kernels.Periodic(SE(active_dims=[1]), period=[2.0]) + gpflow.kernels.Linear([1.0, 2.0]), None),
        (lambda: SE(active_dims=slice(-2, None), lengthscales=[1.0, 2.0]) + gpflow.kernels.White(), None),
        (lambda: gpflow.kernels.Coregion(output_dim=3, rank=1, active_dims=[1]), None),  # no per-column parameter
    ],
)
def test_check_kernel_inputs_knows_gpflows_kernel_kinds(make_kernel, match):
    if match is None:
        check_kernel_inputs(make_kernel(), 2)
    else:
        with pytest.raises(ValueError, match=match):
            check_kernel_inputs(make_kernel(), 2)
