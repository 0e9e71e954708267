"""Claims of ``benchmarks/claims.py``: declarative checks over result rows, their verdicts and Markdown."""

import pytest

from benchmarks import claims

TABLE = [
    {"name": "a", "error": 0.1, "baseline": 0.2},
    {"name": "b", "error": 0.3, "baseline": 0.2},
    {"name": "c", "error": 0.1, "baseline": 0.3},
]


def _claim(need, rows=None):
    return claims.Claim(
        "lower than the baseline",
        lambda r: r["error"] < r["baseline"],
        rows=rows or (lambda table: table),
        need=need,
        show=lambda r: f"{r['name']} {r['error']:.1f}",
    )


def test_the_verdict_follows_from_how_many_rows_pass():
    assert _claim("all").decide(TABLE)["verdict"] == "partly reproduced"
    assert _claim("most").decide(TABLE)["verdict"] == "reproduced"  # 2 of 3
    assert _claim("any").decide(TABLE)["verdict"] == "reproduced"
    only_b = _claim("all", rows=lambda table: [r for r in table if r["name"] == "b"])
    assert only_b.decide(TABLE)["verdict"] == "not reproduced"
    assert _claim("all").decide([])["verdict"] == "not tested"


def test_the_evidence_lists_the_passing_and_failing_rows_with_their_numbers():
    decided = claims.verdicts([_claim("all")], TABLE)
    assert decided == [
        {
            "claim": "lower than the baseline",
            "verdict": "partly reproduced",
            "evidence": "2 of 3 hold: a 0.1; c 0.1. Fail: b 0.3.",
        }
    ]
    everything = claims.Claim("x", lambda r: True, show=lambda r: r["name"], note="an oracle").decide(TABLE)
    assert everything["evidence"] == "3 of 3 hold: a; b; c." and everything["verdict"] == "reproduced (an oracle)"


def test_an_unknown_need_is_refused():
    with pytest.raises(ValueError, match="need"):
        claims.Claim("x", lambda r: True, need="some")


def test_claim_items_write_the_verdict_in_capitals_before_the_evidence():
    items = claims.claim_items([{"claim": "EP wins", "verdict": "holds", "evidence": "3 of 3 sets."}])
    assert items == ["**EP wins: HOLDS.** 3 of 3 sets."]
