"""benchmarks.sepmgpc_multiclass --quick: every method trains and is reported."""

import json

from benchmarks import sepmgpc_multiclass


def test_quick_run_reports_every_method(tmp_path):
    assert sepmgpc_multiclass.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "sepmgpc_multiclass_quick.json").read_text())
    (run,) = report["runs"]
    assert set(run["results"]) == set(sepmgpc_multiclass.METHODS)
    for result in run["results"].values():
        assert 0.0 <= result["error"] <= 1.0 and result["nll"] > 0 and result["training_seconds"] > 0
    assert "SEPMGPC" in (tmp_path / "sepmgpc_multiclass_quick.md").read_text()
