"""What :func:`~gpflow_ep.training.fit` returns (:class:`FitResult`)
and what its callbacks see (:class:`TrainingState`)."""

from dataclasses import dataclass, field
from typing import Any, List, Optional

import numpy as np

__all__ = ["FitResult", "TrainingState"]


@dataclass(repr=False)
class FitResult:
    """
    What :func:`fit` did: steps (counted from the start of training, so a run resumed from
    ``checkpoint_dir`` includes the restored ``initial_step``), epochs, wall time of this call, the
    loss of every step of this call (``losses``, one float per step), site updates skipped, and
    ``rejected_steps``: steps not applied because their loss, gradient or new parameters were not
    finite (the model kept its last finite state; :func:`fit` warns when there are any).

    For sparse EP models (``SEPGPC``, ``SEPMGPC``) a step's loss is the minibatch estimate of
    -log Z_EP - log p(θ) on the scale of the full data (``SEPGPC.minibatch_log_marginal_likelihood``),
    comparable with SVGP's -ELBO; for the other models it is their training loss.

    Its ``repr`` is a one-line summary (the final loss and the number of losses, not the list).
    """

    steps: int = 0
    epochs: float = 0.0
    seconds: float = 0.0
    losses: List[float] = field(default_factory=list)
    skipped_site_updates: int = 0
    rejected_steps: int = 0
    initial_step: int = 0

    @property
    def final_loss(self) -> float:
        """The loss of the last step of this call (NaN if it took none)."""
        return self.losses[-1] if self.losses else float("nan")

    def __repr__(self) -> str:
        resumed = f", initial_step={self.initial_step}" if self.initial_step else ""
        return (
            f"FitResult(steps={self.steps}, epochs={self.epochs:.4g}, seconds={self.seconds:.3g}, "
            f"final_loss={self.final_loss:.6g}, losses=<{len(self.losses)} values>, "
            f"skipped_site_updates={self.skipped_site_updates}, rejected_steps={self.rejected_steps}{resumed})"
        )


@dataclass
class TrainingState:
    """
    What the callbacks of :func:`fit` see and may update: the ``model``, the :class:`FitResult`
    being filled (``result``: steps done, losses, counts), the step at which training stops
    (``limit``, ∞ when only a ``time_budget`` in seconds ends it), the seconds since the first step
    started (``elapsed``) and the latest step's :class:`~gpflow_ep.training.StepResult` (``outcome``,
    tensors; None before the first step).
    """

    model: Any
    result: FitResult
    limit: float = np.inf
    time_budget: Optional[float] = None
    elapsed: float = 0.0
    outcome: Any = None

    @property
    def steps(self) -> int:
        """Steps done, counted from the start of training (restored steps included)."""
        return self.result.steps

    @property
    def last_loss(self) -> float:
        """The loss of the latest step of this call (NaN before the first)."""
        return self.result.final_loss

    def record(self, outcome, elapsed: float) -> None:
        """Count a step that ran: its loss and skipped site updates into ``result``."""
        self.outcome, self.elapsed = outcome, elapsed
        self.result.steps += 1
        self.result.losses.append(float(outcome[0]))
        self.result.skipped_site_updates += int(outcome[1])
