"""benchmarks.compile_cost --quick: the table is written and its parts add up."""

import json

from benchmarks import compile_cost


def test_compile_cost_quick(tmp_path):
    assert compile_cost.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "compile_cost.json").read_text())
    (row,) = report["rows"]
    assert row["raw"][0]["source"].startswith(str(compile_cost.Path(compile_cost.__file__).resolve().parents[1]))
    assert row["sweeps"] > 0 and row["compiled_run"] > 0 and row["trace_graph"] > 0
    assert abs(row["first_sweep"] + row["rest"] - row["compiled_run"]) < 1e-9
    assert "| this tree | 200 |" in (tmp_path / "compile_cost.md").read_text()
