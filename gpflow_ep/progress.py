"""
Progress on a text stream (stderr by default), for loops that can run for minutes: ``fit``'s
:class:`ProgressBar`, the double loop's outer-step status, ``gpflow-ep compare``'s bars.

On a terminal a :class:`StatusLine` is redrawn in place at most every ``interval`` seconds; on any
other stream (a log file, a batch job's or CI's output) it is written as a new line at most every
``log_interval`` seconds, so logs hold lines, not one line of carriage returns. Callers that show
progress "by default" show it when the stream is a terminal (:func:`is_terminal`), as Keras does.
"""

import sys
from typing import Optional

import numpy as np

__all__ = ["ProgressBar", "StatusLine", "is_terminal"]


def is_terminal(stream=None) -> bool:
    """Whether ``stream`` (default ``sys.stderr``) is an interactive terminal."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


class StatusLine:
    """One line of status, redrawn in place on a terminal, appended as lines elsewhere (module docstring)."""

    def __init__(self, stream=None, interval: float = 0.2, log_interval: float = 30.0):
        self.stream = sys.stderr if stream is None else stream
        self.interactive = is_terminal(self.stream)
        self.interval = interval if self.interactive else log_interval
        self._last = -np.inf

    def due(self, elapsed: float) -> bool:
        """True (and the clock restarted) when ``interval`` seconds passed since the last line written."""
        if elapsed - self._last < self.interval:
            return False
        self._last = elapsed
        return True

    def write(self, line: str, final: bool = False) -> None:
        """Write ``line``: in place on a terminal (ending the line when ``final``), else as a new line."""
        if self.interactive:
            self.stream.write("\r" + line + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


class ProgressBar(StatusLine):
    """
    A one-line text progress bar: the fraction done is steps/``total`` or elapsed/``time_budget``,
    whichever is larger, drawn by a :class:`StatusLine`, and the latest value of a training quantity
    named ``quantity`` (default "loss", the value minimised).
    """

    def __init__(
        self,
        total: float,
        time_budget: Optional[float],
        stream=None,
        width: int = 30,
        interval: float = 0.2,
        log_interval: float = 30.0,
        quantity: str = "loss",
    ):
        super().__init__(stream, interval, log_interval)
        self.total, self.time_budget, self.width, self.quantity = total, time_budget, width, quantity

    def _fraction(self, steps: int, elapsed: float) -> float:
        done = steps / self.total if np.isfinite(self.total) else 0.0
        if self.time_budget:
            done = max(done, elapsed / self.time_budget)
        return min(done, 1.0)

    def _of_total(self) -> str:
        return f"/{int(self.total)}" if np.isfinite(self.total) else ""

    def render(self, steps: int, value: float, elapsed: float) -> str:
        frac = self._fraction(steps, elapsed)
        filled = int(round(frac * self.width))
        return (
            f"|{'#' * filled}{'.' * (self.width - filled)}| {frac:4.0%} step {steps}{self._of_total()}"
            f"  {elapsed:6.1f} s  {self.quantity} {value:.4g}"
        )

    def update(self, steps: int, value: float, elapsed: float) -> None:
        if self.due(elapsed):
            self.write(self.render(steps, value, elapsed))

    def close(self, steps: int, value: float, elapsed: float, reason: Optional[str] = None) -> None:
        """
        Write the final line. With ``reason`` (why the run stopped, e.g. an optimiser's convergence
        message) the bar is drawn full and says "done" whatever the fraction of ``total``, so that a
        run that stopped early does not end on "2% step 21/1000".
        """
        if reason is None:
            self.write(self.render(steps, value, elapsed), final=True)
            return
        line = f"|{'#' * self.width}| done step {steps}{self._of_total()}  {elapsed:6.1f} s"
        line += f"  {self.quantity} {value:.4g}  {reason}"
        self.write(line, final=True)
