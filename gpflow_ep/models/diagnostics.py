"""EP run diagnostics kept on a model, readable after a compiled loss and by monitor tasks."""

from typing import Dict

import tensorflow as tf
from gpflow.config import default_float


class EPDiagnostics(tf.Module):
    """
    Outcome of the model's most recent EP run, and of its minibatch site refreshes, as
    non-trainable variables (so a compiled loss can write them and a monitor task read them).

    A full run (``run_ep``, or the nested loss) records ``converged``, ``sweeps``, ``max_change``
    (the schedule's convergence measure at its last sweep), ``num_skipped`` (site updates skipped
    for an improper cavity or tilted distribution, summed over the run) and ``num_rejected``
    (updates undone because q became improper). A minibatch refresh (``SEPGPC``'s minibatch loss
    or :func:`~gpflow_ep.training.fit`) records ``refreshes`` (a running count), and for the last
    refresh ``refresh_skipped``, ``refresh_rejected`` (1 when the whole refresh was not applied
    because q would have been improper) and ``refresh_max_change``, the largest change of a
    refreshed site's natural parameters (τ, ν).
    """

    def __init__(self, name: str = "ep_diagnostics"):
        super().__init__(name=name)

        def variable(dtype, name):
            return tf.Variable(tf.zeros([], dtype), trainable=False, name=name)

        self.converged = variable(tf.int32, "converged")  # 0/1
        self.sweeps = variable(tf.int32, "sweeps")
        self.max_change = variable(default_float(), "max_change")
        self.num_skipped = variable(tf.int32, "num_skipped")
        self.num_rejected = variable(tf.int32, "num_rejected")
        self.refreshes = variable(tf.int64, "refreshes")
        self.refresh_skipped = variable(tf.int32, "refresh_skipped")
        self.refresh_rejected = variable(tf.int32, "refresh_rejected")
        self.refresh_max_change = variable(default_float(), "refresh_max_change")
        self.log_marginal_likelihood = tf.Variable(
            tf.constant(float("nan"), default_float()), trainable=False, name="log_marginal_likelihood"
        )

    def record(self, run) -> None:
        """Store an :class:`~gpflow_ep.ep.EPRun`."""
        self.converged.assign(tf.cast(run.converged, tf.int32))
        self.sweeps.assign(run.sweeps)
        self.max_change.assign(run.max_change)
        self.num_skipped.assign(run.num_skipped)
        self.num_rejected.assign(run.num_rejected)

    def record_evidence(self, log_marginal_likelihood) -> None:
        """Store the evidence of the last evaluation of the model's training objective."""
        self.log_marginal_likelihood.assign(log_marginal_likelihood)

    def record_refresh(self, num_skipped, max_change, rejected) -> None:
        """Store one minibatch refresh (class docstring); ``rejected`` is a boolean tensor."""
        self.refreshes.assign_add(1)
        self.refresh_skipped.assign(tf.cast(num_skipped, tf.int32))
        self.refresh_rejected.assign(tf.cast(rejected, tf.int32))
        self.refresh_max_change.assign(tf.cast(max_change, self.refresh_max_change.dtype))

    #: the recorded quantities, in the order they are reported
    FIELDS = (
        "converged",
        "sweeps",
        "max_change",
        "num_skipped",
        "num_rejected",
        "refreshes",
        "refresh_skipped",
        "refresh_rejected",
        "refresh_max_change",
        "log_marginal_likelihood",
    )

    def as_dict(self) -> Dict[str, object]:
        """The values as Python numbers (``converged`` a bool), e.g. for JSON."""
        values = {name: getattr(self, name).numpy().item() for name in self.FIELDS}
        values["converged"] = bool(values["converged"])
        return values

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.as_dict().items())
        return f"EPDiagnostics({fields})"
