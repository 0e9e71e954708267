import json

import pytest

from benchmarks import bsvm_hybrid


def test_quick_run_reports_both_models(tmp_path):
    assert bsvm_hybrid.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bsvm_hybrid_quick.json").read_text())
    (run,) = report["runs"]
    assert set(run["results"]) == set(bsvm_hybrid.METHODS)
    for result in run["results"].values():
        assert 0.0 <= result["accuracy"] <= 1.0 and result["seconds_per_step"] > 0
        assert [a["eps"] for a in result["attacks"]] == [0.0, 0.1]
    assert "| hybrid BSVM |" in (tmp_path / "bsvm_hybrid_quick.md").read_text()


@pytest.mark.slow
def test_hybrid_matches_the_cnn_and_detects_fgsm():
    """The CNN + MultiClassHinge SVGP reaches ≥ 0.95 test accuracy on digits, within 0.02 of the
    same CNN with softmax (Wistuba & Rawat 2018, Fig. 4); FGSM at ε = 0.1 raises the mean variation
    ratio and the variation ratio separates clean from attacked images (ROC-AUC > 0.5)."""
    results = bsvm_hybrid.run_seed(0, steps=1000, lr=1e-3, M=64, features=32, chunk=500, epsilons=[0.0, 0.1])
    hybrid, cnn = results["hybrid BSVM"], results["CNN softmax"]
    assert hybrid["accuracy"] >= 0.95
    assert abs(hybrid["accuracy"] - cnn["accuracy"]) <= 0.02
    clean, attacked = hybrid["attacks"]
    assert attacked["mean_uncertainty"] > clean["mean_uncertainty"]
    assert attacked["roc_auc"] > 0.5
