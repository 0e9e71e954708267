"""Outputs of ``benchmarks/report.py``: JSON and Markdown files, headers, re-rendering."""

import json
import re
import time

import numpy as np
import pytest

from benchmarks.report import markdown_header, rerender_report, timed_report, write_report


def test_write_report_writes_the_timed_report_as_json(tmp_path):
    """The report's values (NumPy scalars as JSON numbers and booleans), its run's stamp, and the Markdown as given."""
    values = {"x": np.float64(1.5), "k": np.int64(2), "ok": np.bool_(True)}
    report = timed_report("cmd", lambda: time.sleep(0.02) or values)
    assert report["command"] == "cmd" and report["wall_time_s"] >= 0.02 and report["started"] <= report["finished"]
    assert report["machine"]["numpy"] == np.__version__
    json_path, md_path = write_report(tmp_path / "a" / "r", report, "# r\n")
    loaded = json.loads(json_path.read_text())
    assert (loaded["x"], loaded["k"], loaded["ok"]) == (1.5, 2, True) and type(loaded["k"]) is int
    assert {k: loaded[k] for k in ("command", "started", "finished", "wall_time_s", "machine")} == {
        k: report[k] for k in ("command", "started", "finished", "wall_time_s", "machine")
    }
    assert (json_path.name, md_path.name, md_path.read_text()) == ("r.json", "r.md", "# r\n")


def test_markdown_header_reports_the_runs_stamp_and_the_cpus_of_merged_runs():
    """Every value of the run's stamp is in the header (wall time in whole seconds), and for a merged report
    whose runs ran on several CPUs, each CPU with its number of runs."""
    report = timed_report("python -m benchmarks.x --quick", dict)
    header = "\n".join(markdown_header("T", report, "a note"))
    machine = report["machine"]
    stamp = [report["command"], report["started"], report["finished"], f"{round(report['wall_time_s'])} s", "a note"]
    stamp += [str(machine[k]) for k in ("cpu_model", "cpu_count", "cpu_affinity", "tensorflow", "gpflow", "numpy")]
    assert [value for value in stamp if value not in header] == []
    merged = dict(report, cpu_models={"cpu A": 2, "cpu B": 1})
    for text, cpus in ((header, {}), ("\n".join(markdown_header("T", merged)), merged["cpu_models"])):
        assert re.findall(r"(cpu [AB]) (\d+) runs", text) == [(cpu, str(n)) for cpu, n in cpus.items()]


@pytest.mark.parametrize("indent", [1, 2])
def test_rerender_keeps_the_json_layout_so_its_diff_is_the_analysis(tmp_path, indent):
    report = {"runs": [1.0, 2.0], "summary": {"mean": 1.5}}
    write_report(tmp_path / "r", report, "old\n", indent=indent)
    before = (tmp_path / "r.json").read_text().splitlines()

    def reanalyse(rep):
        rep["summary"]["mean"] = 2.5
        return rep

    assert rerender_report(tmp_path / "r", reanalyse, lambda rep: "new\n", lambda msg: None, indent=indent) == 0
    after = (tmp_path / "r.json").read_text()
    stamped = json.loads(after)
    assert stamped.pop("rerendered") and stamped == {"runs": [1.0, 2.0], "summary": {"mean": 2.5}}
    changed = [line for line in after.splitlines() if line not in before]
    assert changed == [" " * 2 * indent + '"mean": 2.5', " " * indent + "},", changed[-1]]
    assert changed[-1].startswith(" " * indent + '"rerendered": ')
    assert (tmp_path / "r.md").read_text() == "new\n"
