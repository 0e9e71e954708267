r"""
Robust EP's schedule ``"robust"``: damped fractional parallel EP that falls back to the convergent
moment-matching double loop when it does not converge (Jylänki, Vanhatalo & Vehtari 2011, Sec. 5).

The run is the parallel schedule (:class:`~gpflow_ep.ep.ParallelSchedule`) with the given settings.
When it converges, that run is the result, unchanged. When it does not (``max_sweeps`` sweeps without
meeting ``tol``, or site updates skipped in its last sweep), the double loop of
:mod:`gpflow_ep.ep.power_double_loop` continues from its last sites with the same power α, up to
``max_sweeps`` outer steps, and its run is the result. Both parts are TensorFlow ops, so the schedule
compiles: ``model.run_ep()`` and the nested training loss (with ``gpflow.optimizers.Scipy`` or
Adam) run it inside one graph.

The :class:`~gpflow_ep.ep.EPRun` says which part produced it: ``sweeps`` is the parallel sweeps plus
the double loop's outer steps, so ``sweeps > max_sweeps`` exactly when the fallback ran
(:func:`used_fallback`); ``history`` [2 · max_sweeps] is the parallel run's convergence statistic per
sweep followed by the double loop's energies (zeros when it did not run); ``num_skipped`` and
``num_rejected`` add up both parts; ``converged``, ``max_change`` and the sites are the last part's.
"""

import tensorflow as tf

from .power_double_loop import run_power_double_loop
from .schedules import EPRun, ParallelSchedule, Schedule, register_schedule

__all__ = ["FallbackSchedule", "used_fallback"]


def used_fallback(run: EPRun, settings) -> tf.Tensor:
    """True (a boolean tensor) when the ``"robust"`` run ``run`` continued with the double loop."""
    return run.sweeps > settings.max_sweeps


class FallbackSchedule(Schedule):
    """The ``"robust"`` schedule (module docstring)."""

    needs_log_normaliser = True

    def __init__(self):
        self.parallel = ParallelSchedule()

    def run(self, algebra, factor, precision, natural_mean, settings) -> EPRun:
        first = self.parallel.run(algebra, factor, precision, natural_mean, settings)
        zeros = tf.zeros_like(first.history)

        def parallel_only() -> EPRun:
            return first._replace(history=tf.concat([first.history, zeros], axis=0))

        def with_fallback() -> EPRun:
            second = run_power_double_loop(algebra, factor, first.precision, first.natural_mean, settings)
            return second._replace(
                sweeps=first.sweeps + second.sweeps,
                num_skipped=first.num_skipped + second.num_skipped,
                num_rejected=first.num_rejected + second.num_rejected,
                history=tf.concat([first.history, second.history], axis=0),
            )

        return tf.cond(first.converged, parallel_only, with_fallback)

    def non_convergence_message(self, run, settings, where: str = "") -> str:
        where = f" ({where})" if where else ""
        return (
            f"Robust EP{where}: parallel EP did not converge in max_sweeps={settings.max_sweeps} sweeps and the "
            f"moment-matching double loop that continued from its sites stopped after "
            f"{int(run.sweeps.numpy()) - settings.max_sweeps} outer steps with q's marginals, the tilted "
            f"distributions and the outer Gaussians {float(run.max_change.numpy()):.3g} apart (scale-free), "
            f"above tol={settings.tol:g}. Raise max_sweeps or tol; the sites are the double loop's last."
        )


register_schedule("robust", FallbackSchedule())
