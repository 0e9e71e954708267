"""
Stable Gaussian cdf functions (float64, differentiable).

TensorFlow 2.21 has no public ``log_ndtr``; TFP's ``special_math`` implementation (the one behind
``tfp.distributions.Normal.log_cdf``) uses an asymptotic series for x ≪ 0, so log Φ(-40) is
finite. The import is kept in this one place.
"""

from tensorflow_probability.python.internal import special_math

log_ndtr = special_math.log_ndtr
ndtr = special_math.ndtr

__all__ = ["log_ndtr", "ndtr"]
