import json

import numpy as np

from benchmarks import bsvm_multiclass


def test_rank_helper():
    """U15: ties share the average rank; three methods' ranks sum to 6."""
    np.testing.assert_array_equal(bsvm_multiclass.rank_by_accuracy([1.0, 1.0, 0.8]), [1.5, 1.5, 3.0])
    assert bsvm_multiclass.rank_by_accuracy([0.7, 0.9, 0.8]).sum() == 6.0


def test_quick_run_reports_every_method(tmp_path):
    assert bsvm_multiclass.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bsvm_multiclass_quick.json").read_text())
    (run,) = report["runs"]
    assert run["dataset"] == "iris" and set(run["results"]) == set(bsvm_multiclass.METHODS)
    for result in run["results"].values():
        assert 0.0 <= result["accuracy"] <= 1.0 and result["training_seconds"] > 0
    ranks = [report["summary"]["per_set"]["iris"]["methods"][m]["rank"] for m in bsvm_multiclass.METHODS]
    assert sum(ranks) == 10.0
    assert "| iris | 1 |" in (tmp_path / "bsvm_multiclass_quick.md").read_text()
