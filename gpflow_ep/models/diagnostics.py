"""EP run diagnostics kept on a model, readable after a compiled loss and by monitor tasks."""

from typing import Dict, Optional

import tensorflow as tf
from gpflow.config import default_float


class EPDiagnostics(tf.Module):
    """
    What EP did on a model: its full EP runs and its minibatch site refreshes, as non-trainable
    variables (so a compiled EP run can write them and a monitor task read them). Each group comes
    with a count, and its other values mean something only when that count is positive:
    :meth:`as_dict` gives ``None`` for them, ``repr`` leaves them out, and the monitor writes no
    TensorBoard scalar for them (nothing that was not attempted is reported as a failure or a NaN).

    * **Full runs** (``run_ep``, :class:`~gpflow_ep.optimizers.EP`, the nested loss): ``runs`` counts
      them; of the last one (:class:`~gpflow_ep.ep.EPRun`) ``converged``, ``sweeps`` (its
      ``iterations``: sweeps, or outer steps of a double loop), ``max_change`` (its ``change``, the
      convergence measure at the end), ``num_skipped`` (site updates skipped for an improper cavity or
      tilted distribution, summed over the run) and ``num_rejected`` (steps undone because q became
      improper); over all of them ``runs_not_converged``, the runs (eager or inside a compiled
      training loss) that stopped without converging, and ``fallbacks``, the runs in which robust
      EP's double loop took over from parallel EP, since the model was built or :meth:`reset`.
    * **Minibatch refreshes** (``SEPGPC``'s minibatch loss, :func:`~gpflow_ep.training.fit`):
      ``refreshes`` counts them; of the last one ``refresh_skipped``, ``refresh_rejected`` (1 when the
      whole refresh was not applied because q would have been improper or a value was not finite)
      and ``refresh_max_change``, the largest change of a refreshed site's natural parameters (τ, ν);
      over all of them ``refresh_skipped_total`` and ``refreshes_rejected``.

    Only EP writes them, as it writes the sites; evaluating an objective writes nothing.
    """

    def __init__(self, name: str = "ep_diagnostics"):
        super().__init__(name=name)

        def variable(dtype, name):
            return tf.Variable(tf.zeros([], dtype), trainable=False, name=name)

        self.runs = variable(tf.int64, "runs")
        self.converged = variable(tf.int32, "converged")  # 0/1
        self.sweeps = variable(tf.int32, "sweeps")
        self.max_change = variable(default_float(), "max_change")
        self.num_skipped = variable(tf.int32, "num_skipped")
        self.num_rejected = variable(tf.int32, "num_rejected")
        self.runs_not_converged = variable(tf.int64, "runs_not_converged")
        self.fallbacks = variable(tf.int64, "fallbacks")
        self.refreshes = variable(tf.int64, "refreshes")
        self.refresh_skipped = variable(tf.int32, "refresh_skipped")
        self.refresh_rejected = variable(tf.int32, "refresh_rejected")
        self.refresh_max_change = variable(default_float(), "refresh_max_change")
        self.refresh_skipped_total = variable(tf.int64, "refresh_skipped_total")
        self.refreshes_rejected = variable(tf.int64, "refreshes_rejected")

    def record(self, run) -> None:
        """Store an :class:`~gpflow_ep.ep.EPRun` (one more full run)."""
        self.runs.assign_add(1)
        self.converged.assign(tf.cast(run.converged, tf.int32))
        self.sweeps.assign(run.sweeps)
        self.max_change.assign(run.max_change)
        self.num_skipped.assign(run.num_skipped)
        self.num_rejected.assign(run.num_rejected)
        self.runs_not_converged.assign_add(1 - tf.cast(run.converged, tf.int64))
        self.fallbacks.assign_add(tf.cast(run.used_fallback, tf.int64))

    def reset(self) -> None:
        """Every count and value back to 0 (e.g. before a new training run); re-arms the non-convergence warning."""
        for name in self.FIELDS:
            variable = getattr(self, name)
            variable.assign(tf.zeros_like(variable))
        self.warned_not_converged = False

    #: whether a non-convergence inside a compiled loss was already reported (once until :meth:`reset`)
    warned_not_converged = False

    def record_refresh(self, num_skipped, max_change, rejected) -> None:
        """Store one minibatch refresh (class docstring); ``rejected`` is a boolean tensor."""
        self.refreshes.assign_add(1)
        self.refresh_skipped.assign(tf.cast(num_skipped, tf.int32))
        self.refresh_rejected.assign(tf.cast(rejected, tf.int32))
        self.refresh_max_change.assign(tf.cast(max_change, self.refresh_max_change.dtype))
        self.refresh_skipped_total.assign_add(tf.cast(num_skipped, tf.int64))
        self.refreshes_rejected.assign_add(tf.cast(rejected, tf.int64))

    #: the recorded quantities in the order they are reported, by group: the group's count first
    GROUPS = {
        "runs": (
            "runs",
            "converged",
            "sweeps",
            "max_change",
            "num_skipped",
            "num_rejected",
            "runs_not_converged",
            "fallbacks",
        ),
        "refreshes": (
            "refreshes",
            "refresh_skipped",
            "refresh_rejected",
            "refresh_max_change",
            "refresh_skipped_total",
            "refreshes_rejected",
        ),
    }
    FIELDS = tuple(name for group in GROUPS.values() for name in group)

    def as_dict(self) -> Dict[str, Optional[object]]:
        """
        The values as Python numbers (``converged`` a bool), e.g. for JSON; the values of a group
        whose count is 0 (nothing was attempted) are ``None``. The counts are always numbers.
        """
        values: Dict[str, Optional[object]] = {}
        for count, names in self.GROUPS.items():
            attempted = int(getattr(self, count).numpy()) > 0
            for name in names:
                values[name] = getattr(self, name).numpy().item() if attempted or name == count else None
        if values["converged"] is not None:
            values["converged"] = bool(values["converged"])
        return values

    def __repr__(self) -> str:
        d = self.as_dict()
        if not (d["runs"] or d["refreshes"]):
            return "EPDiagnostics(nothing yet: no full EP run, no minibatch refresh)"
        parts = []
        if d["refreshes"]:
            parts.append(
                f"minibatch refreshes={d['refreshes']}, last refresh: max site change {d['refresh_max_change']:.3g}, "
                f"skipped {d['refresh_skipped']} updates{' (rejected: not applied)' if d['refresh_rejected'] else ''}; "
                f"all refreshes: skipped {d['refresh_skipped_total']} updates, rejected {d['refreshes_rejected']}"
            )
        if d["runs"]:
            parts.append(
                f"full EP runs={d['runs']}, last run: converged={d['converged']}, sweeps={d['sweeps']}, "
                f"max_change={d['max_change']:.3g}, skipped {d['num_skipped']} updates, rejected {d['num_rejected']}; "
                f"runs not converged: {d['runs_not_converged']}, fallbacks to the double loop: {d['fallbacks']}"
            )
        else:
            parts.append("no full EP run")
        return f"EPDiagnostics({'; '.join(parts)})"
