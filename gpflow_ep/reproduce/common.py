"""Small helpers shared by the reproduction modules: timestamps, progress lines, summaries."""

import datetime as _dt
import math
import sys
import time
from argparse import ArgumentParser, Namespace
from typing import Callable, Dict, List, Optional

import numpy as np


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (for the outputs' headers)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def progress_logger(part: str) -> Callable[[str], None]:
    """A function printing ``[part HH:MM:SS] message`` to stderr."""

    def log(message: str) -> None:
        print(f"[{part} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    return log


def parse_part_args(
    build_parser: Callable[[], ArgumentParser], argv: Optional[List[str]], log: Callable[[str], None]
) -> Namespace:
    """
    A part's options from a command line shared by all parts (``reproduce rep --parts ...``);
    the other parts' options are logged and ignored.
    """
    args, ignored = build_parser().parse_known_args(argv)
    if ignored:
        log(f"ignoring options meant for other parts: {ignored}")
    return args


def finite_or_none(x) -> Optional[float]:
    """``float(x)`` when finite, else ``None`` (JSON has no NaN)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def mean_se(values) -> Dict:
    """Mean, standard error (ddof 1) and count of the finite values."""
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        return {"mean": None, "se": None, "n": 0}
    se = float(np.std(x, ddof=1) / math.sqrt(x.size)) if x.size > 1 else None
    return {"mean": float(np.mean(x)), "se": se, "n": int(x.size)}
