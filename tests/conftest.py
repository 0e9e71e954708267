"""Shared test configuration: float64 everywhere (GPflow's default), seeded data."""

import dataclasses
from pathlib import Path

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from benchmarks.data import benchmark_dir

# The fast subset that CI also runs against the oldest declared dependency versions (.ci/oldest):
# every test in these modules is marked ``oldest_versions`` (select with ``pytest -m oldest_versions``).
OLDEST_VERSIONS_MODULES = (
    "ep/test_schedules.py",
    "ep/test_sites.py",
    "ep/test_tilted.py",
    "likelihoods/test_hinge.py",
    "likelihoods/test_labels.py",
    "likelihoods/test_noisy_step.py",
    "likelihoods/test_probit.py",
    "models/test_epgpc.py",
    "models/test_sepgpc.py",
    "optimizers/test_ep_optimizer.py",
    "test_cli.py",
    "training/test_fit.py",
    "training/test_step.py",
    "training/test_training_data.py",
    "test_validation.py",
)
# ... except their slowest tests (a two-device subprocess, long training loops)
OLDEST_VERSIONS_EXCLUDED = (
    "models/test_sepgpc.py::test_inner_updates_raise_the_evidence_like_outer_updates",
    "training/test_step.py::test_mirrored_strategy_on_two_devices_matches_one_device",
    "training/test_fit.py::test_sepgpc_in_a_plain_gpflow_loop",
)


def pytest_itemcollected(item):
    """
    Mark the tests of ``OLDEST_VERSIONS_MODULES`` ``oldest_versions`` (before ``-m`` selects). Slow tests
    carry ``@pytest.mark.slow`` (or ``pytest.param(..., marks=pytest.mark.slow)``) themselves.
    """
    module = item.path.relative_to(Path(__file__).parent).as_posix()
    if module in OLDEST_VERSIONS_MODULES and f"{module}::{item.originalname}" not in OLDEST_VERSIONS_EXCLUDED:
        item.add_marker(pytest.mark.oldest_versions)


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
def tiny_jitter():
    """GPflow's jitter set to 1e-12 for the test (K_uu with Z = X is then the full-GP prior to round-off)."""
    with gpflow.config.as_context(dataclasses.replace(gpflow.config.config(), jitter=1e-12)):
        yield 1e-12


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
