"""
LinearModelPosterior, the spike-and-slab model's q(f*) for f(x) = xᵀw as a GPflow posterior: cached (TENSOR,
VARIABLE) = fused = ``predict_f``, ``update_cache`` after a change of σ² = a fresh posterior, and the predictive
against q(w) written in numpy from the sites (Hernández-Lobato & Hernández-Lobato 2011, Sec. 2):
Σ = (σ⁻²XᵀX + diag τ)⁻¹, m = Σ(ν + σ⁻²Xᵀy), f* ~ N(X*m, X*ΣX*ᵀ).

Tolerances (float64, d = 6 weights, cond(Σ⁻¹) ≲ 1e3): the Cholesky path and numpy's explicit inverse agree to
round-off times the condition number, 1e-10 relative.
"""

import copy

import numpy as np
import pytest
from gpflow.posteriors import PrecomputeCacheType

from gpflow_ep.models import SpikeSlabRegression
from gpflow_ep.posteriors import LinearModelPosterior

RTOL = 1e-10


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, 6))
    w = np.array([1.5, 0.0, 0.0, -2.0, 0.0, 0.3])[:, None]
    y = X @ w + 0.3 * rng.normal(size=(25, 1))
    m = SpikeSlabRegression((X, y), noise_variance=0.1)
    m.run_ep()
    return m, rng.normal(size=(7, 6))


def _dense(m, Xnew):
    X, y = (t.numpy() for t in m.data)
    s2 = m.noise_variance.numpy()
    tau, nu = (t.numpy() for t in m.sites.read())
    Sigma = np.linalg.inv(X.T @ X / s2 + np.diag(tau[:, 0]))
    mean = Sigma @ (nu + X.T @ y / s2)
    return Xnew @ mean, Xnew @ Sigma @ Xnew.T


def test_the_predictive_is_q_of_the_weights_pushed_through_the_linear_map(fitted):
    m, Xnew = fitted
    mean, cov = _dense(m, Xnew)
    f_mean, f_var = m.predict_f(Xnew)
    np.testing.assert_allclose(f_mean, mean, rtol=RTOL)
    np.testing.assert_allclose(f_var[:, 0], np.diag(cov), rtol=RTOL)
    _, f_cov = m.predict_f(Xnew, full_cov=True)
    np.testing.assert_allclose(f_cov[0], cov, rtol=RTOL, atol=RTOL * np.abs(cov).max())


@pytest.mark.parametrize("full_cov", [False, True])
def test_cached_equals_fused_equals_predict_f(fitted, full_cov):
    m, Xnew = fitted
    expected = m.predict_f(Xnew, full_cov=full_cov)
    for cache in (PrecomputeCacheType.TENSOR, PrecomputeCacheType.VARIABLE):
        posterior = m.posterior(cache)
        assert isinstance(posterior, LinearModelPosterior)
        for a, b in zip(posterior.predict_f(Xnew, full_cov=full_cov), expected):
            np.testing.assert_allclose(a, b, rtol=RTOL)
    with pytest.raises(NotImplementedError):
        m.posterior().predict_f(Xnew, full_output_cov=True)


def test_update_cache_follows_the_noise_variance_and_the_sites(fitted):
    fitted_model, Xnew = fitted
    m = SpikeSlabRegression(tuple(t.numpy() for t in fitted_model.data), noise_variance=0.1, ep_mode="alternated")
    m.run_ep()
    posterior = m.posterior(PrecomputeCacheType.VARIABLE)
    before = posterior.predict_f(Xnew)
    m.noise_variance.assign(0.4)
    m.run_ep()
    posterior.update_cache()
    fresh = m.posterior(PrecomputeCacheType.TENSOR).predict_f(Xnew)
    for a, b in zip(posterior.predict_f(Xnew), fresh):
        np.testing.assert_allclose(a, b, rtol=RTOL)
    np.testing.assert_allclose(fresh[0], _dense(m, Xnew)[0], rtol=RTOL)
    assert not np.allclose(fresh[1], before[1], rtol=1e-3)  # the change mattered


def test_in_nested_mode_it_predicts_from_eps_fixed_point_at_the_current_hyper_parameters(fitted):
    """As EPGPC: after a hyper-parameter change the prediction is that of the sites run_ep() would store."""
    m, Xnew = fitted
    m = copy.deepcopy(m)
    m.noise_variance.assign(0.05)
    predicted = m.predict_f(Xnew)
    m.run_ep()
    for a, b in zip(predicted, m.predict_f(Xnew)):
        np.testing.assert_allclose(a, b, rtol=1e-12)  # the same EP run from the same stored sites
