"""
The EP optimiser: updates a model's sites the way ``gpflow.optimizers.NaturalGradient`` updates
``q_mu``/``q_sqrt``, with hyper-parameters held fixed.
"""

import warnings
from dataclasses import dataclass, field
from typing import List

from ..ep import EPSettings


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

    :param ep_options: options of :class:`~gpflow_ep.ep.EPSettings` that override the model's
        ``ep_settings`` for these runs (e.g. ``damping``, ``max_sweeps``, ``tol``, ``schedule``,
        ``criterion``); omitted or ``None`` options are the model's. Validated here, at once.
    :param warn: emit an :class:`EPConvergenceWarning` when EP does not converge.
    """

    def __init__(self, *, warn: bool = True, **ep_options):
        EPSettings().updated(**ep_options)  # validates names and values
        self.ep_options = {k: v for k, v in ep_options.items() if v is not None}
        self.warn = warn

    def minimize(self, model, data=None) -> EPResult:
        """
        Update ``model``'s sites; the model must provide ``run_ep`` and ``log_marginal_likelihood``.

        :param data: for models that do not hold their data (``SEPGPC``): the (X, Y) to run EP on.
        """
        args = () if data is None else (data,)
        run = model.run_ep(*args, **self.ep_options)
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
