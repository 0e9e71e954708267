"""``python -m benchmarks.counts_ordinal``: the count data, the ordinal bin edges and the ``--quick`` run."""

import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from benchmarks.counts_ordinal import METHODS, main, ordinal_bin_edges, phd_articles, random_split


def test_phd_articles_is_long_1990s_data():
    X, y = phd_articles()
    assert X.shape == (915, 5) and y.shape == (915, 1)
    assert np.all(y >= 0) and np.all(y == np.round(y)) and y.max() == 19
    assert set(np.unique(X[:, 0])) == {0.0, 1.0} and set(np.unique(X[:, 1])) == {0.0, 1.0}


def test_random_split_partitions_the_rows():
    train, test = random_split(915, seed=3)
    assert len(test) == 92 and len(train) == 823
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(915))


def test_ordinal_bin_edges_give_each_class_its_smoothed_training_frequency():
    labels = np.array([0] * 10 + [1] * 30 + [2] * 60 + [4] * 20)  # class 3 absent
    edges = ordinal_bin_edges(labels, 5)
    assert edges.shape == (4,) and np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)
    # the N(0, 1) mass between consecutive edges
    mass = np.diff(np.concatenate([[0.0], norm.cdf(edges), [1.0]]))
    expected = (np.array([10, 30, 60, 0, 20]) + 0.5) / 122.5
    np.testing.assert_allclose(mass, expected, rtol=1e-12)


def test_counts_ordinal_quick_writes_finite_results(tmp_path):
    assert main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "counts_ordinal_quick.json").read_text())
    assert report["config"]["datasets"] == ["phd-articles"] and report["config"]["max_train"] == 150
    (run,) = report["runs"]
    assert run["n_train"] == 150 and run["n_test"] == 92
    assert sorted(run["results"]) == sorted(METHODS)
    for method, r in run["results"].items():
        # a Poisson log-likelihood of counts is ≤ 0 (every probability ≤ 1)
        assert r["test_ll"] is not None and math.isfinite(r["test_ll"]) and r["test_ll"] < 0, method
        assert math.isfinite(r["mae"]) and r["mae"] > 0
    assert run["results"]["EP"]["ep"]["finite"]
    md = (tmp_path / "counts_ordinal_quick.md").read_text()
    for method in METHODS:
        assert f"| phd-articles | 1 | {method} |" in md
    assert "nan" not in md.lower()


@pytest.mark.benchmark_data
def test_wine_task_labels_and_edges():
    from benchmarks.counts_ordinal import load_task

    task = load_task("wine-red", 0, max_train=100)
    assert task.X.shape == (100, 11) and task.Y.shape == (100, 1)
    assert set(np.unique(np.concatenate([task.Y, task.Y_test]))) <= set(range(6))
    likelihood = task.likelihood()
    assert likelihood.num_bins == 6
    likelihood.bin_edges.assign(task.values["likelihood.bin_edges"])
    assert np.all(np.diff(likelihood.bin_edges.numpy()) > 0)


def test_finite_ends_ordinal_is_gpflows_likelihood_with_finite_values():
    from benchmarks.counts_ordinal import FiniteEndsOrdinal

    edges, sigma = np.array([-1.0, 0.0, 1.0]), 0.7
    likelihood = FiniteEndsOrdinal(edges)
    likelihood.sigma.assign(sigma)
    F = np.array([[-3.0], [0.0], [0.4], [3.0]])
    # GPflow's definition: Φ̃(x) = 10⁻³ + (1 − 2·10⁻³) Φ(x), p(y | f) = Φ̃((a_y − f)/σ) − Φ̃((a_{y−1} − f)/σ) + 10⁻⁶
    bounds = np.concatenate([[-np.inf], edges, [np.inf]])

    def jittered(x):
        return 1e-3 + (1 - 2e-3) * norm.cdf(x)

    for y in range(4):
        expected = np.log(jittered((bounds[y + 1] - F) / sigma) - jittered((bounds[y] - F) / sigma) + 1e-6)
        got = likelihood.log_prob(None, F, np.full((4, 1), float(y))).numpy()[:, None]
        np.testing.assert_allclose(got, expected, rtol=1e-9)  # erf against scipy's normal cdf
    # the conditional mean Σ_k k p_k(f), without the 10⁻⁶ floor (GPflow's prediction matrix)
    p = np.column_stack(
        [jittered((bounds[k + 1] - F[:, 0]) / sigma) - jittered((bounds[k] - F[:, 0]) / sigma) for k in range(4)]
    )
    np.testing.assert_allclose(likelihood.conditional_mean(None, F).numpy()[:, 0], p @ np.arange(4), rtol=1e-9)


def test_summary_counts_the_double_loop_fallbacks():
    """A final EP run that fell back to the double loop is counted and shown in the table's EP cell."""
    from benchmarks.counts_ordinal import COMPARISON

    def run(split, fallback):
        ep = dict(converged=not fallback, fallback=fallback, fallback_converged=False, num_skipped=2)
        result = dict(test_ll=-1.0 - split, mae=0.5, train_time_s=1.0, ep=ep)
        return dict(dataset="phd-articles", split=split, results={"EP": result})

    summary = COMPARISON.summarise([run(0, False), run(1, True)], ["EP"])
    (entry,) = summary["per_set"]["phd-articles"]["methods"].values()
    assert (entry["ep_converged"], entry["ep_fallback"], entry["ep_runs"], entry["ep_skipped"]) == (1, 1, 2, 4)
    assert entry["test_ll"]["mean"] == pytest.approx(-1.5, rel=1e-15)
