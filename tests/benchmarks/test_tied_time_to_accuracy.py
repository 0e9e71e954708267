"""The summary of ``benchmarks/tied_time_to_accuracy.py``: when each curve first reaches SVGP + Adam's final NLPD."""

from benchmarks.tied_time_to_accuracy import ADAM, METHODS, TIED, first_reaching, summarise


def _curve(nlpds, seconds_per_checkpoint):
    return [dict(step=10 * k, time_s=seconds_per_checkpoint * k, nlpd=v, error=0.3) for k, v in enumerate(nlpds)]


def test_first_reaching_is_the_first_checkpoint_at_or_below_the_target():
    curve = _curve([0.69, 0.60, 0.55, 0.58, 0.54], 1.0)
    assert first_reaching(curve, 0.55) == curve[2]
    assert first_reaching(curve, 0.50) is None


def test_the_goal_holds_when_tied_sep_reaches_the_target_in_less_time():
    svgp = _curve([0.69, 0.62, 0.58, 0.56], 1.0)  # target 0.56, reached at 3 s
    others = {m: _curve([0.69, 0.65, 0.64, 0.63], 1.0) for m in METHODS}
    faster = dict(others, **{TIED: _curve([0.69, 0.57, 0.55, 0.55], 1.5), ADAM: svgp})  # 0.55 at 3.0 s: not less
    summary = summarise(faster, dict.fromkeys(METHODS, 1.0))
    assert summary["target_nlpd"] == 0.56 and summary["methods"][TIED]["reaches_target"]["time_s"] == 3.0
    assert summary["claims"][0]["verdict"] == "not reproduced"
    faster[TIED] = _curve([0.69, 0.57, 0.55, 0.55], 1.4)  # at 2.8 s
    assert summarise(faster, dict.fromkeys(METHODS, 1.0))["claims"][0]["verdict"] == "reproduced"
    never = dict(faster, **{TIED: _curve([0.69, 0.60, 0.59, 0.57], 0.1)})
    summary = summarise(never, dict.fromkeys(METHODS, 1.0))
    assert summary["methods"][TIED]["reaches_target"] is None and "not reached" in summary["claims"][0]["evidence"]
