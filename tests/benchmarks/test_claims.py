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


def test_claim_items_carry_each_claims_verdict_and_evidence_in_order():
    """One Markdown item per decided claim (the JSON's ``claims``), with its text, verdict and evidence."""
    decided = claims.verdicts([_claim("all"), _claim("any", rows=lambda table: table[1:2])], TABLE)
    items = claims.claim_items(decided)
    assert len(items) == len(decided) == 2
    for item, claim in zip(items, decided):
        where = [item.find(part) for part in (claim["claim"], claim["verdict"].upper(), claim["evidence"])]
        assert -1 not in where and where == sorted(where), (item, claim)
    assert [c["verdict"] for c in decided] == ["partly reproduced", "not reproduced"]
