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


def _numbers(text: str):
    """A cell read back: its value and standard error (``None`` without one), and whether it is bold."""
    bold = text.startswith("**") and text.endswith("**")
    value, _, se = text.strip("*").partition(" ± ")
    return float(value), (float(se) if se else None), bold


@pytest.mark.parametrize(
    "value, kwargs, expected",
    [
        ({"mean": 0.125, "se": 0.5, "n": 2}, dict(digits=2, signed=True), (0.12, 0.5)),  # 0.125 rounds half to even
        ({"mean": -0.5, "se": None, "n": 1}, dict(digits=1, signed=True), (-0.5, None)),
        ({"mean": 0.0125, "se": 0.005, "n": 3}, dict(digits=2, scale=100.0), (1.25, 0.5)),
        ({"mean": -0.02, "se": None, "n": 1}, dict(digits=1, signed=True, scale=100.0), (-2.0, None)),
        (0.12345, dict(digits=3, se=0.0042), (0.123, 0.004)),
        (0.000299, dict(digits=3, style="g"), (0.000299, None)),
        ({"mean": 2.0, "se": None}, dict(digits=0), (2.0, None)),
    ],
)
def test_a_cell_holds_the_value_and_standard_error_rounded_to_its_digits(value, kwargs, expected):
    text = stats.cell(value, **kwargs)
    assert _numbers(text)[:2] == expected
    assert text.startswith(("+", "-")) == bool(kwargs.get("signed"))  # a difference always shows its sign


def test_a_cell_is_bold_or_names_the_missing_value():
    assert _numbers(stats.cell(1.5, 1, bold=True)) == (1.5, None, True)
    assert stats.cell({"mean": None, "se": None, "n": 0}, signed=True) == "—" and stats.cell(None, missing="–") == "–"
    assert stats.cell({}, missing="–") == "–" and stats.cell(None, 3, style="g", missing="–") == "–"


def test_markdown_table_has_the_header_a_rule_and_a_line_per_row_of_cells():
    header, rows = ["a", "b"], [[1, "x"], ["2", None]]
    lines = stats.markdown_table(header, rows)
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    assert len(lines) == 2 + len(rows) and cells[0] == header and cells[2:] == [[str(c) for c in row] for row in rows]
    assert all(set(c) == {"-"} for c in cells[1]) and len(cells[1]) == len(header)  # the header's rule
