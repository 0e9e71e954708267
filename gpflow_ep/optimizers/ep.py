"""
The EP optimiser: updates a model's sites the way ``gpflow.optimizers.NaturalGradient`` updates
``q_mu``/``q_sqrt``, with hyper-parameters held fixed.
"""

import warnings
from dataclasses import dataclass, field
from typing import List, Optional

from ..ep import CRITERIA, SCHEDULES
from ..models.validation import check_choice, check_positive_int, check_range


class EPConvergenceWarning(UserWarning):
    """EP stopped at ``max_sweeps`` without meeting its tolerance."""


@dataclass(frozen=True)
class EPResult:
    """
    :param converged: the largest site change in the last sweep was ≤ ``tol`` and no site was
        skipped in it.
    :param sweeps: sweeps run.
    :param max_change: the largest change of a site natural parameter in the last sweep.
    :param num_skipped: site updates skipped (improper cavity or tilted distribution), all sweeps.
    :param num_rejected: parallel sweeps rejected because their sites gave an improper posterior.
    :param log_marginal_likelihood: log Z_EP at the final sites.
    :param history: the convergence statistic of every sweep (-1 for a rejected parallel sweep).
    """

    converged: bool
    sweeps: int
    max_change: float
    num_skipped: int
    num_rejected: int
    log_marginal_likelihood: float
    history: List[float] = field(default_factory=list)


class EP:
    """
    Run EP on a model to convergence (or ``max_sweeps``) at fixed hyper-parameters.

        result = gpflow_ep.optimizers.EP(damping=0.5).minimize(model)

    :param damping: ρ ∈ (0, 1], weight of the new site (1 = undamped); ``None`` = model default.
    :param max_sweeps: cap on sweeps; ``None`` = the model's setting.
    :param tol: convergence tolerance on the site change; ``None`` = the model's setting.
    :param schedule: "parallel" or "sequential"; ``None`` = the model's setting.
    :param criterion: "sites" or "alpha" (see :mod:`gpflow_ep.ep.schedules`); ``None`` = model's.
    :param warn: emit an :class:`EPConvergenceWarning` when EP does not converge.
    """

    def __init__(
        self,
        damping: Optional[float] = None,
        max_sweeps: Optional[int] = None,
        tol: Optional[float] = None,
        schedule: Optional[str] = None,
        criterion: Optional[str] = None,
        warn: bool = True,
    ):
        if damping is not None:
            check_range(damping, "damping", 0.0, 1.0)
        if max_sweeps is not None:
            check_positive_int(max_sweeps, "max_sweeps")
        if tol is not None:
            check_range(tol, "tol", 0.0, float("inf"), high_open=True)
        if schedule is not None:
            check_choice(schedule, "schedule", SCHEDULES)
        if criterion is not None:
            check_choice(criterion, "criterion", CRITERIA)
        self.damping, self.max_sweeps, self.tol, self.schedule = damping, max_sweeps, tol, schedule
        self.criterion = criterion
        self.warn = warn

    def minimize(self, model, data=None) -> EPResult:
        """
        Update ``model``'s sites; the model must provide ``run_ep`` and ``log_marginal_likelihood``.

        :param data: for models that do not hold their data (``SEPGPC``): the (X, Y) to run EP on.
        """
        args = () if data is None else (data,)
        run = model.run_ep(
            *args,
            damping=self.damping,
            max_sweeps=self.max_sweeps,
            tol=self.tol,
            schedule=self.schedule,
            criterion=self.criterion,
        )
        sweeps = int(run.sweeps.numpy())
        result = EPResult(
            converged=bool(run.converged.numpy()),
            sweeps=sweeps,
            max_change=float(run.max_change.numpy()),
            num_skipped=int(run.num_skipped.numpy()),
            num_rejected=int(run.num_rejected.numpy()),
            log_marginal_likelihood=float(model.log_marginal_likelihood(*args).numpy()),
            history=run.history.numpy()[:sweeps].tolist(),
        )
        if self.warn and not result.converged:
            warnings.warn(
                f"EP did not converge in {result.sweeps} sweeps (last change "
                f"{result.max_change:.3g}, {result.num_skipped} skipped updates)",
                EPConvergenceWarning,
                stacklevel=2,
            )
        return result
