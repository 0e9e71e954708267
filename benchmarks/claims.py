"""
Claims of a benchmark as small declarative checks over its result table (:class:`Claim`): the verdict follows
from how many of its rows pass, the evidence shows the rows that pass and fail with their numbers.
"""

from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Mapping, Sequence

Row = Mapping
Table = Sequence[Mapping]

NEEDS = ("all", "most", "any")


def _every_row(table: Table) -> Table:
    return table


@dataclass(frozen=True)
class Claim:
    """
    A claim over the rows of a result table.

    :param text: the claim, as the paper (or we, "[ours]") state it.
    :param holds: the test of one row.
    :param rows: the rows the claim is about (default: every row of the table).
    :param need: "all" (reproduced when every row passes, partly when some do), "most" (more than
        half: reproduced; some: partly) or "any" (one row suffices).
    :param show: a row's label and numbers in the evidence.
    :param note: added to the verdict, e.g. a caveat of the protocol.
    """

    text: str
    holds: Callable[[Row], bool]
    rows: Callable[[Table], Table] = _every_row
    need: str = "all"
    show: Callable[[Row], str] = str
    note: str = ""

    def __post_init__(self):
        if self.need not in NEEDS:
            raise ValueError(f"need: must be one of {NEEDS}; got {self.need!r}")

    def decide(self, table: Table) -> Dict[str, str]:
        """``{claim, verdict, evidence}`` over ``table``; "not tested" when the claim selects no row."""
        rows = list(self.rows(table))
        passed = [self.holds(row) for row in rows]
        n, k = len(rows), sum(passed)
        if n == 0:
            verdict = "not tested"
        elif self.need == "any":
            verdict = "reproduced" if k else "not reproduced"
        else:
            enough = k == n if self.need == "all" else k > n / 2
            verdict = "reproduced" if enough else ("partly reproduced" if k else "not reproduced")
        if self.note:
            verdict += f" ({self.note})"
        shown = {ok: "; ".join(self.show(r) for r, p in zip(rows, passed) if p is ok) for ok in (True, False)}
        evidence = f"{k} of {n} hold" + (f": {shown[True]}" if k else "") + (f". Fail: {shown[False]}" if k < n else "")
        return {"claim": self.text, "verdict": verdict, "evidence": evidence + "."}


def verdicts(claims: Iterable[Claim], table: Table) -> List[Dict[str, str]]:
    """Every claim decided over ``table`` (see :meth:`Claim.decide`)."""
    return [claim.decide(table) for claim in claims]


def claim_items(claims: Iterable[Mapping]) -> List[str]:
    """Claim verdicts (``claim``, ``verdict``, ``evidence``) as Markdown list items, verdict in capitals."""
    return [f"**{c['claim']}: {c['verdict'].upper()}.** {c['evidence']}" for c in claims]
