"""The gpflow-ep command line: compare's outputs, clean one-line errors, version."""

import configparser
import importlib
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from gpflow_ep import __version__
from gpflow_ep.cli import cli_wording, console_script, load_tensorflow_quietly, main


@pytest.mark.slow
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
        capsys.readouterr().err == "gpflow-ep: error: --csv: bad.csv line 3, column 'b': 'oops' is not a finite "
        "number (encode categories as numbers and drop or impute missing values first)\n"
    )


def test_usage_errors_and_version(capsys):
    assert main([]) == 2
    assert main(["compare", "--maxiter", "0"]) == 2
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"gpflow-ep {__version__}"


def test_module_entry_point_help(monkeypatch, capsys):
    """``python -m gpflow_ep --help`` (run in-process: the package is already imported)."""
    monkeypatch.setattr(sys, "argv", ["gpflow_ep", "--help"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("gpflow_ep", run_name="__main__")
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "compare" in out and "bench" not in out


#: the console script, as its entry point runs it
CONSOLE_SCRIPT = "__import__('gpflow_ep.cli', fromlist=['cli']).console_script()"


@pytest.mark.parametrize(
    "argv, call, status",
    [
        (["gpflow_ep", "--help"], "runpy.run_module('gpflow_ep', run_name='__main__')", 0),  # python -m gpflow_ep
        (["gpflow-ep", "--help"], CONSOLE_SCRIPT, 0),
        (["gpflow-ep", "compare", "--help"], CONSOLE_SCRIPT, 0),
        (["gpflow-ep", "--version"], CONSOLE_SCRIPT, 0),
        (["gpflow-ep", "compare", "--maxiter", "0"], CONSOLE_SCRIPT, 2),
    ],
)
def test_help_and_usage_errors_do_not_import_tensorflow(argv, call, status, request):
    """``--help`` took 9 s because it imported TensorFlow; only a command that trains may."""
    code = (
        f"import runpy, sys\nsys.argv = {argv!r}\ntry:\n    status = {call}\nexcept SystemExit as exit_:\n"
        "    status = exit_.code\nheavy = sorted(m for m in ('tensorflow', 'gpflow', 'sklearn') if m in sys.modules)\n"
        "print('STATUS', status or 0, 'HEAVY', heavy)"
    )
    env = dict(os.environ, PYTHONPATH=str(request.config.rootpath))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=request.config.rootpath, env=env, capture_output=True, text=True
    )
    assert done.stdout.strip().splitlines()[-1] == f"STATUS {status} HEAVY []", done.stderr


def test_the_console_script_is_a_function_of_the_package():
    """``gpflow-ep`` runs ``gpflow_ep.cli.console_script``: the distribution installs the package alone."""
    config = configparser.ConfigParser()
    config.read(Path(__file__).parents[1] / "setup.cfg")
    scripts = dict(line.split("=") for line in config["options.entry_points"]["console_scripts"].split("\n") if line)
    module, function = scripts["gpflow-ep "].strip().split(":")
    assert getattr(importlib.import_module(module), function) is console_script
    assert "py_modules" not in config["options"]


def test_the_console_script_loads_tensorflow_quietly(monkeypatch):
    """``gpflow-ep`` is :func:`main` with TensorFlow loaded by :func:`load_tensorflow_quietly` before a command."""
    import gpflow_ep.cli as cli

    calls = []
    monkeypatch.setattr(cli, "main", lambda argv=None, prepare=None: calls.append((argv, prepare)) or 0)
    assert console_script() == 0 and calls == [(None, load_tensorflow_quietly)]


def test_loading_tensorflow_quietly_leaves_stderr_empty(request):
    """TensorFlow's start-up log (on by default: ``TF_CPP_MIN_LOG_LEVEL`` unset) does not reach stderr."""
    code = (
        "import sys\nfrom gpflow_ep.cli import load_tensorflow_quietly\nload_tensorflow_quietly()\n"
        "print('TENSORFLOW', 'tensorflow' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = str(request.config.rootpath)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=request.config.rootpath, env=env, capture_output=True, text=True
    )
    assert (done.stdout.strip(), done.stderr) == ("TENSORFLOW True", "")


def test_compare_errors_use_the_command_lines_words(capsys):
    """The Python API names its arguments (max_train, target), the command line the options that set them."""
    assert main(["compare", "--max-train", "1"]) == 2
    assert capsys.readouterr().err == "gpflow-ep: error: --max-train must be at least 2; got 1\n"
    assert main(["compare", "--csv", "x.csv"]) == 2
    assert "--target: a CSV file needs a target" in capsys.readouterr().err


def test_cli_wording():
    options = {"max_train": "--max-train", "csv": "--csv", "dataset": "--dataset"}
    assert cli_wording("max_train must be at least 2", options) == "--max-train must be at least 2"
    assert cli_wording("csv_file: x; pass max_train= or less", options) == "--csv: x; pass --max-train or less"
    text = "dataset: unknown 'x'; the dataset is not there"  # only the subject is an option
    assert cli_wording(text, options) == "--dataset: unknown 'x'; the dataset is not there"
