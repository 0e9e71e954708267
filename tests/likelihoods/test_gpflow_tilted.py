"""EP registrations for GPflow's Bernoulli (squashed probit, logistic) and StudentT."""

import gpflow
import numpy as np
import tensorflow as tf
from scipy import integrate, special, stats

from gpflow_ep.ep import tilted_kinks, tilted_moments
from gpflow_ep.likelihoods.gpflow_tilted import logistic_log_prob


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
