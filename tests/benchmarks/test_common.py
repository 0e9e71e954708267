"""The shared helpers of ``benchmarks/``: statistics, command lines, outputs and model slots."""

import argparse
import json
import math
import time

import gpflow
import numpy as np
import pytest

from benchmarks import common
from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC


def test_mean_se():
    s = common.mean_se([1.0, 2.0, None, float("nan"), 3.0])
    assert s["mean"] == 2.0 and s["n"] == 3 and s["se"] == pytest.approx(1.0 / math.sqrt(3))
    assert common.mean_se([]) == {"mean": None, "se": None, "n": 0}
    one = common.mean_se([4.0], missing=float("nan"))
    assert one["mean"] == 4.0 and math.isnan(one["se"])


def test_paired_differences():
    d = common.paired_differences({0: 0.1, 1: 0.3, 2: 0.2, 3: None}, {0: 0.2, 1: 0.3, 2: 0.1, 4: 0.0})
    assert d["n"] == 3 and (d["wins"], d["ties"], d["losses"]) == (1, 1, 1)
    assert d["mean"] == pytest.approx(0.0) and d["t95"] == pytest.approx(4.302653, rel=1e-6)
    assert common.paired_differences({0: 1.0}, {0: 0.5})["t95"] is None


def test_parse_list_and_command_line(capsys):
    assert common.parse_list(" 1, 2,,3 ", int) == [1, 2, 3]
    parser = common.benchmark_parser("benchmarks.x", "X.", "results/x", "tiny", data_dir=True, optimizer=True)
    args, command = common.parse_command_line(parser, ["--quick", "--data-dir", "a b"])
    assert command == "python -m benchmarks.x --quick --data-dir 'a b'"
    assert args.quick and args.data_dir == "a b" and args.out_dir == "results/x" and args.optimizer == "adam:0.01"
    assert common.parse_command_line(parser, [])[1] == "python -m benchmarks.x"
    with pytest.raises(SystemExit):
        common.parse_command_line(parser, ["--sizes", "3"])
    args, _ = common.parse_command_line(parser, ["--sizes", "3"], shared=True, log=print)
    assert not args.quick and "ignoring options meant for other parts: ['--sizes', '3']" in capsys.readouterr().out


def test_write_report_and_header(tmp_path):
    report = common.timed_report("cmd", lambda: {"x": np.float64(1.5), "k": np.int64(2), "ok": np.bool_(True)})
    assert report["machine"]["numpy"] == np.__version__ and report["wall_time_s"] >= 0
    json_path, md_path = common.write_report(tmp_path / "a" / "r", report, "# r\n")
    loaded = json.loads(json_path.read_text())
    assert (loaded["x"], loaded["k"], loaded["ok"]) == (1.5, 2, True)
    assert md_path.read_text() == "# r\n" and json_path.name == "r.json"
    lines = common.markdown_header("T", report, "a note")
    assert lines[0] == "# T" and lines[2] == "Command: `cmd`  " and lines[-2].endswith(" at end (a note).")


@pytest.mark.parametrize("indent", [1, 2])
def test_rerender_keeps_the_json_layout_so_its_diff_is_the_analysis(tmp_path, indent):
    report = {"runs": [1.0, 2.0], "summary": {"mean": 1.5}}
    common.write_report(tmp_path / "r", report, "old\n", indent=indent)
    before = (tmp_path / "r.json").read_text().splitlines()

    def reanalyse(rep):
        rep["summary"]["mean"] = 2.5
        return rep

    assert common.rerender_report(tmp_path / "r", reanalyse, lambda rep: "new\n", lambda msg: None, indent=indent) == 0
    after = (tmp_path / "r.json").read_text()
    stamped = json.loads(after)
    assert stamped.pop("rerendered") and stamped == {"runs": [1.0, 2.0], "summary": {"mean": 2.5}}
    changed = [line for line in after.splitlines() if line not in before]
    assert changed == [" " * 2 * indent + '"mean": 2.5', " " * indent + "},", changed[-1]]
    assert changed[-1].startswith(" " * indent + '"rerendered": ')
    assert (tmp_path / "r.md").read_text() == "new\n"


def test_model_slot_equals_a_fresh_model():
    """Reusing a model on a second data set (reset + reload) gives the fresh model's EP fixed point."""
    X1, Y1 = two_dimensional(30, seed=1)
    X2, Y2 = two_dimensional(30, seed=2)
    slot = common.ModelSlot(EPGPC((X1, Y1), common.se_ard_kernel(2), Probit()), X1, Y1)
    slot.model.kernel.variance.assign(3.0)  # a change that load must undo
    slot.model.run_ep()
    model = slot.load(X2, Y2, {"kernel.lengthscales": [1.0, 2.0]})
    np.testing.assert_array_equal(model.sites.precision.numpy(), 0.0)
    model.run_ep()
    fresh = EPGPC((X2, Y2), gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=[1.0, 2.0]), Probit())
    fresh.run_ep()
    np.testing.assert_allclose(model.sites.precision.numpy(), fresh.sites.precision.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        model.sites.natural_mean.numpy(), fresh.sites.natural_mean.numpy(), rtol=1e-10, atol=1e-12
    )

    ev = common.evaluate(model, X1, Y1, dual=True, chunk=7)
    whole = common.evaluate(model, X1, Y1)
    assert ev["error"] == pytest.approx(whole["error"]) and ev["nlpd"] == pytest.approx(whole["nlpd"])
    assert ev["finite"] and ev["mean_finite"] and 0.0 <= ev["error_dual"] <= 1.0
    assert model.predict_with == "sites"


def test_split_grid_runs_from_a_first_split_and_merges_over_splits(tmp_path):
    """Two runs of the same settings over splits 0-1 and 2 (one set also elsewhere) merge into one report."""

    def summarise(runs, methods=("m",)):
        return {
            name: sorted(r["split"] for r in runs if r["dataset"] == name)
            for name in dict.fromkeys(r["dataset"] for r in runs)
        }

    def markdown(report):
        return f"# grid\n{report['summary']}\n"

    config = dict(datasets=["a", "b"], methods=["m"], splits=2, steps=5)
    for first, splits, name in ((0, 2, "first"), (2, 1, "second")):
        assert (
            common.run_split_grid(
                ["a", "b"],
                splits,
                lambda dataset, split: dict(dataset=dataset, split=split, results={"m": split}),
                summarise,
                config=dict(config, splits=splits),
                command=name,
                prefix=tmp_path / name,
                markdown=markdown,
                log=lambda message: None,
                first_split=first,
            )
            == 0
        )
    second = json.loads((tmp_path / "second.json").read_text())
    assert [(r["dataset"], r["split"]) for r in second["runs"]] == [("a", 2), ("b", 2)]
    paths = [str(tmp_path / "second.json"), str(tmp_path / "first.json")]
    assert common.merge_split_reports(paths, tmp_path / "merged", "merge", summarise, markdown, lambda m: None) == 0
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert [(r["dataset"], r["split"]) for r in merged["runs"]] == [(d, s) for d in "ab" for s in range(3)]
    assert merged["summary"] == {"a": [0, 1, 2], "b": [0, 1, 2]}
    assert merged["config"]["splits"] == 3 and merged["config"]["splits_per_dataset"] == {"a": 3, "b": 3}
    assert merged["command"] == "second [kept: a 2; b 2] + first [kept: a 0–1; b 0–1] (merged by `merge`)"
    assert {r["cpu_model"] for r in merged["runs"]} == {common.machine_info()["cpu_model"]}
    other = json.loads((tmp_path / "first.json").read_text())
    other["config"]["steps"] = 6
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(ValueError, match="different settings"):
        common.merge_split_reports(
            [paths[0], str(tmp_path / "other.json")], tmp_path / "x", "m", summarise, markdown, print
        )


def test_a_merge_keeps_the_cpu_of_every_run_and_says_when_they_differ(tmp_path):
    """Runs keep the CPU of their own report (or the one they already carry, from an earlier merge)."""

    def report(cpu, splits, command):
        runs = [dict(dataset="a", split=s) for s in splits]
        return dict(
            config=dict(datasets=["a"], methods=["m"], splits=len(splits)),
            runs=runs,
            command=command,
            started="t0",
            finished="t1",
            wall_time_s=1.0,
            machine=dict(common.machine_info(), cpu_model=cpu, load_average_start=None, load_average_end=None),
        )

    earlier = report("old", [0, 1], "earlier")
    earlier["runs"][1]["cpu_model"] = "older"  # stamped by an earlier merge
    paths = []
    for name, rep in (("earlier", earlier), ("later", report("new", [2], "later"))):
        (tmp_path / f"{name}.json").write_text(json.dumps(rep))
        paths.append(str(tmp_path / f"{name}.json"))

    def markdown(rep):
        return "\n".join(common.markdown_header("T", rep))

    assert common.merge_split_reports(paths, tmp_path / "m", "merge", lambda r, m: {}, markdown, print) == 0
    merged = json.loads((tmp_path / "m.json").read_text())
    assert [r["cpu_model"] for r in merged["runs"]] == ["old", "older", "new"]
    assert merged["cpu_models"] == {"old": 1, "older": 1, "new": 1}
    assert (
        "The merged runs ran on 3 CPUs (the machine above is the first report's): old 1 runs, older 1 runs"
        in (tmp_path / "m.md").read_text()
    )
    assert "merged runs ran on" not in markdown(dict(merged, cpu_models={"old": 3}))


def test_a_stopped_split_grid_leaves_its_finished_splits_timed_from_the_start(tmp_path):
    """A run stopped in set "b"'s second split leaves a report of the three finished splits, timed from the start."""

    def run_split(dataset, split):
        if (dataset, split) == ("b", 1):
            raise KeyboardInterrupt
        time.sleep(0.05)
        return dict(dataset=dataset, split=split)

    with pytest.raises(KeyboardInterrupt):
        common.run_split_grid(
            ["a", "b"],
            2,
            run_split,
            lambda runs: len(runs),
            config=dict(datasets=["a", "b"]),
            command="grid",
            prefix=tmp_path / "grid",
            markdown=lambda report: "# grid\n",
            log=lambda message: None,
        )
    partial = json.loads((tmp_path / "grid.json").read_text())
    assert [(r["dataset"], r["split"]) for r in partial["runs"]] == [("a", 0), ("a", 1), ("b", 0)]
    assert partial["wall_time_s"] >= 0.15 and partial["started"] <= partial["finished"]


def test_split_ranges_name_the_runs_a_report_kept():
    runs = [dict(dataset="wine", split=s) for s in (3, 4, 5, 7, 9, 10)] + [dict(dataset="iris", split=0)]
    assert common._split_ranges(runs) == "wine 3–5, 7, 9–10; iris 0"
    assert common._split_ranges([]) == ""


def test_choice_and_dataset_checks_are_usage_errors_naming_the_option(capsys, tmp_path):
    parser = argparse.ArgumentParser(prog="bench")
    common.check_choices(parser, "--methods", ["a"], ["a", "b"])  # accepted
    with pytest.raises(SystemExit):
        common.check_choices(parser, "--methods", ["a", "c"], ["a", "b"])
    assert "--methods: unknown ['c']; choose among ['a', 'b']" in capsys.readouterr().err
    (tmp_path / "regression" / "yacht").mkdir(parents=True)
    common.check_datasets(parser, ["yacht"], "regression", tmp_path)  # accepted
    with pytest.raises(SystemExit):
        common.check_datasets(parser, ["no-such-set"], "regression", tmp_path)
    assert "--datasets: not found ['no-such-set']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        common.check_datasets(parser, ["yacht"], "regression", tmp_path / "missing")
    assert "--data-dir: data_dir: " in capsys.readouterr().err


def test_format_mean_se_signed_writes_the_sign():
    assert common.format_mean_se({"mean": 0.125, "se": 0.5, "n": 2}, 2, signed=True) == "+0.12 ± 0.50"
    assert common.format_mean_se({"mean": -0.5, "se": None, "n": 1}, 1, signed=True) == "-0.5"
    assert common.format_mean_se({"mean": 0.5, "se": None, "n": 1}, 1) == "0.5"
    assert common.format_mean_se({"mean": None, "se": None, "n": 0}, signed=True) == "—"


def test_format_mean_se_scales_and_names_the_missing_value():
    assert common.format_mean_se({"mean": 0.0125, "se": 0.005, "n": 3}, 2, scale=100.0) == "1.25 ± 0.50"
    assert common.format_mean_se({"mean": -0.02, "se": None, "n": 1}, 1, signed=True, scale=100.0) == "-2.0"
    assert common.format_mean_se(None, missing="–") == "–" and common.format_mean_se({}, missing="–") == "–"
