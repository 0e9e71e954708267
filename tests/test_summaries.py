"""gpflow_ep.summaries: the short reprs of result objects."""

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from gpflow_ep.summaries import describe, summary_repr


def test_describe_gives_scalars_as_values_and_arrays_as_shapes():
    assert describe(tf.constant(True)) == "True" and describe(np.int32(3)) == "3" and describe(0.25) == "0.25"
    assert describe(tf.constant(-123.456789, tf.float64)) == "-123.5"  # 4 significant digits
    assert describe(tf.zeros([5000, 3], tf.float64)) == "<float64 [5000, 3]>"
    assert describe([0.1] * 7) == "<float64 [7]>"
    assert describe((np.zeros(2), tf.ones([3, 1], tf.int32))) == "(<float64 [2]>, <int32 [3, 1]>)"
    assert describe(None) == "None" and describe("sites") == "'sites'"


def test_summary_repr_puts_the_scalars_first():
    class Result(NamedTuple):
        sites: tf.Tensor
        done: bool
        count: int

    assert summary_repr(Result(tf.zeros([9, 1]), True, 2)) == "Result(done=True, count=2, sites=<float32 [9, 1]>)"
