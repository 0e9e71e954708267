"""The EP optimiser: result object, overrides and argument checks."""

import warnings

import gpflow
import numpy as np
import pytest

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC
from gpflow_ep.optimizers import EP, EPConvergenceWarning, EPResult


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


def test_a_result_prints_as_one_short_line():
    """print(EP().minimize(m)) gives the values and the history's length; the history stays an attribute."""
    X, Y = two_dimensional(30, seed=1)
    m = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit(), ep_mode="alternated")
    result = EP(damping=0.7, tol=1e-12, max_sweeps=500).minimize(m)
    text = repr(result)
    assert "\n" not in text and len(text) < 250, text
    assert text.startswith(f"EPResult(converged=True, sweeps={result.sweeps}, ") and "damping=0.7" in text
    assert f"history=<float64 [{result.sweeps}]>" in text and len(result.history) == result.sweeps > 10


def test_sweep_cap_is_honoured_and_reported():
    X, Y = two_dimensional(30, seed=1)
    m = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit(), ep_mode="alternated")
    with warnings.catch_warnings():
        warnings.simplefilter("error", EPConvergenceWarning)  # warn=False silences the model's run_ep too
        result = EP(max_sweeps=2, tol=1e-14, warn=False).minimize(m)
    assert result.sweeps == 2 and not result.converged


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(damping=2.0), "damping"),
        (dict(max_sweeps=-1), "max_sweeps"),
        (dict(tol=0.0), "tol"),
        (dict(schedule="x"), "schedule"),
        (dict(backoff=-1), "backoff must be a positive integer"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EP(**kwargs)


def test_damping_backoff_reruns_from_the_state_before_the_run():
    """Two back-offs of a run that cannot converge (2 sweeps, tol 1e-14): three runs, damping 0.8 → 0.2,
    and the final sites are those of one run at damping 0.2 from the original sites."""
    X, Y = two_dimensional(30, seed=1)

    def model():
        return EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit(), ep_mode="alternated", damping=0.8)

    m = model()
    with pytest.warns(EPConvergenceWarning, match="after 3 runs with damping down to 0.2") as record:
        result = EP(max_sweeps=2, tol=1e-14, backoff=2).minimize(m)
    # one warning, for the last run, naming the sweeps, the measure and its tolerance
    (warning,) = [w for w in record if issubclass(w.category, EPConvergenceWarning)]
    assert "did not converge in 2 sweeps" in str(warning.message) and "tol=1e-14" in str(warning.message)
    assert result.attempts == 3 and result.damping == 0.2 and not result.converged
    reference = model()
    EP(max_sweeps=2, tol=1e-14, damping=0.2, warn=False).minimize(reference)
    np.testing.assert_array_equal(m.sites.precision.numpy(), reference.sites.precision.numpy())
    np.testing.assert_array_equal(m.sites.natural_mean.numpy(), reference.sites.natural_mean.numpy())
    converging = EP(backoff=2).minimize(model())  # no back-off when the first run converges
    assert converging.converged and converging.attempts == 1 and converging.damping == 0.8
