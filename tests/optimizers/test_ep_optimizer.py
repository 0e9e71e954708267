"""The EP optimiser: result object, overrides and argument checks."""

import gpflow
import numpy as np
import pytest

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC
from gpflow_ep.optimizers import EP, EPResult


def test_minimize_returns_result_and_updates_sites():
    X, Y = two_dimensional(30, seed=1)
    m = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit(), ep_mode="alternated")
    result = EP(damping=0.7, tol=1e-9).minimize(m)
    assert isinstance(result, EPResult)
    assert result.converged and result.sweeps > 1 and result.max_change <= 1e-9
    assert result.num_skipped == 0 and result.num_rejected == 0
    assert np.any(m.sites.precision.numpy() > 0)
    np.testing.assert_allclose(result.log_marginal_likelihood, m.log_marginal_likelihood())
    # warm start: a second run from converged sites takes one sweep
    assert EP(tol=1e-9).minimize(m).sweeps == 1


def test_sweep_cap_is_honoured_and_reported():
    X, Y = two_dimensional(30, seed=1)
    m = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit(), ep_mode="alternated")
    result = EP(max_sweeps=2, tol=1e-14, warn=False).minimize(m)
    assert result.sweeps == 2 and not result.converged


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(damping=2.0), "damping"),
        (dict(max_sweeps=-1), "max_sweeps"),
        (dict(tol=0.0), "tol"),
        (dict(schedule="x"), "schedule"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EP(**kwargs)
