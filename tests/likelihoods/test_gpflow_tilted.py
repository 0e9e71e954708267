"""EP registrations for GPflow's Bernoulli (squashed probit, logistic), StudentT and Ordinal."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy import integrate, special

from gpflow_ep.ep import tilted_kinks, tilted_moments
from gpflow_ep.likelihoods.gpflow_tilted import logistic_log_prob, ordinal_log_prob


def _quad_log_z(log_t, m, v):
    sd = np.sqrt(v)
    f = lambda x: np.exp(log_t(x)) * np.exp(-0.5 * ((x - m) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
    return np.log(
        sum(integrate.quad(f, a, b, epsabs=1e-15, epsrel=1e-13)[0] for a, b in [(m - 40 * sd, 0), (0, m + 40 * sd)])
    )


def test_squashed_probit_closed_form_matches_quadrature_and_gpflows_density():
    lik = gpflow.likelihoods.Bernoulli()
    M, V = np.array([[-3.0], [0.4], [6.0]]), np.array([[0.5], [2.0], [9.0]])
    F = np.linspace(-6.0, 6.0, 13)[:, None]
    for Y in [0.0, 1.0]:
        y = 2 * Y - 1
        log_p = lambda f, y=y: np.log(1e-3 + (1 - 2e-3) * special.ndtr(y * f))  # gpflow's inv_probit
        np.testing.assert_allclose(lik.log_prob(None, F, np.full_like(F, Y)), log_p(F[:, 0]), rtol=1e-12)
        t = tilted_moments(lik, None, np.full_like(M, Y), M, V, 1.0)
        for i in range(len(M)):
            np.testing.assert_allclose(t.log_z[i, 0], _quad_log_z(log_p, M[i, 0], V[i, 0]), atol=1e-10)


def test_logistic_log_prob_is_finite_where_gpflows_is_not():
    F = np.array([[-1000.0], [40.0], [1000.0]])
    Y = np.zeros_like(F)
    gpflow_log_p = gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid).log_prob(None, F, Y).numpy()
    assert not np.all(np.isfinite(gpflow_log_p))  # log(1 - σ(40)) = log 0
    np.testing.assert_allclose(logistic_log_prob(Y, F)[:, 0], -np.logaddexp(0.0, F[:, 0]), rtol=1e-15)


def test_kinks_are_declared_for_the_logistic_and_student_t_only():
    Y = np.array([[0.0], [1.0]])
    np.testing.assert_array_equal(
        tilted_kinks(gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid), None, Y), 0.0 * Y[None]
    )
    assert tilted_kinks(gpflow.likelihoods.Bernoulli(), None, Y) is None
    np.testing.assert_array_equal(tilted_kinks(gpflow.likelihoods.StudentT(), None, Y), Y[None])
    assert tilted_kinks(gpflow.likelihoods.Poisson(), None, Y) is None


def test_logistic_power_ep_matches_quadrature():
    lik = gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)
    m, v = 1.5, 30.0
    t = tilted_moments(lik, None, np.ones((1, 1)), np.array([[m]]), np.array([[v]]), 0.5)
    expected = _quad_log_z(lambda f: 0.5 * -np.logaddexp(0.0, -f), m, v)
    np.testing.assert_allclose(t.log_z[0, 0], expected, atol=1e-9)


def _ordinal(edges=(-1.0, 0.5, 2.0), sigma=0.7):
    likelihood = gpflow.likelihoods.Ordinal(np.array(edges))
    likelihood.sigma.assign(sigma)
    return likelihood


def test_ordinal_log_prob_is_gpflows_density_and_finite_in_the_outer_classes():
    """
    Where GPflow's Ordinal.log_prob is finite it equals ours to float64 rounding (of log(x + 10⁻⁶),
    about 1e-16/1e-6); in the first and last class GPflow's evaluates Φ(±∞) through tf.math.erf,
    NaN in some TensorFlow builds: ours is the tail probability's logarithm, finite everywhere.
    """
    likelihood = _ordinal()
    F = np.linspace(-30.0, 30.0, 241)[:, None]
    for k in range(4):
        Y = np.full_like(F, float(k))
        ours = ordinal_log_prob(likelihood, Y, F).numpy()
        assert np.all(np.isfinite(ours))
        theirs = likelihood.log_prob(None, F, Y).numpy()[:, None]
        finite = np.isfinite(theirs)
        if 0 < k < 3:
            assert np.all(finite)
        np.testing.assert_allclose(ours[finite], theirs[finite], rtol=0, atol=1e-9)


def test_ep_with_gpflows_ordinal_uses_every_class():
    """
    EP with GPflow's Ordinal on labels of all four classes converges with no skipped site update
    (before the closed form, the first and last classes gave log Z = -inf and every one of their
    updates was skipped), and the evidence's gradient is finite.
    """
    from gpflow_ep.models import EPGP

    rng = np.random.default_rng(0)
    X = np.linspace(-3, 3, 40)[:, None]
    f = 1.5 * np.sin(X) + 0.5
    Y = np.digitize(f + 0.3 * rng.normal(size=f.shape), [-1.0, 0.5, 2.0]).astype(float)
    assert set(np.unique(Y)) == {0.0, 1.0, 2.0, 3.0}
    model = EPGP((X, Y), gpflow.kernels.SquaredExponential(), _ordinal())
    run = model.run_ep()
    assert bool(run.converged) and int(run.num_skipped) == 0
    with tf.GradientTape() as tape:
        loss = model.training_loss()
    grads = tape.gradient(loss, model.trainable_variables)
    assert np.isfinite(loss.numpy()) and all(np.all(np.isfinite(g.numpy())) for g in grads)


def _scipy_tilted_reference():
    """tests/ep/scipy_tilted.py's ``tilted_reference`` (SciPy adaptive quadrature split at kinks)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "ep" / "scipy_tilted.py"
    spec = importlib.util.spec_from_file_location("scipy_tilted", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.tilted_reference


@pytest.mark.parametrize("power", [1.0, 0.5])
@pytest.mark.parametrize("df", [3.0, 10.0, 100.0])
def test_student_t_tilted_moments_match_scipy_for_several_degrees_of_freedom(df, power):
    """
    The scale-mixture rule (a = α(ν + 1)/2 ≥ 1.25; ν = 3 at α = ½ has a = 1 and takes the generic
    rule) against SciPy's adaptive quadrature of the f-integral split at the peak f = y, with the
    grid test's tolerances (tests/ep/test_tilted.py): 1e-8 relative in log Z and both derivatives,
    plus the float64 rounding 100ε/√v and 100ε/v of the moment form.
    """
    tilted_reference = _scipy_tilted_reference()
    scale, y = 0.3, -0.7
    const = special.gammaln((df + 1) / 2) - special.gammaln(df / 2) - 0.5 * np.log(df * np.pi) - np.log(scale)
    log_p = lambda f: const - (df + 1) / 2 * np.log1p(((y - f) / scale) ** 2 / df)  # noqa: E731
    lik = gpflow.likelihoods.StudentT(scale=scale, df=df)
    M, V = (a.reshape(-1, 1) for a in np.meshgrid([-50.0, 0.5, 3.0, 50.0], [1e-4, 1e-2, 1.0, 1e3]))
    t = tilted_moments(lik, None, np.full_like(M, y), M, V, power)
    eps = np.finfo(np.float64).eps
    for i in range(len(M)):
        m, v = M[i, 0], V[i, 0]
        ref = tilted_reference(log_p, m, v, power, (y,))
        tol = [
            1e-8 * max(1.0, abs(ref[0])),
            1e-8 * (abs(ref[1]) + np.sqrt(abs(ref[2]))) + 100 * eps / np.sqrt(v),
            1e-8 * (abs(ref[2]) + ref[1] ** 2) + 100 * eps / v,
        ]
        for got, expected, bound in zip((a[i, 0] for a in t), ref, tol):
            assert abs(got - expected) <= bound, (m, v, got, expected)


@pytest.mark.parametrize("df, power, mixture", [(4.0, 1.0, True), (4.0, 0.5, True), (1.5, 0.5, False)])
def test_student_t_tilted_moments_use_the_scale_mixture_where_it_is_accurate(monkeypatch, df, power, mixture):
    """Where a = α(ν + 1)/2 ≥ 1.25 the rule integrates over the mixing precision and never evaluates
    the f-density (the generic rule evaluates it ~1,900 times per site); below, it falls back."""
    lik = gpflow.likelihoods.StudentT(scale=0.5, df=df)
    calls = []
    original = type(lik)._scalar_log_prob
    monkeypatch.setattr(type(lik), "_scalar_log_prob", lambda self, *args: calls.append(1) or original(self, *args))
    t = tilted_moments(lik, None, np.ones((3, 1)), np.array([[-2.0], [0.5], [40.0]]), np.full((3, 1), 2.0), power)
    assert all(np.all(np.isfinite(a)) for a in t)
    assert (len(calls) == 0) == mixture, len(calls)


@pytest.mark.parametrize("power", [1.0, 0.5])
def test_student_t_tilted_gradient_in_a_learned_degrees_of_freedom_matches_finite_differences(power):
    """ν as a positive ``gpflow.Parameter`` (as robust EP learns it): autodiff of Σ log Z through the
    scale-mixture rule w.r.t. ν's and σ's unconstrained variables against central differences (step
    1e-4: truncation ~1e-8 |∂³|, rounding ~1e-12 |Σ log Z|; the rule's own error is 1e-8 relative)."""
    lik = gpflow.likelihoods.StudentT(scale=0.4)
    lik.df = gpflow.Parameter(6.0, transform=gpflow.utilities.positive())
    Y, M, V = np.array([[0.3], [1.0], [-2.0]]), np.array([[-1.0], [0.8], [20.0]]), np.array([[0.5], [25.0], [1e-2]])
    variables = [lik.df.unconstrained_variable, lik.scale.unconstrained_variable]
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(tilted_moments(lik, None, Y, M, V, power).log_z)
    grads = tape.gradient(total, variables)
    h = 1e-4
    for variable, grad in zip(variables, grads):
        x0 = variable.numpy()
        values = []
        for step in (h, -h):
            variable.assign(x0 + step)
            values.append(float(tf.reduce_sum(tilted_moments(lik, None, Y, M, V, power).log_z)))
        variable.assign(x0)
        fd = (values[0] - values[1]) / (2 * h)
        np.testing.assert_allclose(float(grad), fd, rtol=1e-6, atol=1e-9 * (1 + abs(float(total))))
