"""Summary statistics of benchmark results and their formatting: :func:`mean_se`, :func:`paired_differences`, ..."""

import math
from typing import Dict, Iterable, Mapping, Optional

import numpy as np
from scipy.stats import t as student_t


def finite_or_none(x) -> Optional[float]:
    """``float(x)`` when finite, else ``None`` (JSON has no NaN)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


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


def format_mean_se(
    stat: Optional[Mapping], digits: int = 2, signed: bool = False, scale: float = 1.0, missing: str = "—"
) -> str:
    """
    A :func:`mean_se` result as "mean ± se" (``missing`` without values, no "± " with one value);
    ``signed`` writes the mean's sign always, as for a difference ("+0.12 ± 0.03"); mean and s.e. are
    multiplied by ``scale`` (100 for percentages).
    """
    if not stat or stat.get("mean") is None:
        return missing
    se = "" if stat.get("se") is None else f" ± {stat['se'] * scale:.{digits}f}"
    return f"{stat['mean'] * scale:{'+' if signed else ''}.{digits}f}{se}"


def paired_differences(a: Mapping, b: Mapping, tie: float = 1e-12) -> Dict:
    """
    a − b over the keys both have (splits, repetitions), skipping ``None``: :func:`mean_se` of the
    differences, the wins (a lower by more than ``tie``), ties and losses of a, and ``t95``, the
    97.5 % Student-t quantile for a 95 % interval of the mean (``None`` below two pairs).
    """
    diffs = [a[k] - b[k] for k in a if k in b and a[k] is not None and b[k] is not None]
    stats = mean_se(diffs)
    d = np.array(diffs)
    stats.update(
        {
            "wins": int(np.sum(d < -tie)),
            "ties": int(np.sum(np.abs(d) <= tie)),
            "losses": int(np.sum(d > tie)),
            "t95": float(student_t.ppf(0.975, len(diffs) - 1)) if len(diffs) > 1 else None,
        }
    )
    return stats
