"""Fixtures of the compare tests: a small count data set as a CSV (no extra package needed)."""

import numpy as np
import pytest

#: the columns of the count CSV: three inputs and the count ``n``
COUNT_COLUMNS = ("a", "b", "c", "n")


def write_count_csv(path, num: int = 80, seed: int = 0):
    """A CSV of ``num`` Poisson counts n ~ Poisson(exp(0.5 + a - 0.5 b)) with inputs a, b, c ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(num, 3))
    n = rng.poisson(np.exp(0.5 + X[:, 0] - 0.5 * X[:, 1]))
    rows = [",".join(f"{v:.6f}" for v in x) + f",{k}" for x, k in zip(X, n)]
    path.write_text(",".join(COUNT_COLUMNS) + "\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="session")
def count_csv(tmp_path_factory):
    """The path of a count CSV (:func:`write_count_csv`), target column ``n``."""
    return write_count_csv(tmp_path_factory.mktemp("counts") / "counts.csv")
