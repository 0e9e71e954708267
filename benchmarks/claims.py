"""Claims of the benchmarks over their result tables, and their Markdown."""

from typing import Iterable, List, Mapping


def claim_items(claims: Iterable[Mapping]) -> List[str]:
    """Claim verdicts (``claim``, ``verdict``, ``evidence``) as Markdown list items, verdict in capitals."""
    return [f"**{c['claim']}: {c['verdict'].upper()}.** {c['evidence']}" for c in claims]
