"""EP closed forms for GPflow's own ``Gaussian`` likelihood (registered with the engine on import)."""

import numpy as np
import tensorflow as tf
from gpflow.likelihoods import Gaussian

from ..ep.tilted import HALF_LOG_2PI, TiltedMoments, tilted_expected_log_likelihood, tilted_moments


@tilted_moments.register(Gaussian)
def _gaussian_tilted(likelihood, X, Y, m, v, power):
    r"""
    Gaussian likelihood N(y; f, σ²) at power α: N(y; f, σ²)^α = c · N(y; f, σ²/α) with
    log c = (1 - α)/2 · log(2πσ²) - ½ log α, so

        log Z = log c + log N(y; m, v + σ²/α),   ∂log Z/∂m = (y - m)/(v + σ²/α),
        ∂²log Z/∂m² = -1/(v + σ²/α).
    """
    noise = likelihood.variance_at(X) if X is not None else tf.convert_to_tensor(likelihood.variance)
    noise = noise * tf.ones_like(m)
    s = v + noise / power
    log_c = 0.5 * (1.0 - power) * (2.0 * HALF_LOG_2PI + tf.math.log(noise)) - 0.5 * np.log(power)
    log_z = log_c - HALF_LOG_2PI - 0.5 * tf.math.log(s) - 0.5 * tf.square(Y - m) / s
    return log_z, (Y - m) / s, -1.0 / s


@tilted_expected_log_likelihood.register(Gaussian)
def _gaussian_expected(likelihood, X, Y, m, v):
    r"""E_p̂[log N(y; f, σ²)] = -½ log 2πσ² - ((y - μ̂)² + σ̂²)/(2σ²) with p̂ Gaussian."""
    noise = likelihood.variance_at(X) if X is not None else tf.convert_to_tensor(likelihood.variance)
    t = TiltedMoments(*_gaussian_tilted(likelihood, X, Y, m, v, 1.0))
    mean, var = t.mean_and_var(m, v)
    return -HALF_LOG_2PI - 0.5 * tf.math.log(noise) - 0.5 * (tf.square(Y - mean) + var) / noise
