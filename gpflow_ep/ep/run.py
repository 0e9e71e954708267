r"""
:class:`EPRun`, the record of one EP run, the same for every schedule, and the schedules' own parts
of it.

**The core** (fields of :class:`EPRun`) means the same whichever schedule ran:

==================  ===========================================================================
``precision``,      the sites τ, ν [N, 1] at the end (the last accepted state: finite, and q proper)
``natural_mean``
``converged``       [] bool: ``max_change`` ≤ ``settings.tol`` (and, for the sweeping schedules, no site
                    update skipped in the last sweep)
``sweeps``          [] int: iterations of the loop that produced the sites — sweeps of parallel or
                    sequential EP, outer steps of the double loop (the name model diagnostics use)
``measure``         [] int: which convergence measure ``max_change`` is, an index into :data:`MEASURES`
                    (its name: :attr:`EPRun.measure_name`)
``max_change``      [] the measure's value at the end, compared with ``tol``
``history``         [max_sweeps] the measure after each iteration (0 after the last; -1 for a parallel
                    sweep that was undone)
``num_skipped``     [] int: site updates skipped, all iterations (an improper cavity or tilted
                    distribution: the site is left as it was)
``num_rejected``    [] int: steps undone as a whole because they gave an improper or non-finite q
                    (parallel sweeps, inner steps of the double loop)
``dual``            [N, 1] ∂log Z_i/∂(cavity mean) at each site's latest update
``relaxation``      [N, 1] relaxed EP's relaxation precisions b (zeros otherwise)
``info``            the schedule's own record: :class:`SweepInfo`, :class:`DoubleLoopInfo` or
                    :class:`FallbackInfo`
==================  ===========================================================================

A run's non-convergence message is built from this record alone
(:func:`gpflow_ep.ep.non_convergence_message`).
"""

from typing import NamedTuple, Tuple

import tensorflow as tf

from ..summaries import summary_repr

__all__ = ["EPRun", "SweepInfo", "DoubleLoopInfo", "FallbackInfo", "MEASURES", "measure_code"]

#: the convergence measures, by code: (name, what it is)
MEASURES: Tuple[Tuple[str, str], ...] = (
    ("sites", "the largest change of a site natural parameter (τ or ν) in the last sweep"),
    ("alpha", "R = ‖a_t − a_(t−1)‖₂ over the per-site statistics a_i = ∂log Z_i/∂(cavity mean) in the last sweep"),
    ("moments", "the largest change of a marginal mean or variance of q over the last iteration"),
    (
        "mismatch",
        "the largest scale-free distance max(|m − m'|/√s', |s/s' − 1|) between q's marginals, the tilted "
        "distributions and the outer Gaussians (where a bound is active, between the moments its KKT "
        "conditions match)",
    ),
    ("average site", "the largest change of a natural parameter of the whitened average site in the last sweep"),
)


def measure_code(name: str) -> int:
    """The code of the measure called ``name`` in :data:`MEASURES`."""
    return [n for n, _ in MEASURES].index(name)


class SweepInfo(NamedTuple):
    """What the sweeping schedules ("parallel", "sequential") record beyond the core."""

    skipped_last_sweep: tf.Tensor  # [] int: site updates skipped in the last sweep (convergence needs 0)

    def __repr__(self) -> str:
        return summary_repr(self)


class DoubleLoopInfo(NamedTuple):
    """What the double loop (:mod:`gpflow_ep.ep.double_loop`) records beyond the core."""

    energies: tf.Tensor  # [max_sweeps] E(v) after each outer step's inner loop (0 after the last)
    inner_steps: tf.Tensor  # [] int: inner steps taken, all outer steps
    partial_outer_steps: tf.Tensor  # [] int: sites whose outer step stopped short to keep their cavity proper
    active_site_bounds: tf.Tensor  # [] int: sites at τ = ε at the end (box constraints only)
    active_cavity_bounds: tf.Tensor  # [] int: sites at the cavity bound v₂ - ατ = ε at the end (box only)
    outer_natural: tf.Tensor  # [N, 1] v₁ of the outer Gaussians N(v) at the end
    outer_precision: tf.Tensor  # [N, 1] v₂ of the outer Gaussians at the end
    kkt_residual: tf.Tensor  # [] max_i |E_q[h_i] - E_p̂[h_i]| at the end (0 at an exact inner optimum)
    stalled: tf.Tensor  # [] bool: ended because no valid step was left (invalid start, or steps shrunk to nothing)

    def __repr__(self) -> str:
        return summary_repr(self)


class FallbackInfo(NamedTuple):
    """
    What the ``"robust"`` schedule (:mod:`gpflow_ep.ep.fallback`) records: whether the double loop
    ran after parallel EP, the parallel run's own outcome, and the double loop's record (zeros when it
    did not run). The core of the :class:`EPRun` is that of the part that produced the sites.
    """

    used_fallback: tf.Tensor  # [] bool: the double loop ran (recorded when it was started)
    parallel_sweeps: tf.Tensor  # [] int: the parallel phase's sweeps
    parallel_max_change: tf.Tensor  # [] its measure at its end
    parallel_history: tf.Tensor  # [max_sweeps] its measure per sweep
    parallel_skipped_last_sweep: tf.Tensor  # [] int
    double_loop: DoubleLoopInfo

    def __repr__(self) -> str:
        return summary_repr(self)


class EPRun(NamedTuple):
    """
    Outcome of one EP run (tensors; the fields are documented once, in :mod:`gpflow_ep.ep.run`). Its
    ``repr`` is a one-line summary (the scalars, and the shapes of the per-site arrays).
    """

    precision: tf.Tensor
    natural_mean: tf.Tensor
    converged: tf.Tensor
    sweeps: tf.Tensor
    measure: tf.Tensor
    max_change: tf.Tensor
    history: tf.Tensor
    num_skipped: tf.Tensor
    num_rejected: tf.Tensor
    dual: tf.Tensor
    relaxation: tf.Tensor
    info: NamedTuple

    @property
    def measure_name(self) -> str:
        """The name of the convergence measure (eager runs): "sites", "alpha", "moments" or "mismatch"."""
        return MEASURES[int(self.measure)][0]

    @property
    def used_fallback(self) -> tf.Tensor:
        """[] bool: the ``"robust"`` schedule's double loop ran (False for every other schedule)."""
        return self.info.used_fallback if isinstance(self.info, FallbackInfo) else tf.constant(False)

    def __repr__(self) -> str:
        return summary_repr(self)
