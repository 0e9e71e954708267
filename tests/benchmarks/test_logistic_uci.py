"""``python -m benchmarks.logistic_uci --quick``: Crabs, one split, maxiter 5."""

import json
import math

import pytest

from benchmarks.logistic_uci import METHODS, main


@pytest.mark.benchmark_data
def test_logistic_uci_quick_writes_finite_results(tmp_path):
    assert main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "logistic_uci_quick.json").read_text())
    assert report["config"]["datasets"] == ["Crabs"] and report["config"]["splits"] == 1
    assert report["command"] == f"python -m benchmarks.logistic_uci --quick --out-dir {tmp_path}"
    (run,) = report["runs"]
    assert sorted(run["results"]) == sorted(METHODS)
    for method, r in run["results"].items():
        assert r["finite"], method
        assert 0.0 <= r["error"] <= 1.0 and math.isfinite(r["nlpd"]) and r["nlpd"] > 0.0, method
        assert r["kernel"]["variance"] > 0 and r["kernel"]["lengthscale"] > 0
    assert run["results"]["EP"]["ep"]["finite"]
    md = (tmp_path / "logistic_uci_quick.md").read_text()
    for method in METHODS:
        assert f"| Crabs | 1 | {method} |" in md
    assert "nan" not in md.lower()
