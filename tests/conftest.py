"""Shared test configuration: float64 everywhere (GPflow's default), seeded data."""

import numpy as np
import pytest
import tensorflow as tf


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    tf.random.set_seed(0)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
