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

    # --rerender rewrites the Markdown of a stored report from its JSON, which it leaves as it is
    stored = (tmp_path / "table1.json").read_text()
    (tmp_path / "table1.md").write_text("stale\n")
    assert main(["--rerender", str(tmp_path / "table1.json")]) == 0
    assert (tmp_path / "table1.md").read_text() == md
    assert (tmp_path / "table1.json").read_text() == stored


def test_markdown_keeps_the_methods_of_an_older_report():
    """A report of an earlier version (its "SEP batch", no "SEP inner") keeps its columns when re-rendered."""
    from benchmarks.sepgpc_table1 import table1_markdown

    summary = dict(error=0.1, error_se=0.01, nll=0.3, nll_se=0.02, time_median_s=2.0)
    rows = [dict(dataset="Crabs", fraction=0.15, M=30, splits=[0], summary={m: summary for m in ("SEP batch", "SVGP")})]
    machine = dict(cpu_model="cpu", cpu_count=2, cpu_affinity=2, tensorflow="2", gpflow="2", numpy="1", python="3")
    machine.update(load_average_start=None, load_average_end=None)
    settings = dict(splits_used=[0], fractions=[0.15], maxiter=5, epochs=2, optimizer="adam", sep_tol=1e-6)
    report = dict(rows=rows, settings=settings, machine=machine, command="c", started="s", finished="f", wall_time_s=1)
    header = next(line for line in table1_markdown(report).splitlines() if line.startswith("| dataset"))
    assert header.startswith("| dataset | M (frac) | splits | SEP batch err | SVGP err | SEP batch NLL | SVGP NLL |")


def test_claims_are_decided_from_the_rows():
    """Two hand-made rows: NLL within two combined standard errors, time ratios and the paper's spread."""
    from benchmarks.claims import verdicts
    from benchmarks.sepgpc_table1 import table1_claims

    def row(dataset, nll, nll_se, seconds):
        summary = {m: dict(nll=nll[m], nll_se=nll_se, time_median_s=seconds[m]) for m in METHODS}
        return dict(dataset=dataset, fraction=0.15, summary=summary)

    nll = {"FITC-EP": 0.10, "SEP inner": 0.20, "SEP minibatch": 0.11, "SVGP": 0.10}
    seconds = {"FITC-EP": 4.0, "SEP inner": 1.0, "SEP minibatch": 3.0, "SVGP": 2.0}
    rows = [row("Crabs", nll, 0.02, seconds), row("Pima", dict(nll, **{"SEP inner": 0.52}), 0.02, seconds)]
    claims = {c["claim"].split(" (")[0]: c for c in verdicts(table1_claims(list(METHODS)), rows)}
    # SEP inner: |0.20 - 0.10| = 0.10 > 2·√2·0.02 on Crabs, |0.52 - 0.10| on Pima: no row within
    assert claims["SEP inner's NLL within two combined standard errors of SVGP's"]["verdict"] == "not reproduced"
    within = claims["SEP minibatch's NLL within two combined standard errors of SVGP's"]
    assert within["verdict"] == "reproduced" and within["evidence"].startswith("2 of 2 hold: Crabs 15% 0.110 vs 0.100")
    faster = claims["SEP minibatch trains faster than SVGP [ours]"]
    assert faster["verdict"] == "not reproduced" and "Crabs 15% 1.50×" in faster["evidence"]
    # the paper's SEP at 15 %: Crabs 0.06 ± 0.06 (0.20 outside), Pima 0.52 ± 0.07 (0.52 inside)
    spread = claims["SEP inner's NLL inside the paper's SEP mean ± spread"]
    assert spread["evidence"] == "1 of 2 hold: Pima 15% 0.520. Fail: Crabs 15% 0.200."
