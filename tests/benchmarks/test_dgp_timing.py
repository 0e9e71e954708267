import json

import pytest

from benchmarks import dgp_timing
from benchmarks.claims import verdicts


@pytest.mark.benchmark_data
def test_quick_run_times_every_method_and_reports_the_ratios(tmp_path):
    assert dgp_timing.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "dgp_timing_quick.json").read_text())
    (row,) = report["rows"]
    assert row["dataset"] == "yacht" and row["num_inducing"] == 5
    times = row["seconds_per_iteration"]
    assert set(times) == {"DGP-AEP 2", "GPflux 2"} and all(t > 0 for t in times.values())
    assert row["ratios"] == {"DGP-AEP 2 / GPflux 2": times["DGP-AEP 2"] / times["GPflux 2"]}
    table = (tmp_path / "dgp_timing_quick.md").read_text()
    assert "| yacht | 5 |" in table and "DGP-AEP 2 / GPflux 2" in table and "## Claims" in table


def test_claims_count_the_datasets_within_the_goal():
    report = dict(
        config=dict(num_inducing=[50]),
        rows=[
            dict(dataset="yacht", num_inducing=50, ratios={"DGP-AEP 2 / GPflux 2": 1.5}),
            dict(dataset="energy", num_inducing=50, ratios={"DGP-AEP 2 / GPflux 2": 2.5}),
        ],
    )
    (claim,) = verdicts(dgp_timing.claims(report), report["rows"])
    assert claim["verdict"] == "partly reproduced"
    assert claim["evidence"] == "1 of 2 hold: yacht 1.50×. Fail: energy 2.50×."
