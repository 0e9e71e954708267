r"""
Named presets of :class:`~gpflow_ep.ep.EPSettings` options, passed to a model as keyword arguments::

    model = EPGP(data, kernel, gpflow.likelihoods.StudentT(), **gpflow_ep.ep.robust_settings())

:func:`robust_settings` is the robust EP for non-log-concave likelihoods (Student-t regression) of
Jylänki, Vanhatalo & Vehtari (2011, JMLR 12, "Robust Gaussian process regression with a Student-t
likelihood", Sec. 4–5): parallel EP with damped, fractional (power-EP) site updates. A fractional
update with α < 1 tempers the likelihood in the tilted distribution, p(y | f)^α, which keeps the tilted
distributions of outlying points unimodal far more often and the site precisions moderate, and damping
with ρ < 1 removes the oscillations of parallel updates; the fixed point is that of power EP with
α (Minka 2004), whose evidence is the α-energy of :mod:`gpflow_ep.ep.energy`.

The paper falls back to a moment-matching double loop when these updates do not converge, and so
does the preset: with ``fallback=True`` (default) its schedule is ``"robust"``
(:mod:`gpflow_ep.ep.fallback`), which runs the damped fractional parallel EP above and, when it has not
converged after ``max_sweeps`` sweeps, continues from its sites with the engine's double loop
(:mod:`gpflow_ep.ep.double_loop`, without the box, for the same α: inner loop the parallel
moment-matching update with the cavities held fixed and an adaptive step size that keeps its convex
objective decreasing; outer loop the cavities' moments set to the tilted moments; the energy never
increases). Where parallel EP converges the result is exactly the parallel run's; the run records
whether the fallback ran (``run.used_fallback``, :class:`~gpflow_ep.ep.FallbackInfo`). Both parts are
TensorFlow ops, so the preset works in ``model.run_ep()`` and inside the nested training loss
(``gpflow.optimizers.Scipy``, Adam), including when the Student-t degrees of freedom ν are learned.
``fallback=False`` gives parallel EP alone.

PC-EP (``schedule="convergent"``, Hernández-Lobato & Hernández-Lobato 2011) is the same loop with a
box that keeps every site precision ≥ ε; a Student-t fixed point can have negative ones, so the
fallback runs without it.
"""

from typing import Any, Dict

__all__ = ["robust_settings", "ROBUST_POWER", "ROBUST_DAMPING"]

#: α of the fractional updates
ROBUST_POWER = 0.5
#: ρ, the weight of the new site in a parallel update
ROBUST_DAMPING = 0.5


def robust_settings(
    power: float = ROBUST_POWER,
    damping: float = ROBUST_DAMPING,
    max_sweeps: int = 1000,
    fallback: bool = True,
) -> Dict[str, Any]:
    """
    The options of robust EP for a Student-t (or other non-log-concave) likelihood: parallel EP,
    fractional updates with ``power`` α, ``damping`` ρ, up to ``max_sweeps`` sweeps (damped
    fractional updates move the sites by less per sweep), and with ``fallback`` (default) the
    moment-matching double loop, for up to ``max_sweeps`` outer steps, when parallel EP does not
    converge (module docstring). Validated by :class:`EPSettings` when a model is built with them.
    """
    if not isinstance(fallback, bool):
        raise ValueError(f"fallback must be True or False; got {fallback!r}")
    schedule = "robust" if fallback else "parallel"
    return dict(schedule=schedule, power=power, damping=damping, max_sweeps=max_sweeps)
