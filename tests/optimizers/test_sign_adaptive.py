"""The SEP paper's sign-adaptive learning-rate rule (gpflow_ep.optimizers.SignAdaptive)."""

import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.optimizers import SignAdaptive


def _reference(x0, grad, steps, eta0, up=1.02, down=0.5):
    """The rule of Hernández-Lobato & Hernández-Lobato (2016, Sec. 2.3, App. A.6) for a vector, in NumPy."""
    x, eta, prev = np.array(x0, float), np.full(len(x0), eta0), np.zeros(len(x0))
    for _ in range(steps):
        g = grad(x)
        s = np.sign(g)
        eta = eta * np.where(s * prev > 0, up, np.where(s * prev < 0, down, 1.0))
        x = x - eta * g
        prev = s
    return x, eta


@pytest.mark.parametrize("compiled", [False, True])
def test_steps_follow_the_rule(compiled):
    """f(x) = Σ c_j (x_j - t_j)²: one coordinate overshoots and flips sign, the other creeps on."""
    c, t = np.array([40.0, 0.5]), np.array([1.0, -2.0])
    x = tf.Variable([0.0, 0.0], dtype=tf.float64)
    opt = SignAdaptive(learning_rate=0.02)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(c * (x - t) ** 2)
        opt.apply_gradients([(tape.gradient(loss, x), x)])

    step = tf.function(step) if compiled else step
    for _ in range(25):
        step()
    expected, eta = _reference([0.0, 0.0], lambda z: 2 * c * (z - t), 25, 0.02)
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-14)
    np.testing.assert_allclose(opt.variables()[0].numpy(), eta, rtol=1e-14)
    assert eta[0] < 0.02 < eta[1]  # the oscillating coordinate was slowed, the steady one sped up


def test_bad_settings_name_the_argument():
    for kw in [dict(learning_rate=0.0), dict(increase=0.9), dict(decrease=1.5), dict(learning_rate=np.nan)]:
        with pytest.raises(ValueError, match=list(kw)[0]):
            SignAdaptive(**kw)
