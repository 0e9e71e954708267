"""
The code cites what a reader can open: papers with their equation and section numbers, never the
project's internal planning documents (which are not part of the repository).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: references to documents outside the repository, as they were written before they were replaced
UNFOLLOWABLE = re.compile(
    r"\b(?:rep|sep|dgp|aep|bsvm|svm|spike[- ]and[- ]slab|ecosystem|design|ep|the|our)\s+spec\b"
    r"|\bspec\s*(?:§|eqs?\b|section|sec\.|table|[A-Z]\d|$)|\bspecs?/|DESIGN(?:\.md|\s+principle)",
    re.IGNORECASE,
)


def _sources():
    for folder in ("gpflow_ep", "benchmarks", "tests", "docs", "examples"):
        base = ROOT / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            skip = "_build" in path.parts or "jupyter_execute" in path.parts or path.name == Path(__file__).name
            if path.suffix in {".py", ".md", ".rst"} and not skip:
                yield path


@pytest.mark.parametrize("folder", ["gpflow_ep", "benchmarks", "tests", "docs", "examples"])
def test_sources_cite_papers_not_internal_documents(folder):
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _sources()
        if path.relative_to(ROOT).parts[0] == folder
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if UNFOLLOWABLE.search(line)
    ]
    assert not hits, "cite the paper (and its equation/section) instead:\n" + "\n".join(hits)
