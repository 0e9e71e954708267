import json
from pathlib import Path

from benchmarks import sep_step_ab

REPO = Path(__file__).resolve().parents[2]


def test_quick_ab_against_this_tree_as_baseline(tmp_path):
    """--quick with this tree as its own baseline: every model runs, every ratio is reported."""
    assert (
        sep_step_ab.main(
            ["--quick", "--baseline-src", str(REPO), "--baseline-name", "copy", "--out-dir", str(tmp_path)]
        )
        == 0
    )
    report = json.loads((tmp_path / "sep_step_ab_quick.json").read_text())
    assert set(report["per_step_ms"]) == {"this", "this (copy)", "SVGP", "copy"}
    assert report["config"]["rounds"] == 3
    for name in ("this / SVGP", "copy / SVGP", "this / this (copy)", "this / copy"):
        s = report["ratios"][name]
        assert 0 < s["q1"] <= s["median"] <= s["q3"] and s["rounds"] == 3
    assert "A/A control" in (tmp_path / "sep_step_ab_quick.md").read_text()
