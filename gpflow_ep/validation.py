"""Eager validation of user input: every error a user can cause is a ValueError naming it."""

from typing import Tuple, Type

import numpy as np
from gpflow.likelihoods import Bernoulli, Likelihood

_BINARY_LIKELIHOODS = {Bernoulli}


def register_binary_likelihood(cls: Type[Likelihood]) -> Type[Likelihood]:
    """Class decorator: the likelihood takes GPflow binary labels, ``Y`` in {0, 1} (checked by :func:`check_data`)."""
    _BINARY_LIKELIHOODS.add(cls)
    return cls


def takes_binary_labels(likelihood: Likelihood) -> bool:
    return isinstance(likelihood, tuple(_BINARY_LIKELIHOODS))


def check_binary_labels(Y, name: str = "Y") -> np.ndarray:
    """Validate binary labels eagerly and return them as a float array of shape [N, 1].

    :raises ValueError: naming ``name`` when the labels are not a [N, 1] array of 0s and 1s.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[1] != 1:
        raise ValueError(f"{name} must have shape [N, 1] with values in {{0, 1}}; got shape {Y.shape}")
    if not np.issubdtype(Y.dtype, np.number) and Y.dtype != bool:
        raise ValueError(f"{name} must be numeric with values in {{0, 1}}; got dtype {Y.dtype}")
    Yf = Y.astype(np.float64)
    if not np.all(np.isfinite(Yf)):
        raise ValueError(f"{name} contains NaN or Inf")
    bad = np.setdiff1d(np.unique(Yf), [0.0, 1.0])
    if bad.size:
        hint = " (labels in {-1, +1}? map them with (Y + 1) / 2)" if -1.0 in bad else ""
        raise ValueError(f"{name} must contain only 0 and 1; found {bad[:5].tolist()}{hint}")
    return Yf


def check_class_labels(Y, num_classes: int, name: str = "Y") -> np.ndarray:
    """Validate multi-class labels eagerly (GPflow's ``MultiClass`` layout): integers in [0, C), [N, 1].

    :raises ValueError: naming ``name`` when the labels have another shape or value.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[1] != 1:
        raise ValueError(f"{name} must have shape [N, 1] with integer class labels; got shape {Y.shape}")
    if not np.issubdtype(Y.dtype, np.number):
        raise ValueError(f"{name} must hold integer class labels; got dtype {Y.dtype}")
    Yf = Y.astype(np.float64)
    bad = ~np.isfinite(Yf) | (Yf != np.round(Yf)) | (Yf < 0) | (Yf >= num_classes)
    if np.any(bad):
        raise ValueError(
            f"{name} must hold integer class labels in [0, {num_classes}); found {np.unique(Yf[bad])[:5].tolist()}"
        )
    return Yf


def check_inputs(X, name: str = "X") -> np.ndarray:
    """X must be a finite [N, D] array."""
    X = np.asarray(X, dtype=np.float64) if not hasattr(X, "numpy") else np.asarray(X.numpy(), dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must have shape [N, D]; got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or Inf")
    return X


def check_data(data, likelihood, name: str = "data") -> Tuple[np.ndarray, np.ndarray]:
    """Validate ``data = (X, Y)``: shapes, finiteness, and binary labels for binary likelihoods."""
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise ValueError(f"{name} must be a tuple (X, Y)")
    X = check_inputs(data[0], f"{name}[0] (X)")
    Y = np.asarray(data[1].numpy() if hasattr(data[1], "numpy") else data[1])
    if Y.ndim != 2 or Y.shape[1] != 1:
        raise ValueError(f"{name}[1] (Y) must have shape [N, 1]; got shape {Y.shape}")
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"{name}: X has {X.shape[0]} rows but Y has {Y.shape[0]}; they must match")
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if takes_binary_labels(likelihood):
        Y = check_binary_labels(Y, f"{name}[1] (Y)")
    else:
        Y = Y.astype(np.float64)
        if not np.all(np.isfinite(Y)):
            raise ValueError(f"{name}[1] (Y) contains NaN or Inf")
    return X, Y


def check_range(value, name: str, low: float, high: float, *, low_open=True, high_open=False) -> float:
    value = float(value)
    below = value <= low if low_open else value < low
    above = value >= high if high_open else value > high
    if not np.isfinite(value) or below or above:
        lo, hi = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lo}{low}, {high}{hi}; got {value}")
    return value


def check_choice(value, name: str, choices) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return value


def check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)
