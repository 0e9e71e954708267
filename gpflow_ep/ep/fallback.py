r"""
Robust EP's schedule ``"robust"``: parallel EP that falls back to the convergent double loop when it
does not converge (Jylänki, Vanhatalo & Vehtari 2011, Sec. 5).

The run is the parallel schedule (:class:`~gpflow_ep.ep.schedules.ParallelSchedule`) with the given settings.
When it converges, that run is the result, unchanged. When it does not (``max_sweeps`` sweeps without
meeting ``tol``, or site updates skipped in its last sweep), the double loop of
:mod:`gpflow_ep.ep.double_loop` continues from its last sites with the same power α, up to
``max_sweeps`` outer steps, and its run is the result. Both parts are TensorFlow ops, so the schedule
compiles: ``model.run_ep()`` and the nested training loss (with ``gpflow.optimizers.Scipy`` or
Adam) run it inside one graph.

The :class:`~gpflow_ep.ep.EPRun`'s core is that of the part that produced the sites (the double loop's
measure, iterations and history when it ran); :class:`~gpflow_ep.ep.FallbackInfo` records whether the
double loop ran (``used_fallback``, set when it is started, whatever it then does), the parallel
phase's sweeps, measure and history, and the double loop's own record. ``num_skipped`` and
``num_rejected`` add up both parts.
"""

import tensorflow as tf

from .double_loop import check_double_loop_settings, run_double_loop
from .run import DoubleLoopInfo, EPRun, FallbackInfo
from .schedules import ParallelSchedule, Schedule, register_schedule

__all__ = ["FallbackSchedule", "used_fallback"]


def used_fallback(run: EPRun) -> tf.Tensor:
    """True (a boolean tensor) when the ``"robust"`` run ``run`` continued with the double loop (recorded)."""
    return run.used_fallback


def _no_double_loop(run: EPRun, max_outer: int) -> DoubleLoopInfo:
    """The double loop's record when it did not run: zeros, no steps."""
    zero, zeros = tf.constant(0), tf.zeros_like(run.precision)
    return DoubleLoopInfo(
        energies=tf.zeros([max_outer], run.precision.dtype),
        inner_steps=zero,
        partial_outer_steps=zero,
        active_site_bounds=zero,
        active_cavity_bounds=zero,
        outer_natural=zeros,
        outer_precision=zeros,
        kkt_residual=tf.zeros([], run.precision.dtype),
        stalled=tf.constant(False),
    )


class FallbackSchedule(Schedule):
    """The ``"robust"`` schedule (module docstring)."""

    needs_log_normaliser = True

    def __init__(self):
        self.parallel = ParallelSchedule()

    def check_settings(self, settings) -> None:
        check_double_loop_settings(settings)

    def run(self, algebra, factor, precision, natural_mean, settings) -> EPRun:
        first = self.parallel.run(algebra, factor, precision, natural_mean, settings)

        def info(used, double_loop: DoubleLoopInfo) -> FallbackInfo:
            return FallbackInfo(
                used_fallback=tf.constant(used),
                parallel_sweeps=first.sweeps,
                parallel_max_change=first.max_change,
                parallel_history=first.history,
                parallel_skipped_last_sweep=first.info.skipped_last_sweep,
                double_loop=double_loop,
            )

        def parallel_only() -> EPRun:
            return first._replace(info=info(False, _no_double_loop(first, settings.max_sweeps)))

        def with_fallback() -> EPRun:
            second = run_double_loop(algebra, factor, first.precision, first.natural_mean, settings)
            return second._replace(
                num_skipped=first.num_skipped + second.num_skipped,
                num_rejected=first.num_rejected + second.num_rejected,
                info=info(True, second.info),
            )

        return tf.cond(first.converged, parallel_only, with_fallback)


register_schedule("robust", FallbackSchedule())
