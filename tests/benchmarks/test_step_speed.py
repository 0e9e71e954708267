import json

from benchmarks import step_speed


def test_quick_run_times_every_method_and_reports_every_ratio(tmp_path):
    """--quick: each SEP model and its SVGP run interleaved; the JSON has a ratio per pair and the table a row."""
    assert step_speed.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "step_speed_quick.json").read_text())
    (result,) = report["results"]
    assert (result["M"], result["batch_size"]) == (10, 50)
    multiclass = [(f"SEPMGPC {z} Z C=3", f"SVGP RobustMax {z} Z C=3") for z in ("shared", "separate")]
    assert set(result["per_step_ms"]) == {"SEPGPC", "SVGP"} | {name for pair in multiclass for name in pair}
    assert all(t > 0 for t in result["per_step_ms"].values())
    for name, goal in [("SEPGPC / SVGP", 1.1)] + [(" / ".join(pair), 1.5) for pair in multiclass]:
        r = result["ratios"][name]
        assert 0 < r["min"] <= r["median"] <= r["max"] and r["goal"] == goal and r["met"] == (r["median"] <= goal)
    table = (tmp_path / "step_speed_quick.md").read_text()
    assert "| 10 | 50 | SEPGPC |" in table and "| 10 | 50 | SEPMGPC shared Z C=3 |" in table
    assert "| 10 | 50 | SEPMGPC separate Z C=3 |" in table
