"""A train/test split and the standardisation every loader applies to its inputs."""

from typing import NamedTuple, Tuple

import numpy as np


class Split(NamedTuple):
    """One train/test split; inputs standardised with the training part's mean and std."""

    X_train: np.ndarray
    Y_train: np.ndarray
    X_test: np.ndarray
    Y_test: np.ndarray
    name: str
    split: int


def standardise(X_train: np.ndarray, X_test: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """
    Both parts as (X - m) / s, with m and s the training part's column means and standard
    deviations (s = 1 for a constant column).
    """
    mean = X_train.mean(0)
    std = X_train.std(0)
    std = np.where(std > 0, std, 1.0)
    return (X_train - mean) / std, (X_test - mean) / std
