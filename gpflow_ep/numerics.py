"""
Stable Gaussian cdf functions (float64, differentiable).

TensorFlow 2.21 has no public ``log_ndtr``; TFP's ``special_math`` implementation (the one behind
``tfp.distributions.Normal.log_cdf``) uses an asymptotic series for x ≪ 0, so log Φ(-40) is
finite. The import is kept in this one place. The series is taken to 8 terms (TFP's default, 3,
leaves a relative error of 4e-9 in Φ just below x = -20, where the series takes over; 8 terms are at
float64 precision there).
"""

from tensorflow_probability.python.internal import special_math


def log_ndtr(x):
    """log Φ(x), accurate to float64 precision for every finite x."""
    return special_math.log_ndtr(x, series_order=8)


ndtr = special_math.ndtr

__all__ = ["log_ndtr", "ndtr"]
