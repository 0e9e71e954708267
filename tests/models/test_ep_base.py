"""
What every EP model gets from ``EPModel``: accurate predictive densities, and a non-converged EP run
inside a compiled training loss that is reported, not silent.

``predict_log_density`` is log ∫ p(y | f) N(f; μ*, σ*²) df, checked against SciPy's adaptive quadrature
(``scipy.integrate.quad`` to 1e-12 relative, split at y where the likelihood peaks or has a kink) to 1e-8
relative — the accuracy the package's quadrature documents — including a likelihood 20 times narrower
than the predictive, where GPflow's 20-point Gauss–Hermite rule is nats off. ``predict_y`` is the mean and
variance of y* under the same integral, checked the same way (the conditional moments integrated by SciPy,
tests/ep/scipy_predictive.py) for every likelihood, at a test point far from the data (predictive sd 3).
"""

import warnings

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras
from scipy import integrate, special

from gpflow_ep.likelihoods import Laplace, MultiClassStep, Probit
from gpflow_ep.models import EPGP, EPGPC, SEPGP, SEPGPC, PowerEP
from gpflow_ep.optimizers import MinibatchEP
from gpflow_ep.training import make_dataset


def _reference_log_density(density, y, mean, sd):
    """log ∫ p(y | f) N(f; mean, sd²) df by adaptive quadrature over ±40 predictive sds, split at y."""
    f = lambda t: density(t) * np.exp(-0.5 * ((t - mean) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))  # noqa: E731
    lo, hi = mean - 40 * sd, mean + 40 * sd
    points = [p for p in (y, mean) if lo < p < hi]
    value, _ = integrate.quad(f, lo, hi, points=points, limit=1000, epsabs=0.0, epsrel=1e-12)
    return np.log(value)


def _student_t_density(y, f, df=3.0, scale=0.05):
    """The Student-t density of y with location f (closed form; SciPy's stats.t.pdf per point is slow)."""
    z = (y - f) / scale
    log_norm = special.gammaln((df + 1) / 2) - special.gammaln(df / 2) - 0.5 * np.log(df * np.pi) - np.log(scale)
    return np.exp(log_norm - (df + 1) / 2 * np.log1p(z * z / df))


CASES = {
    "student_t_narrow": (gpflow.likelihoods.StudentT(scale=0.05, df=3.0), _student_t_density),
    "laplace": (Laplace(scale=0.1), lambda y, f: np.exp(-np.abs(y - f) / 0.1) / 0.2),
    "poisson": (gpflow.likelihoods.Poisson(), lambda y, f: np.exp(y * f - np.exp(f) - special.gammaln(y + 1))),
    "probit": (Probit(), lambda y, f: special.ndtr((2 * y - 1) * f)),
}


def _data(name):
    rng = np.random.default_rng(4)
    X = np.linspace(-2, 2, 30)[:, None]
    f = np.sin(2 * X)
    if name == "poisson":
        return X, rng.poisson(np.exp(f)).astype(float), np.array([[0.2], [3.0]]), np.array([[2.0], [7.0]])
    if name == "probit":
        return X, (f > 0).astype(float), np.array([[0.2], [3.0]]), np.array([[1.0], [0.0]])
    return X, f + 0.05 * rng.standard_normal(f.shape), np.array([[0.37], [3.0]]), np.array([[0.5], [0.1]])


@pytest.mark.parametrize("sparse", [False, True], ids=["EPGP", "SEPGP"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_predict_log_density_equals_adaptive_quadrature(name, sparse):
    likelihood, density = CASES[name]
    X, Y, Xs, Ys = _data(name)
    kernel = gpflow.kernels.SquaredExponential(lengthscales=0.3)
    if sparse:
        m = SEPGP(kernel, likelihood, X[::3].copy(), num_data=len(X))
        m.run_ep((X, Y))
    else:
        m = EPGP((X, Y), kernel, likelihood)
        m.run_ep()
    mean, var = (t.numpy()[:, 0] for t in m.predict_f(Xs))
    ours = m.predict_log_density((Xs, Ys)).numpy()
    assert ours.shape == (2,)
    for i in range(2):
        y = Ys[i, 0]
        reference = _reference_log_density(lambda f, y=y: density(y, f), y, mean[i], np.sqrt(var[i]))
        np.testing.assert_allclose(ours[i], reference, rtol=1e-8, atol=1e-8)


def test_a_narrow_likelihood_under_a_wide_predictive_is_resolved_where_gauss_hermite_is_not():
    likelihood, density = CASES["student_t_narrow"]
    X, Y, Xs, Ys = _data("student_t_narrow")
    m = EPGP((X, Y), gpflow.kernels.SquaredExponential(lengthscales=0.3), likelihood)
    m.run_ep()
    mean, var = m.predict_f(Xs)
    assert np.sqrt(var[1, 0]) > 10 * 0.05  # the second test point is far from the data: a wide predictive
    reference = _reference_log_density(lambda f: density(0.1, f), 0.1, mean[1, 0].numpy(), np.sqrt(var[1, 0]))
    gauss_hermite = likelihood.predict_log_density(Xs, mean, var, Ys).numpy()[1]
    assert abs(gauss_hermite - reference) > 1.0  # GPflow's default rule: nats off
    np.testing.assert_allclose(m.predict_log_density((Xs, Ys)).numpy()[1], reference, rtol=1e-8)


def _scipy_predictive():
    """tests/ep/scipy_predictive.py (SciPy adaptive quadrature of the conditional moments, split at kinks)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "ep" / "scipy_predictive.py"
    spec = importlib.util.spec_from_file_location("scipy_predictive", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCIPY_PREDICTIVE = _scipy_predictive()
PREDICTIVE_CASES = SCIPY_PREDICTIVE.predictive_cases()
BINARY = ("probit", "bernoulli_probit", "logistic", "noisy_step", "hinge")
REAL = ("gaussian", "student_t_narrow", "laplace_narrow")
MODEL_CASES = [
    *((name, False) for name in (*BINARY, *REAL, "poisson", "ordinal", "ordinal_narrow")),
    *((name, True) for name in ("poisson", "ordinal_narrow")),
]


def _targets(name, f, rng):
    if name in BINARY:
        return (f > 0).astype(float)
    if name in REAL:
        return f + 0.05 * rng.standard_normal(f.shape)
    if name == "poisson":
        return rng.poisson(np.exp(f)).astype(float)
    return np.digitize(f, SCIPY_PREDICTIVE.ORDINAL_EDGES).astype(float)  # ordinal classes 0…4


@pytest.mark.parametrize("name, sparse", MODEL_CASES, ids=[f"{n}-{'SEPGP' if s else 'EPGP'}" for n, s in MODEL_CASES])
def test_predict_y_equals_adaptive_quadrature(name, sparse):
    """E[y*], Var[y*] to 1e-8 relative, at a test point in the data and one far from it (predictive sd 3)."""
    case = PREDICTIVE_CASES[name]
    X = np.linspace(-2, 2, 20)[:, None]
    Y = _targets(name, 1.5 * np.sin(2 * X), np.random.default_rng(5))
    kernel = gpflow.kernels.SquaredExponential(variance=9.0, lengthscales=0.5)
    if sparse:
        m = SEPGP(kernel, case.likelihood(), X[::2].copy(), num_data=len(X))
        m.run_ep((X, Y))
    else:
        m = EPGP((X, Y), kernel, case.likelihood())
        m.run_ep()
    Xs = np.array([[0.37], [8.0]])
    f_mean, f_var = (t.numpy()[:, 0] for t in m.predict_f(Xs))
    assert f_var[1] > 8.9  # far from the data: the prior's sd 3
    mean, var = (t.numpy()[:, 0] for t in m.predict_y(Xs))
    reference = np.array([SCIPY_PREDICTIVE.predictive_reference(case, mi, vi) for mi, vi in zip(f_mean, f_var)])
    atol = 1e-14  # the reference's own absolute accuracy (tests/ep/test_predictive.py, REFERENCE_ATOL)
    np.testing.assert_allclose(mean, reference[:, 0], rtol=1e-8, atol=atol)
    np.testing.assert_allclose(var, reference[:, 1], rtol=1e-8, atol=atol)


def test_predict_y_refuses_full_covariances_as_gpflow_does():
    X, Y, Xs, _ = _data("probit")
    m = EPGP((X, Y), gpflow.kernels.SquaredExponential(), Probit())
    with pytest.raises(NotImplementedError):
        m.predict_y(Xs, full_cov=True)


def test_full_covariances_are_refused_as_gpflow_does():
    X, Y, Xs, Ys = _data("probit")
    m = EPGP((X, Y), gpflow.kernels.SquaredExponential(), Probit())
    with pytest.raises(NotImplementedError):
        m.predict_log_density((Xs, Ys), full_cov=True)


def test_non_convergence_inside_a_compiled_training_loss_warns_once_and_is_counted():
    """Under Scipy's compiled loss EP cannot warn from Python at trace time; it warns from the graph."""
    from gpflow_ep.ep import EPConvergenceWarning

    X, Y, _, _ = _data("probit")
    m = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit(), max_sweeps=2, tol=1e-14)
    with pytest.warns(EPConvergenceWarning, match=r"nested training loss\) did not converge in 2 sweeps") as record:
        gpflow.optimizers.Scipy().minimize(m.training_loss, m.trainable_variables, options=dict(maxiter=3))
    assert len([w for w in record if issubclass(w.category, EPConvergenceWarning)]) == 1
    runs = int(m.ep_diagnostics.runs.numpy())
    assert runs >= 2 and int(m.ep_diagnostics.runs_not_converged.numpy()) == runs
    m.ep_diagnostics.reset()
    assert int(m.ep_diagnostics.runs_not_converged.numpy()) == 0
    loss = tf.function(m.training_loss)
    with pytest.warns(EPConvergenceWarning, match="once until"):
        loss()


def test_a_sparse_copy_of_the_parameters_alone_warns_and_a_copy_with_the_ep_state_predicts_as_the_trained():
    X, Y, Xs, _ = _data("probit")
    Z = X[::3].copy()
    trained = SEPGP(gpflow.kernels.SquaredExponential(lengthscales=0.3), Probit(), Z, num_data=len(X))
    trained.run_ep((X, Y))
    copy = SEPGP(gpflow.kernels.SquaredExponential(), Probit(), Z, num_data=len(X))
    gpflow.utilities.multiple_assign(copy, gpflow.utilities.parameter_dict(trained))
    with pytest.warns(UserWarning, match="never fitted"):
        copy.predict_f(Xs)
    gpflow.utilities.multiple_assign(copy.ep_state, gpflow.utilities.parameter_dict(trained.ep_state))
    for a, b in zip(copy.predict_f(Xs), trained.predict_f(Xs)):
        np.testing.assert_array_equal(a, b)


def test_an_eager_run_inside_a_users_gradient_tape_is_not_recorded():
    """
    EP's sites are held fixed under differentiation, so a run called eagerly inside a user's
    ``GradientTape`` is not recorded: the tape watches nothing of it (recording it made TensorFlow
    build the gradient graph of the run's while loop, 14 s for the first nested loss of a 40-point
    ordinal EPGP), and the nested loss's gradient is the evidence's at the stored sites, as when
    compiled.
    """
    X, Y, _, _ = _data("probit")
    m = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit())
    with tf.GradientTape() as tape:
        m.run_ep()
    assert tape.watched_variables() == ()
    with tf.GradientTape() as tape:
        loss = m.training_loss()
    eager = tape.gradient(loss, m.trainable_variables)

    @tf.function
    def compiled():
        with tf.GradientTape() as inner:
            value = m.training_loss()
        return inner.gradient(value, m.trainable_variables)

    # the compiled loss sweeps once more from the stored sites, which moves them by less than EP's
    # tolerance (1e-6), and the evidence is stationary in them: a relative difference far below 1e-6
    for a, b in zip(eager, compiled()):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_predicting_as_stored_does_not_warn_nor_use_up_the_one_warning():
    X, Y, Xs, _ = _data("probit")
    m = SEPGP(gpflow.kernels.SquaredExponential(), Probit(), X[::3].copy(), num_data=len(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails
        with m.predicting_as_stored():
            m.predict_f(Xs)
    with pytest.warns(UserWarning, match="never fitted"):
        m.predict_f(Xs)


def test_a_sparse_model_predicts_from_its_trained_state_without_a_warning():
    """
    Sites written by EP — a batch run, or minibatch refreshes while the hyper-parameters move — are the
    model's trained state: predicting from them is silent (in the default, nested EP mode, where it used
    to warn), also after a later change of a hyper-parameter (as SVGP predicts from its q(u) whatever its
    kernel).
    """
    X, Y, Xs, _ = _data("probit")
    m = SEPGP(gpflow.kernels.SquaredExponential(), Probit(), X[::3].copy(), num_data=len(X))
    loss = MinibatchEP().loss_closure(m, iter(make_dataset((X, Y), batch_size=10, seed=0)), compile=False)
    optimizer = tf_keras.optimizers.Adam(0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails
        for _ in range(2):
            optimizer.minimize(loss, m.trainable_variables)
        m.predict_y(Xs)
        m.run_ep((X, Y))
        m.kernel.variance.assign(2.0)
        m.predict_y(Xs)


@pytest.mark.parametrize(
    "build",
    [
        lambda X, Y, k: EPGPC((X, Y), k, MultiClassStep(3)),
        lambda X, Y, k: SEPGPC(k, gpflow.likelihoods.Softmax(2), X[:3].copy(), num_data=len(X)),
        lambda X, Y, k: SEPGP(k, gpflow.likelihoods.MultiClass(3), X[:3].copy(), num_data=len(X)),
        lambda X, Y, k: PowerEP((X, Y), k, gpflow.likelihoods.Softmax(2)),
    ],
    ids=["EPGPC+MultiClassStep", "SEPGPC+Softmax", "SEPGP+RobustMax", "PowerEP+Softmax"],
)
def test_a_likelihood_without_ep_moments_is_refused_when_the_model_is_built(build):
    """Not at the first loss: the construction names the likelihood and says what to use."""
    X, Y, _, _ = _data("probit")
    with pytest.raises(ValueError, match=r"^likelihood: EP has no site moments for"):
        build(X, Y, gpflow.kernels.SquaredExponential())


@pytest.mark.parametrize("model", ["EPGPC", "SEPGPC"])
def test_a_frozen_model_predicts_exactly_what_the_model_predicts(model):
    """
    ``gpflow.utilities.freeze`` replaces the parameters by constants: the frozen model cannot change, so
    it predicts from the stored EP state (no EP run at predict time) — bit for bit what the trained model
    predicts from the same state.
    """
    X, Y, Xs, _ = _data("probit")
    kernel = gpflow.kernels.SquaredExponential()
    if model == "EPGPC":
        m = EPGPC((X, Y), kernel, Probit())
        gpflow.optimizers.Scipy().minimize(m.training_loss, m.trainable_variables, options=dict(maxiter=5))
        assert bool(m.ep_state_is_current())  # Scipy's last evaluation is at its result
    else:
        m = SEPGPC(kernel, Probit(), X[::3].copy(), num_data=len(X))
        m.run_ep((X, Y))
    frozen = gpflow.utilities.freeze(m)
    assert not frozen.parameters and bool(frozen.ep_state_is_current())
    for a, b in zip(frozen.predict_y(Xs), m.predict_y(Xs)):
        np.testing.assert_array_equal(a, b)


def test_only_ep_writes_ep_state_never_an_objective():
    """
    One rule: EP runs and minibatch refreshes write EP state; an objective does not. SEPGPC's minibatch loss
    -F_M and, in alternated mode, its full-data loss -log Z_EP leave every EP state variable as it was; in
    nested mode the full-data loss is an EP run (stored, as run_ep stores it) followed by the evidence.
    """
    X, Y, _, _ = _data("probit")
    index = np.arange(0, len(X), 3)
    for ep_mode in ("alternated", "nested"):
        m = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[::4].copy(), num_data=len(X), ep_mode=ep_mode)
        m.run_ep((X, Y))
        m.kernel.variance.assign(1.7)
        before = [v.numpy().copy() for v in m.ep_state.variables]
        m.training_loss((X[index], Y[index], index))
        m.minibatch_log_marginal_likelihood((X[index], Y[index], index))
        m.log_marginal_likelihood((X, Y))
        for a, b in zip(before, m.ep_state.variables):
            np.testing.assert_array_equal(a, b.numpy())
        m.training_loss((X, Y))
        changed = any(not np.array_equal(a, b.numpy()) for a, b in zip(before, m.ep_state.variables))
        assert changed == (ep_mode == "nested")
        assert bool(m.ep_state_is_current()) == (ep_mode == "nested")
