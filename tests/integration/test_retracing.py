"""
EP runs compile where they are called, once per model and settings: repeating a run, a compiled loss, or
building a second model emits no TensorFlow "retracing" warning.
"""

import logging

import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC, SpikeSlabRegression


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_repeated_runs_and_a_second_model_do_not_retrace(rng):
    X = rng.normal(size=(20, 2))
    Y = (X[:, :1] > 0).astype(float)
    handler = _Records()
    logger = tf.get_logger()
    logger.addHandler(handler)
    try:
        for _ in range(2):  # two models built in a row
            model = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit())
            for _ in range(2):
                model.run_ep()
                model.run_ep(damping=0.5)
            loss = model.training_loss_closure()  # compiled by GPflow at the call site, nested EP inside
            for _ in range(2):
                loss()
            slab = SpikeSlabRegression((X, rng.normal(size=(20, 1))))
            for _ in range(2):
                slab.run_ep()
    finally:
        logger.removeHandler(handler)
    retracing = [m for m in handler.messages if "retracing" in m]
    assert not retracing, retracing
    assert np.isfinite(float(loss()))
