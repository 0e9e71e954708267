"""
EP runs compile where they are called, once per model and settings: repeating a run or a compiled loss
traces nothing again, and a second model traces only its own functions. Counted on the functions
themselves (``experimental_get_tracing_count``), not by TensorFlow's frequent-retracing warning, which
is process-wide and keyed by code object, so it also counts the models earlier tests built in the same
worker process.
"""

import logging

import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC, SpikeSlabRegression


def test_repeated_runs_and_a_second_model_do_not_retrace(rng):
    X = rng.normal(size=(20, 2))
    Y = (X[:, :1] > 0).astype(float)
    for _ in range(2):  # two models built in a row
        model = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit())
        for _ in range(2):
            model.run_ep()
            model.run_ep(damping=0.5)
        assert model._execute_compiled.experimental_get_tracing_count() == 2  # one per settings
        loss = tf.function(model.training_loss)  # nested EP inside, inline
        for _ in range(2):
            loss()
        assert loss.experimental_get_tracing_count() == 1
        assert model._execute_compiled.experimental_get_tracing_count() == 2
        slab = SpikeSlabRegression((X, rng.normal(size=(20, 1))))
        for _ in range(2):
            slab.run_ep()
        assert slab._execute_compiled.experimental_get_tracing_count() == 1
    assert np.isfinite(float(loss()))


def test_models_built_in_a_row_do_not_read_as_retracing(rng):
    """
    TensorFlow's frequent-retracing warning is keyed by the traced function's code object, which the
    compiled EP run of every model shares: six models, each running EP once, would read as six traces of
    one function. Each model's function is marked to omit that warning (a private TensorFlow attribute,
    checked to exist here so that this test fails if TensorFlow renames it); the counts above show each
    model still traces once per settings.
    """
    assert hasattr(tf.function(lambda: 0), "_omit_frequent_tracing_warning")
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    tf_logger = logging.getLogger("tensorflow")
    tf_logger.addHandler(handler)
    try:
        X = rng.normal(size=(12, 2))
        Y = (X[:, :1] > 0).astype(float)
        for _ in range(6):
            EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit()).run_ep()
    finally:
        tf_logger.removeHandler(handler)
    assert not [m for m in messages if "retracing" in m], messages
