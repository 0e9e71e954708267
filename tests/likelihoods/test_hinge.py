"""
BinaryHinge: the mixture identities (Wistuba & Rawat 2018, Lemma 1 and Theorem 1), the ELBO terms
and the EP tilted moments.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy import integrate
from scipy.stats import norm

from gpflow_ep.ep import tilted_moments
from gpflow_ep.ep.tilted import tilted_expected_log_likelihood
from gpflow_ep.likelihoods import BinaryHinge


@pytest.mark.parametrize("a, b", [(1.0, 0.3), (2.0, -1.5), (0.5, 2.0)])
def test_lemma_1(a, b):
    """
    Lemma 1 (Eq. (6)): ∫ a (2πλ)^{-½} exp(-½(a²λ + b²/λ)) dλ = exp(-|ab|), for b of either sign (the
    paper states b > 0; quadrature, 1e-10).
    """
    value, _ = integrate.quad(
        lambda lam: a / np.sqrt(2 * np.pi * lam) * np.exp(-0.5 * (a * a * lam + b * b / lam)), 0, np.inf, epsabs=1e-13
    )
    assert abs(value - np.exp(-abs(a * b))) < 1e-10


@pytest.mark.parametrize("b, expected", [(-2.0, 1.0), (-0.5, 1.0), (0.0, 1.0), (0.7, 0.246597), (3.0, 0.00247875)])
def test_theorem_1_mixture(b, expected):
    """Eq. (8): ∫ (2πλ)^{-½} exp(-(b + λ)²/(2λ)) dλ = exp(-2 max(b, 0)) (6 digits)."""
    value, _ = integrate.quad(
        lambda lam: np.exp(-((b + lam) ** 2) / (2 * lam)) / np.sqrt(2 * np.pi * lam), 0, np.inf, epsabs=1e-13
    )
    np.testing.assert_allclose(value, np.exp(-2 * max(b, 0.0)), rtol=1e-9)
    np.testing.assert_allclose(value, expected, rtol=1e-5)


def _ve(bound, mu_b, var_b):
    """The data term for b = 1 - y f with y = +1 (Y = 1): f has mean 1 - μ_b, variance σ_b²."""
    lik = BinaryHinge(bound=bound)
    F = np.array([[1.0 - mu_b]])
    return lik.variational_expectations(None, F, np.array([[var_b]]), np.ones((1, 1))).numpy()[0]


@pytest.mark.parametrize(
    "mu_b, var_b, augmented, exact",
    [(0.3, 0.5, -1.068115, -0.914218), (-1.2, 0.2, -0.080625, -0.001001), (2.0, 1.0, -4.236068, -4.016981)],
)
def test_collapsed_bound_below_exact_term(mu_b, var_b, augmented, exact):
    """
    augmented ≤ exact ≤ 0 at values computed independently from the closed forms (6 digits); the exact
    term = quadrature (1e-9).
    """
    np.testing.assert_allclose(_ve("augmented", mu_b, var_b), augmented, atol=1e-6)
    np.testing.assert_allclose(_ve("exact", mu_b, var_b), exact, atol=1e-6)
    sd = np.sqrt(var_b)
    quad, _ = integrate.quad(
        lambda b: -2 * max(b, 0.0) * norm.pdf(b, mu_b, sd), mu_b - 12 * sd, mu_b + 12 * sd, points=[0.0], epsabs=1e-12
    )
    np.testing.assert_allclose(_ve("exact", mu_b, var_b), quad, rtol=1e-9)
    assert _ve("augmented", mu_b, var_b) <= _ve("exact", mu_b, var_b) <= 0.0


def test_bounds_meet_the_hinge_as_the_variance_vanishes():
    """With σ_b → 0 both data terms tend to log L = -2 max(0, μ_b)."""
    for mu_b in (-0.7, 0.4):
        for bound in ("augmented", "exact"):
            np.testing.assert_allclose(_ve(bound, mu_b, 1e-14), -2 * max(mu_b, 0.0), atol=1e-6)


def test_variational_expectations_shape_labels_and_finite_gradient(rng):
    """Shape [N]; the label sign enters as y = 2Y - 1; gradients in Fmu are finite."""
    lik = BinaryHinge()
    Fmu = tf.constant(rng.normal(size=(6, 1)))
    Fvar = tf.constant(rng.uniform(0.1, 2.0, (6, 1)))
    Y = np.array([[0.0], [1.0], [1.0], [0.0], [1.0], [0.0]])
    with tf.GradientTape() as tape:
        tape.watch(Fmu)
        ve = lik.variational_expectations(None, Fmu, Fvar, Y)
    assert ve.shape == (6,)
    y = 2 * Y - 1
    mu_b = 1 - y * Fmu.numpy()
    np.testing.assert_allclose(ve, (-mu_b - np.sqrt(mu_b**2 + Fvar.numpy()))[:, 0], rtol=1e-12)
    assert np.all(np.isfinite(tape.gradient(ve, Fmu).numpy()))
    with pytest.raises(ValueError, match="bound"):
        BinaryHinge(bound="tight")


@pytest.mark.parametrize(
    "mu, v, kappa, Z, mean, var",
    [
        (0.2, 0.7, 2.0, 0.363238, 0.946749, 0.373371),
        (3.0, 0.1, 2.0, 1.000000, 3.000000, 0.100000),
        (-2.0, 2.0, 2.0, 0.049394, 0.627574, 0.790581),
        (0.5, 1.0, 0.6, 0.716674, 0.841692, 0.793512),
    ],
)
def test_tilted_moments_golden_values(mu, v, kappa, Z, mean, var):
    """
    Z, tilted mean and variance of exp(-κ max(0, 1 - g)) N(g; μ, v) (κ = 2α), to 1e-6 (values from
    adaptive quadrature).
    """
    lik = BinaryHinge()
    for Y, sign in ((1.0, 1.0), (0.0, -1.0)):  # y = -1: the cavity on f is N(-μ, v)
        m = np.array([[sign * mu]])
        t = tilted_moments(lik, None, np.array([[Y]]), m, np.array([[v]]), kappa / 2)
        f_mean, f_var = t.mean_and_var(m, np.array([[v]]))
        np.testing.assert_allclose(np.exp(t.log_z.numpy()), Z, atol=1e-6)
        np.testing.assert_allclose(sign * f_mean.numpy(), mean, atol=1e-6)
        np.testing.assert_allclose(f_var.numpy(), var, atol=1e-6)


@pytest.mark.parametrize("power", [1.0, 0.5])
def test_tilted_moments_match_quadrature_and_shrink_the_variance(rng, power):
    """Closed forms = adaptive quadrature (1e-8) over random cavities; tilted var ≤ cavity var (L is log-concave)."""
    lik = BinaryHinge()
    m = rng.normal(0, 2, (8, 1))
    v = rng.uniform(0.05, 3.0, (8, 1))
    Y = (rng.uniform(size=(8, 1)) > 0.5).astype(float)
    t = tilted_moments(lik, None, Y, m, v, power)
    mean, var = (x.numpy() for x in t.mean_and_var(m, v))
    for i in range(8):
        y = 2 * Y[i, 0] - 1

        def weight(f, i=i, y=y):
            return np.exp(-2 * power * max(0.0, 1 - y * f)) * norm.pdf(f, m[i, 0], np.sqrt(v[i, 0]))

        lo, hi = m[i, 0] - 15 * np.sqrt(v[i, 0]), m[i, 0] + 15 * np.sqrt(v[i, 0])
        moments = [
            integrate.quad(lambda f, k=k: f**k * weight(f), lo, hi, points=[y], epsabs=1e-14, limit=200)[0]
            for k in range(3)
        ]
        Z = moments[0]
        np.testing.assert_allclose(np.exp(t.log_z.numpy()[i, 0]), Z, rtol=1e-8)
        np.testing.assert_allclose(mean[i, 0], moments[1] / Z, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(var[i, 0], moments[2] / Z - (moments[1] / Z) ** 2, rtol=1e-7, atol=1e-9)
    assert np.all(var <= v) and np.all(var > 0)


def test_expected_log_likelihood_under_the_tilted_distribution(rng):
    """Relaxed EP's T1 = E_p̂[log L] (power 1) against quadrature (1e-8)."""
    lik = BinaryHinge()
    m, v, Y = np.array([[0.4], [-1.1]]), np.array([[0.8], [1.5]]), np.array([[1.0], [0.0]])
    t1 = tilted_expected_log_likelihood(lik, None, Y, m, v).numpy()
    for i in range(2):
        y = 2 * Y[i, 0] - 1
        sd = np.sqrt(v[i, 0])

        def p(f, i=i, y=y, sd=sd):
            return np.exp(-2 * max(0.0, 1 - y * f)) * norm.pdf(f, m[i, 0], sd)

        Z = integrate.quad(p, m[i, 0] - 15 * sd, m[i, 0] + 15 * sd, points=[y], epsabs=1e-14)[0]
        e = integrate.quad(
            lambda f, y=y, p=p: -2 * max(0.0, 1 - y * f) * p(f),
            m[i, 0] - 15 * sd,
            m[i, 0] + 15 * sd,
            points=[y],
            epsabs=1e-14,
        )[0]
        np.testing.assert_allclose(t1[i, 0], e / Z, rtol=1e-8)


def test_prediction_and_variation_ratio():
    lik = BinaryHinge()
    Fmu, Fvar = np.array([[0.5], [-2.0], [0.0]]), np.array([[1.0], [0.01], [0.3]])
    p, _ = lik.predict_mean_and_var(None, Fmu, Fvar)
    np.testing.assert_allclose(p[:, 0], norm.cdf(Fmu[:, 0] / np.sqrt(Fvar[:, 0])), rtol=1e-12)
    vr = lik.variation_ratio(Fmu, Fvar).numpy()[:, 0]
    np.testing.assert_allclose(vr, [1 - norm.cdf(0.5), 1 - norm.cdf(20.0), 0.5], rtol=1e-9, atol=1e-15)
    assert np.all((vr >= 0) & (vr <= 0.5))
    log_density = lik.predict_log_density(None, Fmu, Fvar, np.array([[1.0], [0.0], [1.0]])).numpy()
    np.testing.assert_allclose(log_density, norm.logcdf([0.5, 20.0, 0.0]), rtol=1e-12)


@pytest.mark.slow
def test_svgp_with_the_hinge_learns_a_classifier():
    """The likelihood plugs into plain gpflow.models.SVGP; a few hundred Adam steps separate two blobs."""
    from gpflow_ep.datasets import two_dimensional

    X, Y = two_dimensional(300, seed=1)
    Xt, Yt = two_dimensional(300, seed=2)
    m = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), BinaryHinge(), X[::15].copy(), num_data=len(X))
    opt = gpflow.keras.tf_keras.optimizers.Adam(0.05)
    loss = m.training_loss_closure((X, Y), compile=True)
    for _ in range(300):
        opt.minimize(loss, m.trainable_variables)
    error = np.mean((m.predict_f(Xt)[0].numpy() > 0) != (Yt > 0.5))
    assert error < 0.2
