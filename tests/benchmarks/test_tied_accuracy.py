"""The summary of ``benchmarks/tied_accuracy.py``: standard errors, the paired difference and the goal's verdict."""

import math

import pytest

from benchmarks.tied_accuracy import METHODS, _within, summarise


@pytest.mark.parametrize("difference, within", [(0.099, True), (0.101, False), (-0.101, False)])
def test_within_two_standard_errors_uses_the_combined_standard_error(difference, within):
    """se 0.03 and 0.04 combine to √(0.03² + 0.04²) = 0.05, so the bound on |difference| is 0.1."""
    assert _within(dict(mean=0.5, se=0.03), dict(mean=0.5 + difference, se=0.04)) is within
    assert _within(dict(mean=0.5, se=None), dict(mean=0.5, se=0.04)) is None


def _run(name, kind, split, nlpd, se_points=0.01, n_test=100):
    """One split's record with NLPD ``nlpd[m]`` per method of ``kind`` (error 0.1, 2 ms a step)."""
    results = {m: dict(error=0.1, nlpd=nlpd[m], nlpd_se_points=se_points, ms_per_step=2.0) for m in METHODS[kind]}
    tied, per_point = METHODS[kind][:2]
    difference = dict(mean=nlpd[tied] - nlpd[per_point], se=se_points / 2)
    settings = dict(n_train=100, n_test=n_test, D=3, num_classes=2, M=10, batch=10, steps=50, epochs=5.0)
    return dict(dataset=name, kind=kind, split=split, results=results, nlpd_difference_points=difference, **settings)


def test_summary_takes_standard_errors_over_splits_or_else_over_test_points():
    tied, per_point, svgp = METHODS["binary"]
    runs = [_run("binary/a", "binary", k, {tied: 0.30 + 0.01 * k, per_point: 0.30, svgp: 0.4}) for k in range(3)]
    runs.append(_run("flights", "binary", 0, {tied: 0.60, per_point: 0.55, svgp: 0.6}, se_points=0.01))
    summary = summarise(runs)
    a, flights = summary["per_set"]["binary/a"], summary["per_set"]["flights"]
    # three splits: tied 0.30, 0.31, 0.32 has mean 0.31 and s.e. 0.01/√3; per-point s.e. 0 over splits
    assert a["se_over"] == "splits" and a["methods"][tied]["nlpd"]["mean"] == pytest.approx(0.31)
    assert a["methods"][tied]["nlpd"]["se"] == pytest.approx(0.01 / math.sqrt(3))
    assert a["paired"]["mean"] == pytest.approx(0.01) and a["within_2se"] is True  # 0.01 ≤ 2 × 0.0058
    # one split: the test points' standard error, 0.01 each, bound 2√2 × 0.01 < 0.05
    assert flights["se_over"] == "test points" and flights["methods"][tied]["nlpd"]["se"] == 0.01
    assert flights["within_2se"] is False
    (goal,) = summary["claims"]
    assert goal["verdict"] == "partly reproduced" and "flights 0.600 vs 0.550" in goal["evidence"]
