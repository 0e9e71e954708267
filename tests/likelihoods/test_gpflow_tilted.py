"""EP registrations for GPflow's Bernoulli (squashed probit, logistic), StudentT and Ordinal."""

import gpflow
import numpy as np
import tensorflow as tf
from scipy import integrate, special, stats

from gpflow_ep.ep import tilted_kinks, tilted_moments
from gpflow_ep.likelihoods.gpflow_tilted import logistic_log_prob, ordinal_log_prob


def _quad_log_z(log_t, m, v):
    sd = np.sqrt(v)
    f = lambda x: np.exp(log_t(x)) * stats.norm.pdf(x, m, sd)
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
