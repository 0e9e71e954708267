"""
Reporting an EP run that did not converge: :class:`EPConvergenceWarning` and the message that says
what was measured, against which tolerance, and what to try.

Every public path that runs EP to convergence eagerly (``model.run_ep()`` of each EP model, the
nested training loss when it is evaluated eagerly, :class:`gpflow_ep.optimizers.EP`) calls
:func:`warn_if_not_converged` on its :class:`~gpflow_ep.ep.EPRun`. Inside a compiled function (a
``tf.function`` training loss) a Python warning cannot be issued per call, as the Python code runs
only while the function is traced: there the outcome of every run is in ``model.ep_diagnostics``
(``converged``, ``sweeps``, ``max_change``), which monitor tasks log.
"""

import warnings

import tensorflow as tf

from .schedules import get_schedule

__all__ = ["EPConvergenceWarning", "non_convergence_message", "warn_if_not_converged"]


class EPConvergenceWarning(UserWarning):
    """EP stopped (at ``max_sweeps``, or at a non-finite step) without meeting its tolerance."""


def non_convergence_message(run, settings, where: str = "") -> str:
    """
    The warning text for a run that did not converge, as its schedule words it
    (:meth:`~gpflow_ep.ep.Schedule.non_convergence_message`): sweeps run, the measure and its last
    value, the tolerance, skipped updates, and what to try. ``run`` is an :class:`~gpflow_ep.ep.EPRun`
    (eager tensors), ``settings`` the :class:`~gpflow_ep.ep.EPSettings` it ran with and ``where``
    the caller, e.g. ``"EPGPC.run_ep"``.
    """
    return get_schedule(settings.schedule).non_convergence_message(run, settings, where)


def warn_if_not_converged(run, settings, where: str = "", stacklevel: int = 3) -> None:
    """
    Issue an :class:`EPConvergenceWarning` (:func:`non_convergence_message`) when ``run`` did not
    converge. Does nothing inside a compiled function (see the module docstring).
    """
    if not tf.executing_eagerly() or bool(run.converged.numpy()):
        return
    warnings.warn(non_convergence_message(run, settings, where), EPConvergenceWarning, stacklevel=stacklevel)
