"""
Smoke test of part C2 (Qi & Guo 2012, §6.2), ``python -m benchmarks.rep_synthetic``: shrunk below
``--quick`` (the 10 % flip rate only, 1,000 test points) because every EP run re-traces the
compiled loop, which dominates the cost of these small problems.
"""

import json
import math

from benchmarks import rep_synthetic


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def test_bayes_error_of_the_clean_generator():
    b = rep_synthetic.bayes_error()
    assert 0.0 < b["error"] < 0.5 and b["threshold_abs_x1"] > 0


def test_rep_synthetic_quick(tmp_path):
    argv = ["--out-dir", str(tmp_path), "--quick", "--flip-rates", "0.1", "--test-points", "1000"]
    assert rep_synthetic.main(argv) == 0
    report = json.loads((tmp_path / "C2.json").read_text())
    assert report["complete"]
    assert report["config"]["command"].startswith("python -m benchmarks.rep_synthetic --out-dir")
    assert "## Claims" in (tmp_path / "C2.md").read_text()
    for name in ("C2_R_curves.png", "C2_boundaries.png"):
        assert (tmp_path / name).stat().st_size > 1000
    summary = report["summary"]["0.1"]
    assert set(summary) == {"EP", "PEP(u=0.8,full)", "PEP(u=0.8,fractional)", "REP(c=1)"}
    for s in summary.values():
        assert s["runs"] == 1
        assert _finite(s["test_error"]["mean"]) and 0.0 <= s["test_error"]["mean"] <= 1.0
        assert _finite(s["test_error_alpha"]["mean"]) and _finite(s["test_nlpd"]["mean"])
        assert _finite(s["mean_sweeps_all"]["mean"])
    md = (tmp_path / "C2.md").read_text()
    (tmp_path / "C2.md").unlink()  # --rerender: the same report from the stored runs
    assert rep_synthetic.main(["--out-dir", str(tmp_path), "--rerender"]) == 0
    assert (tmp_path / "C2.md").read_text() == md
    for row in report["runs"]:
        assert len(row["R_history"]) == row["sweeps"]
        assert all(_finite(h) for h in row["R_history"])
        assert row["predictions_finite"] and _finite(row["test_nlpd_alpha"])
