"""``fit``'s checkpoints: the model, the optimiser and the step count in a ``tf.train.CheckpointManager``."""

import contextlib
import tempfile

import tensorflow as tf

__all__ = ["TrainingCheckpoint", "is_chief"]


def is_chief(strategy) -> bool:
    """Whether this process writes the checkpoints (every process without a multi-worker strategy)."""
    return strategy is None or bool(getattr(strategy.extended, "should_checkpoint", True))


class TrainingCheckpoint:
    """
    The model (parameters, sites and all EP state), the optimiser and the step count, saved to
    ``directory`` (two kept). Under a multi-worker strategy every worker saves (saving is
    collective) but only the chief's files are kept; the others write to a temporary directory.
    """

    def __init__(self, model, optimizer, directory: str, strategy=None):
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="fit_step")
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=self.step)
        self.directory = directory
        if not is_chief(strategy):
            self.scratch = tempfile.TemporaryDirectory(prefix="gpflow_ep_worker_checkpoint_")
            directory = self.scratch.name
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=2)

    def restore(self) -> int:
        """Restore the latest checkpoint of ``directory`` (the chief's) if there is one; the step it was taken at."""
        latest = tf.train.latest_checkpoint(self.directory)
        if latest is None:
            return 0
        self.checkpoint.restore(latest).assert_existing_objects_matched()
        return int(self.step.numpy())

    def save(self, steps: int) -> None:
        """Save with the step count ``steps``."""
        self.step.assign(steps)
        self.manager.save(checkpoint_number=steps)
