import json

import numpy as np

from benchmarks import bsvm_multiclass


def test_rank_helper():
    """Ties share the average rank (as in Wistuba & Rawat 2018, §4.1); three methods' ranks sum to 6."""
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


def test_merge_combines_reports_over_data_sets(tmp_path):
    def report(name, accuracy):
        run = dict(
            dataset=name,
            split=0,
            num_classes=3,
            results={
                m: dict(accuracy=accuracy, training_seconds=1.0 + i) for i, m in enumerate(bsvm_multiclass.METHODS)
            },
        )
        config = dict(
            datasets=[name],
            methods=list(bsvm_multiclass.METHODS),
            splits=1,
            steps=10,
            learning_rate=0.01,
            num_inducing=8,
            chunk=5,
        )
        machine = dict(
            cpu_model="x",
            cpu_count=2,
            cpu_affinity=1,
            tensorflow="t",
            gpflow="g",
            numpy="n",
            python="p",
            load_average_start=None,
            load_average_end=None,
        )
        return dict(
            config=config,
            runs=[run],
            summary={},
            command=f"run {name}",
            started="a",
            finished="b",
            wall_time_s=1.0,
            machine=machine,
        )

    paths = []
    for name, acc in (("iris", 0.9), ("glass", 0.6)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(report(name, acc)))
        paths.append(str(path))
    assert bsvm_multiclass.main(["--merge", ",".join(paths), "--out-dir", str(tmp_path)]) == 0
    merged = json.loads((tmp_path / "bsvm_multiclass.json").read_text())
    assert merged["config"]["datasets"] == ["iris", "glass"] and len(merged["runs"]) == 2
    assert set(merged["summary"]["per_set"]) == {"iris", "glass"}
