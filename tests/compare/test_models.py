"""gpflow_ep.compare.models: every model of every task builds, with the shared kernel and hyper-priors."""

import numpy as np
import pytest

from gpflow_ep.compare import DEFAULT_MODELS, MODELS, check_models, inducing_inputs, load_task_data
from gpflow_ep.compare.models import apply_prior, build_model, hyperparameters, kernel_summary

DATA = {"binary": "breast_cancer", "multiclass": "iris", "regression": "diabetes"}


@pytest.fixture(scope="module")
def task_data():
    return {task: load_task_data(name, max_train=30) for task, name in DATA.items()}


@pytest.mark.parametrize("task, name", [(t, n) for t, specs in MODELS.items() for n in specs])
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
