import json

from benchmarks import double_loop_gpc


def test_quick_run_reports_every_method(tmp_path):
    assert double_loop_gpc.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "double_loop_gpc_quick.json").read_text())
    (run,) = report["runs"]
    assert set(run["results"]) == set(double_loop_gpc.METHODS)
    for result in run["results"].values():
        assert 0.0 <= result["error"] <= 1.0 and result["seconds"] > 0
    assert run["results"]["double loop"]["sweeps"] <= 10
    assert run["results"]["double loop"]["max_increase"] <= 1e-6 * max(1.0, abs(run["results"]["double loop"]["log_z"]))
    assert "| 0.1 | double loop |" in (tmp_path / "double_loop_gpc_quick.md").read_text()
