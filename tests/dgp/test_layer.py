"""Moment propagation through one FITC layer (Bui et al. 2016, §5 and App. D, Eqs. (1)–(7))."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow import covariances
from gpflow.inducing_variables import (
    InducingPoints,
    SeparateIndependentInducingVariables,
    SharedIndependentInducingVariables,
)
from gpflow.kernels import SeparateIndependent, SharedIndependent

from gpflow_ep.dgp import AEPLayer, TiedFactor, random_factor


def _numpy_cholesky(layer, d):
    return np.linalg.cholesky(
        covariances.Kuu(layer.inducing_variables[d], layer.kernels[d], jitter=layer.jitter).numpy()
    )


@pytest.mark.parametrize("cavity", [False, True])
def test_gaussian_input_moments_match_monte_carlo(make_layer, rng, cavity, u_space):
    """
    (m, v) under h ~ N(μ, diag s) equal the moments of the generative chain h ~ N(μ, s), u ~ q,
    h_out ~ N(c(h)ᵀu, r(h)) (Bui et al. 2016, §3): 4·10⁵ samples, within 4 standard errors.
    """
    layer = make_layer(Q=2, D=1, M=5, noise=0.3)
    mu, s = np.array([[0.3, -0.4]]), np.array([[0.5, 0.8]])
    m, v = (t.numpy()[0, 0] for t in layer.propagate(mu, s, cavity=cavity))
    L = _numpy_cholesky(layer, 0)
    K_inv = np.linalg.inv(L @ L.T)
    u_mean, u_cov = u_space(layer.factor, L, cavity)
    S = 400_000
    h = mu + np.sqrt(s) * rng.standard_normal((S, 2))
    u = u_mean + rng.standard_normal((S, u_mean.size)) @ np.linalg.cholesky(u_cov).T
    k = layer.kernels[0](h, layer.inducing_variables[0].Z).numpy()  # [S, M]
    c = k @ K_inv
    r = layer.kernels[0].variance.numpy() - np.sum(c * k, axis=1) + layer.noise_variance.numpy()
    out = np.sum(c * u, axis=1) + np.sqrt(r) * rng.standard_normal(S)
    se_mean = out.std() / np.sqrt(S)
    se_var = np.std((out - out.mean()) ** 2) / np.sqrt(S)
    assert abs(out.mean() - m) <= 4 * se_mean
    assert abs(out.var() - v) <= 4 * se_var


def test_termwise_variance_equals_the_papers_formula(make_layer, u_space):
    """v = σ² + [ψ₀ - tr(K⁻¹Ψ₂)] + tr(K⁻¹VK⁻¹Ψ₂) + [AᵀΨ₂A - m²] = σ² + ψ₀ + tr(BΨ₂) - m² (App. D, Eq. (2))."""
    from gpflow_ep.dgp import psi_statistics

    layer = make_layer(Q=2, D=1, M=5, noise=0.3)
    mu, s = np.array([[0.3, -0.4], [1.0, 0.2]]), np.array([[0.5, 0.8], [0.1, 0.3]])
    m, v = (t.numpy()[:, 0] for t in layer.propagate(mu, s, cavity=True))
    L = _numpy_cholesky(layer, 0)
    K_inv = np.linalg.inv(L @ L.T)
    u_mean, u_cov = u_space(layer.factor, L, cavity=True)
    A = K_inv @ u_mean
    B = K_inv @ (u_cov + np.outer(u_mean, u_mean)) @ K_inv - K_inv
    psi = psi_statistics(layer.kernels[0], mu, s, layer.inducing_variables[0].Z)
    m_paper = psi.psi1.numpy() @ A
    v_paper = 0.3 + psi.psi0.numpy() + np.einsum("ab,nba->n", B, psi.psi2.numpy()) - m_paper**2
    np.testing.assert_allclose(m, m_paper, rtol=1e-10)
    np.testing.assert_allclose(v, v_paper, rtol=1e-9)


def test_point_input_shortcut_equals_the_generic_formula(make_layer):
    """The first layer's SVGP-style predictive equals the Gaussian-input moments with s = 0."""
    layer = make_layer(Q=3, D=2, M=4, share_kernel=False)
    X = np.random.default_rng(5).normal(size=(6, 3))
    zeros = np.zeros_like(X)
    for cavity in (False, True):
        m1, v1 = layer.propagate(X, zeros, cavity=cavity, deterministic=True)
        m2, v2 = layer.propagate(X, zeros, cavity=cavity)
        np.testing.assert_allclose(m1, m2, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(v1, v2, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("share_kernel", [True, False])
def test_shapes_and_positive_variances(make_layer, share_kernel):
    layer = make_layer(Q=2, D=3, M=4, share_kernel=share_kernel)
    rng = np.random.default_rng(2)
    m, v = layer.propagate(rng.normal(size=(7, 2)), rng.uniform(0.0, 1.0, (7, 2)), cavity=True)
    assert m.shape == (7, 3) and v.shape == (7, 3)
    assert np.all(v.numpy() > 0)
    assert len({id(k) for k in layer.kernels}) == (1 if share_kernel else 3)



def _structured_layer(structure, kernel, Z, factor_values, num_data, noise):
    """
    A layer of w GPs with the same kernel values and inducing inputs for every GP, in one of four structures:
    the kernel shared (``SharedIndependent``) or a copy per GP (``SeparateIndependent``), likewise Z.
    """
    w = factor_values[0].shape[0]
    kernel_structure, z_structure = structure
    copies = [gpflow.utilities.deepcopy(kernel) for _ in range(w)]
    k = SharedIndependent(copies[0], w) if kernel_structure == "shared" else SeparateIndependent(copies)
    if z_structure == "shared":
        iv = SharedIndependentInducingVariables(InducingPoints(Z.copy()))
    else:
        iv = SeparateIndependentInducingVariables([InducingPoints(Z.copy()) for _ in range(w)])
    return AEPLayer(k, iv, TiedFactor(*factor_values, num_data), noise_variance=noise)


def _moments_and_gradients(layer, X, mean, var):
    """
    The layer's moments at points and at Gaussian inputs (cavity and posterior) and its energy terms, and the
    gradients of their sum in each kernel's σ_f² and ℓ, each Z and the factor: {name: [one per distinct object]}.
    """
    distinct = {
        "variance": [k.variance for k in dict.fromkeys(layer.kernels)],
        "lengthscales": [k.lengthscales for k in dict.fromkeys(layer.kernels)],
        "Z": [iv.Z for iv in dict.fromkeys(layer.inducing_variables)],
        "factor": [layer.factor.factor_cholesky, layer.factor.factor_shift],
    }
    with tf.GradientTape() as tape:
        blocks = {c: layer.blocks(cavity=c) for c in (True, False)}
        moments = [layer.propagate(X, X, cavity=c, deterministic=True, blocks=blocks[c]) for c in (True, False)]
        moments += [layer.propagate(mean, var, cavity=c, blocks=blocks[c]) for c in (True, False)]
        energy = layer.energy_terms(blocks[True])
        total = energy + tf.add_n([tf.reduce_sum(m) + tf.reduce_sum(v) for m, v in moments])
    flat = tape.gradient(total, [p.unconstrained_variable for params in distinct.values() for p in params])
    grads, start = {}, 0
    for name, params in distinct.items():
        grads[name], start = [g.numpy() for g in flat[start : start + len(params)]], start + len(params)
    return [t.numpy() for m in moments for t in m] + [energy.numpy()], grads


STRUCTURES = [("shared", "shared"), ("shared", "separate"), ("separate", "shared")]


@pytest.mark.parametrize("structure", STRUCTURES, ids=["+".join(s) for s in STRUCTURES])
def test_shared_structures_equal_the_separate_form_with_tied_values(rng, structure):
    """
    With the same kernel and the same Z for every GP, a layer whose GPs share the kernel and/or the inducing
    inputs (one K_uu, one set of Psi statistics, broadcast against the w posteriors) gives the moments, the
    energy terms and their gradients of the layer with a kernel and a Z per GP (GPflow's SeparateIndependent
    objects, one K_uu per GP) to 1e-10 relative: the same mathematics, batched differently (the gradient of a
    shared parameter is the sum of its copies').
    """
    w, M, Q, N = 3, 5, 2, 7
    kernel = gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=rng.uniform(0.7, 1.5, Q))
    Z = rng.normal(size=(M, Q))
    factor = random_factor(w, M, 0.7, N, rng)
    values = (factor.factor_cholesky.numpy(), factor.factor_shift.numpy())
    X, mean, var = rng.normal(size=(4, Q)), rng.normal(size=(4, Q)), rng.uniform(0.1, 1.0, (4, Q))
    batched, separate = (
        _moments_and_gradients(_structured_layer(s, kernel, Z, values, N, 0.3), X, mean, var)
        for s in (structure, ("separate", "separate"))
    )
    for a, b in zip(batched[0], separate[0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.max(np.abs(b)))
    for name, expected in separate[1].items():
        got = batched[1][name]
        if len(got) == 1 and len(expected) == w:  # one shared parameter: the sum of the copies' gradients
            expected = [sum(expected)]
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.max(np.abs(b)))


def test_cholesky_gradient_is_tensorflows(rng):
    """The layer's Cholesky factorisation has TensorFlow's gradient (Murray 2016's formula by triangular solves,
    for a batch of well-conditioned matrices and a random cotangent: round-off, 1e-10 relative)."""
    from gpflow_ep.dgp.layer import cholesky

    A = rng.normal(size=(3, 6, 6))
    K = tf.constant(A @ np.swapaxes(A, -1, -2) + 6 * np.eye(6))
    cotangent = tf.constant(rng.normal(size=(3, 6, 6)))
    grads = []
    for factorise in (cholesky, tf.linalg.cholesky):
        with tf.GradientTape() as tape:
            tape.watch(K)
            value = tf.reduce_sum(cotangent * factorise(K))
        grads.append(tape.gradient(value, K).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-10 * np.max(np.abs(grads[1])))
