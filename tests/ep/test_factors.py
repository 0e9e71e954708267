"""Site factors (:mod:`gpflow_ep.ep.factors`) against scipy quadrature."""

import numpy as np
import scipy.integrate
import scipy.stats
import tensorflow as tf

from gpflow_ep.ep import LikelihoodFactor
from gpflow_ep.likelihoods import Probit


def _probit_factor(y):
    return LikelihoodFactor(Probit(), None, tf.constant(y))


def test_the_unnormalised_cavity_normaliser_matches_quadrature():
    """log ∫ exp(v₁h - ½v₂h²) Φ((2y-1)h) dh, the term of the convergent double loop's energy."""
    y = np.array([[1.0], [0.0], [1.0]])
    v1, v2 = np.array([[0.7], [-1.2], [3.0]]), np.array([[0.5], [2.0], [0.1]])
    got = _probit_factor(y).cavity_log_normaliser(tf.constant(v1), tf.constant(v2)).numpy()
    for i in range(3):
        sign = 2.0 * y[i, 0] - 1.0

        def integrand(h, i=i, sign=sign):
            return np.exp(v1[i, 0] * h - 0.5 * v2[i, 0] * h * h) * scipy.stats.norm.cdf(sign * h)

        centre, scale = v1[i, 0] / v2[i, 0], 1.0 / np.sqrt(v2[i, 0])
        value, _ = scipy.integrate.quad(integrand, centre - 40 * scale, centre + 40 * scale, epsabs=0, epsrel=1e-12)
        np.testing.assert_allclose(got[i, 0], np.log(value), rtol=1e-9)


def test_the_fitc_variance_adds_to_the_cavity_variance():
    y = np.array([[1.0], [0.0]])
    mean, var, extra = np.array([[0.3], [-0.4]]), np.array([[0.8], [1.5]]), np.array([[0.2], [0.6]])
    with_extra = LikelihoodFactor(Probit(), None, tf.constant(y), tf.constant(extra))
    a = with_extra.tilted(tf.constant(mean), tf.constant(var))
    b = _probit_factor(y).tilted(tf.constant(mean), tf.constant(var + extra))
    for x, z in zip(a, b):
        np.testing.assert_allclose(x.numpy(), z.numpy(), rtol=1e-14)


def test_one_site_of_a_factor_is_that_site():
    y = np.array([[1.0], [0.0], [1.0]])
    mean, var = np.array([[0.3], [-0.4], [1.1]]), np.array([[0.8], [1.5], [0.4]])
    all_sites = _probit_factor(y).tilted(tf.constant(mean), tf.constant(var))
    one = _probit_factor(y).site(1).tilted(tf.constant(mean[1:2]), tf.constant(var[1:2]))
    for x, z in zip(all_sites, one):
        np.testing.assert_allclose(x.numpy()[1:2], z.numpy(), rtol=1e-15)
