r"""
The EP settings a full-GP model (:class:`~gpflow_ep.models.EPGP` and the models built on it) runs
when the user names no schedule.

For a log-concave likelihood (:func:`gpflow_ep.likelihoods.is_log_concave`: probit, logistic,
Gaussian, Laplace, Poisson, hinge, ...) the default is damped parallel EP (``schedule="parallel"``).
For any other (GPflow's ``StudentT``, ``NoisyStep``, GPflow's jittered ``Bernoulli``/``Ordinal``, an
unregistered likelihood) it is ``schedule="robust"``: the same damped parallel EP, and, when that has not
converged after ``max_sweeps`` sweeps, the convergent double loop of the same power EP from its sites
(:mod:`gpflow_ep.ep.fallback`; Jylänki, Vanhatalo & Vehtari 2011, Sec. 5). Where parallel EP converges
the two give the same sites, evidence and cost; where it does not (negative sites make parallel EP
oscillate) the fallback reaches the fixed point, so a nested training loss under
``gpflow.optimizers.Scipy`` does not silently optimise a non-converged evidence. Power and damping
stay the model's (EP's fixed point, α = 1, unless ``power`` is given); ``max_sweeps`` defaults to
:data:`NOT_LOG_CONCAVE_MAX_SWEEPS` for these likelihoods (see the reliability guide for the
measurement behind both numbers, ``benchmarks/nested_default.py``).

A ``schedule`` given by the user is always kept, and so is every other option; options the double
loop does not run (``relaxation``, ``cavity="full"``, ``criterion="alpha"``) keep parallel EP, at
construction and in one ``run_ep(**overrides)`` call alike (:func:`run_settings`), so ``run_ep(**o)``
runs what a model built with ``**o`` runs.
"""

from typing import Any, Dict

from gpflow.likelihoods import Likelihood

from ..ep import EPSettings, get_schedule
from ..likelihoods import is_log_concave

__all__ = ["default_ep_settings", "run_settings", "NOT_LOG_CONCAVE_SCHEDULE", "NOT_LOG_CONCAVE_MAX_SWEEPS"]

#: the schedule of a likelihood that is not log-concave, when the user names none
NOT_LOG_CONCAVE_SCHEDULE = "robust"
#: its cap on sweeps (of parallel EP, then on outer steps of the double loop), when the user gives none
NOT_LOG_CONCAVE_MAX_SWEEPS = 100


def _runs_the_fallback(settings: EPSettings) -> bool:
    """Whether the robust schedule runs ``settings`` (its own check: the options its double loop refuses)."""
    try:
        get_schedule(NOT_LOG_CONCAVE_SCHEDULE).check_settings(settings)
    except ValueError:
        return False
    return True


def default_ep_settings(likelihood: Likelihood, ep_options: Dict[str, Any]) -> EPSettings:
    """The settings of a full-GP model with ``likelihood`` built with the EP options ``ep_options``."""
    settings = EPSettings().updated(**ep_options)
    if ep_options.get("schedule") is None and not is_log_concave(likelihood):
        robust = settings.updated(
            schedule=NOT_LOG_CONCAVE_SCHEDULE, max_sweeps=ep_options.get("max_sweeps") or NOT_LOG_CONCAVE_MAX_SWEEPS
        )
        if _runs_the_fallback(robust):
            return robust
    return settings


def run_settings(settings: EPSettings, overrides: Dict[str, Any], schedule_given: bool) -> EPSettings:
    """
    The settings of one run with ``overrides`` of a model whose settings are ``settings``: when the
    schedule is the default one for a non-log-concave likelihood (``schedule_given`` False) and the
    overrides ask for an option the double loop does not run, parallel EP.
    """
    updated = settings.updated(**overrides)
    defaulted = not schedule_given and overrides.get("schedule") is None
    if defaulted and updated.schedule == NOT_LOG_CONCAVE_SCHEDULE and not _runs_the_fallback(updated):
        return updated.updated(schedule="parallel")
    return updated
