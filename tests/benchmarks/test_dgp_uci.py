import json

import pytest

from benchmarks import dgp_uci
from benchmarks.claims import verdicts


@pytest.mark.benchmark_data
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
    paired = table.split("**Paired test log-likelihood differences")[1].split("## Claims")[0]
    d = run["results"]["DGP-AEP 2"]["test_ll"] - run["results"]["GPflux 2"]["test_ll"]
    assert f"| yacht | {dgp_uci._signed(dict(mean=d, se=None))} | {int(d > 0)}/1 |" in paired
    # merged with a run of split 1 (here the same report relabelled) into dgp_uci_M5
    second = dict(report, runs=[dict(run, split=1)], command="second")
    (tmp_path / "second.json").write_text(json.dumps(second))
    paths = f"{tmp_path / 'dgp_uci_quick.json'},{tmp_path / 'second.json'}"
    assert dgp_uci.main(["--merge", paths, "--out-dir", str(tmp_path)]) == 0
    merged = (tmp_path / "dgp_uci_M5.md").read_text()
    assert "| yacht | 2 |" in merged and "merged runs" in merged
    # --rerender redoes the tables of the stored JSON without running anything
    (tmp_path / "dgp_uci_M5.md").write_text("stale")
    assert dgp_uci.main(["--rerender", "--num-inducing", "5", "--out-dir", str(tmp_path)]) == 0
    assert (tmp_path / "dgp_uci_M5.md").read_text().split("wall time")[1] == merged.split("wall time")[1]


def test_paper_values_cover_the_eight_datasets():
    """A (mean, s.e.) per paper column for the test log-likelihood and the RMSE of each of the eight sets."""
    assert set(dgp_uci.PAPER) == set(dgp_uci.NAMES.values())
    assert all(len(row) == 4 * len(dgp_uci.PAPER_COLUMNS) for row in dgp_uci.PAPER.values())
    assert dgp_uci.PAPER["yacht"][:2] == (-1.15, 0.03) and dgp_uci.PAPER["yacht"][8:10] == (1.15, 0.09)  # Tables 3, 4


def test_paired_ll_pairs_splits_both_methods_ran():
    def run(split, **lls):
        return dict(dataset="yacht", split=split, results={m: dict(test_ll=v) for m, v in lls.items()})

    runs = [run(0, A=-1.0, B=-1.5), run(1, A=-2.0, B=-1.8), run(2, A=0.0), dict(run(0, A=9.0, B=0.0), dataset="boston")]
    d = dgp_uci.paired_ll(runs, "yacht", "A", "B")  # differences +0.5 and -0.2; split 2 and boston left out
    assert d["n"] == 2 and d["wins"] == 1 and d["losses"] == 1
    assert abs(d["mean"] - 0.15) < 1e-12 and abs(d["se"] - 0.35) < 1e-12  # se = |0.5 + 0.2| / 2 for two values
    assert dgp_uci._signed(d) == "+0.150 ± 0.350"
    assert dgp_uci._signed(dgp_uci.paired_ll(runs, "yacht", "B", "A")) == "−0.150 ± 0.350"


def test_timing_is_never_pooled_across_cpus():
    """Medians and DGP-AEP/GPflux ratios per (data set, CPU); a run without a CPU is the report machine's."""

    def run(split, cpu, aep, flux):
        results = {"DGP-AEP 2": dict(seconds_per_iteration=aep), "GPflux 2": dict(seconds_per_iteration=flux)}
        for r in results.values():
            r.update(test_ll=0.0, rmse=1.0, finite=True)
        return dict(dataset="yacht", split=split, results=results, **({"cpu_model": cpu} if cpu else {}))

    runs = [run(0, None, 0.010, 0.005), run(1, "A", 0.030, 0.010), run(2, "B", 0.012, 0.004), run(3, "B", 0.016, 0.004)]
    methods = ["DGP-AEP 2", "GPflux 2"]
    report = dict(runs=runs, summary=dgp_uci.summarise(runs, methods), machine=dict(cpu_model="A"))
    report["config"] = dict(methods=methods)
    groups = dgp_uci.timing_groups(report)
    assert [(g[1], g[2]) for g in groups] == [("A", 2), ("B", 2)]
    assert groups[0][3] == {"DGP-AEP 2": 0.020, "GPflux 2": 0.0075} and groups[1][3]["DGP-AEP 2"] == 0.014
    (claim,) = [c for c in verdicts(dgp_uci.claims(report), dgp_uci.claim_table(report)) if "time" in c["claim"]]
    assert claim["verdict"] == "not reproduced"  # 20 / 7.5 ms on A, 14 / 4 ms on B
    assert claim["evidence"] == "0 of 2 hold. Fail: yacht on A 2.67×; yacht on B 3.50×."
