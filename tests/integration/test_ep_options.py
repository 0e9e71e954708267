"""
Every EP option on every code path that honours it: power × likelihood × {full GP, sparse batch,
sparse minibatch}, the cavity reading, relaxation and site clipping through the one engine, and
``run_ep(**overrides)`` = the model built with those options. Tolerances: float64 fixed points
converged to 1e-10 (site changes), so a refresh at the fixed point moves sites by O(1e-10).
"""

import gpflow
import numpy as np
import pytest

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.ep import EPSettings, Relaxation
from gpflow_ep.likelihoods import BinaryHinge, NoisyStep, Probit
from gpflow_ep.models import EPGPC, SEPGPC
from gpflow_ep.optimizers import MinibatchEP

LIKELIHOODS = {"probit": Probit, "noisy_step": lambda: NoisyStep(0.1), "hinge": BinaryHinge}


@pytest.fixture(scope="module")
def data():
    return two_dimensional(40, seed=2)


def _kernel():
    return gpflow.kernels.SquaredExponential(variance=1.7, lengthscales=[0.8, 1.3])


def _batch_sep(data, likelihood, Z, **options):
    X, _ = data
    options = {"tol": 1e-10, "max_sweeps": 5000, "damping": 0.5, "ep_mode": "alternated", **options}
    m = SEPGPC(_kernel(), likelihood, Z, num_data=len(X), **options)
    assert bool(m.run_ep(data).converged)
    return m


def _all_sites(m):
    return [v.numpy() for v in (m.sites.precision, m.sites.natural_mean)]


MINIBATCH_GRID = [
    dict(power=1.0),
    dict(power=0.5),
    dict(power=0.8),
    dict(power=0.5, cavity="full"),
    dict(min_precision=0.05),
]


@pytest.mark.parametrize("options", MINIBATCH_GRID, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("lik", list(LIKELIHOODS))
def test_minibatch_refresh_keeps_the_batch_fixed_point(data, lik, options):
    """At the batch fixed point a full-batch minibatch refresh leaves the sites and q(u) unchanged (1e-8)."""
    X, Y = data
    m = _batch_sep(data, LIKELIHOODS[lik](), X[::4].copy(), **options)
    sites, Lambda = _all_sites(m), m.ep_state.posterior_precision.numpy()
    index = np.arange(len(X))
    assert int(MinibatchEP().step(m, (X, Y, index))) == 0
    for a, b in zip(_all_sites(m), sites):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-8)
    np.testing.assert_allclose(m.ep_state.posterior_precision, Lambda, rtol=0, atol=1e-8 * np.abs(Lambda).max())
    if "min_precision" in options:
        assert np.all(m.sites.precision.numpy() >= options["min_precision"])


def test_minibatch_refresh_relaxes_sites_and_keeps_the_relaxed_fixed_point(data):
    """
    Relaxed EP in minibatch mode: the relaxation is applied (some b > 0) and its fixed point kept.
    The line search locates b by 30 golden-section steps (bracket × 0.618³⁰ ≈ 5e-7), so relaxed
    sites are reproducible to ~1e-7 only: converge to 1e-7, compare to 1e-6.
    """
    X, Y = data
    Ynoisy = Y.copy()
    Ynoisy[::10] = 1 - Ynoisy[::10]  # flipped labels
    noisy = (X, Ynoisy)
    relaxed = _batch_sep(noisy, NoisyStep(0.2), X[::4].copy(), relaxation=Relaxation(penalty=0.1), tol=1e-7)
    assert np.any(relaxed.sites.relaxation.numpy() > 0.0)
    sites = _all_sites(relaxed)
    assert int(MinibatchEP().step(relaxed, (X, Ynoisy, np.arange(len(X))))) == 0
    for a, b in zip(_all_sites(relaxed), sites):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    # a huge penalty is EP (b = 0 exactly), on the minibatch path too
    plain = _batch_sep(noisy, NoisyStep(0.2), X[::4].copy())
    stiff = _batch_sep(noisy, NoisyStep(0.2), X[::4].copy(), relaxation=Relaxation(penalty=1e6))
    idx = np.arange(0, len(X), 3)
    for m in (plain, stiff):
        m.sites.assign(*(0.5 * s for s in m.sites.read()))  # move away from the fixed point
        m.reproject_sites(noisy)
        MinibatchEP().step(m, (X[idx], Ynoisy[idx], idx))
    for a, b in zip(_all_sites(plain), _all_sites(stiff)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert np.all(stiff.sites.relaxation.numpy() == 0.0)


@pytest.mark.parametrize(
    "lik, power",
    [
        pytest.param(lik, power, marks=[pytest.mark.slow] if (lik, power) == ("probit", 0.5) else [])
        for power in (0.5, 0.8)
        for lik in LIKELIHOODS
    ],
)
def test_sparse_power_ep_with_inducing_points_at_the_data_is_full_power_ep(data, lik, power, tiny_jitter):
    """Z = X (jitter 1e-12): SEPGPC(power=α) = EPGPC(power=α) in log Z and predictions (1e-6)."""
    X, _ = data
    full = EPGPC(data, _kernel(), LIKELIHOODS[lik](), power=power, tol=1e-10, max_sweeps=5000, damping=0.5)
    assert bool(full.run_ep().converged)
    sep = _batch_sep(data, LIKELIHOODS[lik](), X.copy(), power=power)
    np.testing.assert_allclose(sep.log_marginal_likelihood(data), full.log_marginal_likelihood(), rtol=0, atol=1e-6)
    Xs = X[:6] + 0.2
    for a, b in zip(sep.predict_f(Xs), full.predict_f(Xs)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_minibatch_objective_refuses_the_full_cavity_with_power(data):
    """cavity='full', α < 1: the refresh is the engine's (tested above), but F_M's gradient is not the
    evidence's (measured: off by a factor ~10), so the minibatch objective refuses it."""
    X, Y = data
    m = SEPGPC(_kernel(), Probit(), X[::4].copy(), num_data=len(X), power=0.5, cavity="full")
    idx = np.arange(8)
    for call in (m.minibatch_objective, lambda batch: MinibatchEP().refreshed_objective(m, batch), m.training_loss):
        with pytest.raises(ValueError, match="cavity"):
            call((X[idx], Y[idx], idx))


RUN_OPTIONS = [
    dict(power=0.5),
    dict(power=0.5, cavity="full"),
    dict(schedule="sequential"),
    dict(damping=0.5),
    dict(max_sweeps=3),
    dict(tol=1e-2),
    dict(criterion="alpha", tol=1e-4),
    dict(criterion="moments", tol=1e-4),
    dict(criterion="moments", tol=1e-4, schedule="sequential"),
    dict(relaxation=Relaxation(penalty=0.1)),
    dict(min_precision=0.2),
]


#: the grid's base: parallel EP, named (NoisyStep is not log-concave, so EPGPC's default would be
#: "robust", whose own overrides tests/models/test_default_settings.py checks)
BASE = dict(schedule="parallel")


@pytest.fixture(scope="module")
def base_run(data):
    """The sites and sweeps of EP with the grid's base settings."""
    reference = EPGPC(data, _kernel(), NoisyStep(0.1), **BASE)
    sweeps = int(reference.run_ep().sweeps)
    return _all_sites(reference), sweeps


@pytest.mark.parametrize("options", RUN_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_run_ep_overrides_equal_the_model_built_with_them(data, base_run, options):
    """
    ``run_ep(**options)`` gives the sites of a model constructed with ``**options`` (EPGPC and
    SEPGPC), and the grid is not vacuous: every option moves the sites away from the base
    settings' or changes the number of sweeps.
    """
    X, Y = data
    built = EPGPC(data, _kernel(), NoisyStep(0.1), **{**BASE, **options})
    overridden = EPGPC(data, _kernel(), NoisyStep(0.1), **BASE)
    run = built.run_ep()
    base_sites, base_sweeps = base_run
    diff = max(np.abs(a - b).max() for a, b in zip(_all_sites(built), base_sites))
    assert diff > 1e-6 or int(run.sweeps) != base_sweeps
    overridden.run_ep(**options)
    for a, b in zip(_all_sites(built), _all_sites(overridden)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert overridden.ep_settings == EPSettings()  # the override was for that run only
    sparse_built = SEPGPC(_kernel(), NoisyStep(0.1), X[::4].copy(), num_data=len(X), **options)
    sparse_over = SEPGPC(_kernel(), NoisyStep(0.1), X[::4].copy(), num_data=len(X))
    sparse_built.run_ep(data)
    sparse_over.run_ep(data, **options)
    for a, b in zip(_all_sites(sparse_built), _all_sites(sparse_over)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_minibatch_damping_is_an_ep_setting(data):
    X, Y = data
    idx = np.arange(0, len(X), 2)
    a = SEPGPC(_kernel(), Probit(), X[::4].copy(), num_data=len(X), minibatch_damping=0.5)
    b = SEPGPC(_kernel(), Probit(), X[::4].copy(), num_data=len(X))
    b.minibatch_damping = 0.5
    c = SEPGPC(_kernel(), Probit(), X[::4].copy(), num_data=len(X))
    for m in (a, b, c):
        MinibatchEP().step(m, (X[idx], Y[idx], idx))
    np.testing.assert_array_equal(a.sites.precision.numpy(), b.sites.precision.numpy())
    # from flat sites the damped site is ρ × the undamped one
    np.testing.assert_allclose(a.sites.precision.numpy(), 0.5 / 0.99 * c.sites.precision.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "options, name",
    [
        (dict(power=1.5), "power"),
        (dict(cavity="half"), "cavity"),
        (dict(schedule="random"), "schedule"),
        (dict(damping=0.0), "damping"),
        (dict(minibatch_damping=2.0), "minibatch_damping"),
        (dict(max_sweeps=0), "max_sweeps"),
        (dict(tol=-1.0), "tol"),
        (dict(criterion="R"), "criterion"),
        (dict(ep_mode="both"), "ep_mode"),
        (dict(relaxation=1.0), "relaxation"),
        (dict(relaxation=Relaxation(penalty=1.0), power=0.5), "power"),
        (dict(relaxation=Relaxation(penalty=1.0), min_precision=0.1), "min_precision"),
        (dict(min_precision=-1.0), "min_precision"),
        (dict(dampnig=0.5), "dampnig"),
    ],
)
def test_bad_options_are_value_errors_naming_them(data, options, name):
    with pytest.raises(ValueError, match=name):
        EPGPC(data, _kernel(), Probit(), **options)
    with pytest.raises(ValueError, match=name):
        SEPGPC(_kernel(), Probit(), data[0][:4].copy(), num_data=len(data[0]), **options)
    m = EPGPC(data, _kernel(), Probit())
    with pytest.raises(ValueError, match=name):
        m.run_ep(**options)


def test_the_convergent_schedule_where_it_applies(data):
    """The double loop needs the normaliser of q: EPGPC has it (tested in tests/ep/test_double_loop.py);
    SEPGPC refuses it, at construction and per run; relaxed EP is refused by the schedule; it compiles,
    so a nested training loss runs it (GPflow's Scipy, one step)."""
    X, Y = data
    with pytest.raises(ValueError, match="schedule"):
        SEPGPC(_kernel(), Probit(), X[:4].copy(), num_data=len(X), schedule="convergent")
    with pytest.raises(ValueError, match="schedule"):
        SEPGPC(_kernel(), Probit(), X[:4].copy(), num_data=len(X)).run_ep(data, schedule="convergent")
    with pytest.raises(ValueError, match="relaxation"):
        EPGPC(data, _kernel(), Probit(), relaxation=Relaxation(penalty=0.1)).run_ep(schedule="convergent")
    with pytest.raises(ValueError, match="relaxation"):
        EPGPC(data, _kernel(), Probit(), relaxation=Relaxation(penalty=0.1), schedule="double_loop")
    nested = EPGPC(data, _kernel(), Probit(), schedule="convergent", max_sweeps=500)
    gpflow.optimizers.Scipy().minimize(nested.training_loss, nested.trainable_variables, options=dict(maxiter=1))
    assert np.isfinite(nested.training_loss().numpy()) and int(nested.ep_diagnostics.runs_not_converged) == 0


def test_settings_are_keyword_only_and_traced_by_value(data):
    with pytest.raises(TypeError):
        EPSettings(0.5)  # noqa
    m = EPGPC(data, _kernel(), Probit())
    for _ in range(3):
        m.run_ep(power=0.5)
        m.run_ep()
    assert m._execute_compiled.experimental_get_tracing_count() == 2
