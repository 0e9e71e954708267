"""benchmarks.before_after: medians of the per-report ratios, and after/before."""

import json

from benchmarks import before_after


def _scaling(path, sep, svgp):
    rows = [{"n": 10, "SEP minibatch": {"per_step_s": sep}, "SVGP": {"per_step_s": svgp}}]
    path.write_text(json.dumps({"rows": rows}))
    return str(path)


def test_sepgpc_scaling_ratios(tmp_path):
    before = [_scaling(tmp_path / f"b{i}.json", s, 1.0) for i, s in enumerate([1.2, 1.4, 1.3])]
    after = [_scaling(tmp_path / "a.json", 2.6, 2.0)]
    assert (
        before_after.main(
            ["--kind", "sepgpc_scaling", "--before", *before, "--after", *after, "--out-dir", str(tmp_path)]
        )
        == 0
    )
    report = json.loads((tmp_path / "sepgpc_scaling_before_after.json").read_text())
    row = report["rows"]["n=10"]
    assert abs(row["before"]["median"] - 1.3) < 1e-12 and abs(row["after"]["median"] - 1.3) < 1e-12
    assert "| n=10 | 1.3 | 1.3 | 1.00 |" in (tmp_path / "sepgpc_scaling_before_after.md").read_text()
