"""gpflow_ep.compare.models: the model factory; every model of every task with the shared kernel and hyper-priors."""

import gpflow
import numpy as np
import pytest

from gpflow_ep.compare import (
    DEFAULT_MODELS,
    MODEL_LABELS,
    MODELS,
    check_models,
    inducing_inputs,
    load_task_data,
    model_label,
)
from gpflow_ep.compare.models import (
    FACTORY_MODELS,
    apply_prior,
    build_model,
    hyperparameters,
    kernel_summary,
    make_model,
)
from gpflow_ep.likelihoods import MultiClassHinge, MultiClassStep, Probit
from gpflow_ep.models import EPGP, EPGPC, SEPGP, SEPGPC, SEPMGPC, PowerEP, RelaxedEP, SpikeSlabRegression

DATA = {"binary": "breast_cancer", "multiclass": "iris", "regression": "diabetes"}


@pytest.fixture(scope="module")
def task_data(count_csv):
    data = {task: load_task_data(name, max_train=30) for task, name in DATA.items()}
    data["counts"] = load_task_data(csv_file=count_csv, target="n", task="counts", max_train=30)
    return data


#: the slowest models to build, left to ``pytest -m slow`` (the other catalogue models stay)
SLOW_MODELS = {("binary", "rep"), ("regression", "epgp-t")}


@pytest.mark.parametrize(
    "task, name",
    [
        pytest.param(t, n, marks=[pytest.mark.slow] if (t, n) in SLOW_MODELS else [])
        for t, specs in MODELS.items()
        for n in specs
    ],
)
def test_every_model_builds_and_its_loss_is_finite(task_data, task, name):
    td = task_data[task]
    model, loss = build_model(name, td, num_inducing=10, seed=0)
    apply_prior(model, "lognormal", td.split.X_train.shape[1])
    assert np.isfinite(loss().numpy())
    assert not any(state in " ".join(hyperparameters(model)) for state in ("q_mu", "q_sqrt", "sites"))
    if name != "spikeslab":  # a linear model has no kernel
        assert kernel_summary(model).startswith("σ²")


def test_check_models_by_task():
    assert check_models(None, "binary") == list(DEFAULT_MODELS["binary"])
    assert check_models("EPGPC, svgp", "binary") == ["epgpc", "svgp"]
    with pytest.raises(ValueError, match="'gpr' applies to regression data, not binary; .*epgpc, pep, rep"):
        check_models("epgpc,gpr", "binary")
    with pytest.raises(ValueError, match="'nope' is not a model of gpflow-ep compare; for multiclass data choose"):
        check_models("nope", "multiclass")
    assert check_models(None, "counts") == ["epgp", "svgp", "vgp"]
    with pytest.raises(ValueError, match="'epgpc' applies to binary data, not counts; .*epgp, sepgp, svgp, vgp"):
        check_models("epgpc", "counts")
    for bad in ("", "vgp,vgp"):
        with pytest.raises(ValueError, match="models"):
            check_models(bad, "binary")


def test_priors(task_data):
    td = task_data["binary"]
    model, _ = build_model("vgp", td)
    apply_prior(model, "none", 30)
    assert model.kernel.variance.prior is None
    apply_prior(model, "lognormal", 30)
    # LogNormal(log √D, 1) on a lengthscale: its density peaks at exp(log √D - 1)
    ls_prior = model.kernel.lengthscales.prior
    np.testing.assert_allclose(ls_prior.mode().numpy(), np.exp(0.5 * np.log(30) - 1.0), rtol=1e-12)
    with pytest.raises(ValueError, match="prior"):
        apply_prior(model, "gamma", 30)


def test_inducing_inputs():
    X = np.random.default_rng(0).normal(size=(30, 3))
    Z = inducing_inputs(X, 5, seed=0)
    assert Z.shape == (5, 3)
    np.testing.assert_array_equal(Z, inducing_inputs(X, 5, seed=0))
    np.testing.assert_array_equal(inducing_inputs(X, 100), X)


def test_the_catalogue_names_exactly_the_models_built():
    """The command line's help and the figures' labels come from the catalogue, the models from MODELS."""
    assert {task: list(specs) for task, specs in MODELS.items()} == {
        task: list(labels) for task, labels in MODEL_LABELS.items()
    }
    assert model_label("multiclass", "svgp") == "SVGP (RobustMax)"
    assert model_label("binary", "svgp") == "SVGP (Bernoulli)"
    assert model_label("counts", "sepgp") == "SEPGP (Poisson)"


def test_binary_baselines_are_what_a_gpflow_user_writes(task_data):
    """GPflow's VGP and SVGP get stock ``Bernoulli()`` (probit link); the EP models the exact ``Probit``."""
    td = task_data["binary"]
    for name, expected in (("vgp", gpflow.likelihoods.Bernoulli), ("svgp", gpflow.likelihoods.Bernoulli)) + tuple(
        (name, Probit) for name in ("epgpc", "sepgpc")
    ):
        assert type(build_model(name, td)[0].likelihood) is expected, name


def test_count_models_share_a_poisson_likelihood_and_a_constant_mean(task_data):
    """Every count model: GPflow's Poisson likelihood, and a constant mean started at the log of the
    training counts' mean (exp(f) starts at the data's scale)."""
    td = task_data["counts"]
    for name in MODELS["counts"]:
        model, _ = build_model(name, td, num_inducing=10)
        assert isinstance(model.likelihood, gpflow.likelihoods.Poisson), name
        np.testing.assert_allclose(model.mean_function.c.numpy(), np.log(td.split.Y_train.mean()), rtol=1e-12)


#: make_model's models: the class each is, its default likelihood (``None``: it has none, or it must be given)
FACTORY = {
    "epgpc": (EPGPC, Probit),
    "pep": (PowerEP, Probit),
    "rep": (RelaxedEP, Probit),
    "epgp": (EPGP, None),
    "vgp": (gpflow.models.VGP, gpflow.likelihoods.Bernoulli),
    "gpr": (gpflow.models.GPR, None),
    "sgpr": (gpflow.models.SGPR, None),
    "spikeslab": (SpikeSlabRegression, None),
    "svgp": (gpflow.models.SVGP, gpflow.likelihoods.Bernoulli),
    "svgp-softmax": (gpflow.models.SVGP, gpflow.likelihoods.Softmax),
    "bsvm": (gpflow.models.SVGP, MultiClassHinge),
    "sepgpc": (SEPGPC, Probit),
    "sepgp": (SEPGP, None),
    "sepmgpc": (SEPMGPC, MultiClassStep),
}


@pytest.mark.parametrize("name", list(FACTORY))
def test_make_model_builds_each_model_as_a_user_writes_it(name):
    """
    Each model of the factory is the class a user writes, with its default likelihood (GPflow's stock
    ``Bernoulli()``, ``Softmax`` for the baselines); their losses are those of the catalogue's models
    (:func:`test_every_model_builds_and_its_loss_is_finite`).
    """
    assert sorted(FACTORY_MODELS) == sorted(FACTORY)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    model_class, default_likelihood = FACTORY[name]
    multiclass = default_likelihood in (gpflow.likelihoods.Softmax, MultiClassHinge, MultiClassStep)
    Y = rng.integers(0, 3, size=(12, 1)) if multiclass else (X[:, :1] > 0).astype(float)
    kwargs = dict(num_classes=3) if multiclass else {}
    if name in ("epgp", "sepgp"):  # no default: any likelihood
        kwargs["likelihood"] = gpflow.likelihoods.StudentT()
    kernel, Z = gpflow.kernels.SquaredExponential(), X[:4].copy()
    if name == "spikeslab":
        model = make_model(name, data=(X, Y))
    elif name == "sgpr":
        model = make_model(name, data=(X, Y), kernel=kernel, inducing_variable=Z)
    elif model_class in (gpflow.models.SVGP, SEPGPC, SEPGP, SEPMGPC):
        model = make_model(name, kernel=kernel, inducing_variable=Z, num_data=len(X), **kwargs)
    else:
        model = make_model(name, data=(X, Y), kernel=kernel, **kwargs)
    assert type(model) is model_class
    if default_likelihood is not None:
        assert type(model.likelihood) is default_likelihood


def test_make_model_gives_gpflows_multiclass_baselines_a_latent_gp_per_class():
    X, Y = np.random.default_rng(1).normal(size=(9, 2)), np.arange(9)[:, None] % 3
    vgp = make_model("vgp", data=(X, Y), kernel=gpflow.kernels.SquaredExponential(), num_classes=3)
    svgp = make_model("svgp", kernel=gpflow.kernels.SquaredExponential(), inducing_variable=X[:4], num_classes=3)
    for model in (vgp, svgp):
        assert type(model.likelihood) is gpflow.likelihoods.MultiClass and model.likelihood.num_classes == 3
        assert model.num_latent_gps == 3


def test_make_model_names_the_argument_at_fault():
    X, Y, kernel = np.zeros((4, 1)), np.zeros((4, 1)), gpflow.kernels.SquaredExponential()
    cases = [
        (dict(name="nope"), "name"),
        (dict(name="epgpc", kernel=kernel), "data: model 'epgpc' needs one"),
        (dict(name="epgpc", data=(X, Y)), "kernel"),
        (dict(name="svgp", kernel=kernel, num_data=4), "inducing_variable"),
        (dict(name="epgp", data=(X, Y), kernel=kernel), "likelihood"),
        (dict(name="bsvm", kernel=kernel, inducing_variable=X), "num_classes"),
        (dict(name="gpr", data=(X, Y), kernel=kernel, likelihood=gpflow.likelihoods.Gaussian()), "likelihood"),
        (dict(name="spikeslab", data=(X, Y), kernel=kernel), "kernel"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            make_model(**kwargs)


def test_kernel_summary_says_what_its_range_is():
    """30 lengthscales are summarised as a range with its count, not as a two-element list."""
    kernel = gpflow.kernels.SquaredExponential(variance=2.0, lengthscales=np.linspace(1.96, 6.51, 30))
    model = gpflow.models.GPR((np.zeros((3, 30)), np.zeros((3, 1))), kernel)
    assert kernel_summary(model) == "σ² 2, ℓ 1.96–6.51 (30 dims)"
    one = gpflow.models.GPR((np.zeros((3, 1)), np.zeros((3, 1))), gpflow.kernels.SquaredExponential(lengthscales=0.5))
    assert kernel_summary(one) == "σ² 1, ℓ 0.5"
