"""scikit-learn's bundled data (no download)."""

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from .benchmark import Split, _standardise


def breast_cancer_split(seed: int = 0, test_fraction: float = 0.3) -> Split:
    """
    scikit-learn's breast-cancer (WDBC, 569 × 30) in a fixed stratified split; Y in {0, 1} [N, 1],
    inputs standardised with the training part's statistics.
    """
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y.astype(np.float64), test_size=test_fraction, stratify=y, random_state=seed
    )
    X_train, X_test = _standardise(X_train, X_test)
    return Split(X_train, y_train[:, None], X_test, y_test[:, None], "breast_cancer", seed)
