import json

import numpy as np

from benchmarks import bsvm_active


def test_quick_run_writes_curves_ranks_and_a_plot(tmp_path):
    assert bsvm_active.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bsvm_active_quick.json").read_text())
    for policy in bsvm_active.POLICIES:
        (curve,) = report["curves"]["iris"][policy]
        assert len(curve) == 6 and all(0.0 <= e <= 1.0 for e in curve)
    ranks = np.array([report["summary"]["mean_rank"][p] for p in bsvm_active.POLICIES])
    np.testing.assert_allclose(ranks.sum(0), 3.0)  # two policies: ranks 1 + 2 or 1.5 + 1.5
    assert (tmp_path / "bsvm_active_quick.png").stat().st_size > 0


def test_both_policies_start_from_the_same_labelled_set():
    """Same start, same model, same steps: before the first query both policies give the same error."""
    from gpflow_ep.datasets import sklearn_multiclass_split

    data = sklearn_multiclass_split("iris", 0)
    start = [int(np.flatnonzero(data.Y_train[:, 0] == c)[0]) for c in range(3)]
    curves = [bsvm_active.run_curve(p, data, start, 1, 10, 4, 0.05, seed=0) for p in bsvm_active.POLICIES]
    assert curves[0][0] == curves[1][0]
