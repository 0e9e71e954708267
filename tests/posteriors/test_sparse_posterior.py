"""
The sparse EP posterior as a GPflow posterior (GPflow's ``test_*_posterior.py`` pattern): cached
(TENSOR, VARIABLE) = fused = ``predict_f`` for SEPGPC, SEPGP and SEPMGPC (shared and separate inducing
inputs), ``update_cache`` after a parameter or Z change = a fresh posterior, the VARIABLE cache exported
with ``tf.saved_model``, full_output_cov shapes as GPflow's SVGP, and the predictive against a dense
numpy computation from q(u)'s natural parameters.

Tolerances (float64): the cached path (α = K_uu⁻¹μ_u, Q⁻¹) and the fused whitened path are the same
algebra in another order of operations, with well-conditioned K_uu (M ≤ 6 spread inducing inputs,
cond(K_uu) ≲ 1e3): round-off ~1e-13 relative, so 1e-10; the numpy oracle goes through explicit
inverses (Σ_u = (K_uu⁻¹ + Λ_u)⁻¹), whose round-off is cond² larger: 1e-8.
"""

import gpflow
import numpy as np
import pytest
from gpflow.inducing_variables import InducingPoints, SeparateIndependentInducingVariables
from gpflow.kernels import SeparateIndependent, SharedIndependent
from gpflow.posteriors import PrecomputeCacheType

from gpflow_ep.likelihoods import MultiClassStep, Probit
from gpflow_ep.models import SEPGP, SEPGPC, SEPMGPC

RTOL = 1e-10
MODELS = ["SEPGPC", "SEPGP", "SEPMGPC shared", "SEPMGPC separate"]


def _data(name):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(30, 2))
    if name == "SEPGPC":
        return X, (X[:, :1] + 0.3 * rng.normal(size=(30, 1)) > 0).astype(np.float64)
    if name == "SEPGP":
        return X, np.sin(X[:, :1]) + 0.2 * rng.standard_t(3, size=(30, 1))
    return X, np.digitize(np.arctan2(X[:, 1], X[:, 0]), [-1.0, 1.0])[:, None]


def _kernel():
    return gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=[0.8, 1.1])


def _fitted(name):
    """A model of ``name`` after batch EP on its data (a fitted q(u))."""
    X, Y = _data(name)
    Z = np.array([[-1.5, -1.0], [-0.5, 1.2], [0.3, -0.4], [1.4, 0.8], [0.9, -1.6]])
    if name == "SEPGPC":
        m = SEPGPC(_kernel(), Probit(), Z, num_data=30, mean_function=gpflow.mean_functions.Constant(0.2))
    elif name == "SEPGP":
        m = SEPGP(_kernel(), gpflow.likelihoods.StudentT(scale=0.3, df=3.0), Z, num_data=30)
    elif name == "SEPMGPC shared":
        m = SEPMGPC(_kernel(), MultiClassStep(3, 0.5), InducingPoints(Z), num_data=30)
    else:
        kernel = SeparateIndependent([_kernel() for _ in range(3)])
        iv = SeparateIndependentInducingVariables([InducingPoints(Z + 0.1 * c) for c in range(3)])
        m = SEPMGPC(kernel, MultiClassStep(3, 0.5), iv, num_data=30)
    m.run_ep((X, Y), tol=1e-9, max_sweeps=2000)
    return m


@pytest.fixture(scope="module", params=MODELS)
def fitted(request):
    return request.param, _fitted(request.param)


def _kernels(m):
    """The kernel of each block."""
    k = m.kernel
    if isinstance(k, SeparateIndependent):
        return list(k.kernels)
    return [k.kernel if isinstance(k, SharedIndependent) else k] * m.num_blocks


def _inducing_inputs(m):
    """Z of each block."""
    iv = m.inducing_variable
    parts = getattr(iv, "inducing_variables", (iv,))
    return [p.Z.numpy() for p in parts] if len(parts) > 1 else [parts[0].Z.numpy()] * m.num_blocks


def _assert_same(a, b, rtol=RTOL):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol * 1e-2)


@pytest.mark.parametrize("full_cov", [False, True])
@pytest.mark.parametrize("full_output_cov", [False, True])
def test_cached_equals_fused_equals_predict_f(fitted, full_cov, full_output_cov):
    _, m = fitted
    Xnew = _data("SEPGPC")[0][:7] * 1.3
    expected = m.predict_f(Xnew, full_cov=full_cov, full_output_cov=full_output_cov)
    fused = m.posterior(PrecomputeCacheType.NOCACHE).fused_predict_f(Xnew, full_cov, full_output_cov)
    _assert_same(fused, expected, rtol=0.0)
    for cache in (PrecomputeCacheType.TENSOR, PrecomputeCacheType.VARIABLE):
        posterior = m.posterior(cache)
        assert isinstance(posterior, gpflow.posteriors.BasePosterior)  # GPflow's own SVGP posterior
        _assert_same(posterior.predict_f(Xnew, full_cov, full_output_cov), expected)


@pytest.mark.parametrize("change", ["kernel", "Z"])
@pytest.mark.parametrize("cache", [PrecomputeCacheType.TENSOR, PrecomputeCacheType.VARIABLE])
def test_update_cache_after_a_change_equals_a_fresh_posterior(change, cache):
    m = _fitted("SEPMGPC separate" if change == "Z" else "SEPGPC")
    Xnew = _data("SEPGPC")[0][:6]
    posterior = m.posterior(cache)
    before = posterior.predict_f(Xnew)
    if change == "kernel":
        m.kernel.lengthscales.assign([1.4, 0.6])
    else:
        for iv in m.inducing_variable.inducing_variables:
            iv.Z.assign(iv.Z.numpy() + 0.25)
    posterior.update_cache()
    fresh = m.posterior(cache).predict_f(Xnew)
    _assert_same(posterior.predict_f(Xnew), fresh)
    _assert_same(fresh, m.predict_f(Xnew))
    assert not np.allclose(fresh[1], before[1], rtol=1e-3)  # the change mattered


def test_variable_cache_exports_with_saved_model(fitted, exported):
    """GPflow's "faster predictions" recipe: a tf.Module holding predict_f compiled; save, load, predict."""
    _, m = fitted
    Xnew = _data("SEPGPC")[0][:5]
    loaded = exported(m, 2)
    _assert_same(loaded.predict_f(Xnew), m.predict_f(Xnew))


@pytest.mark.parametrize("name", ["SEPGPC", "SEPMGPC shared"])
def test_output_shapes_equal_svgp(name):
    m = _fitted(name)
    num_latent = m.num_blocks
    svgp = gpflow.models.SVGP(m.kernel, gpflow.likelihoods.Gaussian(), m.inducing_variable, num_latent_gps=num_latent)
    Xnew = _data("SEPGPC")[0][:4]
    for full_cov in (False, True):
        for full_output_cov in (False, True):
            ours = m.predict_f(Xnew, full_cov=full_cov, full_output_cov=full_output_cov)
            theirs = svgp.predict_f(Xnew, full_cov=full_cov, full_output_cov=full_output_cov)
            assert [t.shape for t in ours] == [t.shape for t in theirs]


def test_predictive_equals_a_dense_computation_from_natural_parameters(fitted):
    """
    Per block: Σ_u = (K_uu⁻¹ + Λ_u)⁻¹, μ_u = Σ_u η_u, then the SVGP predictive
    k*ᵀK_uu⁻¹μ_u and k** - k*ᵀK_uu⁻¹k* + k*ᵀK_uu⁻¹Σ_uK_uu⁻¹k*, in numpy.
    """
    name, m = fitted
    Xnew = _data("SEPGPC")[0][:8]
    M = m.ep_state.posterior_shift.shape[-2]
    Lambda = m.ep_state.posterior_precision.numpy().reshape(-1, M, M)
    eta = m.ep_state.posterior_shift.numpy().reshape(-1, M, 1)
    means, variances = [], []
    for c, (k, Z) in enumerate(zip(_kernels(m), _inducing_inputs(m))):
        K = k(Z).numpy() + gpflow.config.default_jitter() * np.eye(M)
        Ks = k(Z, Xnew).numpy()
        K_inv = np.linalg.inv(K)
        Sigma = np.linalg.inv(K_inv + Lambda[c])
        mu = Sigma @ eta[c]
        means.append((Ks.T @ K_inv @ mu)[:, 0])
        variances.append(
            k(Xnew, full_cov=False).numpy() - np.einsum("mn,mk,kn->n", Ks, K_inv - K_inv @ Sigma @ K_inv, Ks)
        )
    mean, var = m.predict_f(Xnew)
    offset = m.mean_function(Xnew).numpy()
    np.testing.assert_allclose(mean, np.stack(means, axis=1) + offset, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(var, np.stack(variances, axis=1), rtol=1e-8)
