import json

from benchmarks import spike_slab_pcep


def test_summary_and_table_from_stored_runs():
    """The analysis on two hand-made sets: groups, counts and the paper's layout (no model runs)."""

    def one(seed, rep_ok, rep_mse, pc_mse):
        return dict(
            seed=seed,
            rep={"0.5": dict(converged=rep_ok, seconds=0.01, mse=rep_mse)},
            pcep=dict(
                converged=True,
                outer=5,
                inner=50,
                seconds=1.0,
                mse=pc_mse,
                energies=[3.0, 2.0, 2.0],
                max_increase=0.0,
                bound=-50.0,
                active_site_bounds=1,
                active_cavity_bounds=0,
                kkt_residual=1e-7,
            ),
        )

    sets = [one(0, False, 0.3, 0.1), one(1, True, 0.02, 0.03)]
    summary = spike_slab_pcep.summarise(sets, [], [0.5])
    row = summary["per_tau"]["0.5"]
    assert row["not_converged"] == 1 and row["pcep_better_on_failed"] == 1
    assert row["failed"]["rep"]["mean"] == 0.3 and row["converged"]["pcep"]["mean"] == 0.03
    verdicts = {c["claim"][:2]: c["verdict"] for c in summary["claims"]}
    assert verdicts["H3"] == "reproduced" and verdicts["H6"] == "reproduced"  # 1 s vs 10 ms = 100×


def test_quick_run_end_to_end(tmp_path):
    tmp_path = tmp_path / "new"  # an output directory the run has to create (its plot comes before its report)
    assert spike_slab_pcep.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "spike_slab_pcep_quick.json").read_text())
    (s,) = report["sets"]
    assert set(s["rep"]) == {"0.5", "0.9"} and s["pcep"]["outer"] <= 20
    assert all(e2 <= e1 + 1e-6 * max(1.0, abs(e1)) for e1, e2 in zip(s["pcep"]["energies"], s["pcep"]["energies"][1:]))
    assert "| 0.5 |" in (tmp_path / "spike_slab_pcep_quick.md").read_text()
    assert (tmp_path / "spike_slab_pcep_quick_energy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert spike_slab_pcep.main(["--quick", "--out-dir", str(tmp_path), "--rerender"]) == 0
    assert json.loads((tmp_path / "spike_slab_pcep_quick.json").read_text())["rerendered"]
