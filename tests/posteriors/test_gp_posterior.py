"""
EPGPPosterior, the full-GP EP posterior as a GPflow posterior (GPflow's ``test_*_posterior.py``
pattern): cached = fused = the model's ``predict_f``, ``update_cache`` after a change, the VARIABLE
cache exported with ``tf.saved_model``, and an independent dense computation of q(f*).

Tolerances: the cached predictive forms Q = (K + T⁻¹)⁻¹ explicitly, the fused one solves per test
point; in float64 the two differ by round-off of order cond·ε with cond(K + T⁻¹) ≲ 1e4 here, so 1e-9
relative to the quantities' scale. The dense oracle inverts K in NumPy (cond(K) ≲ 1e5 here): 1e-8.
"""

import warnings

import gpflow
import numpy as np
import pytest
from gpflow.posteriors import PrecomputeCacheType

from gpflow_ep.datasets import noisy_mixture
from gpflow_ep.likelihoods import NoisyStep, Probit
from gpflow_ep.models import EPGP, EPGPC, PowerEP, RelaxedEP
from gpflow_ep.optimizers import EP
from gpflow_ep.posteriors import EPGPPosterior

CACHES = [PrecomputeCacheType.TENSOR, PrecomputeCacheType.VARIABLE]


@pytest.fixture(scope="module")
def data():
    X, Y, _ = noisy_mixture(25, flip_rate=0.1, seed=3)
    return X, Y


def _kernel():
    return gpflow.kernels.SquaredExponential(variance=1.5, lengthscales=1.2)


def _build(name, data):
    X, Y = data
    if name == "EPGPC":
        return EPGPC(data, _kernel(), Probit(), ep_mode="alternated")
    if name == "EPGP-StudentT":
        y = np.sin(X[:, :1]) + 0.1 * np.random.default_rng(0).standard_normal((len(X), 1))
        return EPGP((X, y), _kernel(), gpflow.likelihoods.StudentT(scale=0.2, df=4.0), ep_mode="alternated")
    if name == "PowerEP-NoisyStep":  # sites with negative precisions
        return PowerEP(data, _kernel(), NoisyStep(0.1), power=0.8, ep_mode="alternated")
    if name == "RelaxedEP":
        return RelaxedEP(data, _kernel(), Probit(), ep_mode="alternated")
    raise KeyError(name)


MODELS = ["EPGPC", "EPGP-StudentT", "PowerEP-NoisyStep", "RelaxedEP"]


def _fitted(name, data):
    m = _build(name, data)
    EP(max_sweeps=200, warn=False).minimize(m)
    return m


@pytest.fixture(scope="module")
def fitted(data):
    """Each model fitted once, for the tests that only read it (fitting compiles an EP run per model)."""
    models = {}

    def get(name):
        if name not in models:
            models[name] = _fitted(name, data)
        return models[name]

    return get


def _dense_predictive(m, Xnew):
    """q(f*) from Σ = (K⁻¹ + T)⁻¹, μ = Σ(K⁻¹m + ν) and p(f* | f), in NumPy."""
    X = m.data[0].numpy()
    K = m.kernel(X).numpy()
    tau, nu = (v.numpy()[:, 0] for v in m.sites.read())
    mean_X = m.mean_function(X).numpy()[:, 0]
    K_inv = np.linalg.inv(K)
    Sigma = np.linalg.inv(K_inv + np.diag(tau))
    mu = Sigma @ (K_inv @ mean_X + nu)
    Ks = m.kernel(X, Xnew).numpy()
    A = K_inv @ Ks
    mean = m.mean_function(Xnew).numpy()[:, 0] + A.T @ (mu - mean_X)
    cov = m.kernel(Xnew).numpy() - Ks.T @ A + A.T @ Sigma @ A
    return mean, cov


def _close(actual, expected, rtol):
    actual, expected = np.asarray(actual), np.asarray(expected)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * np.max(np.abs(expected)))


@pytest.mark.parametrize("name", MODELS)
def test_the_posterior_is_a_gpflow_posterior_equal_to_dense_algebra(data, fitted, name):
    m = fitted(name)
    if name == "PowerEP-NoisyStep":  # the case of sites with negative precisions is exercised
        assert np.any(m.sites.precision.numpy() < 0)
    Xnew = data[0][:7] + 0.3
    posterior = m.posterior()
    assert isinstance(posterior, gpflow.posteriors.AbstractPosterior)
    mean, cov = posterior.predict_f(Xnew, full_cov=True)
    dense_mean, dense_cov = _dense_predictive(m, Xnew)
    _close(mean.numpy()[:, 0], dense_mean, 1e-8)
    _close(cov.numpy()[0], dense_cov, 1e-8)


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("full_cov", [False, True])
@pytest.mark.parametrize("name", MODELS)
def test_cached_equals_fused_equals_predict_f(data, fitted, name, cache, full_cov):
    m = fitted(name)
    Xnew = data[0][::3] - 0.2
    posterior = m.posterior(cache)
    cached = posterior.predict_f(Xnew, full_cov=full_cov)
    fused = posterior.fused_predict_f(Xnew, full_cov=full_cov)
    model = m.predict_f(Xnew, full_cov=full_cov)
    for a, b, c in zip(cached, fused, model):
        assert a.shape == b.shape == c.shape
        _close(a, b, 1e-9)
        _close(b, c, 1e-12)


@pytest.mark.parametrize("cache", CACHES)
def test_update_cache_after_a_kernel_change_and_after_new_sites(data, cache):
    m = _fitted("EPGPC", data)
    Xnew = data[0][:5]
    posterior = m.posterior(cache)
    m.kernel.lengthscales.assign(0.7)
    posterior.update_cache()
    fresh = EPGPPosterior(m.kernel, m.data[0], *m.sites.read(), precompute_cache=PrecomputeCacheType.TENSOR)
    for a, b in zip(posterior.predict_f(Xnew), fresh.predict_f(Xnew)):
        _close(a, b, 1e-12)
    m.run_ep()  # new sites for the new lengthscale: the posterior holds the site variables
    posterior.update_cache()
    for a, b in zip(posterior.predict_f(Xnew), m.predict_f(Xnew)):
        _close(a, b, 1e-9)


def test_full_output_cov_behaves_as_gpflows_vgp(data):
    m = _fitted("EPGPC", data)
    vgp = gpflow.models.VGP(data, _kernel(), gpflow.likelihoods.Bernoulli())
    for model in (vgp, m):
        with pytest.raises(NotImplementedError):
            model.predict_f(data[0][:3], full_output_cov=True)
    with pytest.raises(NotImplementedError):
        m.posterior().predict_f(data[0][:3], full_output_cov=True)


def test_the_dual_predictor_caches_the_dual_weights(data):
    m = PowerEP(data, _kernel(), Probit(), predict_with="dual", ep_mode="alternated")
    EP(warn=False).minimize(m)
    Xnew = data[0][:6] + 0.1
    expected = m.kernel(Xnew, data[0]).numpy() @ m.sites.dual.numpy()[:, 0]
    for posterior in (m.posterior(), m.posterior(PrecomputeCacheType.NOCACHE)):
        predict = posterior.predict_f if posterior.cache is not None else posterior.fused_predict_f
        _close(predict(Xnew)[0].numpy()[:, 0], expected, 1e-12)


def test_the_variable_cache_exports_with_saved_model(data, exported):
    """GPflow's "faster predictions" recipe: a module holding the compiled predict_f of a VARIABLE-cache posterior."""
    m = _fitted("EPGPC", data)
    Xnew = data[0][:4] * 0.5
    loaded = exported(m, 2)
    for a, b in zip(loaded.predict_f(Xnew), m.predict_f(Xnew)):
        _close(a, b, 1e-9)


def test_nested_mode_posterior_and_predict_f_use_the_same_sites_and_write_nothing(data):
    m = EPGPC(data, _kernel(), Probit())
    EP(warn=False).minimize(m)
    m.kernel.variance.assign(3.0)  # the stored sites are no longer EP's fixed point
    before = [v.numpy().copy() for v in m.ep_state.variables]
    Xnew = data[0][:5]
    for cache in (PrecomputeCacheType.TENSOR, PrecomputeCacheType.NOCACHE):
        posterior = m.posterior(cache)
        predict = posterior.predict_f if posterior.cache is not None else posterior.fused_predict_f
        for a, b in zip(predict(Xnew), m.predict_f(Xnew)):
            _close(a, b, 1e-9)
    for b, v in zip(before, m.ep_state.variables):
        np.testing.assert_array_equal(b, v.numpy())
    m.run_ep()
    for a, b in zip(m.predict_f(Xnew), m.posterior().predict_f(Xnew)):
        _close(a, b, 1e-9)


def test_an_unfitted_copy_warns_once_and_a_copy_of_the_ep_state_predicts_as_the_trained_model(data):
    trained = _fitted("EPGPC", data)
    copy = EPGPC(data, _kernel(), Probit(), ep_mode="alternated")
    gpflow.utilities.multiple_assign(copy, gpflow.utilities.parameter_dict(trained))
    with pytest.warns(UserWarning, match="never fitted"):
        copy.predict_f(data[0][:3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy.predict_f(data[0][:3])  # once
    gpflow.utilities.multiple_assign(copy.ep_state, gpflow.utilities.parameter_dict(trained.ep_state))
    for a, b in zip(copy.predict_f(data[0]), trained.predict_f(data[0])):
        np.testing.assert_array_equal(a, b)
