"""Label conventions, held in one place (DESIGN principle 5).

At the API, binary labels follow GPflow: ``Y`` in {0, 1} with shape [N, 1]. Inside the likelihoods
they become signs y = 2Y - 1 in {-1, +1}, the convention of the EP papers.
"""

import numpy as np
import tensorflow as tf


def check_binary_labels(Y, name: str = "Y") -> np.ndarray:
    """Validate binary labels eagerly and return them as a float array of shape [N, 1].

    :raises ValueError: naming ``name`` when the labels are not a [N, 1] array of 0s and 1s.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[1] != 1:
        raise ValueError(f"{name} must have shape [N, 1] with values in {{0, 1}}; got shape {Y.shape}")
    if not np.issubdtype(Y.dtype, np.number) and Y.dtype != bool:
        raise ValueError(f"{name} must be numeric with values in {{0, 1}}; got dtype {Y.dtype}")
    Yf = Y.astype(np.float64)
    if not np.all(np.isfinite(Yf)):
        raise ValueError(f"{name} contains NaN or Inf")
    bad = np.setdiff1d(np.unique(Yf), [0.0, 1.0])
    if bad.size:
        hint = " (labels in {-1, +1}? map them with (Y + 1) / 2)" if -1.0 in bad else ""
        raise ValueError(f"{name} must contain only 0 and 1; found {bad[:5].tolist()}{hint}")
    return Yf


def binary_labels_to_sign(Y: tf.Tensor) -> tf.Tensor:
    """Map GPflow labels Y in {0, 1} to signs y = 2Y - 1 in {-1, +1}.

    In eager mode a label outside {0, 1} raises ``ValueError``; inside a compiled graph the check
    is a ``tf.debugging`` assertion (an ``InvalidArgumentError`` when it fails).
    """
    Y = tf.convert_to_tensor(Y)
    if tf.executing_eagerly():
        check_binary_labels(Y.numpy())
    else:
        tf.debugging.Assert(
            tf.reduce_all(tf.logical_or(tf.equal(Y, 0), tf.equal(Y, 1))),
            ["binary labels Y must be 0 or 1"],
        )
    return 2 * Y - 1
