"""Shared by the posterior tests: GPflow's "faster predictions" export of a VARIABLE-cache posterior."""

import pytest
import tensorflow as tf
from gpflow.posteriors import PrecomputeCacheType


@pytest.fixture
def exported(tmp_path):
    """
    ``export(model, input_dim)``: save a tf.Module holding ``model.posterior(VARIABLE)`` and its compiled
    ``predict_f`` in a temporary directory, load it, and return the loaded module (keep it while calling it).
    """

    def export(model, input_dim: int):
        module = tf.Module()
        module.posterior = model.posterior(PrecomputeCacheType.VARIABLE)
        module.predict_f = tf.function(
            module.posterior.predict_f, input_signature=[tf.TensorSpec(shape=[None, input_dim], dtype=tf.float64)]
        )
        tf.saved_model.save(module, str(tmp_path))
        return tf.saved_model.load(str(tmp_path))

    return export
