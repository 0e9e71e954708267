"""Tests of ``gpflow-ep compare``: the comparison, its outputs and the command line."""

import json
import math
import runpy
import sys

import numpy as np
import pytest

from gpflow_ep.cli import main
from gpflow_ep.compare import (
    COLUMNS,
    check_models,
    format_table,
    inducing_inputs,
    run_compare,
    write_results,
)

METRICS = ("test_error", "test_nlpd", "train_time_s", "objective")


@pytest.fixture(scope="module")
def rows():
    """One short comparison on scikit-learn's breast cancer, shared by the tests below."""
    return run_compare(maxiter=100, num_inducing=20)


def test_compare_rows(rows):
    assert [r["model"] for r in rows] == ["EPGPC", "VGP", "SVGP"]
    for r in rows:
        for key in METRICS:
            assert math.isfinite(r[key]), (r["model"], key, r[key])
        assert 0.0 <= r["test_error"] <= 1.0
        assert r["test_nlpd"] > 0.0 and r["train_time_s"] > 0.0
        assert r["objective"] < 0.0
        assert 1 <= r["iterations"] <= 100
        assert r["dataset"] == "breast_cancer" and r["num_train"] + r["num_test"] == 569
    by_name = {r["model"]: r for r in rows}
    assert by_name["EPGPC"]["objective_kind"] == "log Z_EP"
    assert by_name["VGP"]["objective_kind"] == by_name["SVGP"]["objective_kind"] == "ELBO"
    assert by_name["EPGPC"]["ep_converged"] is True
    assert by_name["VGP"]["ep_converged"] is None
    assert by_name["SVGP"]["num_inducing"] == 20


def test_epgpc_error_matches_vgp(rows):
    """Acceptance criterion: EP's test error is within 2 percentage points of VGP's."""
    by_name = {r["model"]: r for r in rows}
    assert abs(by_name["EPGPC"]["test_error"] - by_name["VGP"]["test_error"]) <= 0.02


def test_format_table(rows):
    table = format_table(rows)
    lines = table.splitlines()
    assert len(lines) == 2 + len(rows)
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == [title for _, title in COLUMNS]
    assert set(lines[1]) <= {"|", "-"}
    for line, row in zip(lines[2:], rows):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == len(COLUMNS) and cells[0] == row["model"]


def test_write_results(rows, tmp_path):
    json_path, md_path = write_results(rows, tmp_path / "sub" / "results")
    assert json_path == tmp_path / "sub" / "results.json"
    assert md_path == tmp_path / "sub" / "results.md"
    assert json.loads(json_path.read_text()) == rows
    markdown = md_path.read_text()
    assert markdown.splitlines()[0].startswith("| model | test error | test NLPD")
    assert markdown.strip() == format_table(rows)


def test_tensorboard_and_plot_outputs(rows, tmp_path):
    from gpflow_ep.compare import plot_results, write_tensorboard

    write_tensorboard(rows, tmp_path / "logs")
    for r in rows:
        assert any((tmp_path / "logs" / r["model"]).glob("events.out.tfevents.*"))
    pytest.importorskip("matplotlib")
    png = plot_results(rows, tmp_path / "plot.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_hinge_models_on_request():
    """The Bayesian SVM's binary hinge in EPGPC and SVGP: finite rows, pseudo-objectives named as such."""
    rows = run_compare(models="EPGPC-hinge,SVGP-hinge", maxiter=15, num_inducing=20)
    assert [r["model"] for r in rows] == ["EPGPC-hinge", "SVGP-hinge"]
    for r in rows:
        assert all(math.isfinite(r[key]) for key in METRICS), r
        assert r["test_error"] < 0.15  # breast cancer: a linear SVM reaches ≈ 0.03
    assert rows[0]["objective_kind"] == "log Z_EP (pseudo)" and rows[0]["ep_converged"] is True
    assert rows[1]["objective_kind"] == "ELBO (pseudo)"


def test_check_models():
    assert check_models("EPGPC, SVGP") == ["EPGPC", "SVGP"]
    assert check_models(("VGP",)) == ["VGP"]
    for bad in ("", "GPR", "VGP,VGP"):
        with pytest.raises(ValueError, match="models"):
            check_models(bad)


def test_inducing_inputs():
    X = np.random.default_rng(0).normal(size=(30, 3))
    Z = inducing_inputs(X, 5, seed=0)
    assert Z.shape == (5, 3)
    np.testing.assert_array_equal(Z, inducing_inputs(X, 5, seed=0))
    np.testing.assert_array_equal(inducing_inputs(X, 100), X)


def test_run_compare_rejects_bad_arguments():
    with pytest.raises(ValueError, match="models"):
        run_compare(models="EPGPC,GPR")
    with pytest.raises(ValueError, match="maxiter"):
        run_compare(maxiter=0)
    with pytest.raises(ValueError, match="split"):
        run_compare(split=1.5)
    with pytest.raises(ValueError, match="data_dir"):
        run_compare(dataset="Pima", data_dir="/no/such/directory")


# -------------------------------------------------------------------------------- command line


def test_cli_compare_writes_results(tmp_path, capsys):
    prefix = tmp_path / "r"
    status = main(["compare", "--maxiter", "50", "--models", "EPGPC,VGP", "--out", str(prefix)])
    assert status == 0
    out = capsys.readouterr().out
    assert out.startswith("| model |") and "| EPGPC |" in out and "| VGP |" in out
    rows = json.loads((tmp_path / "r.json").read_text())
    assert [r["model"] for r in rows] == ["EPGPC", "VGP"]
    assert (tmp_path / "r.md").read_text().startswith("| model |")


def test_cli_unknown_dataset_is_a_clean_error(capsys):
    assert main(["compare", "--dataset", "NoSuchSet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpflow-ep: error:") and "Traceback" not in err


def test_cli_bad_split_is_a_clean_error(capsys):
    from gpflow_ep.datasets import benchmark_dir

    try:
        benchmark_dir()
    except ValueError:
        pytest.skip("shared benchmark datasets not found")
    assert main(["compare", "--dataset", "Pima", "--split", "20"]) == 2
    assert "split" in capsys.readouterr().err


def test_cli_usage_errors(capsys):
    assert main([]) == 2
    assert main(["compare", "--maxiter", "0"]) == 2
    assert main(["compare", "--models", "GPR"]) == 2
    assert "gpflow-ep: error:" in capsys.readouterr().err


def test_cli_has_no_benchmark_subcommands(capsys):
    """Benchmarks and reproductions live in the repository's ``benchmarks/``, not in the CLI."""
    assert main(["bench", "epgpc"]) == 2
    assert main(["reproduce", "rep"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_module_entry_point_help(monkeypatch, capsys):
    """``python -m gpflow_ep --help`` (run in-process: the package is already imported)."""
    monkeypatch.setattr(sys, "argv", ["gpflow_ep", "--help"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("gpflow_ep", run_name="__main__")
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "compare" in out and "bench" not in out


def test_cli_compare_help(capsys):
    assert main(["compare", "--help"]) == 0
    assert "--dataset" in capsys.readouterr().out
