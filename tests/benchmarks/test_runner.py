"""Command lines and the split-grid runner of ``benchmarks/runner.py``: options, usage errors, runs, merges."""

import argparse
import json
import time

import pytest

from benchmarks import runner
from benchmarks.report import machine_info, markdown_header


def test_parse_list_and_command_line(capsys):
    assert runner.parse_list(" 1, 2,,3 ", int) == [1, 2, 3]
    parser = runner.benchmark_parser("benchmarks.x", "X.", "results/x", "tiny", data_dir=True, optimizer=True)
    args, command = runner.parse_command_line(parser, ["--quick", "--data-dir", "a b"])
    assert command == "python -m benchmarks.x --quick --data-dir 'a b'"
    assert args.quick and args.data_dir == "a b" and args.out_dir == "results/x" and args.optimizer == "adam:0.01"
    assert runner.parse_command_line(parser, [])[1] == "python -m benchmarks.x"
    with pytest.raises(SystemExit):
        runner.parse_command_line(parser, ["--sizes", "3"])
    args, _ = runner.parse_command_line(parser, ["--sizes", "3"], shared=True, log=print)
    assert not args.quick and "ignoring options meant for other parts: ['--sizes', '3']" in capsys.readouterr().out


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
            runner.run_split_grid(
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
    assert runner.merge_split_reports(paths, tmp_path / "merged", "merge", summarise, markdown, lambda m: None) == 0
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert [(r["dataset"], r["split"]) for r in merged["runs"]] == [(d, s) for d in "ab" for s in range(3)]
    assert merged["summary"] == {"a": [0, 1, 2], "b": [0, 1, 2]}
    assert merged["config"]["splits"] == 3 and merged["config"]["splits_per_dataset"] == {"a": 3, "b": 3}
    assert merged["command"] == "second [kept: a 2; b 2] + first [kept: a 0–1; b 0–1] (merged by `merge`)"
    assert {r["cpu_model"] for r in merged["runs"]} == {machine_info()["cpu_model"]}
    other = json.loads((tmp_path / "first.json").read_text())
    other["config"]["steps"] = 6
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(ValueError, match="different settings"):
        runner.merge_split_reports(
            [paths[0], str(tmp_path / "other.json")], tmp_path / "x", "m", summarise, markdown, print
        )


def test_a_merge_keeps_the_cpu_of_every_run_and_counts_the_runs_per_cpu(tmp_path):
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
            machine=dict(machine_info(), cpu_model=cpu, load_average_start=None, load_average_end=None),
        )

    earlier = report("old", [0, 1], "earlier")
    earlier["runs"][1]["cpu_model"] = "older"  # stamped by an earlier merge
    paths = []
    for name, rep in (("earlier", earlier), ("later", report("new", [2], "later"))):
        (tmp_path / f"{name}.json").write_text(json.dumps(rep))
        paths.append(str(tmp_path / f"{name}.json"))

    def markdown(rep):  # the merged report has what the header reports
        return "\n".join(markdown_header("T", rep))

    assert runner.merge_split_reports(paths, tmp_path / "m", "merge", lambda r, m: {}, markdown, print) == 0
    merged = json.loads((tmp_path / "m.json").read_text())
    assert [r["cpu_model"] for r in merged["runs"]] == ["old", "older", "new"]
    assert merged["cpu_models"] == {"old": 1, "older": 1, "new": 1}  # what the header reports (test_report)


def test_a_stopped_split_grid_leaves_its_finished_splits_timed_from_the_start(tmp_path):
    """A run stopped in set "b"'s second split leaves a report of the three finished splits, timed from the start."""

    def run_split(dataset, split):
        if (dataset, split) == ("b", 1):
            raise KeyboardInterrupt
        time.sleep(0.05)
        return dict(dataset=dataset, split=split)

    with pytest.raises(KeyboardInterrupt):
        runner.run_split_grid(
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


def test_split_grid_takes_a_number_of_splits_per_data_set_and_marks_partial_reports(tmp_path):
    """``splits`` per data set (from ``first_split``); the reports written after each split say ``partial``."""
    written = []

    def markdown(report):
        written.append((len(report["runs"]), report.get("partial", False)))
        return "# grid\n"

    grid = dict(config=dict(datasets=["a", "b"]), command="grid", prefix=tmp_path / "grid", markdown=markdown)
    runner.run_split_grid(
        ["a", "b"], {"a": 1, "b": 3}, lambda d, s: dict(dataset=d, split=s), len, log=print, first_split=2, **grid
    )
    report = json.loads((tmp_path / "grid.json").read_text())
    assert [(r["dataset"], r["split"]) for r in report["runs"]] == [("a", 2), ("b", 2), ("b", 3), ("b", 4)]
    assert "partial" not in report and report["summary"] == 4 and report["config"]["first_split"] == 2
    assert written == [(1, True), (2, True), (3, True), (4, True), (4, False)]


def test_split_ranges_name_the_runs_a_report_kept():
    runs = [dict(dataset="wine", split=s) for s in (3, 4, 5, 7, 9, 10)] + [dict(dataset="iris", split=0)]
    assert runner._split_ranges(runs) == "wine 3–5, 7, 9–10; iris 0"
    assert runner._split_ranges([]) == ""


def test_choice_and_dataset_checks_are_usage_errors_naming_the_option(capsys, tmp_path):
    parser = argparse.ArgumentParser(prog="bench")
    runner.check_choices(parser, "--methods", ["a"], ["a", "b"])  # accepted
    with pytest.raises(SystemExit):
        runner.check_choices(parser, "--methods", ["a", "c"], ["a", "b"])
    assert "--methods: unknown ['c']; choose among ['a', 'b']" in capsys.readouterr().err
    (tmp_path / "regression" / "yacht").mkdir(parents=True)
    runner.check_datasets(parser, ["yacht"], "regression", tmp_path)  # accepted
    with pytest.raises(SystemExit):
        runner.check_datasets(parser, ["no-such-set"], "regression", tmp_path)
    assert "--datasets: not found ['no-such-set']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        runner.check_datasets(parser, ["yacht"], "regression", tmp_path / "missing")
    assert "--data-dir: data_dir: " in capsys.readouterr().err
