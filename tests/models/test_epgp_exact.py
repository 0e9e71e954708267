"""
EPGP against exact references for non-Gaussian likelihoods: the exact posterior of two and three
points by two- and three-dimensional quadrature, convergence on 200 points, and the gradient of the converged EP
evidence against finite differences.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy import special, stats

from gpflow_ep.likelihoods import Laplace
from gpflow_ep.models import EPGP

LIKELIHOODS = {
    "laplace": (lambda: Laplace(scale=0.3), lambda f, y: stats.laplace.pdf(y, f, 0.3)),
    "student_t": (
        lambda: gpflow.likelihoods.StudentT(scale=0.3, df=3.0),
        lambda f, y: stats.t.pdf(y, 3.0, f, 0.3),
    ),
}


def _composite_gauss_legendre(edges, points_per_panel=200):
    """Nodes and weights of composite Gauss–Legendre on the panels between sorted ``edges``."""
    x, w = special.roots_legendre(points_per_panel)
    a, b = np.asarray(edges[:-1])[:, None], np.asarray(edges[1:])[:, None]
    return ((b - a) / 2 * x + (a + b) / 2).ravel(), ((b - a) / 2 * w).ravel()


def _exact_two_point_posterior(pdf, K, y):
    """
    log Z, means and variances of p(f₁, f₂ | y) ∝ p(y₁|f₁) p(y₂|f₂) N(f; 0, K) by a tensor product of
    composite 200-point Gauss–Legendre rules over ±12 prior standard deviations, with panel edges at
    y_i (the Laplace's kink) and y_i ± 0.1, 0.3, 1, 3 (the likelihood's width 0.3 resolved): each
    panel's integrand is analytic, so the rule is exact to rounding (doubling the nodes changes nothing
    above 1e-12 relative).
    """
    grids = []
    for i in range(2):
        sd = np.sqrt(K[i, i])
        offsets = np.array([-3.0, -1.0, -0.3, -0.1, 0.0, 0.1, 0.3, 1.0, 3.0])
        edges = np.unique(np.clip(np.concatenate([[-12 * sd, 12 * sd], y[i] + offsets]), -12 * sd, 12 * sd))
        grids.append(_composite_gauss_legendre(edges))
    (f1, w1), (f2, w2) = grids
    F1, F2 = np.meshgrid(f1, f2, indexing="ij")
    prior = stats.multivariate_normal(np.zeros(2), K).pdf(np.stack([F1, F2], -1))
    weight = w1[:, None] * w2[None, :] * pdf(F1, y[0]) * pdf(F2, y[1]) * prior
    Z = weight.sum()
    means = np.array([(F1 * weight).sum(), (F2 * weight).sum()]) / Z
    second = np.array([(F1**2 * weight).sum(), (F2**2 * weight).sum()]) / Z
    return np.log(Z), means, second - means**2


@pytest.mark.parametrize("name", ["laplace", pytest.param("student_t", marks=pytest.mark.slow)])
def test_two_point_ep_is_exact_in_the_limit_of_independent_points(name):
    """
    EP is exact when the points are independent a priori, and its error vanishes at least to third
    order in their prior correlation ρ: given f₁ the other point's term integrates to
    Z₂(ρf₁) = Z₂(0) exp(ρ a f₁ + ½ ρ² b f₁² + O(ρ³)), and the exponential-quadratic part is a Gaussian
    factor that EP's sites represent exactly. So the error of EP's marginal means and variances falls
    by at least 2³ = 8 when ρ halves, less a margin for the O(ρ⁴) terms (7); measured between ρ = 0.2
    and 0.1, where it is far above the quadrature's rounding error. (With ρ = 0 the posterior
    factorises and EP is exact: ``test_epgp.py::test_one_point_ep_is_exact``.)
    """
    make, pdf = LIKELIHOODS[name]
    y = np.array([1.0, -0.5])
    k = 1.0
    errors = {}
    for rho in (0.2, 0.1):
        K = k * np.array([[1.0, rho], [rho, 1.0]])
        lengthscale = np.sqrt(-1.0 / (2.0 * np.log(rho)))  # SE kernel with k(0, 1) = ρ k
        model = EPGP(
            (np.array([[0.0], [1.0]]), y[:, None]),
            gpflow.kernels.SquaredExponential(variance=k, lengthscales=lengthscale),
            make(),
            tol=1e-12,
            max_sweeps=500,
        )
        assert bool(model.run_ep().converged)
        mean, var = (t.numpy()[:, 0] for t in model.predict_f(np.array([[0.0], [1.0]])))
        _, exact_mean, exact_var = _exact_two_point_posterior(pdf, K, y)
        errors[rho] = np.concatenate([np.abs(mean - exact_mean), np.abs(var - exact_var) / exact_var])
    ratio = errors[0.2] / errors[0.1]
    assert np.all(ratio > 7.0), ratio
    assert np.all(errors[0.1] > 1e-8), errors[0.1]  # the ratio measures EP's error, not the quadrature's


def _exact_three_point_posterior(pdf, K, y, points_per_panel=40):
    """
    Means and variances of p(f | y) ∝ Π p(y_i|f_i) N(f; 0, K) for three points by a tensor product of
    composite Gauss–Legendre rules (panel edges as in :func:`_exact_two_point_posterior`, plus
    0, ±4, ±8 prior sd; 40 nodes per panel). The 3-D sum is never formed: with P = K⁻¹ the prior is
    exp(-½ Σ_i P_ii f_i²) times the pairwise factors exp(-P_ij f_i f_j), so
    Σ_abc u_a v_b w_c E¹²_ab E¹³_ac E²³_bc = Σ_a Σ_c [(v·E¹²)ᵀ-rows E²³]_ac (w·E¹³)_ac, two matrix
    products, with u, v, w the one-dimensional weights times likelihoods (times f or f² for moments).
    """
    nodes, weights = [], []
    for i in range(3):
        sd = np.sqrt(K[i, i])
        offsets = np.array([-3.0, -1.0, -0.3, -0.1, 0.0, 0.1, 0.3, 1.0, 3.0])
        prior_edges = sd * np.array([-12.0, -8.0, -4.0, 0.0, 4.0, 8.0, 12.0])
        edges = np.unique(np.clip(np.concatenate([prior_edges, y[i] + offsets]), -12 * sd, 12 * sd))
        f, w = _composite_gauss_legendre(edges, points_per_panel)
        nodes.append(f)
        weights.append(w * pdf(f, y[i]))
    P = np.linalg.inv(K)
    diag = [w * np.exp(-0.5 * P[i, i] * f**2) for i, (f, w) in enumerate(zip(nodes, weights))]
    pair = {(i, j): np.exp(-P[i, j] * np.outer(nodes[i], nodes[j])) for i, j in [(0, 1), (0, 2), (1, 2)]}

    def total(u, v, w):
        left = v[None, :] * pair[0, 1]  # [a, b]
        right = w[None, :] * pair[0, 2]  # [a, c]
        return np.sum(u * np.sum((left @ pair[1, 2]) * right, axis=1))

    Z = total(*diag)
    means, variances = np.zeros(3), np.zeros(3)
    for i in range(3):
        moment = [total(*[d * nodes[j] ** k if j == i else d for j, d in enumerate(diag)]) / Z for k in (1, 2)]
        means[i], variances[i] = moment[0], moment[1] - moment[0] ** 2
    return means, variances


@pytest.mark.parametrize("name", sorted(LIKELIHOODS))
def test_three_point_ep_is_exact_in_the_limit_of_independent_points(name):
    """
    The three-point version of the two-point test: inputs 0, 1, 2 under an SE kernel with
    k(0, 1) = k(1, 2) = ρ k and k(0, 2) = ρ⁴ k. Each pairwise coupling is again absorbed by EP's
    Gaussian sites to second order, and the first term EP misses is of third order in the couplings
    (ρ³ from one edge; the loop 0-1-2 contributes only at order ρ·ρ·ρ⁴ = ρ⁶), so EP's error in the
    marginal means and relative variances falls by at least 2³ = 8 when ρ halves, less the same margin
    for the O(ρ⁴) terms (7), measured between ρ = 0.2 and 0.1 where it exceeds 1e-8, far above the
    reference's error (the 3-D tensor rule on analytic panels is exact to ~1e-12; doubling the
    nodes per panel changes its moments by less than that).
    """
    make, pdf = LIKELIHOODS[name]
    y = np.array([1.0, -0.5, 0.4])
    X = np.array([[0.0], [1.0], [2.0]])
    k = 1.0
    errors = {}
    for rho in (0.2, 0.1):
        lengthscale = np.sqrt(-1.0 / (2.0 * np.log(rho)))  # SE kernel with k(0, 1) = ρ k
        kernel = gpflow.kernels.SquaredExponential(variance=k, lengthscales=lengthscale)
        K = kernel(X).numpy()
        model = EPGP((X, y[:, None]), kernel, make(), tol=1e-12, max_sweeps=500)
        assert bool(model.run_ep().converged)
        mean, var = (t.numpy()[:, 0] for t in model.predict_f(X))
        exact_mean, exact_var = _exact_three_point_posterior(pdf, K, y)
        errors[rho] = np.concatenate([np.abs(mean - exact_mean), np.abs(var - exact_var) / exact_var])
    ratio = errors[0.2] / errors[0.1]
    assert np.all(ratio > 7.0), ratio
    assert np.all(errors[0.1] > 1e-8), errors[0.1]


def _neal_data(n, seed=0):
    """Neal's (1997) test function with Gaussian noise 0.1 and 10% outliers of sd 1."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    f = 0.3 + 0.4 * X + 0.5 * np.sin(2.7 * X) + 1.1 / (1 + X**2)
    Y = f + 0.1 * rng.standard_normal(X.shape)
    outlier = rng.random(n) < 0.1
    Y[outlier] = f[outlier] + rng.standard_normal((outlier.sum(), 1))
    return X, Y


@pytest.mark.parametrize(
    "likelihood",
    [lambda: Laplace(scale=0.1), lambda: gpflow.likelihoods.StudentT(scale=0.1, df=4.0)],
    ids=["laplace", "student_t"],
)
def test_converges_on_200_points(likelihood):
    """Default parallel EP (ρ = 0.8) with a Laplace or Student-t likelihood on 200 points with outliers."""
    model = EPGP(_neal_data(200), gpflow.kernels.SquaredExponential(), likelihood(), max_sweeps=300)
    run = model.run_ep()
    assert bool(run.converged) and int(run.sweeps) < 300
    assert np.isfinite(model.log_marginal_likelihood())


def _classification_data(n=20):
    rng = np.random.default_rng(2)
    X = rng.uniform(-3, 3, (n, 1))
    return X, (np.sin(1.5 * X) + 0.3 * rng.standard_normal(X.shape) > 0).astype(np.float64)


@pytest.mark.parametrize(
    "name, data, likelihood",
    [
        ("logistic", _classification_data, lambda: gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)),
        ("laplace", lambda: _neal_data(20, seed=3), lambda: Laplace(scale=0.3)),
        pytest.param(
            "student_t",
            lambda: _neal_data(20, seed=3),
            lambda: gpflow.likelihoods.StudentT(scale=0.3, df=4.0),
            marks=pytest.mark.slow,
        ),
    ],
)
def test_evidence_gradient_equals_finite_differences_at_kernel_variance_25(name, data, likelihood):
    """
    d log Z_EP / dθ (autodiff with the sites held at EP's fixed point, exact there) against central
    differences of the *converged* evidence, EP re-run at θ ± h, in every unconstrained parameter.
    Tolerance: with h = 1e-4 the truncation error is h²|L'''|/6 ≈ 2e-9 |L'''|, the round-off
    ε|L|/h ≈ 2e-12 |L|, and EP's convergence error (sites to 1e-9) enters the evidence only at second
    order (the evidence is stationary in the sites); 1e-6 (1 + |L|) bounds all three for these
    evidences (|L| ≈ 10-40) unless |L'''| exceeds 400 (|L| + 1), which a smooth log-parametrised
    evidence does not.
    """
    model = EPGP(
        data(),
        gpflow.kernels.SquaredExponential(variance=25.0, lengthscales=1.0),
        likelihood(),
        tol=1e-9,
        max_sweeps=1000,
    )
    variables = [p.unconstrained_variable for p in model.trainable_parameters]
    with tf.GradientTape() as tape:
        loss = model.training_loss()
    grads = tape.gradient(loss, variables)
    assert bool(model.ep_diagnostics.converged.numpy())
    L = -loss.numpy()
    h = 1e-4
    for variable, grad in zip(variables, grads):
        assert np.all(np.isfinite(grad.numpy()))
        x0 = variable.numpy()
        values = []
        for step in (h, -h):
            variable.assign(x0 + step)
            assert bool(model.run_ep().converged)
            values.append(model.log_marginal_likelihood().numpy())
        variable.assign(x0)
        fd = (values[0] - values[1]) / (2 * h)
        np.testing.assert_allclose(-grad.numpy(), fd, rtol=0, atol=1e-6 * (1 + abs(L)), err_msg=variable.name)
