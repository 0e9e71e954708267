"""The EP settings a full-GP model runs when the user names no schedule (``gpflow_ep.models.default_settings``)."""

import warnings

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.datasets.synthetic import noisy_mixture
from gpflow_ep.ep import EPConvergenceWarning, Relaxation, robust_settings
from gpflow_ep.likelihoods import NoisyStep, Probit
from gpflow_ep.models import EPGP, EPGPC, PowerEP, RelaxedEP
from gpflow_ep.models.default_settings import NOT_LOG_CONCAVE_MAX_SWEEPS, default_ep_settings, run_settings

STUDENT_T = gpflow.likelihoods.StudentT


@pytest.mark.parametrize(
    "likelihood, schedule",
    [
        (Probit(), "parallel"),
        (gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid), "parallel"),
        (gpflow.likelihoods.Poisson(), "parallel"),
        (gpflow.likelihoods.Gaussian(), "parallel"),
        (STUDENT_T(), "robust"),
        (NoisyStep(0.1), "robust"),
        (gpflow.likelihoods.Bernoulli(), "robust"),  # GPflow's default: the jittered probit
    ],
)
def test_the_default_schedule_follows_log_concavity(likelihood, schedule):
    settings = default_ep_settings(likelihood, {})
    assert settings.schedule == schedule
    assert settings.power == 1.0 and settings.damping == 0.8  # EP's fixed point, the usual damping
    assert settings.max_sweeps == (NOT_LOG_CONCAVE_MAX_SWEEPS if schedule == "robust" else 100)


@pytest.mark.parametrize(
    "options, schedule",
    [
        (dict(schedule="parallel"), "parallel"),
        (dict(schedule="sequential"), "sequential"),
        (dict(relaxation=Relaxation(penalty=1.0)), "parallel"),  # the double loop does not relax sites
        (dict(cavity="full"), "parallel"),
        (dict(criterion="alpha"), "parallel"),
        (dict(power=0.5, max_sweeps=7), "robust"),
        (robust_settings(), "robust"),
    ],
)
def test_options_given_by_the_user_are_kept(options, schedule):
    settings = default_ep_settings(STUDENT_T(), options)
    assert settings.schedule == schedule
    for name, value in options.items():
        assert getattr(settings, name) == value


@pytest.mark.parametrize(
    "overrides, schedule",
    [
        (dict(power=0.5), "robust"),
        (dict(relaxation=Relaxation(penalty=1.0)), "parallel"),
        (dict(cavity="full"), "parallel"),
        (dict(criterion="alpha"), "parallel"),
        (dict(schedule="sequential"), "sequential"),
    ],
)
def test_run_ep_overrides_run_what_a_model_built_with_them_runs(overrides, schedule):
    defaulted = default_ep_settings(STUDENT_T(), {})
    assert run_settings(defaulted, overrides, schedule_given=False).schedule == schedule
    assert default_ep_settings(STUDENT_T(), overrides).schedule == schedule
    # a schedule the user named is theirs: an option the double loop does not run is then refused by it
    named = default_ep_settings(STUDENT_T(), dict(schedule="robust"))
    assert run_settings(named, overrides, schedule_given=True).schedule == overrides.get("schedule", "robust")


def test_models_apply_the_default():
    X = np.linspace(-1.0, 1.0, 6)[:, None]
    Y = (X > 0).astype(np.float64)
    kernel = gpflow.kernels.SquaredExponential
    assert EPGPC((X, Y), kernel(), Probit()).ep_settings.schedule == "parallel"
    assert EPGPC((X, Y), kernel(), NoisyStep(0.1)).ep_settings.schedule == "robust"
    assert EPGP((X, X), kernel(), STUDENT_T()).ep_settings.schedule == "robust"
    assert PowerEP((X, Y), kernel(), NoisyStep(0.1), power=0.5).ep_settings.schedule == "robust"
    assert RelaxedEP((X, Y), kernel(), NoisyStep(0.1)).ep_settings.schedule == "sequential"  # its paper's
    # run_ep's overrides start from the model's settings
    assert EPGP((X, X), kernel(), STUDENT_T()).ep_settings.updated(power=0.5).schedule == "robust"


def test_the_default_reaches_the_ep_fixed_point_where_parallel_ep_does_not():
    """
    Label-flip noise (20 % flipped, NoisyStep with ε = 0.01, a short length-scale): damped parallel EP
    cycles for 100 sweeps; the default (no schedule) falls back to the double loop of the same EP
    (α = 1), which converges. Its sites are EP's fixed point: one undamped parallel sweep from them
    moves no site natural parameter by more than 1e-4 — the double loop stops when q's marginals and
    the tilted moments agree to tol = 1e-6 relative to the marginal sd, and a site moves by that
    mismatch times the marginal precision (here at most ~10), so ~1e-5 is expected, while the cycling
    parallel run's sites still move by far more.
    """
    X, Y, _ = noisy_mixture(20, 0.2, seed=1, separation=3.0)

    def model(**options):
        kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=0.3)
        return EPGPC((X, Y), kernel, NoisyStep(0.01), **options)

    parallel = model(schedule="parallel")
    with pytest.warns(EPConvergenceWarning):
        cycling = parallel.run_ep()
    assert not bool(cycling.converged) and not bool(cycling.used_fallback)

    default = model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", EPConvergenceWarning)
        run = default.run_ep()
    assert bool(run.converged) and bool(run.used_fallback) and run.measure_name == "mismatch"
    assert float(run.max_change) <= default.ep_settings.tol
    one_sweep = default.run_ep(schedule="parallel", max_sweeps=1, damping=1.0)
    assert float(one_sweep.max_change) <= 1e-4
    assert float(cycling.max_change) > 100 * float(one_sweep.max_change)
