"""
Smoke test of part C3 (UCI benchmarks, after Qi & Guo 2012, §6.3), ``python -m benchmarks.rep_uci --quick``:
Crabs, one split, maxiter 5.
"""

import json
import math

import pytest

from benchmarks.rep_uci import BASELINES, EP_METHODS, main


@pytest.mark.benchmark_data
def test_rep_uci_quick_writes_finite_results(tmp_path):
    assert main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "C3.json").read_text())
    assert report["complete"] is True
    assert report["config"]["datasets"] == ["Crabs"] and report["config"]["splits"] == [0]
    assert report["config"]["command"] == f"python -m benchmarks.rep_uci --quick --out-dir {tmp_path}"

    runs = report["runs"]
    assert sorted(r["method"] for r in runs) == sorted(EP_METHODS + BASELINES)
    for r in runs:
        assert math.isfinite(r["test_error"]) and 0.0 <= r["test_error"] <= 1.0, r["method"]
        assert math.isfinite(r["test_nlpd"]) and r["test_nlpd"] > 0.0, r["method"]
        if r["method"] in EP_METHODS:
            assert 1 <= r["sweeps"] <= 100 and r["num_skipped"] >= 0
            assert 0.0 <= r["frac_b_positive"] <= 1.0
            assert r["width"]["lengthscale"] > 0.0
            assert 0.0 <= r["test_error_alpha"] <= 1.0
    assert "test_error_alpha" not in next(r for r in runs if r["method"] == "VGP-probit")

    summary = report["results"]["summary"]["eps=0.05"]["Crabs"]
    for name in EP_METHODS + BASELINES:
        assert math.isfinite(summary[name]["test_error"]["mean"])
        assert math.isfinite(summary[name]["test_nlpd"]["mean"])
    diffs = report["results"]["paired_differences"]["eps=0.05"]["Crabs"]
    assert all(d[key]["n"] == 1 for d in diffs.values() for key in ("test_error", "test_nlpd"))

    md = (tmp_path / "C3.md").read_text()
    assert "## Claims" in md and "Paired differences" in md
    for name in EP_METHODS + BASELINES:
        assert f"| Crabs | {name} |" in md
    table = md.split("## Results", 1)[1].split("## Claims", 1)[0]
    assert "nan" not in table.lower() and "inf" not in table.lower()

    # --rerender recomputes the summaries, claims and Markdown from the stored runs: the same report
    (tmp_path / "C3.md").unlink()
    assert main(["--out-dir", str(tmp_path), "--rerender"]) == 0
    assert (tmp_path / "C3.md").read_text() == md
    rerendered = json.loads((tmp_path / "C3.json").read_text())
    assert rerendered["results"] == report["results"] and rerendered["claims"] == report["claims"]
