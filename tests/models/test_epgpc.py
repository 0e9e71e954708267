"""EPGPC: exactness, EP fixed-point identities, gradients, schedules, GPflow integration, input errors."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy import integrate, special, stats

from gpflow_ep.datasets import noisy_mixture, two_dimensional
from gpflow_ep.likelihoods import BinaryHinge, NoisyStep, Probit
from gpflow_ep.models import EPGPC
from gpflow_ep.optimizers import EP, EPConvergenceWarning


def _kernel(D=2):
    return gpflow.kernels.SquaredExponential(variance=1.5, lengthscales=np.linspace(0.8, 1.4, D))


@pytest.fixture(scope="module")
def regression_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 2))
    Y = np.sin(2 * X[:, :1]) + 0.3 * X[:, 1:] + 0.1 * rng.normal(size=(25, 1))
    return X, Y


@pytest.fixture(scope="module")
def classification_data():
    return two_dimensional(40, seed=3)


# ------------------------------------------------------------------------------ exactness


@pytest.mark.parametrize("schedule", ["parallel", "sequential"])
@pytest.mark.parametrize("power", [1.0, 0.5])
def test_gaussian_likelihood_reproduces_gpr(regression_data, schedule, power):
    """With a Gaussian likelihood EP (and power EP) is exact: evidence and predictions = GPR."""
    X, Y = regression_data
    mean_function = gpflow.mean_functions.Linear(A=[[0.3], [-0.2]], b=[0.1])
    gpr = gpflow.models.GPR((X, Y), _kernel(), mean_function=mean_function, noise_variance=0.05)
    m = EPGPC(
        (X, Y),
        _kernel(),
        gpflow.likelihoods.Gaussian(variance=0.05),
        mean_function=mean_function,
        schedule=schedule,
        power=power,
        tol=1e-12,
        max_sweeps=1000,
    )
    assert EP().minimize(m).converged
    np.testing.assert_allclose(m.log_marginal_likelihood(), gpr.log_marginal_likelihood(), rtol=0, atol=1e-8)
    Xs = X[:7] + 0.3
    for full_cov in [False, True]:
        for a, b in zip(m.predict_f(Xs, full_cov=full_cov), gpr.predict_f(Xs, full_cov=full_cov)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-8)


# ------------------------------------------------------------------------------ fixed point


def _quad_tilted(log_t, m, v):
    sd = np.sqrt(v)
    lo, hi = m - 30 * sd, m + 30 * sd
    pieces = [(lo, 0.0), (0.0, hi)] if lo < 0 < hi else [(lo, hi)]
    mom = [
        sum(
            integrate.quad(
                lambda x, k=k: x**k * np.exp(log_t(x)) * stats.norm.pdf(x, m, sd),
                a,
                b,
                epsabs=1e-14,
                epsrel=1e-12,
                limit=400,
            )[0]
            for a, b in pieces
        )
        for k in range(3)
    ]
    mean = mom[1] / mom[0]
    return mean, mom[2] / mom[0] - mean**2


@pytest.mark.parametrize(
    "lik",
    [
        pytest.param(Probit(), id="probit"),
        pytest.param(NoisyStep(0.1), id="noisy_step"),
        pytest.param(BinaryHinge(), id="hinge", marks=pytest.mark.slow),
    ],
)
def test_ep_fixed_point_identities(classification_data, lik):
    """
    At convergence every site's cavity × likelihood has the moments of q's marginal (Minka 2001,
    §3.2: the EP fixed-point condition), checked with an independent adaptive quadrature, to 1e-8.
    """
    X, Y = classification_data
    X, Y = X[:20], Y[:20]
    m = EPGPC((X, Y), _kernel(), lik, schedule="sequential", tol=1e-13, max_sweeps=500)
    assert EP().minimize(m).converged
    q = m.site_problem().algebra.posterior(*m.sites.read()).factorisation
    tau, nu = m.sites.read()
    mean, var = q.mean.numpy()[:, 0], q.var.numpy()[:, 0]
    cav_prec = 1 / var - tau.numpy()[:, 0]
    cav_var = 1 / cav_prec
    cav_mean = (mean / var - nu.numpy()[:, 0]) * cav_var
    y = 2 * Y[:, 0] - 1
    for i in range(len(y)):
        if isinstance(lik, Probit):
            log_t = lambda f, yi=y[i]: special.log_ndtr(yi * f)
        elif isinstance(lik, BinaryHinge):
            log_t = lambda f, yi=y[i]: -2.0 * np.maximum(0.0, 1.0 - yi * f)
        else:
            log_t = lambda f, yi=y[i]: np.log(0.1 + 0.8 * (yi * f >= 0))
        t_mean, t_var = _quad_tilted(log_t, cav_mean[i], cav_var[i])
        np.testing.assert_allclose([t_mean, t_var], [mean[i], var[i]], rtol=0, atol=1e-8)


def test_parallel_and_sequential_reach_the_same_fixed_point(classification_data):
    X, Y = classification_data
    sites = []
    for schedule in ["parallel", "sequential"]:
        m = EPGPC((X, Y), _kernel(), Probit(), schedule=schedule, tol=1e-12, max_sweeps=1000)
        assert EP().minimize(m).converged
        sites.append([v.numpy() for v in m.sites.read()])
    for a, b in zip(*sites):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)


# ------------------------------------------------------------------------------ gradients


@pytest.mark.parametrize("lik", [Probit(), NoisyStep(0.15), BinaryHinge()], ids=["probit", "noisy_step", "hinge"])
def test_gradient_at_convergence_equals_finite_difference_of_converged_evidence(
    classification_data, lik, assert_gradients_match_finite_differences
):
    """
    d log Z_EP / dθ with the sites held fixed = central difference of the *converged* log Z_EP
    (EP re-run at θ ± h), for every unconstrained hyper-parameter, to 1e-5 relative.
    """
    X, Y = classification_data
    m = EPGPC((X, Y), _kernel(), lik, ep_mode="alternated", tol=1e-12, max_sweeps=2000)
    ep = EP()
    assert ep.minimize(m).converged
    with tf.GradientTape() as tape:
        value = m.log_marginal_likelihood()
    grads = tape.gradient(value, m.trainable_variables)

    def converged_evidence():
        assert ep.minimize(m).converged
        return m.log_marginal_likelihood().numpy()

    assert_gradients_match_finite_differences(m.trainable_variables, grads, converged_evidence)


def test_scipy_trains_nested_ep_out_of_the_box(classification_data):
    """The issue's usage line: Scipy().minimize(m.training_loss, m.trainable_variables)."""
    X, Y = classification_data
    m = EPGPC((X, Y), _kernel(), Probit())
    before = m.training_loss().numpy()
    result = gpflow.optimizers.Scipy().minimize(m.training_loss, m.trainable_variables, options=dict(maxiter=50))
    assert result.fun < before
    assert int(m.ep_diagnostics.converged.numpy()) == 1
    site_ids = {id(v) for v in m.sites.variables}
    assert not site_ids & {id(v) for v in m.trainable_variables}


def test_alternated_mode_with_the_ep_optimiser(classification_data):
    X, Y = classification_data
    m = EPGPC((X, Y), _kernel(), Probit(), ep_mode="alternated")
    adam = gpflow.keras.tf_keras.optimizers.Adam(0.05)
    loss = m.training_loss_closure()
    first = None
    for _ in range(5):
        result = EP().minimize(m)
        first = first if first is not None else result.log_marginal_likelihood
        for _ in range(10):
            adam.minimize(loss, m.trainable_variables)
    assert EP().minimize(m).log_marginal_likelihood > first


# ------------------------------------------------------------------------------ GPflow integration


def test_print_summary_checkpoint_and_deepcopy(classification_data, tmp_path):
    X, Y = classification_data
    m = EPGPC((X, Y), _kernel(), Probit())
    EP().minimize(m)
    summary = gpflow.utilities.tabulate_module_summary(m)  # the parameters; the EP state has its own table
    assert "kernel.lengthscales" in summary and "sites" not in summary
    assert "sites.precision" in m.ep_state_summary() and "sites.natural_mean" in m.ep_state_summary()
    saved = [v.numpy() for v in m.sites.read()]
    path = tf.train.Checkpoint(model=m).save(str(tmp_path / "ckpt"))
    m.sites.reset()
    m.kernel.variance.assign(3.0)
    tf.train.Checkpoint(model=m).restore(path)
    for a, b in zip(saved, m.sites.read()):
        np.testing.assert_array_equal(a, b)
    assert np.isclose(m.kernel.variance.numpy(), 1.5)
    clone = gpflow.utilities.deepcopy(m)
    np.testing.assert_allclose(clone.predict_f(X[:3])[0], m.predict_f(X[:3])[0])


def test_predictions_are_probabilities_and_match_training_marginals(classification_data):
    X, Y = classification_data
    m = EPGPC((X, Y), _kernel(), NoisyStep(0.1), ep_mode="alternated")
    EP().minimize(m)
    p, _ = m.predict_y(X)
    assert np.all((p >= 0.1 - 1e-12) & (p <= 0.9 + 1e-12))
    mu, var = m.predict_f(X)
    q = m.site_problem().algebra.posterior(*m.sites.read()).factorisation
    np.testing.assert_allclose(mu, q.mean, atol=1e-10)
    np.testing.assert_allclose(var, q.var, atol=1e-10)
    assert m.predict_log_density((X, Y)).shape == (X.shape[0],)


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "Y, match",
    [
        (lambda Y: 2 * Y - 1, "only 0 and 1"),
        (lambda Y: Y + 1, "only 0 and 1"),
        (lambda Y: Y[:, 0], r"\[N, 1\]"),
        (lambda Y: np.hstack([Y, Y]), r"\[N, 1\]"),
        (lambda Y: Y[:-1], "rows"),
        (lambda Y: np.where(np.arange(len(Y))[:, None] == 0, np.nan, Y), "NaN"),
    ],
)
def test_bad_labels_raise_value_error_naming_y(classification_data, Y, match):
    X, Y0 = classification_data
    with pytest.raises(ValueError, match=match):
        EPGPC((X, Y(Y0)), _kernel(), Probit())


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_inputs_raise_value_error_naming_x(classification_data, bad):
    X, Y = classification_data
    X = X.copy()
    X[3, 1] = bad
    with pytest.raises(ValueError, match="X"):
        EPGPC((X, Y), _kernel(), Probit())
    m = EPGPC((classification_data[0], Y), _kernel(), Probit(), ep_mode="alternated")
    with pytest.raises(ValueError, match="Xnew"):
        m.predict_f(X)


@pytest.mark.parametrize(
    "setting, match",
    [
        (dict(power=0.0), "power"),
        (dict(power=1.5), "power"),
        (dict(damping=0.0), "damping"),
        (dict(schedule="random"), "schedule"),
        (dict(max_sweeps=0), "max_sweeps"),
        (dict(tol=-1.0), "tol"),
        (dict(ep_mode="lazy"), "ep_mode"),
        (dict(cavity="half"), "cavity"),
    ],
)
def test_bad_settings_raise_value_error_naming_them(classification_data, setting, match):
    with pytest.raises(ValueError, match=match):
        EPGPC(classification_data, _kernel(), Probit(), **setting)


def test_tiny_lengthscale_gives_finite_independent_sites():
    """k ≈ δ: every site sees only its own prior, EP converges at once and stays finite."""
    X, Y, _ = noisy_mixture(20, flip_rate=0.4, seed=3)
    m = EPGPC((X, Y), gpflow.kernels.SquaredExponential(variance=50.0, lengthscales=1e-3), NoisyStep(0.05))
    result = EP().minimize(m)
    assert result.converged and np.isfinite(result.log_marginal_likelihood)


@pytest.mark.parametrize("schedule", ["parallel", "sequential"])
def test_hard_problem_reports_non_convergence_with_finite_values(schedule):
    """
    40 % flipped labels, a noisy step with ε = 0.05 (far below the flip rate) and a long
    lengthscale: EP oscillates and meets improper cavities. It must skip and count them, report
    non-convergence with a warning, and keep every output finite.
    """
    X, Y, _ = noisy_mixture(20, flip_rate=0.4, seed=3)
    m = EPGPC(
        (X, Y),
        gpflow.kernels.SquaredExponential(variance=50.0, lengthscales=3.0),
        NoisyStep(0.05),
        schedule=schedule,
        max_sweeps=50,
        tol=1e-8,
        ep_mode="alternated",
    )
    with pytest.warns(EPConvergenceWarning):
        result = EP().minimize(m)
    assert not result.converged
    assert result.num_skipped > 0
    assert np.isfinite(result.log_marginal_likelihood)
    assert all(np.all(np.isfinite(v)) for v in m.sites.read())
    for a in m.predict_y(X):
        assert np.all(np.isfinite(a))
    with tf.GradientTape() as tape:
        loss = m.training_loss()
    assert np.isfinite(loss)
    assert all(np.all(np.isfinite(g)) for g in tape.gradient(loss, m.trainable_variables))


@pytest.mark.parametrize("schedule", ["parallel", "convergent"])
def test_run_ep_and_the_eager_nested_loss_warn_when_ep_does_not_converge(classification_data, schedule):
    """Every eager path that runs EP to convergence warns with the sweeps, the measure and tol; a
    compiled nested loss warns from the graph (once until ep_diagnostics.reset()) and counts in ep_diagnostics."""
    X, Y = classification_data
    m = EPGPC((X, Y), _kernel(), Probit(), schedule=schedule, max_sweeps=2, tol=1e-15)
    counted = "2 outer steps" if schedule == "convergent" else "2 sweeps"
    with pytest.warns(EPConvergenceWarning, match=rf"EPGPC.run_ep\).* {counted} .*tol=1e-15"):
        assert not bool(m.run_ep().converged)
    with pytest.warns(EPConvergenceWarning, match=counted):
        m.training_loss()
    m.ep_diagnostics.converged.assign(1)
    with pytest.warns(EPConvergenceWarning, match=rf"{counted} .*once until"):
        tf.function(m.training_loss)()
    assert m.ep_diagnostics.converged.numpy() == 0 and m.ep_diagnostics.sweeps.numpy() == 2


# ------------------------------------------------------------------------------ prediction is read-only


@pytest.mark.parametrize("schedule", ["parallel", pytest.param("convergent", marks=pytest.mark.slow)])
def test_nested_prediction_never_writes_and_matches_run_ep(classification_data, schedule):
    """After a parameter changes, predict_y computes (does not store) the new fixed point."""
    X, Y = classification_data
    m = EPGPC((X, Y), _kernel(), Probit(), schedule=schedule)
    m.run_ep()
    assert bool(m.ep_state_is_current())
    m.kernel.lengthscales.assign([0.5, 2.0])
    assert not bool(m.ep_state_is_current())
    stored = [v.numpy().copy() for v in m.variables]
    p, _ = m.predict_y(X[:7])
    for before, after in zip(stored, m.variables):
        np.testing.assert_array_equal(before, after.numpy())
    m.run_ep()  # the fixed point predict_y used, now stored
    assert bool(m.ep_state_is_current())
    # the same EP run from the same sites: same numbers (the stored run is compiled separately)
    np.testing.assert_allclose(m.predict_y(X[:7])[0], p, rtol=0, atol=1e-12)


def test_an_ep_run_with_non_finite_results_is_not_stored(classification_data):
    X, Y = classification_data
    m = EPGPC((X, Y), _kernel(), Probit())
    m.run_ep()
    sites = [v.numpy().copy() for v in m.sites.variables]
    m.kernel.variance.unconstrained_variable.assign(np.nan)
    run = m.run_ep()
    assert not bool(run.converged) and not bool(m.ep_diagnostics.converged.numpy())
    for before, after in zip(sites, m.sites.variables):
        np.testing.assert_array_equal(before, after.numpy())


@pytest.mark.slow
def test_scipy_training_on_raw_features_warns_when_ep_inside_the_loss_does_not_converge():
    """
    Breast cancer's 569 points with their raw features (scales 1e-3 … 4e3) and a unit length-scale:
    under ``Scipy().minimize`` of the nested loss, EP stops converging once the length-scale grows
    (damped parallel EP's sites still move by ~3e-2 after 100 sweeps). The compiled loss warns once,
    and ``ep_diagnostics`` counts every such run.
    """
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    model = EPGPC((X, y[:, None].astype(np.float64)), gpflow.kernels.SquaredExponential(), Probit())
    with pytest.warns(EPConvergenceWarning, match="nested training loss") as caught:
        gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables)
    assert sum(issubclass(w.category, EPConvergenceWarning) for w in caught) == 1
    assert 0 < int(model.ep_diagnostics.runs_not_converged.numpy()) <= int(model.ep_diagnostics.runs.numpy())
