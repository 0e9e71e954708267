"""Smoke test of the EPGPC scaling benchmark (tiny n, one repeat)."""

import json
import math

from gpflow_ep.bench.epgpc import main


def test_bench_epgpc_writes_json_and_markdown(tmp_path):
    prefix = tmp_path / "sub" / "b"
    assert main(["--sizes", "60", "--repeats", "1", "--datasets", "synthetic", "--out", str(prefix)]) == 0
    json_path, md_path = tmp_path / "sub" / "b.json", tmp_path / "sub" / "b.md"
    assert json_path.is_file() and md_path.is_file()

    report = json.loads(json_path.read_text())
    assert report["machine"]["tensorflow"]
    assert report["machine"]["cpu_count"] >= 1
    assert report["started"] and report["finished"]
    rows = report["results"]
    assert {r["schedule"] for r in rows} == {"parallel", "sequential"}
    for r in rows:
        assert r["dataset"] == "synthetic" and r["n"] == 60
        assert r["converged"] is True
        assert r["sweeps"] >= 1
        for key in (
            "time_to_converge_s",
            "time_per_sweep_s",
            "cholesky_B_s",
            "cholesky_K_s",
            "factorisation_s",
            "sweep_over_cholesky",
            "vgp_elbo_grad_s",
            "ep_loss_grad_warm_s",
        ):
            assert math.isfinite(r[key]) and r[key] > 0, key

    md = md_path.read_text()
    assert "| synthetic | 60 | parallel |" in md
    assert "| synthetic | 60 | sequential |" in md
    assert "nan" not in md.lower() and "inf" not in md.lower().replace("info", "")
