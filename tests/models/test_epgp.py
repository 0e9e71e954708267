"""EPGP and SEPGP: EP for any scalar likelihood (regression, counts, ordinal), checked against exact references."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy import integrate, stats

from gpflow_ep.likelihoods import Laplace, check_targets
from gpflow_ep.models import EPGP, EPGPC, SEPGP, SEPGPC


def _kernel(variance=1.0, lengthscales=0.7):
    return gpflow.kernels.SquaredExponential(variance=variance, lengthscales=lengthscales)


@pytest.fixture
def count_data():
    rng = np.random.default_rng(1)
    X = np.sort(rng.uniform(-2, 2, (12, 1)), axis=0)
    Y = rng.poisson(np.exp(0.5 + np.sin(2 * X))).astype(np.float64)
    return X, Y


def test_gaussian_likelihood_equals_gpr():
    """With a Gaussian likelihood EP is exact: EPGP's evidence and predictive are GPR's."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (15, 1))
    Y = np.sin(2 * X) + 0.2 * rng.standard_normal(X.shape)
    model = EPGP((X, Y), _kernel(), gpflow.likelihoods.Gaussian(variance=0.05), tol=1e-10, max_sweeps=500)
    model.run_ep()
    gpr = gpflow.models.GPR((X, Y), _kernel(), noise_variance=0.05)
    Xs = np.linspace(-3, 3, 7)[:, None]
    np.testing.assert_allclose(model.log_marginal_likelihood(), gpr.log_marginal_likelihood(), rtol=1e-8)
    for ours, theirs in zip(model.predict_y(Xs), gpr.predict_y(Xs)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(
        model.predict_log_density((Xs, np.sin(2 * Xs))), gpr.predict_log_density((Xs, np.sin(2 * Xs))), rtol=1e-8
    )


def _exact_one_point(log_lik, k, y):
    """log Z, mean and variance of p(y | f) N(f; 0, k) by SciPy's adaptive quadrature (the exact posterior)."""
    sd = np.sqrt(k)

    def moment(p):
        return integrate.quad(
            lambda f: f**p * np.exp(log_lik(f, y)) * np.exp(-0.5 * (f / sd) ** 2) / (sd * np.sqrt(2 * np.pi)),
            -12 * sd,
            12 * sd,
            epsabs=0,
            epsrel=1e-12,
            limit=200,
            points=[y] if abs(y) < 12 * sd else None,
        )[0]

    Z, m1, m2 = moment(0), moment(1), moment(2)
    mean = m1 / Z
    return np.log(Z), mean, m2 / Z - mean**2


@pytest.mark.parametrize(
    "likelihood, y, log_lik",
    [
        (gpflow.likelihoods.Poisson(), 3.0, lambda f, y: stats.poisson.logpmf(y, np.exp(f))),
        (gpflow.likelihoods.StudentT(scale=0.3, df=4.0), 2.5, lambda f, y: stats.t.logpdf(y, 4.0, f, 0.3)),
        (Laplace(scale=0.5), 1.5, lambda f, y: stats.laplace.logpdf(y, f, 0.5)),
        (
            gpflow.likelihoods.Ordinal(np.array([-1.0, 0.5])),
            1.0,
            # GPflow's inv_probit squashes Φ to 1e-3 + (1 - 2e-3) Φ, and Ordinal adds 1e-6
            lambda f, y: np.log((1 - 2e-3) * (stats.norm.cdf(0.5 - f) - stats.norm.cdf(-1.0 - f)) + 1e-6),
        ),
    ],
    ids=["poisson", "student_t", "laplace", "ordinal"],
)
def test_one_point_ep_is_exact(likelihood, y, log_lik):
    """
    With one observation EP's single site makes q the Gaussian with the true posterior's mean and
    variance, and log Z_EP is the exact log marginal likelihood (Minka 2001, §3.2): checked against
    SciPy's adaptive quadrature of p(y | f) N(f; 0, k).
    """
    k = 2.0
    X, Y = np.zeros((1, 1)), np.array([[y]])
    model = EPGP((X, Y), _kernel(variance=k), likelihood, tol=1e-12, max_sweeps=200)
    model.run_ep()
    log_z, mean, var = _exact_one_point(log_lik, k, y)
    f_mean, f_var = model.predict_f(X)
    np.testing.assert_allclose(model.log_marginal_likelihood(), log_z, rtol=1e-8)
    np.testing.assert_allclose(f_mean[0, 0], mean, rtol=1e-8, atol=1e-10 * np.sqrt(k))
    np.testing.assert_allclose(f_var[0, 0], var, rtol=1e-7)


def test_poisson_counts_converge_and_predict_like_gpflow(count_data):
    """EP with GPflow's Poisson converges; predict_y / predict_log_density are the likelihood's at q(f*)."""
    X, Y = count_data
    model = EPGP((X, Y), _kernel(), gpflow.likelihoods.Poisson())
    run = model.run_ep()
    assert bool(run.converged)
    Xs = np.linspace(-2, 2, 5)[:, None]
    mean, var = model.predict_f(Xs)
    # E[exp f] and Var[exp f] under the Gaussian q(f*) in closed form (log-normal moments)
    y_mean, y_var = model.predict_y(Xs)
    np.testing.assert_allclose(y_mean, np.exp(mean + var / 2), rtol=1e-8)
    np.testing.assert_allclose(y_var, np.exp(mean + var / 2) + (np.exp(var) - 1) * np.exp(2 * mean + var), rtol=1e-8)
    assert np.all(np.isfinite(model.predict_log_density((Xs, np.ones_like(Xs)))))


def test_sepgp_with_inducing_inputs_at_the_data_equals_epgp(count_data, tiny_jitter):
    """With Z = X the FITC variances vanish and sparse EP has full EP's fixed point (Hernández-Lobato 2016, §2)."""
    X, Y = count_data
    full = EPGP((X, Y), _kernel(), gpflow.likelihoods.Poisson(), tol=1e-10, max_sweeps=500)
    full.run_ep()
    sparse = SEPGP(
        _kernel(), gpflow.likelihoods.Poisson(), X.copy(), X.shape[0], tol=1e-10, max_sweeps=500
    )
    sparse.run_ep((X, Y))
    np.testing.assert_allclose(sparse.log_marginal_likelihood((X, Y)), full.log_marginal_likelihood(), rtol=1e-6)
    Xs = np.linspace(-2.5, 2.5, 6)[:, None]
    for ours, theirs in zip(sparse.predict_f(Xs), full.predict_f(Xs)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "likelihood, Y, match",
    [
        (gpflow.likelihoods.Poisson(), [[1.0], [-1.0]], "non-negative integers"),
        (gpflow.likelihoods.Poisson(), [[1.0], [2.5]], "non-negative integers"),
        (gpflow.likelihoods.Ordinal(np.array([0.0, 1.0])), [[0.0], [3.0]], r"integers in \[0, 2\]"),
        (gpflow.likelihoods.Ordinal(np.array([0.0, 1.0])), [[0.0], [0.5]], r"integers in \[0, 2\]"),
        (gpflow.likelihoods.Bernoulli(), [[0.0], [2.0]], "only 0 and 1"),
        (gpflow.likelihoods.StudentT(), [[0.0], [np.nan]], "NaN"),
        (gpflow.likelihoods.Exponential(), [[1.0], [0.0]], "positive"),
    ],
)
def test_targets_outside_the_likelihoods_support_raise_value_error_naming_y(likelihood, Y, match):
    X, Y = np.zeros((2, 1)), np.array(Y)
    with pytest.raises(ValueError, match=match) as error:
        EPGP((X, Y), _kernel(), likelihood)
    assert "Y" in str(error.value)
    sparse = SEPGP(_kernel(), likelihood, np.zeros((1, 1)), 2)
    for call in (sparse.training_loss, sparse.run_ep, sparse.log_marginal_likelihood):
        with pytest.raises(ValueError, match=match):
            call((X, Y))


def test_multi_latent_likelihood_is_refused_naming_it():
    X, Y = np.zeros((2, 1)), np.zeros((2, 1))
    with pytest.raises(ValueError, match="likelihood"):
        EPGP((X, Y), _kernel(), gpflow.likelihoods.Softmax(3))
    with pytest.raises(ValueError, match="likelihood"):
        SEPGP(_kernel(), gpflow.likelihoods.Softmax(3), np.zeros((1, 1)), 2)


def test_epgpc_is_epgp_by_name_only_and_check_targets_returns_floats():
    """One implementation each: EPGPC and SEPGPC are EPGP and SEPGP under the classification names."""
    for name_only, implementation in ((EPGPC, EPGP), (SEPGPC, SEPGP)):
        assert issubclass(name_only, implementation)
        assert not [name for name in vars(name_only) if not name.startswith("_")]
    np.testing.assert_array_equal(check_targets(gpflow.likelihoods.Poisson(), np.array([[0], [4]])), [[0.0], [4.0]])
    assert check_targets(gpflow.likelihoods.Poisson(), tf.constant([[2.0]])).dtype == np.float64


def test_sepgp_refuses_the_robust_fallback_and_names_the_setting_that_works():
    """The double-loop fallback needs the full GP's normaliser of q, which inducing points lack."""
    from gpflow_ep.ep import robust_settings

    Z = np.linspace(-1.0, 1.0, 3)[:, None]
    with pytest.raises(ValueError, match=r"schedule: 'robust'.*robust_settings\(fallback=False\)"):
        SEPGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.StudentT(), Z, 10, **robust_settings())
    model = SEPGP(
        gpflow.kernels.SquaredExponential(), gpflow.likelihoods.StudentT(), Z, 10, **robust_settings(fallback=False)
    )
    assert model.ep_settings.schedule == "parallel"
