"""Label conventions, held in one place (DESIGN principle 5).

At the API, binary labels follow GPflow: ``Y`` in {0, 1} with shape [N, 1]. Inside the likelihoods
they become signs y = 2Y - 1 in {-1, +1}, the convention of the EP papers.
"""

import tensorflow as tf
from gpflow.config import default_float

from ..validation import check_binary_labels

__all__ = ["check_binary_labels", "binary_labels_to_sign"]


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
    else:
        tf.debugging.Assert(
            tf.reduce_all(tf.logical_or(tf.equal(Y, 0), tf.equal(Y, 1))),
            ["binary labels Y must be 0 or 1"],
        )
    return 2 * Y - 1
