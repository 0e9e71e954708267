"""
Checks of the values of options (EP settings, model options): each raises a ``ValueError`` naming
the option. They belong to the engine, which validates its own settings; checks of kernels, inducing
variables and data live with the models (:mod:`gpflow_ep.validation`).
"""

import numpy as np

__all__ = ["check_choice", "check_positive_int", "check_range"]


def check_range(value, name: str, low: float, high: float, *, low_open=True, high_open=False) -> float:
    """``value`` as a float if it lies in the interval from ``low`` to ``high`` (open or closed ends)."""
    value = float(value)
    below = value <= low if low_open else value < low
    above = value >= high if high_open else value > high
    if not np.isfinite(value) or below or above:
        lo, hi = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lo}{low}, {high}{hi}; got {value}")
    return value


def check_choice(value, name: str, choices) -> str:
    """``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return value


def check_positive_int(value, name: str) -> int:
    """``value`` as an int if it is a positive integer (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)
