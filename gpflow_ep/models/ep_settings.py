"""Settings shared by every EP model: the options of the one EP engine."""

from dataclasses import dataclass, replace
from typing import Optional

from ..ep import CAVITY_CHOICES, CRITERIA, SCHEDULES
from .validation import check_choice, check_positive_int, check_range

EP_MODES = ("nested", "alternated")

#: default damping per schedule: parallel updates need some (0.8 as in GPstuff; the SEP paper uses 0.5),
#: sequential EP is classically undamped.
DEFAULT_DAMPING = {"parallel": 0.8, "sequential": 1.0}


@dataclass(frozen=True)
class EPSettings:
    """
    :param power: α ∈ (0, 1]; 1 is EP, α < 1 power EP.
    :param cavity: "fractional" (standard power EP, removes α of the site) or "full" (removes the
        whole site, the literal reading of Qi & Guo's App. C).
    :param schedule: "parallel" or "sequential".
    :param damping: ρ ∈ (0, 1], the weight of the new site; ``None`` uses the schedule's default.
    :param max_sweeps: the cap on sweeps of one EP run.
    :param tol: the convergence tolerance on the statistic chosen by ``criterion``.
    :param criterion: "sites" (no site natural parameter moves by more than ``tol`` in a sweep and
        none is skipped) or "alpha" (R = ‖α_t - α_{t-1}‖₂ ≤ ``tol``, Qi & Guo's rule).
    :param ep_mode: "nested" (the training loss re-runs EP to convergence, warm-started) or
        "alternated" (the loss uses the current sites; run :class:`gpflow_ep.optimizers.EP`).
    """

    power: float = 1.0
    cavity: str = "fractional"
    schedule: str = "parallel"
    damping: Optional[float] = None
    max_sweeps: int = 100
    tol: float = 1e-6
    ep_mode: str = "nested"
    criterion: str = "sites"

    def __post_init__(self):
        check_range(self.power, "power", 0.0, 1.0)
        check_choice(self.cavity, "cavity", CAVITY_CHOICES)
        check_choice(self.schedule, "schedule", SCHEDULES)
        if self.damping is not None:
            check_range(self.damping, "damping", 0.0, 1.0)
        check_positive_int(self.max_sweeps, "max_sweeps")
        check_range(self.tol, "tol", 0.0, float("inf"), high_open=True)
        check_choice(self.ep_mode, "ep_mode", EP_MODES)
        check_choice(self.criterion, "criterion", CRITERIA)

    @property
    def resolved_damping(self) -> float:
        return DEFAULT_DAMPING[self.schedule] if self.damping is None else float(self.damping)

    def as_key(self) -> tuple:
        """The settings as plain values: a ``tf.function`` traces those by value, not by identity."""
        return (
            self.power,
            self.cavity,
            self.schedule,
            self.damping,
            self.max_sweeps,
            self.tol,
            self.ep_mode,
            self.criterion,
        )

    def updated(self, **changes) -> "EPSettings":
        """A copy with the given fields changed (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})
