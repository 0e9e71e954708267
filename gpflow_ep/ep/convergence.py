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

__all__ = ["EPConvergenceWarning", "non_convergence_message", "warn_if_not_converged"]


class EPConvergenceWarning(UserWarning):
    """EP stopped (at ``max_sweeps``, or at a non-finite step) without meeting its tolerance."""


#: what each convergence measure is, as the message words it
_MEASURES = {
    "sites": "the largest change of a site natural parameter in the last sweep",
    "alpha": "R = ‖a_t − a_(t−1)‖₂ over the per-site statistics in the last sweep",
    "moments": "the largest change of a marginal mean or variance of q in the last sweep",
}


def non_convergence_message(run, settings, where: str = "") -> str:
    """
    The warning text for a run that did not converge: sweeps run, the measure and its last value,
    the tolerance, skipped updates, and what to try. ``run`` is an :class:`~gpflow_ep.ep.EPRun`
    (eager tensors), ``settings`` the :class:`~gpflow_ep.ep.EPSettings` it ran with and ``where``
    the caller, e.g. ``"EPGPC.run_ep"``.
    """
    where = f" ({where})" if where else ""
    sweeps = int(run.sweeps.numpy())
    change = float(run.max_change.numpy())
    if settings.schedule == "convergent":
        return (
            f"The convergent double loop{where} stopped after {sweeps} outer iterations (max_sweeps="
            f"{settings.max_sweeps}) without converging: the energy fell by {change:.3g} in the last one; "
            f"it stops when it falls by less than tol·max(1, |E|) (tol={settings.tol:g}) three times running. "
            "Its energy can keep falling slowly (sublinearly) long after q's moments have settled, while the "
            "marginal precisions of weights pinned at zero grow without bound: check whether q still moves, "
            "raise max_sweeps or tol, or use regular EP (a damped parallel or sequential schedule) where it converges."
        )
    skipped = int(run.num_skipped.numpy())
    skipped_last = int(run.skipped_last_sweep.numpy())
    skips = f"; {skipped} site updates skipped ({skipped_last} in the last sweep)" if skipped else ""
    return (
        f"EP{where} did not converge in {sweeps} sweeps (max_sweeps={settings.max_sweeps}, schedule="
        f"'{settings.schedule}', damping={settings.damping or 'default'}): {_MEASURES[settings.criterion]} "
        f"(criterion='{settings.criterion}') was {change:.3g}, above tol={settings.tol:g}{skips}. "
        "Try more damping (a smaller damping=), a larger max_sweeps or tol, or schedule='sequential'; "
        "the sites are those of the last sweep."
    )


def warn_if_not_converged(run, settings, where: str = "", stacklevel: int = 3) -> None:
    """
    Issue an :class:`EPConvergenceWarning` (:func:`non_convergence_message`) when ``run`` did not
    converge. Does nothing inside a compiled function (see the module docstring).
    """
    if not tf.executing_eagerly() or bool(run.converged.numpy()):
        return
    warnings.warn(non_convergence_message(run, settings, where), EPConvergenceWarning, stacklevel=stacklevel)
