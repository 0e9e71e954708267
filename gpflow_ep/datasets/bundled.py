"""scikit-learn's bundled data (no download)."""

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.model_selection import train_test_split

from .split import Split, standardise


def breast_cancer_split(seed: int = 0, test_fraction: float = 0.3) -> Split:
    """
    scikit-learn's breast-cancer (WDBC, 569 × 30) in a fixed stratified split; Y in {0, 1} [N, 1],
    inputs standardised with the training part's statistics.
    """
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y.astype(np.float64), test_size=test_fraction, stratify=y, random_state=seed
    )
    X_train, X_test = standardise(X_train, X_test)
    return Split(X_train, y_train[:, None], X_test, y_test[:, None], "breast_cancer", seed)


_MULTICLASS = {"iris": load_iris, "wine": load_wine, "digits": load_digits}


def sklearn_multiclass_split(name: str, seed: int = 0, test_fraction: float = 0.2) -> Split:
    """
    scikit-learn's bundled ``"iris"`` (150 × 4, 3 classes), ``"wine"`` (178 × 13, 3) or ``"digits"``
    (1797 × 64, 10) in a stratified split seeded by ``seed``; labels are integer class indices
    (``int64``) [N, 1], as GPflow's ``MultiClass`` and ``Softmax`` take them, inputs standardised with
    the training part's statistics.
    """
    if name not in _MULTICLASS:
        raise ValueError(f"name must be one of {sorted(_MULTICLASS)}; got {name!r}")
    X, y = _MULTICLASS[name](return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X.astype(np.float64), y.astype(np.int64), test_size=test_fraction, stratify=y, random_state=seed
    )
    X_train, X_test = standardise(X_train, X_test)
    return Split(X_train, y_train[:, None], X_test, y_test[:, None], name, seed)
