"""Outputs of ``benchmarks/report.py``: JSON and Markdown files, headers, re-rendering."""

import json

import numpy as np
import pytest

from benchmarks.report import markdown_header, rerender_report, timed_report, write_report


def test_write_report_and_header(tmp_path):
    report = timed_report("cmd", lambda: {"x": np.float64(1.5), "k": np.int64(2), "ok": np.bool_(True)})
    assert report["machine"]["numpy"] == np.__version__ and report["wall_time_s"] >= 0
    json_path, md_path = write_report(tmp_path / "a" / "r", report, "# r\n")
    loaded = json.loads(json_path.read_text())
    assert (loaded["x"], loaded["k"], loaded["ok"]) == (1.5, 2, True)
    assert md_path.read_text() == "# r\n" and json_path.name == "r.json"
    lines = markdown_header("T", report, "a note")
    assert lines[0] == "# T" and lines[2] == "Command: `cmd`  " and lines[-2].endswith(" at end (a note).")


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
