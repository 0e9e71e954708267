"""Tilted moments: closed forms against adaptive quadrature, and the Gauss–Hermite fallback."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy import integrate, special, stats

from gpflow_ep.ep import tilted_moments
from gpflow_ep.ep.quadrature import adaptive_tilted_integral, gauss_hermite_tilted_integral
from gpflow_ep.ep.tilted import gauss_hermite_tilted_moments
from gpflow_ep.likelihoods import NoisyStep, Probit

# |z| up to 8 (issue) with cavities of small and large variance
CAVITIES = [(0.3, 1.0), (-2.0, 0.5), (8.0, 1.0), (-8.0, 1.0), (4.0, 0.25), (-3.0, 4.0), (0.0, 9.0)]
POWERS = [1.0, 0.8, 0.5]


def _quad_moments(log_t, m, v, power, breakpoint=None):
    """log Z, mean, var of t(f)^α N(f; m, v) by adaptive quadrature (split at the breakpoint)."""
    sd = np.sqrt(v)
    lo, hi = m - 40 * sd, m + 40 * sd
    pieces = [(lo, hi)] if breakpoint is None or not lo < breakpoint < hi else [(lo, breakpoint), (breakpoint, hi)]

    def integral(k):
        f = lambda x: x**k * np.exp(power * log_t(x)) * np.exp(-0.5 * ((x - m) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
        return sum(integrate.quad(f, a, b, epsabs=1e-15, epsrel=1e-13, limit=500)[0] for a, b in pieces)

    z0, z1, z2 = integral(0), integral(1), integral(2)
    mean = z1 / z0
    return np.log(z0), mean, z2 / z0 - mean**2


def _closed(lik, Y, m, v, power):
    t = tilted_moments(lik, None, np.array([[Y]]), np.array([[m]]), np.array([[v]]), power)
    mean, var = t.mean_and_var(np.array([[m]]), np.array([[v]]))
    return float(t.log_z), float(mean), float(var)


@pytest.mark.parametrize("power", POWERS)
@pytest.mark.parametrize("m, v", CAVITIES)
@pytest.mark.parametrize("Y", [0.0, 1.0])
def test_noisy_step_tilted_moments_match_quadrature(Y, m, v, power):
    eps = 0.1
    y = 2 * Y - 1
    log_t = lambda f: np.log(eps + (1 - 2 * eps) * (y * f >= 0))
    expected = _quad_moments(log_t, m, v, power, breakpoint=0.0)
    actual = _closed(NoisyStep(eps), Y, m, v, power)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-8)


@pytest.mark.parametrize("power", POWERS)
@pytest.mark.parametrize("m, v", CAVITIES)
@pytest.mark.parametrize("Y", [0.0, 1.0])
def test_probit_tilted_moments_match_quadrature(Y, m, v, power):
    """α = 1 is the closed form; α ≠ 1 (no closed form exists) is adaptive Gauss–Hermite."""
    y = 2 * Y - 1
    log_t = lambda f: special.log_ndtr(y * f)
    expected = _quad_moments(log_t, m, v, power)
    actual = _closed(Probit(), Y, m, v, power)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-8)


@pytest.mark.parametrize("power", POWERS)
def test_gaussian_tilted_moments_are_exact(power):
    noise, y, m, v = 0.3, 0.7, -0.4, 1.7
    log_t = lambda f: stats.norm.logpdf(y, f, np.sqrt(noise))
    expected = _quad_moments(log_t, m, v, power)
    t = tilted_moments(
        gpflow.likelihoods.Gaussian(variance=noise), None, np.array([[y]]), np.array([[m]]), np.array([[v]]), power
    )
    mean, var = t.mean_and_var(np.array([[m]]), np.array([[v]]))
    np.testing.assert_allclose([float(t.log_z), float(mean), float(var)], expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("m, v", CAVITIES)
@pytest.mark.parametrize("lik_case", ["probit", "gaussian"])
def test_gauss_hermite_fallback_agrees_with_closed_form(lik_case, m, v):
    """The generic ScalarLikelihood path (quadrature of _scalar_log_prob) vs the closed form, 1e-6."""
    if lik_case == "probit":
        lik, Y = Probit(), np.array([[1.0]])
    else:
        lik, Y = gpflow.likelihoods.Gaussian(variance=0.5), np.array([[0.3]])
    m_, v_ = np.array([[m]]), np.array([[v]])
    closed = tilted_moments(lik, None, Y, m_, v_, 1.0)
    quad = gauss_hermite_tilted_moments(lambda F: lik._scalar_log_prob(None, F, Y), tf.constant(m_), tf.constant(v_))
    for a, b in zip(closed, quad):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_fallback_serves_any_gpflow_scalar_likelihood():
    """Student-t and Poisson have no closed form: quadrature vs SciPy's adaptive quadrature."""
    m, v = 0.4, 0.8
    cases = [
        (gpflow.likelihoods.StudentT(scale=0.5, df=3.0), 1.3, lambda f: stats.t.logpdf(1.3, 3.0, f, 0.5)),
        (gpflow.likelihoods.Poisson(), 3.0, lambda f: stats.poisson.logpmf(3, np.exp(f))),
    ]
    for lik, y, log_t in cases:
        expected = _quad_moments(log_t, m, v, 1.0)
        t = tilted_moments(lik, None, np.array([[y]]), np.array([[m]]), np.array([[v]]), 1.0)
        mean, var = t.mean_and_var(np.array([[m]]), np.array([[v]]))
        np.testing.assert_allclose([float(t.log_z), float(mean), float(var)], expected, rtol=0, atol=1e-6)


def test_tilted_moments_stay_finite_far_in_the_tails():
    m = np.array([[-40.0], [40.0], [-30.0]])
    v = np.array([[1.0], [1.0], [1e-4]])
    Y = np.ones((3, 1))
    for lik in [Probit(), NoisyStep(0.05)]:
        for a in tilted_moments(lik, None, Y, m, v, 1.0):
            assert np.all(np.isfinite(a))


def test_unsupported_likelihood_raises_value_error():
    lik = gpflow.likelihoods.Softmax(3)
    with pytest.raises(ValueError, match="likelihood"):
        tilted_moments(lik, None, np.zeros((1, 1)), np.zeros((1, 1)), np.ones((1, 1)))


# --------------------------------------------------------------------------------------------
# Every registered likelihood against SciPy's adaptive quadrature over the grid EP meets
# --------------------------------------------------------------------------------------------

EPS = np.finfo(np.float64).eps
GRID_MEANS = [-50.0, -2.0, 0.5, 3.0, 50.0]
GRID_VARS = [1e-4, 1e-2, 1.0, 9.0, 25.0, 100.0, 1e3]
DENSE_MEANS = [-50.0, -20.0, -10.0, -5.0, -2.0, -1.0, -0.3, 0.0, 0.5, 1.0, 3.0, 7.0, 15.0, 30.0, 50.0]
DENSE_VARS = [1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0, 3.0, 9.0, 25.0, 60.0, 100.0, 300.0, 1e3]
NU, T_SCALE, Y_REG = 4.0, 0.5, 1.3
_T_CONST = special.gammaln((NU + 1) / 2) - special.gammaln(NU / 2) - 0.5 * np.log(NU * np.pi) - np.log(T_SCALE)
ORDINAL_EDGES, ORDINAL_SIGMA = np.array([-1.0, 0.5, 2.0]), 0.7


def _ordinal_log_p(k):
    """GPflow's Ordinal density of class k: (1 - 2·10⁻³)[Φ((b_k - f)/σ) - Φ((b_{k-1} - f)/σ)] + 10⁻⁶,
    each class's mass written as the tail probability it is (no difference of numbers near 1)."""
    edges, sigma = ORDINAL_EDGES, ORDINAL_SIGMA
    if k == 0:
        mass = lambda f: special.ndtr((edges[0] - f) / sigma)  # noqa: E731
    elif k == len(edges):
        mass = lambda f: special.ndtr((f - edges[-1]) / sigma)  # noqa: E731
    else:  # Φ(u) - Φ(l) = Φ(-l) - Φ(-u): the upper tails below the bin (f < b_{k-1}), where both Φ are near 1

        def mass(f):
            upper, lower = (edges[k] - f) / sigma, (edges[k - 1] - f) / sigma
            tails = special.ndtr(-lower) - special.ndtr(-upper)
            return np.where(lower > 0.0, tails, special.ndtr(upper) - special.ndtr(lower))

    return lambda f: np.log((1 - 2e-3) * mass(f) + 1e-6)


def _ordinal(k):
    likelihood = gpflow.likelihoods.Ordinal(ORDINAL_EDGES)
    likelihood.sigma.assign(ORDINAL_SIGMA)
    kinks = tuple(ORDINAL_EDGES[max(k - 1, 0) : k + 1])
    return likelihood, float(k), _ordinal_log_p(k), kinks, None


def _likelihood_cases():
    """name -> (likelihood, Y, numpy log p(Y | f), kinks of f, means of the grid)."""
    from gpflow_ep.likelihoods import Laplace

    count_means = [-10.0, -2.0, 0.5, 3.0, 10.0]  # log-rates: exp(±50) counts are not a cavity EP meets
    return {
        "logistic": (
            gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid),
            1.0,
            lambda f: -np.logaddexp(0.0, -f),
            (0.0,),
            None,
        ),
        "logistic_y0": (
            gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid),
            0.0,
            lambda f: -np.logaddexp(0.0, f),
            (0.0,),
            None,
        ),
        "squashed_probit": (
            gpflow.likelihoods.Bernoulli(),
            1.0,
            lambda f: np.log(1e-3 + (1 - 2e-3) * special.ndtr(f)),
            (),
            None,
        ),
        "student_t": (
            gpflow.likelihoods.StudentT(scale=T_SCALE, df=NU),
            Y_REG,
            lambda f: _T_CONST - (NU + 1) / 2 * np.log1p(((Y_REG - f) / T_SCALE) ** 2 / NU),
            (Y_REG,),
            None,
        ),
        "laplace": (Laplace(scale=0.5), Y_REG, lambda f: -np.abs(Y_REG - f) / 0.5 - np.log(1.0), (Y_REG,), None),
        "poisson": (
            gpflow.likelihoods.Poisson(),
            3.0,
            lambda f: 3.0 * f - np.exp(f) - special.gammaln(4.0),
            (),
            count_means,
        ),
        "probit": (Probit(), 1.0, lambda f: special.log_ndtr(f), (), None),
        # the first and last classes have an infinite bin edge (Φ(±∞), NaN in GPflow's own log_prob
        # where tf.math.erf(±inf) is NaN)
        "ordinal_first": _ordinal(0),
        "ordinal_middle": _ordinal(1),
        "ordinal_last": _ordinal(3),
    }


CASES = list(_likelihood_cases())


def _check_grid(case, means, variances, power=1.0):
    from scipy_tilted import tilted_reference

    lik, y, log_p, kinks, case_means = _likelihood_cases()[case]
    means = case_means if case_means is not None and means is GRID_MEANS else means
    if case_means is not None and means is DENSE_MEANS:
        means = list(np.linspace(min(case_means), max(case_means), 11))
    M, V = (a.reshape(-1, 1) for a in np.meshgrid(np.asarray(means, float), np.asarray(variances, float)))
    t = tilted_moments(lik, None, np.full_like(M, y), M, V, power)
    failures = []
    for i in range(len(M)):
        m, v = M[i, 0], V[i, 0]
        ref = tilted_reference(log_p, m, v, power, kinks)
        got = [float(a[i, 0]) for a in t]
        # log Z: 1e-8 relative in Z (absolute in log Z; relative once |log Z| > 1); the derivatives:
        # 1e-8 relative to their natural scales (√|∂²| for ∂, (∂)² for ∂²), plus the float64 rounding
        # of Var[δ] ≈ v and E[δ] in the moment form (100 ε / v and 100 ε / √v)
        tol = [
            1e-8 * max(1.0, abs(ref[0])),
            1e-8 * (abs(ref[1]) + np.sqrt(abs(ref[2]))) + 100 * EPS / np.sqrt(v),
            1e-8 * (abs(ref[2]) + ref[1] ** 2) + 100 * EPS / v,
        ]
        if any(not abs(a - b) <= c for a, b, c in zip(got, ref, tol)):
            failures.append((m, v, got, ref))
    assert not failures, failures


@pytest.mark.parametrize("case", CASES)
def test_tilted_moments_of_every_registered_likelihood_match_scipy_on_the_grid(case):
    """5 means x 7 cavity variances (1e-4 ... 1e3): log Z and both derivatives to 1e-8 relative."""
    _check_grid(case, GRID_MEANS, GRID_VARS)


@pytest.mark.parametrize("case", ["logistic", "student_t", "laplace", "poisson", "ordinal_first", "ordinal_last"])
def test_power_ep_tilted_moments_match_scipy(case):
    _check_grid(case, [-3.0, 0.5, 20.0], [1e-2, 1.0, 100.0], power=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_tilted_moments_match_scipy_on_the_dense_grid(case):
    _check_grid(case, DENSE_MEANS, DENSE_VARS)


@pytest.mark.parametrize("case", CASES)
def test_tilted_gradients_are_finite_on_the_grid_and_match_the_moments(case):
    """
    Autodiff through the rule w.r.t. the cavity and the likelihood's parameters is finite on the
    whole grid, ∂log Z/∂m equals the returned moment form and ∂log Z/∂v = ½ (∂²log Z/∂m² + (∂log Z/∂m)²)
    (differentiating N(f; m, v) under the integral: ∂N/∂v = ½ ∂²N/∂m²).
    """
    lik, y, _, _, case_means = _likelihood_cases()[case]
    means = case_means if case_means is not None else GRID_MEANS
    M, V = (tf.constant(a.reshape(-1, 1)) for a in np.meshgrid(np.asarray(means, float), np.asarray(GRID_VARS)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([M, V])
        t = tilted_moments(lik, None, tf.fill(M.shape, tf.constant(y, tf.float64)), M, V, 1.0)
        total = tf.reduce_sum(t.log_z)
    dm, dv = tape.gradient(total, [M, V])
    for g in [dm, dv] + [g for g in tape.gradient(total, lik.trainable_variables) if g is not None]:
        assert np.all(np.isfinite(g))
    d1, d2 = t.dlog_z.numpy(), t.d2log_z.numpy()
    # the tolerances of the grid test (autodiff is Σ p α ℓ'(m + δ), the moment form E[δ]/v: equal
    # by integration by parts up to the rule's error)
    tol_m = 1e-8 * (np.abs(d1) + np.sqrt(np.abs(d2))) + 100 * EPS / np.sqrt(V)
    np.testing.assert_array_less(np.abs(dm - d1), tol_m)
    tol_v = 1e-8 * (np.abs(d2) + np.square(d1)) + 100 * EPS / V
    np.testing.assert_array_less(np.abs(dv - 0.5 * (d2 + np.square(d1))), tol_v)


@pytest.mark.parametrize("case", ["student_t", "laplace", "logistic"])
def test_gradients_match_finite_differences(case):
    """Autodiff of log Z w.r.t. m, v and the likelihood's parameters vs central differences."""
    lik, y, _, _, _ = _likelihood_cases()[case]
    points = [(0.5, 25.0), (20.0, 1e3)]
    for m0, v0 in points:
        M, V = tf.constant([[m0]], tf.float64), tf.constant([[v0]], tf.float64)
        Y = tf.constant([[y]], tf.float64)
        with tf.GradientTape() as tape:
            tape.watch([M, V])
            log_z = tilted_moments(lik, None, Y, M, V, 1.0).log_z[0, 0]
        grads = tape.gradient(log_z, [M, V] + list(lik.trainable_variables))
        f = lambda mm, vv, Y=Y: float(tilted_moments(lik, None, Y, np.array([[mm]]), np.array([[vv]]), 1.0).log_z)
        hm, hv = 1e-3 * np.sqrt(v0), 1e-3 * v0  # truncation error ~1e-6 relative
        fd = [(f(m0 + hm, v0) - f(m0 - hm, v0)) / (2 * hm), (f(m0, v0 + hv) - f(m0, v0 - hv)) / (2 * hv)]
        for g, d, h in zip(grads[:2], fd, [hm, hv]):
            np.testing.assert_allclose(float(g[0, 0]), d, rtol=1e-5, atol=1e-9 / h)
        for var, g in zip(lik.trainable_variables, grads[2:]):
            x0 = var.numpy()
            h = 1e-3 * max(1.0, abs(x0))
            var.assign(x0 + h)
            up = f(m0, v0)
            var.assign(x0 - h)
            down = f(m0, v0)
            var.assign(x0)
            np.testing.assert_allclose(float(g), (up - down) / (2 * h), rtol=1e-5, atol=1e-8)


def _bernoulli_6_points(variance=25.0):
    from gpflow_ep.models import EPGPC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 1))
    Y = (X > 0).astype(float)
    kernel = gpflow.kernels.SquaredExponential(variance=variance)
    return EPGPC((X, Y), kernel, gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid))


def test_epgpc_with_gpflows_logistic_has_finite_gradients_at_kernel_variance_25():
    """Issue: GPflow's log(1 - σ(f)) is log 0 at the far nodes, whose gradient was inf·0 = NaN."""
    model = _bernoulli_6_points()
    with tf.GradientTape() as tape:
        loss = model.training_loss()
    grads = tape.gradient(loss, model.trainable_variables)
    assert np.isfinite(loss.numpy())
    assert all(np.all(np.isfinite(g)) for g in grads), grads


def test_non_finite_log_likelihood_nodes_contribute_zero_with_zero_gradient():
    """GPflow's own logistic log density (log(1 - σ) = -inf for f ≳ 37) through the generic rules."""
    lik = gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)
    Y = np.array([[0.0], [1.0], [0.0]])
    M = tf.constant([[0.3], [-40.0], [45.0]], tf.float64)
    V = tf.constant([[25.0], [1e3], [1e3]], tf.float64)
    expected = tilted_moments(lik, None, Y, M, V, 1.0)  # the registered, stable form
    for rule in [adaptive_tilted_integral, gauss_hermite_tilted_integral]:
        with tf.GradientTape() as tape:
            tape.watch([M, V])
            out = rule(lambda F: lik._scalar_log_prob(None, F, Y), M, V)
            total = tf.reduce_sum(out.log_z)
        for g in tape.gradient(total, [M, V]):
            assert np.all(np.isfinite(g))
        assert np.all(np.isfinite(out.log_z))
    adaptive = adaptive_tilted_integral(lambda F: lik._scalar_log_prob(None, F, Y), M, V)
    np.testing.assert_allclose(adaptive.log_z, expected.log_z, rtol=0, atol=1e-8)
