"""Shared test configuration: float64 everywhere (GPflow's default), seeded data."""

import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.datasets import benchmark_dir


def pytest_collection_modifyitems(config, items):
    """Tests marked ``benchmark_data`` are skipped when the shared benchmark datasets are not found."""
    marked = [item for item in items if "benchmark_data" in item.keywords]
    if not marked:
        return
    try:
        benchmark_dir()
    except ValueError as error:
        skip = pytest.mark.skip(reason=f"shared benchmark datasets not found: {error}")
        for item in marked:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    tf.random.set_seed(0)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def assert_gradients_match_finite_differences():
    """
    Check ``grads`` (autodiff at a converged state) against central differences of
    ``converged_evidence()`` (which re-converges EP) in every entry of every variable:
    |g - fd| ≤ rtol · max(|fd|, floor). With h = 1e-5 the difference's own error is O(h²) ≈ 1e-10.
    """

    def check(variables, grads, converged_evidence, h=1e-5, rtol=1e-5, floor=1e-3):
        for var, grad in zip(variables, grads):
            base = var.numpy()
            for j in range(base.size):
                step = np.zeros(base.size)
                step[j] = h
                var.assign(base + step.reshape(base.shape))
                up = converged_evidence()
                var.assign(base - step.reshape(base.shape))
                down = converged_evidence()
                var.assign(base)
                fd = (up - down) / (2 * h)
                g = grad.numpy().ravel()[j]
                assert abs(g - fd) <= rtol * max(abs(fd), floor), (var.name, j, g, fd)

    return check
