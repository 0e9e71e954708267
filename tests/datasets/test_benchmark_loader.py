"""Tests of the dataset loaders: shared benchmark layout, bundled breast cancer, synthetic data."""

from pathlib import Path

import numpy as np
import pytest

from gpflow_ep.datasets import (
    Split,
    available_benchmarks,
    benchmark_dir,
    breast_cancer_split,
    load_benchmark,
    noisy_mixture,
    sklearn_multiclass_split,
)

BINARY = ["Australian", "Breast", "Crabs", "Iono", "Pima", "Sonar"]
# inputs per set after dropping Breast's sample-ID column (shared/datasets/README.md)
INPUT_DIMS = {"Australian": 14, "Breast": 9, "Crabs": 7, "Iono": 34, "Pima": 8, "Sonar": 60}


def _shared_dir() -> Path:
    try:
        return benchmark_dir()
    except ValueError:
        pytest.skip("shared benchmark datasets not found ($GPFLOW_EP_DATA or ../shared/datasets)")


@pytest.fixture(scope="module")
def shared_dir() -> Path:
    return _shared_dir()


def _raw(shared_dir: Path, name: str, split: int):
    """The stored matrix, feature/target columns and split indices, read without the loader."""
    folder = shared_dir / "binary" / name / "data"
    data = np.loadtxt(folder / "data.txt", ndmin=2)
    features = np.loadtxt(folder / "index_features.txt", dtype=int, ndmin=1)
    target = int(np.loadtxt(folder / "index_target.txt", dtype=int))
    train = np.loadtxt(folder / f"index_train_{split}.txt", dtype=int, ndmin=1)
    test = np.loadtxt(folder / f"index_test_{split}.txt", dtype=int, ndmin=1)
    return data, features, target, train, test


# -------------------------------------------------------------------------------- benchmark layout


def test_available_benchmarks_lists_binary_sets(shared_dir):
    assert set(BINARY) <= set(available_benchmarks("binary", shared_dir))


@pytest.mark.parametrize("name", BINARY)
def test_load_benchmark_shapes_and_labels(shared_dir, name):
    split = load_benchmark(name, 0, shared_dir)
    data, _, _, train, test = _raw(shared_dir, name, 0)
    assert isinstance(split, Split) and split.name == name and split.split == 0
    D = INPUT_DIMS[name]
    assert split.X_train.shape == (len(train), D)
    assert split.X_test.shape == (len(test), D)
    assert split.Y_train.shape == (len(train), 1)
    assert split.Y_test.shape == (len(test), 1)
    for a in split:
        if isinstance(a, np.ndarray):
            assert a.dtype == np.float64 and np.all(np.isfinite(a))
    assert set(np.unique(split.Y_train)) == {0.0, 1.0}
    assert set(np.unique(split.Y_test)) <= {0.0, 1.0}


@pytest.mark.parametrize("name", BINARY)
def test_labels_map_plus_one_to_one(shared_dir, name):
    split = load_benchmark(name, 3, shared_dir)
    data, _, target, train, test = _raw(shared_dir, name, 3)
    assert set(np.unique(data[:, target])) == {-1.0, 1.0}
    np.testing.assert_array_equal(split.Y_train[:, 0], (data[train, target] == 1.0).astype(float))
    np.testing.assert_array_equal(split.Y_test[:, 0], (data[test, target] == 1.0).astype(float))


@pytest.mark.parametrize("name", BINARY)
def test_standardisation_uses_training_split_only(shared_dir, name):
    split = load_benchmark(name, 1, shared_dir)
    data, features, _, train, test = _raw(shared_dir, name, 1)
    if name == "Breast":
        features = features[features != 0]
    raw_train, raw_test = data[np.ix_(train, features)], data[np.ix_(test, features)]
    mean, std = raw_train.mean(0), raw_train.std(0)
    varying = std > 0
    np.testing.assert_allclose(split.X_train.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(split.X_train.std(0)[varying], 1.0, atol=1e-12)
    # the test part is mapped with the *training* statistics, not its own
    expected_test = (raw_test - mean) / np.where(varying, std, 1.0)
    np.testing.assert_allclose(split.X_test, expected_test, rtol=1e-12, atol=1e-12)


def test_breast_drops_sample_id_column(shared_dir):
    split = load_benchmark("Breast", 0, shared_dir)
    data, features, _, train, _ = _raw(shared_dir, "Breast", 0)
    assert 0 in features and split.X_train.shape[1] == 9
    # column 0 of the loaded inputs is stored column 1 (standardised), not the sample ID
    raw = data[train, 1]
    np.testing.assert_allclose(split.X_train[:, 0], (raw - raw.mean()) / raw.std(), atol=1e-12)


def test_splits_differ(shared_dir):
    a, b = load_benchmark("Pima", 0, shared_dir), load_benchmark("Pima", 19, shared_dir)
    assert a.X_train.shape == b.X_train.shape
    assert not np.allclose(a.X_train, b.X_train)


@pytest.mark.parametrize("bad", [-1, 20, 100])
def test_bad_split_raises(shared_dir, bad):
    with pytest.raises(ValueError, match="split"):
        load_benchmark("Pima", bad, shared_dir)


def test_unknown_name_raises(shared_dir):
    with pytest.raises(ValueError, match="NoSuchSet"):
        load_benchmark("NoSuchSet", 0, shared_dir)


def test_bad_kind_raises(shared_dir):
    with pytest.raises(ValueError, match="kind"):
        load_benchmark("Pima", 0, shared_dir, kind="images")


def test_empty_data_dir_raises(tmp_path):
    with pytest.raises(ValueError, match="Pima"):
        load_benchmark("Pima", 0, tmp_path)
    assert available_benchmarks("binary", tmp_path) == []


def test_data_dir_from_environment(shared_dir, monkeypatch):
    monkeypatch.setenv("GPFLOW_EP_DATA", str(shared_dir))
    assert benchmark_dir() == shared_dir
    assert load_benchmark("Crabs", 0).X_train.shape == (180, 7)


# -------------------------------------------------------------------------------- bundled data


def test_breast_cancer_split_is_stratified_and_standardised():
    split = breast_cancer_split(seed=0, test_fraction=0.3)
    n_train, n_test = split.X_train.shape[0], split.X_test.shape[0]
    assert n_train + n_test == 569 and split.X_train.shape[1] == 30
    assert abs(n_test - 0.3 * 569) <= 1
    assert split.Y_train.shape == (n_train, 1) and split.Y_test.shape == (n_test, 1)
    assert set(np.unique(split.Y_train)) == {0.0, 1.0}
    # stratified: both parts keep the overall class balance (212 malignant / 357 benign)
    overall = 357 / 569
    assert abs(split.Y_train.mean() - overall) < 1.0 / n_train + 1e-12
    assert abs(split.Y_test.mean() - overall) < 1.0 / n_test + 1e-12
    np.testing.assert_allclose(split.X_train.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(split.X_train.std(0), 1.0, atol=1e-12)
    # the test part is not standardised with its own statistics
    assert not np.allclose(split.X_test.mean(0), 0.0, atol=1e-6)


def test_breast_cancer_split_is_seeded():
    a, b, c = breast_cancer_split(seed=0), breast_cancer_split(seed=0), breast_cancer_split(seed=1)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.Y_test, c.Y_test) or not np.array_equal(a.X_test, c.X_test)


# -------------------------------------------------------------------------------- synthetic data


@pytest.mark.parametrize("n_per_class, rate", [(200, 0.1), (50, 0.0), (37, 0.25), (100, 0.5)])
def test_noisy_mixture_flips_round_rate_times_n(n_per_class, rate):
    X, noisy, clean = noisy_mixture(n_per_class, flip_rate=rate, seed=3)
    n = 2 * n_per_class
    assert X.shape == (n, 2) and noisy.shape == (n, 1) and clean.shape == (n, 1)
    assert set(np.unique(noisy)) <= {0.0, 1.0}
    assert clean.sum() == n_per_class
    assert int((noisy != clean).sum()) == int(round(rate * n))


def test_noisy_mixture_is_seeded():
    a, b = noisy_mixture(30, seed=5), noisy_mixture(30, seed=5)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], noisy_mixture(30, seed=6)[0])


MULTICLASS = {  # name: (n, inputs, classes), shared/datasets/README.md
    "glass": (214, 9, 6),
    "new-thyroid": (215, 5, 3),
    "satellite": (6435, 36, 6),
    "svmguide2": (391, 20, 3),
    "vehicle": (846, 18, 4),
    "vowel": (540, 10, 6),
    "waveform": (1000, 21, 3),
    "wine": (178, 13, 3),
}


@pytest.mark.parametrize("name", list(MULTICLASS))
def test_multiclass_benchmarks_have_integer_labels_and_disjoint_splits(shared_dir, name):
    n, D, C = MULTICLASS[name]
    data = load_benchmark(name, 3, kind="multiclass")
    assert data.X_train.shape[1] == data.X_test.shape[1] == D
    assert len(data.X_train) + len(data.X_test) == n
    labels = np.concatenate([data.Y_train, data.Y_test])
    assert labels.shape == (n, 1) and set(np.unique(labels)) == set(range(C))
    np.testing.assert_allclose(data.X_train.mean(0), 0.0, atol=1e-10)
    raw = np.load(shared_dir / "multiclass" / name / "folds.npz")
    train, test = raw["arr_0"][3], raw["arr_1"][3]
    assert not set(train.tolist()) & set(test.tolist())


def test_multiclass_bad_split_raises(shared_dir):
    with pytest.raises(ValueError, match="split"):
        load_benchmark("glass", 20, kind="multiclass")
    with pytest.raises(ValueError, match="name"):
        load_benchmark("nope", 0, kind="multiclass")


@pytest.mark.parametrize("name, n, C", [("iris", 150, 3), ("wine", 178, 3), ("digits", 1797, 10)])
def test_sklearn_multiclass_split_is_stratified(name, n, C):
    data = sklearn_multiclass_split(name, seed=2)
    assert len(data.Y_train) + len(data.Y_test) == n
    assert set(np.unique(data.Y_test)) == set(range(C))
    np.testing.assert_allclose(data.X_train.mean(0), 0.0, atol=1e-10)
    assert not np.array_equal(sklearn_multiclass_split(name, seed=3).Y_test, data.Y_test)
    with pytest.raises(ValueError, match="name"):
        sklearn_multiclass_split("mnist")
