import json

from benchmarks import dgp_uci


def test_quick_run_reports_every_method(tmp_path):
    methods = "GP-AEP,DGP-AEP 2,GPflux 2,SVGP,SGPR"
    assert dgp_uci.main(["--quick", "--methods", methods, "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "dgp_uci_quick.json").read_text())
    (run,) = report["runs"]
    assert run["dataset"] == "yacht" and set(run["results"]) == set(methods.split(","))
    for method, result in run["results"].items():
        assert result["finite"] and result["rmse"] > 0, method
        assert (method == "SGPR") == ("seconds_per_iteration" not in result)
    table = (tmp_path / "dgp_uci_quick.md").read_text()
    assert "| yacht | 1 |" in table and "paper" not in table.split("**Test RMSE")[0]  # M = 5: no paper column
    assert "## Claims" in table
    # merged with a run of split 1 (here the same report relabelled) into dgp_uci_M5
    second = dict(report, runs=[dict(run, split=1)], command="second")
    (tmp_path / "second.json").write_text(json.dumps(second))
    paths = f"{tmp_path / 'dgp_uci_quick.json'},{tmp_path / 'second.json'}"
    assert dgp_uci.main(["--merge", paths, "--out-dir", str(tmp_path)]) == 0
    merged = (tmp_path / "dgp_uci_M5.md").read_text()
    assert "| yacht | 2 |" in merged and "merged runs" in merged


def test_paper_values_cover_the_eight_datasets():
    assert set(dgp_uci.PAPER["ll"]) == set(dgp_uci.NAMES.values()) == set(dgp_uci.PAPER["rmse"])
