"""The gpflow-ep command line: compare's outputs, clean one-line errors, bench, version."""

import json
import runpy
import sys

import pytest

from gpflow_ep import __version__
from gpflow_ep.cli import main


def test_compare_json_has_a_record_per_model(tmp_path, capsys):
    status = main(
        [
            "compare",
            "--models",
            "epgpc,vgp",
            "--max-train",
            "60",
            "--maxiter",
            "40",
            "--no-progress",
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    assert status == 0
    out = capsys.readouterr().out
    assert out.startswith("breast_cancer (binary, sklearn): 60 training and 171 test points")
    assert "| epgpc |" in out and "| vgp |" in out
    records = json.loads((tmp_path / "r.json").read_text())
    assert [r["model"] for r in records] == ["epgpc", "vgp"]
    assert all({"settings", "test_error", "test_nlpd", "train_time_s", "hyperparameters"} <= set(r) for r in records)
    assert "ep_diagnostics" in records[0] and "ep_diagnostics" not in records[1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["compare", "--models", "gpr"], "'gpr' applies to regression data, not binary; for binary data choose among"),
        (["compare", "--models", "foo"], "'foo' is not a model of gpflow-ep compare"),
        (["compare", "--dataset", "NoSuchSet"], "dataset: unknown 'NoSuchSet'"),
        (["compare", "--csv", "missing.csv", "--target", "y"], "csv: no such file"),
        (["bench", "no_such_benchmark"], "bench: unknown benchmark 'no_such_benchmark'; choose among"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpflow-ep: error:") and message in err and err.count("\n") == 1


def test_a_bad_csv_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("a,b,y\n1,2,0\n3,oops,1\n")
    assert main(["compare", "--csv", str(path), "--target", "y"]) == 2
    assert (
        capsys.readouterr().err == "gpflow-ep: error: csv: bad.csv line 3, column 'b': 'oops' is not a finite "
        "number (encode categories as numbers and drop or impute missing values first)\n"
    )


def test_usage_errors_and_version(capsys):
    assert main([]) == 2
    assert main(["compare", "--maxiter", "0"]) == 2
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"gpflow-ep {__version__}"


def test_bench_lists_the_benchmarks(capsys, monkeypatch, request):
    monkeypatch.chdir(request.config.rootpath)
    assert main(["bench"]) == 0
    out = capsys.readouterr().out
    assert "sepgpc_table1" in out and "spike_slab_pcep" in out and "common" not in out


def test_module_entry_point_help(monkeypatch, capsys):
    """``python -m gpflow_ep --help`` (run in-process: the package is already imported)."""
    monkeypatch.setattr(sys, "argv", ["gpflow_ep", "--help"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("gpflow_ep", run_name="__main__")
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "compare" in out and "bench" in out
