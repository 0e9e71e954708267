"""Smoke test of ``python -m benchmarks.sepgpc_table1 --quick`` (Crabs, 15 %, split 0) and ``--resume``."""

import json
import math

import pytest

from benchmarks.sepgpc_table1 import METHODS, main


def _finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


@pytest.mark.benchmark_data
def test_sepgpc_table1_quick(tmp_path):
    assert main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "table1.json").read_text())
    md = (tmp_path / "table1.md").read_text()
    assert md.startswith("# ") and "Command: `python -m benchmarks.sepgpc_table1 --quick --out-dir" in md
    assert "| Crabs | 30 (15%) | 1 |" in md
    assert "0.07 ± 0.07 / 0.06 ± 0.06 / 0.07 ± 0.06" in md  # the paper's Crabs 15% NLLs beside ours
    (row,) = report["rows"]
    assert row["dataset"] == "Crabs" and row["M"] == 30 and row["splits"] == [0]
    assert set(row["per_split"]) == set(METHODS)
    for method in METHODS:
        (rec,) = row["per_split"][method]
        for key in ("error", "nll", "seconds"):
            assert _finite(rec[key]), (method, key)
        assert 0.0 <= rec["error"] <= 1.0 and rec["nll"] > 0
        assert _finite(row["summary"][method]["time_median_s"])
    assert report["machine"]["tensorflow"]
    assert (tmp_path / "table1.partial.json").is_file()

    # --resume keeps finished (dataset, fraction, split) results instead of re-running them
    again = tmp_path / "again"
    resume = ["--resume", str(tmp_path / "table1.json")]
    assert main(["--quick", "--out-dir", str(again), *resume]) == 0
    resumed = json.loads((again / "table1.json").read_text())
    for method, recs in resumed["rows"][0]["per_split"].items():
        (rec,) = recs
        assert rec.pop("reused") is True
        assert rec == row["per_split"][method][0]
