import json

import pytest

from benchmarks import dgp_binary


@pytest.mark.benchmark_data
def test_quick_run_reports_every_method(tmp_path):
    assert dgp_binary.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "dgp_binary_quick.json").read_text())
    (run,) = report["runs"]
    assert run["dataset"] == "Crabs" and set(run["results"]) == set(dgp_binary.METHODS)
    for method, result in run["results"].items():
        assert result["finite"] and 0.0 <= result["error"] <= 1.0 and result["nlpd"] > 0, method
    assert "| Crabs | nlpd |" in (tmp_path / "dgp_binary_quick.md").read_text()
