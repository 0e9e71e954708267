"""
The EP optimiser: updates a model's sites the way ``gpflow.optimizers.NaturalGradient`` updates
``q_mu``/``q_sqrt``, with hyper-parameters held fixed.
"""

import warnings
from dataclasses import dataclass, field, fields
from typing import List

from ..ep import EPSettings, get_schedule
from ..ep.convergence import EPConvergenceWarning, non_convergence_message
from ..summaries import summary_repr
from ..validation import check_positive_int

__all__ = ["EP", "EPResult", "EPConvergenceWarning"]  # the warning lives in gpflow_ep.ep.convergence


@dataclass(frozen=True)
class EPResult:
    """
    The last run's :class:`~gpflow_ep.ep.EPRun` as Python values (its fields are documented in
    :mod:`gpflow_ep.ep.run`), with the evidence and the back-off.

    :param converged: the convergence measure met ``tol`` (and no site was skipped in the last sweep).
    :param sweeps: sweeps, or outer steps of a double loop.
    :param measure: the convergence measure's name ("sites", "alpha", "moments" or "mismatch").
    :param max_change: its value at the end.
    :param num_skipped: site updates skipped (improper cavity or tilted distribution), all iterations.
    :param num_rejected: steps undone because they gave an improper posterior.
    :param used_fallback: robust EP's double loop took over from parallel EP.
    :param log_marginal_likelihood: log Z_EP at the final sites.
    :param history: the measure after every iteration (-1 for a rejected parallel sweep).
    :param damping: the damping of the run reported (smaller than requested after a back-off).
    :param attempts: runs made (1 without back-off).
    """

    converged: bool
    sweeps: int
    measure: str
    max_change: float
    num_skipped: int
    num_rejected: int
    used_fallback: bool
    log_marginal_likelihood: float
    history: List[float] = field(default_factory=list)
    damping: float = 1.0
    attempts: int = 1

    def __repr__(self) -> str:  # one line: the values, and the history's length (it stays ``.history``)
        return summary_repr(self, [f.name for f in fields(self)])


class EP:
    """
    Run EP on a model to convergence (or ``max_sweeps``) at fixed hyper-parameters.

        result = gpflow_ep.optimizers.EP(damping=0.5).minimize(model)

    :param ep_options: options of :class:`~gpflow_ep.ep.EPSettings` that override the model's
        ``ep_settings`` for these runs (e.g. ``damping``, ``max_sweeps``, ``tol``, ``schedule``,
        ``criterion``); omitted or ``None`` options are the model's. Validated here, at once.
    :param warn: emit one :class:`~gpflow_ep.ep.EPConvergenceWarning` when EP does not converge
        (the model's ``run_ep`` warnings of each attempt are replaced by it).
    :param backoff: automatic damping back-off: when a run does not converge, put the model's EP
        state back as it was before the run and run again with half the damping, up to this many
        times (0: off). The result reports the damping of the last run and the number of runs.
    """

    def __init__(self, *, warn: bool = True, backoff: int = 0, **ep_options):
        settings = EPSettings().updated(**ep_options)  # validates names and values
        get_schedule(settings.schedule)  # and that the schedule is registered
        self.ep_options = {k: v for k, v in ep_options.items() if v is not None}
        self.warn = warn
        self.backoff = 0 if backoff == 0 else check_positive_int(backoff, "backoff")

    def minimize(self, model, data=None) -> EPResult:
        """
        Update ``model``'s sites; the model must provide ``run_ep`` and ``log_marginal_likelihood``.

        :param data: for models that do not hold their data (``SEPGPC``): the (X, Y) to run EP on.
        """
        args = () if data is None else (data,)
        options = dict(self.ep_options)
        damping = model.ep_settings.updated(**options).damping
        options.pop("damping", None)
        state = [v for v in model.variables if not v.trainable]  # sites, q and diagnostics
        before = [v.numpy() for v in state] if self.backoff else []
        for attempt in range(1, self.backoff + 2):
            with warnings.catch_warnings():  # one warning below, for the last attempt
                warnings.simplefilter("ignore", EPConvergenceWarning)
                run = model.run_ep(*args, **options, damping=damping)
            if bool(run.converged.numpy()) or attempt > self.backoff:
                break
            for variable, value in zip(state, before):
                variable.assign(value)
            damping /= 2.0
        sweeps = int(run.sweeps.numpy())
        result = EPResult(
            converged=bool(run.converged.numpy()),
            sweeps=sweeps,
            measure=run.measure_name,
            max_change=float(run.max_change.numpy()),
            num_skipped=int(run.num_skipped.numpy()),
            num_rejected=int(run.num_rejected.numpy()),
            used_fallback=bool(run.used_fallback.numpy()),
            log_marginal_likelihood=float(model.log_marginal_likelihood(*args).numpy()),
            history=run.history.numpy()[:sweeps].tolist(),
            damping=float(damping),
            attempts=attempt,
        )
        if self.warn and not result.converged:
            tried = f", after {attempt} runs with damping down to {damping:.3g}" if attempt > 1 else ""
            settings = model.ep_settings.updated(**options, damping=damping)
            message = non_convergence_message(run, settings, f"optimizers.EP{tried}")
            warnings.warn(message, EPConvergenceWarning, stacklevel=2)
        return result
