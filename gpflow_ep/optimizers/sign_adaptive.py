r"""
The SEP paper's batch learning-rate rule (Hernández-Lobato & Hernández-Lobato 2016, App. A.6; used
for the inner hyper-parameter updates of its §2.3): every scalar parameter ξ_j has its own step size η_j,

    ξ_j ← ξ_j - η_j g_j,   η_j ← 1.02 η_j if sign(g_j) = sign(g_j^prev), else 0.5 η_j,

(descent on the loss, i.e. ascent on log Z_q). It updates GPflow ``Parameter``\ s in their
unconstrained space, like the ``tf_keras`` optimisers, and has their ``apply_gradients``, so
:func:`gpflow_ep.training.fit` can drive it.
"""

from typing import Iterable, Tuple

import tensorflow as tf

from ..validation import check_range

__all__ = ["SignAdaptive"]


class SignAdaptive:
    """
    Per-parameter step sizes grown by ``increase`` while the gradient keeps its sign and cut by
    ``decrease`` when it flips (the paper does not give η₀; 0.01 on unconstrained parameters works).
    η_j is left unchanged on the first step and where a gradient entry is exactly 0.

    :param learning_rate: the initial η_j of every entry.
    :param increase: factor on η_j when sign(g_j) repeats (1.02 in the paper).
    :param decrease: factor on η_j when sign(g_j) flips (0.5 in the paper).
    """

    def __init__(self, learning_rate: float = 0.01, increase: float = 1.02, decrease: float = 0.5):
        self.learning_rate = check_range(learning_rate, "learning_rate", 0.0, float("inf"))
        self.increase = check_range(increase, "increase", 1.0, float("inf"), low_open=False)
        self.decrease = check_range(decrease, "decrease", 0.0, 1.0, low_open=True)
        self._slots = {}

    def _slots_for(self, variable: tf.Variable) -> Tuple[tf.Variable, tf.Variable]:
        key = variable.ref()
        if key not in self._slots:  # created on the first (traced) call, like Keras' optimiser slots
            with tf.init_scope():
                eta0 = tf.constant(self.learning_rate, variable.dtype)
                eta = tf.Variable(tf.fill(variable.shape, eta0), trainable=False)
                sign = tf.Variable(tf.zeros(variable.shape, variable.dtype), trainable=False)
            self._slots[key] = (eta, sign)
        return self._slots[key]

    def variables(self):
        """The step sizes η and previous gradient signs of every parameter seen so far."""
        return [v for pair in self._slots.values() for v in pair]

    def reset(self) -> None:
        """Back to η_j = ``learning_rate`` and no previous sign, for a fresh run."""
        for eta, sign in self._slots.values():
            eta.assign(tf.fill(eta.shape, tf.constant(self.learning_rate, eta.dtype)))
            sign.assign(tf.zeros_like(sign))

    def apply_gradients(self, grads_and_vars: Iterable[Tuple[tf.Tensor, tf.Variable]]) -> None:
        for grad, variable in grads_and_vars:
            if grad is None:
                continue
            eta, previous = self._slots_for(variable)
            sign = tf.sign(grad)
            same = sign * previous
            up, down, one = (tf.constant(v, eta.dtype) for v in (self.increase, self.decrease, 1.0))
            eta.assign(eta * tf.where(same > 0, up, tf.where(same < 0, down, one)))
            variable.assign_sub(eta * grad)
            previous.assign(sign)
