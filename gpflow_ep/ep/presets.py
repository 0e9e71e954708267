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

The paper falls back to a moment-matching double loop when these updates do not converge. The
package's convergent double loop (``schedule="convergent"``, Hernández-Lobato & Hernández-Lobato 2011)
is that kind of algorithm, for α = 1, run eagerly; it is not part of the preset (a Student-t regression
on 100 points took more than 10 minutes in it), so a run that does not converge warns
(``EPConvergenceWarning``) and can be re-run with ``model.run_ep(schedule="convergent", power=1.0)``.
"""

from typing import Any, Dict

__all__ = ["robust_settings", "ROBUST_POWER", "ROBUST_DAMPING"]

#: α of the fractional updates
ROBUST_POWER = 0.5
#: ρ, the weight of the new site in a parallel update
ROBUST_DAMPING = 0.5


def robust_settings(
    power: float = ROBUST_POWER, damping: float = ROBUST_DAMPING, max_sweeps: int = 1000
) -> Dict[str, Any]:
    """
    The options of robust EP for a Student-t (or other non-log-concave) likelihood: parallel EP,
    fractional updates with ``power`` α, ``damping`` ρ, up to ``max_sweeps`` sweeps (damped
    fractional updates move the sites by less per sweep). Validated by :class:`EPSettings` when a
    model is built with them.
    """
    return dict(schedule="parallel", power=power, damping=damping, max_sweeps=max_sweeps)
