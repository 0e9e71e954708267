"""EP run diagnostics kept on a model, readable after a compiled loss and by monitor tasks."""

import tensorflow as tf
from gpflow.config import default_float


class EPDiagnostics(tf.Module):
    """Outcome of the model's most recent EP run, as non-trainable variables."""

    def __init__(self, name: str = "ep_diagnostics"):
        super().__init__(name=name)
        self.converged = tf.Variable(0, dtype=tf.int32, trainable=False, name="converged")  # 0/1
        self.sweeps = tf.Variable(0, dtype=tf.int32, trainable=False, name="sweeps")
        self.max_change = tf.Variable(0.0, dtype=default_float(), trainable=False, name="max_change")
        self.num_skipped = tf.Variable(0, dtype=tf.int32, trainable=False, name="num_skipped")
        self.num_rejected = tf.Variable(0, dtype=tf.int32, trainable=False, name="num_rejected")

    def record(self, run) -> None:
        self.converged.assign(tf.cast(run.converged, tf.int32))
        self.sweeps.assign(run.sweeps)
        self.max_change.assign(run.max_change)
        self.num_skipped.assign(run.num_skipped)
        self.num_rejected.assign(run.num_rejected)
