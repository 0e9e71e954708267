"""Smoke test of ``python -m benchmarks.epgpc_scaling --quick`` (synthetic data, n = 60, one repeat)."""

import json
import math

from benchmarks.epgpc_scaling import main


def test_epgpc_scaling_quick_writes_json_and_markdown(tmp_path):
    out_dir = tmp_path / "sub"
    assert main(["--quick", "--out-dir", str(out_dir)]) == 0
    json_path, md_path = out_dir / "epgpc_scaling.json", out_dir / "epgpc_scaling.md"
    assert json_path.is_file() and md_path.is_file()

    report = json.loads(json_path.read_text())
    assert report["command"] == f"python -m benchmarks.epgpc_scaling --quick --out-dir {out_dir}"
    assert report["machine"]["tensorflow"]
    assert report["machine"]["cpu_count"] >= 1
    assert report["started"] and report["finished"]
    assert report["settings"]["sizes"] == [60] and report["settings"]["repeats"] == 1
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
            "factorisation_s",
            "sweep_over_cholesky",
            "vgp_elbo_grad_s",
            "ep_loss_grad_warm_s",
        ):
            assert math.isfinite(r[key]) and r[key] > 0, key

    md = md_path.read_text()
    assert md.startswith("# EPGPC scaling benchmark\n")
    assert "| synthetic | 60 | parallel |" in md
    assert "| synthetic | 60 | sequential |" in md
    assert "nan" not in md.lower() and "inf" not in md.lower().replace("info", "")


def test_epgpc_scaling_out_prefix_and_explicit_options_over_quick(tmp_path, monkeypatch):
    """``--out PREFIX`` names the two files; options given with ``--quick`` replace its values."""
    import benchmarks.epgpc_scaling as bench

    seen = []

    def bench_problem(prob, *args):  # no timing: which problems and settings reach it
        seen.append((prob["n"], *args))
        return []

    monkeypatch.setattr(bench, "bench_problem", bench_problem)
    assert bench.main(["--quick", "--sizes", "30,40", "--schedules", "parallel", "--out", str(tmp_path / "p")]) == 0
    assert seen == [(30, ["parallel"], 1, 180.0), (40, ["parallel"], 1, 180.0)]
    report = json.loads((tmp_path / "p.json").read_text())
    assert report["settings"]["sizes"] == [30, 40] and report["settings"]["datasets"] == ["synthetic"]
    assert (tmp_path / "p.md").read_text().startswith("# EPGPC scaling benchmark\n")
