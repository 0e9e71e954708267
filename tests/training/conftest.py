"""Fixtures of the tests of gpflow_ep.training."""

import pytest

from gpflow_ep.datasets import two_dimensional


@pytest.fixture(scope="module")
def data():
    return two_dimensional(400, seed=2), two_dimensional(400, seed=3)
