"""Label conventions, held in one place so that every likelihood and model converts labels the same way.

At the API, labels follow GPflow: binary ``Y`` in {0, 1} and multi-class ``Y`` integer classes in
[0, C), both with shape [N, 1]. Inside the likelihoods binary labels become signs y = 2Y - 1 in
{-1, +1}, the convention of the EP papers, and class labels int32 indices.
"""

import numpy as np
import tensorflow as tf
from gpflow.config import default_float

from ..validation import check_binary_labels, check_class_labels

__all__ = ["check_binary_labels", "binary_labels_to_sign", "class_labels_to_index"]


def binary_labels_to_sign(Y: tf.Tensor) -> tf.Tensor:
    """Map GPflow labels Y in {0, 1} to signs y = 2Y - 1 in {-1, +1}.

    In eager mode a label outside {0, 1} raises ``ValueError``; inside a compiled graph the check
    is a ``tf.debugging`` assertion (an ``InvalidArgumentError`` when it fails).
    """
    Y = tf.convert_to_tensor(Y)
    if not Y.dtype.is_floating:  # integer labels (e.g. from fit's dataset) join float arithmetic
        Y = tf.cast(Y, default_float())
    if tf.executing_eagerly():
        check_binary_labels(Y.numpy())
        return 2 * Y - 1
    valid = tf.reduce_all(tf.logical_or(tf.equal(Y, 0), tf.equal(Y, 1)))
    return _after_check(valid, "binary labels Y must be 0 or 1", 2 * Y - 1)


def class_labels_to_index(Y: tf.Tensor, num_classes: int) -> tf.Tensor:
    """Map GPflow class labels Y [N, 1] (integers in [0, ``num_classes``)) to int32 indices [N].

    In eager mode a bad label raises ``ValueError``; inside a compiled graph the check is a
    ``tf.debugging`` assertion (an ``InvalidArgumentError`` when it fails), as for binary labels:
    ``tf.one_hot`` would silently turn a label outside [0, C) into a row of zeros.
    """
    Y = tf.convert_to_tensor(Y)
    index = tf.cast(tf.reshape(Y, [-1]), tf.int32)
    if tf.executing_eagerly():
        check_class_labels(np.reshape(Y.numpy(), [-1, 1]), num_classes)
        return index
    Yf = tf.cast(Y, tf.float64)
    valid = tf.reduce_all((Yf >= 0) & (Yf < num_classes) & tf.equal(Yf, tf.round(Yf)))
    return _after_check(valid, f"class labels Y must be integers in [0, {num_classes})", index)


def _after_check(valid: tf.Tensor, message: str, value: tf.Tensor) -> tf.Tensor:
    """``value``, computed only once the assertion ``valid`` has passed (so no op can use a bad label first)."""
    with tf.control_dependencies([tf.debugging.Assert(valid, [message])]):
        return tf.identity(value)
