"""
The compiled graphs of GPflow's ``StudentT`` tilted moments (:mod:`gpflow_ep.likelihoods.student_t_tilted`):
for a ν that is a number the rule is chosen in Python, so the graph holds that rule alone and no
conditional (a ``tf.cond`` on a constant predicate leaves Grappler a dead branch to prune); for a learned
ν one graph chooses the rule at run time, and its gradient differentiates the chosen rule alone (a
custom gradient), not TensorFlow's gradient of a ``tf.cond``, which passes each branch's intermediates
out wrapped in optionals (whose types could disagree between the rules). What the graphs hold is read
from their ``GraphDef`` (function library included), the traces counted by ``tf.function``; the
compiled values and gradients are the eager ones.
"""

import collections

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.ep import tilted_moments
from gpflow_ep.likelihoods import student_t_tilted
from gpflow_ep.likelihoods.student_t_tilted import MIN_SHAPE

#: the ops of a conditional, and those TensorFlow's gradient of one adds to carry a branch's intermediates
CONDITIONALS = ("If", "StatelessIf")
COND_GRADIENT = ("OptionalFromValue", "OptionalGetValue", "OptionalNone", "OptionalHasValue")

Y = np.array([[0.3], [1.0], [-2.0], [4.0]])
M = np.array([[-1.0], [0.8], [20.0], [0.0]])
V = np.array([[0.5], [25.0], [1e-2], [3.0]])


def op_counts(concrete_function) -> collections.Counter:
    """How many nodes of each op type the function's graph holds, in its body and in every function it calls."""
    graph = concrete_function.graph.as_graph_def()
    counts = collections.Counter(node.op for node in graph.node)
    for function in graph.library.function:
        counts.update(node.op for node in function.node_def)
    return counts


def held(counts: collections.Counter, ops) -> int:
    return sum(counts[op] for op in ops)


def _loss_and_gradient(tilted, variables):
    """Σ of all three outputs (so every derivative is differentiated), and its gradient, in one graph."""
    with tf.GradientTape() as tape:
        log_z, dlog_z, d2log_z = tilted(tf.constant(M))
        total = tf.reduce_sum(log_z) + tf.reduce_sum(tf.sin(dlog_z)) + tf.reduce_sum(tf.square(d2log_z))
    return total, tape.gradient(total, variables)


def test_the_graph_reading_sees_a_differentiated_cond():
    """
    The check's canary, the former construct in miniature: ``tf.cond`` on a constant predicate (a =
    α(ν + 1)/2 for a number ν) between two rules whose gradients keep intermediates of different types
    (floats in one, the bool condition of a ``tf.where`` in the other), differentiated: its graph holds
    the conditional and TensorFlow's optionals.
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
    counts = op_counts(gradient.get_concrete_function())
    assert held(counts, CONDITIONALS) >= 1 and held(counts, COND_GRADIENT) >= 1, counts


@pytest.fixture
def traced_rules(monkeypatch):
    """Which rules a trace builds: ``"mixture"`` and ``"generic"`` appended each time one is built."""
    built = []
    mixture, generic = student_t_tilted._mixture_rule, student_t_tilted.quadrature_tilted_moments

    def traced_mixture(*args):
        built.append("mixture")
        return mixture(*args)

    def traced_generic(*args):
        built.append("generic")
        return generic(*args)

    monkeypatch.setattr(student_t_tilted, "_mixture_rule", traced_mixture)
    monkeypatch.setattr(student_t_tilted, "quadrature_tilted_moments", traced_generic)
    return built


@pytest.mark.parametrize("df, rule", [(4.0, "mixture"), (1.0, "generic")])  # a = (ν + 1)/2 ≥ 1.25 or not
def test_a_fixed_degrees_of_freedom_puts_one_rule_and_no_conditional_in_the_graph(df, rule, traced_rules):
    """ν a number (GPflow's default): only ν's rule is traced, and the graphs of EP's sweeps (a while
    loop) and of the evidence (differentiated) hold no conditional; they compute the eager values."""
    lik = gpflow.likelihoods.StudentT(scale=0.4, df=df)
    compiled = _compiled_and_eager_agree(lik, [lik.scale.unconstrained_variable], power=1.0)
    assert set(traced_rules) == {rule}
    for function in compiled:
        assert held(op_counts(function.get_concrete_function()), CONDITIONALS) == 0


def test_a_learned_degrees_of_freedom_chooses_the_rule_in_one_graph_without_a_cond_gradient(traced_rules):
    """ν a ``gpflow.Parameter``: one graph holds both rules and a conditional choosing between them at run
    time, and is traced once for ν on both sides of the threshold a = 1.25; its gradient is not
    TensorFlow's gradient of a conditional (no optionals); values and gradients are the eager ones."""
    lik = gpflow.likelihoods.StudentT(scale=0.4)
    lik.df = gpflow.Parameter(4.0, transform=gpflow.utilities.positive())
    variables = [lik.scale.unconstrained_variable, lik.df.unconstrained_variable]
    compiled = _compiled_and_eager_agree(lik, variables, power=1.0)
    lik.df.assign(1.0)  # a = 1 < 1.25: the generic rule, same graphs
    _compiled_and_eager_agree(lik, variables, power=1.0, compiled=compiled)
    assert {"mixture", "generic"} <= set(traced_rules)
    for function in compiled:
        assert function.experimental_get_tracing_count() == 1
        counts = op_counts(function.get_concrete_function())
        assert held(counts, CONDITIONALS) >= 1 and held(counts, COND_GRADIENT) == 0, counts


def _compiled_and_eager_agree(lik, variables, power, compiled=None):
    """The compiled loss-and-gradient and while loop (made once, or ``compiled``) against their eager values."""

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
