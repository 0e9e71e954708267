"""Claims of ``benchmarks/claims.py`` as Markdown list items."""

from benchmarks import claims


def test_claim_items_write_the_verdict_in_capitals_before_the_evidence():
    items = claims.claim_items([{"claim": "EP wins", "verdict": "holds", "evidence": "3 of 3 sets."}])
    assert items == ["**EP wins: HOLDS.** 3 of 3 sets."]
