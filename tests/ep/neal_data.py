"""Robust-EP test data and model shared by test_fallback.py and test_presets.py."""

import gpflow
import numpy as np

from gpflow_ep.models import EPGP


def neal_outlier_data(n=30, seed=0):
    """Neal's (1997) regression function, Gaussian noise 0.1 and 20% outliers of sd 1 (Jylänki et al., Sec. 6.1)."""
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-3, 3, (n, 1)), axis=0)
    f = 0.3 + 0.4 * X + 0.5 * np.sin(2.7 * X) + 1.1 / (1 + X**2)
    Y = f + 0.1 * rng.standard_normal(X.shape)
    outlier = rng.random(n) < 0.2
    Y[outlier] = f[outlier] + rng.standard_normal((outlier.sum(), 1))
    return X, Y


def student_t_epgp(data, df=2.0, **options):
    """EPGP with a Student-t likelihood (scale 0.1) whose ν is a trainable parameter, learned with the rest."""
    likelihood = gpflow.likelihoods.StudentT(scale=0.1, df=df)
    likelihood.df = gpflow.Parameter(df, transform=gpflow.utilities.positive())
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=0.5)
    return EPGP(data, kernel, likelihood, **options)
