"""
Summary statistics of benchmark results (:func:`mean_se`, :func:`paired_differences`) and the one
formatter of their table cells (:func:`cell`) and tables (:func:`markdown_table`).
"""

import math
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np
from scipy.stats import t as student_t


def finite_or_none(x) -> Optional[float]:
    """``float(x)`` when finite, else ``None`` (JSON has no NaN)."""
    return None if x is None or not math.isfinite(float(x)) else float(x)


def mean_se(values: Iterable, missing=None) -> Dict:
    """
    Mean, standard error (ddof 1) and count of the finite values (``None`` and NaN are dropped);
    ``missing`` stands for a mean or standard error that does not exist (no value; one value).
    """
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        return {"mean": missing, "se": missing, "n": 0}
    se = float(np.std(x, ddof=1) / math.sqrt(x.size)) if x.size > 1 else missing
    return {"mean": float(np.mean(x)), "se": se, "n": int(x.size)}


def paired_differences(a: Mapping, b: Mapping, tie: float = 1e-12) -> Dict:
    """
    a − b over the keys both have (splits, repetitions), skipping ``None``: :func:`mean_se` of the
    differences, the wins (a lower by more than ``tie``), ties and losses of a, and ``t95``, the
    97.5 % Student-t quantile for a 95 % interval of the mean (``None`` below two pairs).
    """
    diffs = [a[k] - b[k] for k in a if k in b and a[k] is not None and b[k] is not None]
    d = np.array(diffs)
    counts = dict(wins=int(np.sum(d < -tie)), ties=int(np.sum(np.abs(d) <= tie)), losses=int(np.sum(d > tie)))
    t95 = float(student_t.ppf(0.975, len(diffs) - 1)) if len(diffs) > 1 else None
    return dict(mean_se(diffs), **counts, t95=t95)


def cell(
    value,
    digits: int = 2,
    *,
    se: Optional[float] = None,
    signed: bool = False,
    scale: float = 1.0,
    style: str = "f",
    bold: bool = False,
    missing: str = "—",
) -> str:
    """
    One table cell: ``value`` — a number, or a :func:`mean_se` result (whose ``se`` is used) — as
    "0.123 ± 0.004" (no "± " without a standard error; ``missing`` without a value).

    :param digits: digits after the point (``style="f"``) or significant digits (``style="g"``).
    :param se: the standard error of a plain number.
    :param signed: write the sign always, as for a difference ("+0.12 ± 0.03").
    :param scale: multiplies the value and the standard error (100 for percentages).
    :param bold: the cell in bold (the best of a column).
    """
    if isinstance(value, Mapping):
        value, se = value.get("mean"), value.get("se")
    if value is None:
        return missing
    text = f"{value * scale:{'+' if signed else ''}.{digits}{style}}"
    if se is not None:
        text += f" ± {se * scale:.{digits}{style}}"
    return f"**{text}**" if bold else text


def markdown_table(header: Sequence[str], rows: Iterable[Sequence]) -> List[str]:
    """The lines of a Markdown table: the header, its rule and one line per row (cells as ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
