"""
Reporting an EP run that did not converge: :class:`EPConvergenceWarning` and the one message, built
from the run's record (:class:`~gpflow_ep.ep.EPRun`) alone: the iterations, the measure and its last
value against ``tol``, skipped and rejected updates, the schedule's own part (a fallback that ran, a
stalled double loop, active bounds) and what to try.

Every public path that runs EP to convergence eagerly (``model.run_ep()`` of each EP model, the
nested training loss when it is evaluated eagerly, :class:`gpflow_ep.optimizers.EP`) calls
:func:`warn_if_not_converged`. Inside a compiled function (a ``tf.function`` training loss) the
models warn from the graph at run time (once until ``model.ep_diagnostics.reset()``), and
``model.ep_diagnostics`` counts every run that did not converge.
"""

import warnings

import tensorflow as tf

from .run import MEASURES, DoubleLoopInfo, EPRun, FallbackInfo, SweepInfo

__all__ = ["EPConvergenceWarning", "non_convergence_message", "warn_if_not_converged"]


class EPConvergenceWarning(UserWarning):
    """EP stopped (at ``max_sweeps``, or at a non-finite step) without meeting its tolerance."""


def _double_loop_part(info: DoubleLoopInfo) -> str:
    parts = [f"{int(info.inner_steps)} inner steps"]
    if int(info.partial_outer_steps):
        parts.append(f"{int(info.partial_outer_steps)} site outer steps stopped short to keep a cavity proper")
    bounds = int(info.active_site_bounds) + int(info.active_cavity_bounds)
    if bounds:
        parts.append(
            f"{int(info.active_site_bounds)} sites at τ = ε and {int(info.active_cavity_bounds)} at the cavity bound"
        )
    if bool(info.stalled):
        parts.append("it stopped because no valid step was left (an invalid start or steps shrunk below 1e-4)")
    return "; ".join(parts)


def _advice(run: EPRun, settings) -> str:
    if isinstance(run.info, SweepInfo):
        return (
            "Try more damping (a smaller damping=), a larger max_sweeps or tol, or schedule='robust' (parallel "
            "EP that falls back to the convergent double loop); the sites are those of the last sweep."
        )
    if run.measure_name == "moments":
        return "Raise max_sweeps or tol; the sites are the last inner loop's."
    if run.measure_name == "average site":
        return "Try more damping (a smaller damping=), a larger max_sweeps or tol; q is that of the last sweep."
    return (
        "Raise max_sweeps or tol, or use criterion='moments' to stop when q has stopped moving (the mismatch "
        "can stay above tol where a bound is active or a marginal variance shrinks without bound); the sites "
        "are the last inner loop's."
    )


def non_convergence_message(run: EPRun, settings, where: str = "") -> str:
    """
    The warning text for a ``run`` (eager tensors) that did not converge, built from the record:
    iterations, the measure (:data:`~gpflow_ep.ep.run.MEASURES`) and its last value, ``tol``, skipped
    and rejected updates, the schedule's own record and what to try. ``settings`` are the
    :class:`~gpflow_ep.ep.EPSettings` it ran with and ``where`` the caller, e.g. ``"EPGPC.run_ep"``.
    """
    where = f" ({where})" if where else ""
    info = run.info
    double_loop = isinstance(info, DoubleLoopInfo) or (isinstance(info, FallbackInfo) and bool(info.used_fallback))
    unit = "outer steps" if double_loop else "sweeps"
    name, meaning = MEASURES[int(run.measure)]
    text = (
        f"EP{where} did not converge in {int(run.sweeps)} {unit} (schedule='{settings.schedule}', "
        f"max_sweeps={settings.max_sweeps}, power={settings.power:g}, damping={settings.damping:g}): {meaning} "
        f"(measure '{name}') was {float(run.max_change):.3g}, above tol={settings.tol:g}"
    )
    if isinstance(info, FallbackInfo) and bool(info.used_fallback):
        text += (
            f". Parallel EP ran first and did not converge in {int(info.parallel_sweeps)} sweeps (its measure "
            f"was {float(info.parallel_max_change):.3g}); the double loop continued from its sites: "
            f"{_double_loop_part(info.double_loop)}"
        )
    elif isinstance(info, DoubleLoopInfo):
        text += f"; {_double_loop_part(info)}"
    skipped, rejected = int(run.num_skipped), int(run.num_rejected)
    if skipped or rejected:
        last = f" ({int(info.skipped_last_sweep)} in the last sweep)" if isinstance(info, SweepInfo) else ""
        text += f"; {skipped} site updates skipped{last}, {rejected} steps rejected"
    return f"{text}. {_advice(run, settings)}"


def warn_if_not_converged(run: EPRun, settings, where: str = "", stacklevel: int = 3) -> None:
    """
    Issue an :class:`EPConvergenceWarning` (:func:`non_convergence_message`) when ``run`` did not
    converge. Does nothing inside a compiled function (see the module docstring).
    """
    if not tf.executing_eagerly() or bool(run.converged.numpy()):
        return
    warnings.warn(non_convergence_message(run, settings, where), EPConvergenceWarning, stacklevel=stacklevel)
