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


def _check_split(split, num_splits: int) -> int:
    if isinstance(split, bool) or not isinstance(split, (int, np.integer)) or not 0 <= split < num_splits:
        raise ValueError(f"split must be an integer in 0..{num_splits - 1}; got {split!r}")
    return int(split)


def _load_multiclass(name: str, split, data_dir) -> Split:
    """``multiclass/NAME``: ``data.npz`` (inputs, labels) and ``folds.npz`` (train, test indices per split)."""
    folder = benchmark_dir(data_dir) / "multiclass" / name
    if not (folder / "data.npz").is_file():
        raise ValueError(
            f"name: unknown multiclass benchmark {name!r}; available: {available_benchmarks('multiclass', data_dir)}"
        )
    data, folds = np.load(folder / "data.npz"), np.load(folder / "folds.npz")
    split = _check_split(split, folds["arr_0"].shape[0])
    X = np.asarray(data["arr_0"], dtype=np.float64)
    _, labels = np.unique(np.asarray(data["arr_1"]).ravel(), return_inverse=True)
    y = labels.astype(np.float64)[:, None]
    train, test = folds["arr_0"][split].astype(int), folds["arr_1"][split].astype(int)
    X_train, X_test = _standardise(X[train], X[test])
    return Split(X_train, y[train], X_test, y[test], name, split)


def load_benchmark(name: str, split: int = 0, data_dir=None, kind: str = "binary") -> Split:
    """
    Load split ``split`` (0..19 for the shipped sets) of benchmark ``name``.

    Binary targets (stored in {-1, +1}) are returned in GPflow's {0, 1} convention, shape [N, 1].
    Regression targets are returned as stored (standardise them yourself if needed). For
    ``binary/Breast`` the sample-ID column 0 is dropped (datasets README). Multi-class labels are
    mapped to 0..C-1 in the order of their stored values (GPflow's ``MultiClass`` layout), [N, 1].
    """
    if kind not in ("binary", "regression", "multiclass"):
        raise ValueError(f"kind must be 'binary', 'regression' or 'multiclass'; got {kind!r}")
    if kind == "multiclass":
        return _load_multiclass(name, split, data_dir)
    folder = benchmark_dir(data_dir) / kind / name / "data"
    if not folder.is_dir():
        raise ValueError(f"name: unknown {kind} benchmark {name!r}; available: {available_benchmarks(kind, data_dir)}")
    split = _check_split(split, len(list(folder.glob("index_train_*.txt"))))
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
