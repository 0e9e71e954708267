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


def test_cell_of_a_mean_se_signed_writes_the_sign():
    assert stats.cell({"mean": 0.125, "se": 0.5, "n": 2}, 2, signed=True) == "+0.12 ± 0.50"
    assert stats.cell({"mean": -0.5, "se": None, "n": 1}, 1, signed=True) == "-0.5"
    assert stats.cell({"mean": 0.5, "se": None, "n": 1}, 1) == "0.5"
    assert stats.cell({"mean": None, "se": None, "n": 0}, signed=True) == "—"


def test_cell_scales_and_names_the_missing_value():
    assert stats.cell({"mean": 0.0125, "se": 0.005, "n": 3}, 2, scale=100.0) == "1.25 ± 0.50"
    assert stats.cell({"mean": -0.02, "se": None, "n": 1}, 1, signed=True, scale=100.0) == "-2.0"
    assert stats.cell(None, missing="–") == "–" and stats.cell({}, missing="–") == "–"


def test_cell_of_a_number_with_se_style_and_bold():
    assert stats.cell(0.12345, 3) == "0.123" and stats.cell(0.12345, 3, se=0.0042) == "0.123 ± 0.004"
    assert stats.cell(0.000299, 3, style="g") == "0.000299" and stats.cell(None, 3, style="g", missing="–") == "–"
    assert stats.cell(1.5, 1, bold=True) == "**1.5**" and stats.cell({"mean": 2.0, "se": None}, 0) == "2"


def test_markdown_table_writes_the_header_rule_and_rows():
    lines = stats.markdown_table(["a", "b"], [[1, "x"], ["2", None]])
    assert lines == ["| a | b |", "|---|---|", "| 1 | x |", "| 2 | None |"]
