"""
Loader for the benchmark layout of ``shared/datasets`` (the ``cvillacampa/dgps_pep`` files, with
their 20 fixed train/test splits). The data are never copied into this repository: the directory
is an argument, defaulting to ``$GPFLOW_EP_DATA`` and then ``../shared/datasets``.
"""

import os
from pathlib import Path
from typing import NamedTuple, Optional, Union

import numpy as np

ENV_VAR = "GPFLOW_EP_DATA"


class Split(NamedTuple):
    """One train/test split; inputs standardised with the training part's mean and std."""

    X_train: np.ndarray
    Y_train: np.ndarray
    X_test: np.ndarray
    Y_test: np.ndarray
    name: str
    split: int


def benchmark_dir(data_dir: Optional[Union[str, Path]] = None) -> Path:
    """
    Resolve the data directory. An explicit ``data_dir`` must exist; without one, try
    $GPFLOW_EP_DATA, then ../shared/datasets (from the working directory and from the repository).
    """
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise ValueError(f"data_dir: {str(data_dir)!r} is not a directory")
        return Path(data_dir)
    candidates = [
        os.environ.get(ENV_VAR),
        Path.cwd().parent / "shared" / "datasets",
        Path(__file__).resolve().parents[3] / "shared" / "datasets",
    ]
    for c in candidates:
        if c is not None and Path(c).is_dir():
            return Path(c)
    raise ValueError(
        f"data_dir: no benchmark data directory found (tried ${ENV_VAR} and ../shared/datasets); "
        "pass data_dir= or set $GPFLOW_EP_DATA"
    )


def available_benchmarks(kind: str = "binary", data_dir=None):
    """Names of the datasets of one kind ("binary", "regression", "multiclass")."""
    root = benchmark_dir(data_dir) / kind
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def _standardise(X_train, X_test):
    mean = X_train.mean(0)
    std = X_train.std(0)
    std = np.where(std > 0, std, 1.0)
    return (X_train - mean) / std, (X_test - mean) / std


def load_benchmark(name: str, split: int = 0, data_dir=None, kind: str = "binary") -> Split:
    """
    Load split ``split`` (0..19 for the shipped sets) of benchmark ``name``.

    Binary targets (stored in {-1, +1}) are returned in GPflow's {0, 1} convention, shape [N, 1].
    Regression targets are returned as stored (standardise them yourself if needed). For
    ``binary/Breast`` the sample-ID column 0 is dropped (datasets README).
    """
    if kind not in ("binary", "regression"):
        raise ValueError(f"kind must be 'binary' or 'regression'; got {kind!r}")
    folder = benchmark_dir(data_dir) / kind / name / "data"
    if not folder.is_dir():
        raise ValueError(f"name: unknown {kind} benchmark {name!r}; available: {available_benchmarks(kind, data_dir)}")
    num_splits = len(list(folder.glob("index_train_*.txt")))
    if isinstance(split, bool) or not isinstance(split, (int, np.integer)) or not 0 <= split < num_splits:
        raise ValueError(f"split must be an integer in 0..{num_splits - 1}; got {split!r}")
    data = np.loadtxt(folder / "data.txt", ndmin=2)
    features = np.loadtxt(folder / "index_features.txt", dtype=int, ndmin=1)
    target = int(np.loadtxt(folder / "index_target.txt", dtype=int))
    if kind == "binary" and name == "Breast":
        features = features[features != 0]
    train = np.loadtxt(folder / f"index_train_{split}.txt", dtype=int, ndmin=1)
    test = np.loadtxt(folder / f"index_test_{split}.txt", dtype=int, ndmin=1)
    X, y = data[:, features], data[:, target : target + 1]
    if kind == "binary":
        y = (y > 0).astype(np.float64)
    X_train, X_test = _standardise(X[train], X[test])
    return Split(X_train, y[train], X_test, y[test], name, int(split))
