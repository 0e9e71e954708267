"""Robust Student-t regression by EP (Jylänki, Vanhatalo & Vehtari 2011): the ``robust_settings`` preset."""

import warnings

import gpflow
import numpy as np
import pytest

from gpflow_ep.ep import EPConvergenceWarning, EPSettings, robust_settings
from gpflow_ep.models import EPGP


@pytest.fixture
def outlier_data():
    """Neal's (1997) regression function with Gaussian noise 0.1 and 15% outliers of sd 1 (their Sec. 6.1 set-up)."""
    rng = np.random.default_rng(0)
    n = 100
    X = rng.uniform(-3, 3, (n, 1))
    f = 0.3 + 0.4 * X + 0.5 * np.sin(2.7 * X) + 1.1 / (1 + X**2)
    Y = f + 0.1 * rng.standard_normal(X.shape)
    outlier = rng.random(n) < 0.15
    Y[outlier] = f[outlier] + rng.standard_normal((outlier.sum(), 1))
    return X, Y


def _student_t(df=1.0, scale=0.05):
    likelihood = gpflow.likelihoods.StudentT(scale=scale, df=df)
    likelihood.df = gpflow.Parameter(df, transform=gpflow.utilities.positive())  # ν learned with the rest
    return likelihood


def _model(data, **options):
    kernel = gpflow.kernels.SquaredExponential(variance=10.0, lengthscales=0.1)
    return EPGP(data, kernel, _student_t(), **options)


def test_preset_is_damped_fractional_parallel_ep():
    settings = EPSettings().updated(**robust_settings())
    assert (settings.schedule, settings.power, settings.damping) == ("robust", 0.5, 0.5)


@pytest.mark.slow  # ~50 s: 300 undamped sweeps and the preset's run at n = 100
def test_robust_ep_converges_where_plain_parallel_ep_does_not(outlier_data):
    """
    A short length-scale and a large signal variance with ν = 1 and 15% outliers: undamped parallel
    EP (ρ = 1, α = 1) does not converge in 300 sweeps (and its "evidence" is absurd), the robust
    preset (ρ = ½, α = ½) converges.
    """
    plain = _model(outlier_data, schedule="parallel", damping=1.0, power=1.0, max_sweeps=300)
    with pytest.warns(EPConvergenceWarning):
        assert not bool(plain.run_ep().converged)
    robust = _model(outlier_data, **robust_settings())
    with warnings.catch_warnings():
        warnings.simplefilter("error", EPConvergenceWarning)
        run = robust.run_ep()
    assert bool(run.converged)
    assert np.isfinite(robust.log_marginal_likelihood())


@pytest.mark.slow
def test_robust_ep_converges_during_hyperparameter_learning_including_nu(outlier_data):
    """Scipy on the nested loss from the same start: EP converges at every accepted step; ν is learned."""
    model = _model(outlier_data, **robust_settings())
    converged = []
    gpflow.optimizers.Scipy().minimize(
        model.training_loss,
        model.trainable_variables,
        options=dict(maxiter=15),
        step_callback=lambda *_: converged.append(bool(model.ep_diagnostics.converged.numpy())),
    )
    assert converged and all(converged)
    assert model.likelihood.df.numpy() != 1.0
    assert bool(model.run_ep().converged)
