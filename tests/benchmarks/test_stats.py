"""Summary statistics of ``benchmarks/stats.py``: means with standard errors, paired differences, cells."""

import math

import pytest

from benchmarks import stats


def test_mean_se():
    s = stats.mean_se([1.0, 2.0, None, float("nan"), 3.0])
    assert s["mean"] == 2.0 and s["n"] == 3 and s["se"] == pytest.approx(1.0 / math.sqrt(3))
    assert stats.mean_se([]) == {"mean": None, "se": None, "n": 0}
    one = stats.mean_se([4.0], missing=float("nan"))
    assert one["mean"] == 4.0 and math.isnan(one["se"])


def test_paired_differences():
    d = stats.paired_differences({0: 0.1, 1: 0.3, 2: 0.2, 3: None}, {0: 0.2, 1: 0.3, 2: 0.1, 4: 0.0})
    assert d["n"] == 3 and (d["wins"], d["ties"], d["losses"]) == (1, 1, 1)
    assert d["mean"] == pytest.approx(0.0) and d["t95"] == pytest.approx(4.302653, rel=1e-6)
    assert stats.paired_differences({0: 1.0}, {0: 0.5})["t95"] is None


def test_format_mean_se_signed_writes_the_sign():
    assert stats.format_mean_se({"mean": 0.125, "se": 0.5, "n": 2}, 2, signed=True) == "+0.12 ± 0.50"
    assert stats.format_mean_se({"mean": -0.5, "se": None, "n": 1}, 1, signed=True) == "-0.5"
    assert stats.format_mean_se({"mean": 0.5, "se": None, "n": 1}, 1) == "0.5"
    assert stats.format_mean_se({"mean": None, "se": None, "n": 0}, signed=True) == "—"


def test_format_mean_se_scales_and_names_the_missing_value():
    assert stats.format_mean_se({"mean": 0.0125, "se": 0.005, "n": 3}, 2, scale=100.0) == "1.25 ± 0.50"
    assert stats.format_mean_se({"mean": -0.02, "se": None, "n": 1}, 1, signed=True, scale=100.0) == "-2.0"
    assert stats.format_mean_se(None, missing="–") == "–" and stats.format_mean_se({}, missing="–") == "–"
