"""
The compiled graphs of GPflow's ``StudentT`` tilted moments (:mod:`gpflow_ep.likelihoods.student_t_tilted`)
leave TensorFlow nothing to report on stderr: no "Type inference failed" (a differentiated ``tf.cond``
whose two rules keep intermediates of different types) and no "Skipping loop optimization" (a
``tf.cond`` on a constant predicate, whose dead branch Grappler prunes). The first test builds that
construct in miniature and shows both messages where these tests look (``capfd``).
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.ep import tilted_moments
from gpflow_ep.likelihoods.student_t_tilted import MIN_SHAPE

MESSAGES = ("Type inference failed", "Skipping loop optimization")

Y = np.array([[0.3], [1.0], [-2.0], [4.0]])
M = np.array([[-1.0], [0.8], [20.0], [0.0]])
V = np.array([[0.5], [25.0], [1e-2], [3.0]])


def _loss_and_gradient(tilted, variables):
    """Σ of all three outputs (so every derivative is differentiated), and its gradient, in one graph."""
    with tf.GradientTape() as tape:
        log_z, dlog_z, d2log_z = tilted(tf.constant(M))
        total = tf.reduce_sum(log_z) + tf.reduce_sum(tf.sin(dlog_z)) + tf.reduce_sum(tf.square(d2log_z))
    return total, tape.gradient(total, variables)


def test_a_differentiated_cond_on_a_constant_is_reported_on_stderr(capfd):
    """
    The canary, the former construct in miniature: ``tf.cond`` on a predicate that is a constant
    (a = α(ν + 1)/2 for a number ν) between two rules whose gradients keep intermediates of different
    types (floats in one, the bool condition of a ``tf.where`` in the other), differentiated.
    """
    x = tf.Variable([1.0, -2.0], dtype=tf.float64)

    @tf.function
    def gradient():
        with tf.GradientTape() as tape:
            a = tf.constant(2.5, tf.float64)
            y = tf.cond(a >= MIN_SHAPE, lambda: tf.exp(x) * x, lambda: tf.where(x > 0.0, x, 2.0 * x))
            total = tf.reduce_sum(y)
        return tape.gradient(total, x)

    np.testing.assert_allclose(gradient(), [2.0 * np.e, -np.exp(-2.0)])
    err = capfd.readouterr().err
    assert all(message in err for message in MESSAGES), err[-3000:]


@pytest.mark.parametrize("df", [4.0, 1.5])  # the mixture rule, the generic rule
def test_a_fixed_degrees_of_freedom_puts_one_rule_in_the_graph_quietly(capfd, monkeypatch, df):
    """ν a number (GPflow's default): the rule is chosen when the graph is built; compiled as in EP's
    sweeps (a while loop) and as in the evidence (differentiated), TensorFlow reports nothing."""
    lik = gpflow.likelihoods.StudentT(scale=0.4, df=df)
    generic_rule = []
    original = type(lik)._scalar_log_prob
    monkeypatch.setattr(type(lik), "_scalar_log_prob", lambda self, *a: generic_rule.append(1) or original(self, *a))
    _compiled_and_eager_agree(lik, [lik.scale.unconstrained_variable], power=1.0)
    err = capfd.readouterr().err
    assert not any(message in err for message in MESSAGES), err[-3000:]
    assert bool(generic_rule) == (df < 2 * MIN_SHAPE - 1), "only the rule for ν is traced"


def test_a_learned_degrees_of_freedom_differentiates_the_chosen_rule_quietly(capfd):
    """ν a ``gpflow.Parameter``: a ``tf.cond`` chooses the rule at run time and its gradient
    differentiates the chosen rule alone; one graph serves both rules (ν assigned across the
    threshold a = 1.25), its values and gradients are the eager ones, and TensorFlow reports nothing."""
    lik = gpflow.likelihoods.StudentT(scale=0.4)
    lik.df = gpflow.Parameter(4.0, transform=gpflow.utilities.positive())
    variables = [lik.scale.unconstrained_variable, lik.df.unconstrained_variable]
    compiled = _compiled_and_eager_agree(lik, variables, power=1.0)
    lik.df.assign(1.0)  # a = 1 < 1.25: the generic rule, same graphs
    _compiled_and_eager_agree(lik, variables, power=1.0, compiled=compiled)
    err = capfd.readouterr().err
    assert not any(message in err for message in MESSAGES), err[-3000:]


def _compiled_and_eager_agree(lik, variables, power, compiled=None):
    def tilted(m):
        return tuple(tilted_moments(lik, None, Y, m, V, power))

    def in_a_loop():
        def body(i, m):
            return i + 1, m + 1e-3 * tilted(m)[1]

        return tf.while_loop(lambda i, _: i < 3, body, (tf.constant(0), tf.constant(M)))[1]

    def m_after_loop():
        m = tf.constant(M)
        for _ in range(3):
            m = m + 1e-3 * tilted(m)[1]
        return m

    if compiled is None:
        compiled = tf.function(lambda: _loss_and_gradient(tilted, variables)), tf.function(in_a_loop)
    total, grads = compiled[0]()
    eager_total, eager_grads = _loss_and_gradient(tilted, variables)
    np.testing.assert_allclose(total, eager_total, rtol=1e-12)
    for got, expected in zip(grads, eager_grads):
        np.testing.assert_allclose(got, expected, rtol=1e-10)
    np.testing.assert_allclose(compiled[1](), m_after_loop(), rtol=1e-12)
    return compiled
