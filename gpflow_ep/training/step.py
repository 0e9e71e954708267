"""
The compiled training step of :func:`~gpflow_ep.training.fit` (:func:`make_train_step`): one
function for one device or several, with the finite guard that undoes a step whose loss or new
parameters are not finite, and the translation of a lost peer worker into :class:`WorkerFailedError`.
"""

from typing import Callable, List, NamedTuple, Optional

import tensorflow as tf
from gpflow.keras import tf_keras

from ..optimizers import MinibatchEP
from .kinds import holds_data, uses_minibatch_ep

__all__ = ["FiniteGuard", "StepResult", "WorkerFailedError", "make_train_step", "paper_adadelta", "run_step"]


class StepResult(NamedTuple):
    """One compiled training step's outcome (tensors)."""

    loss: tf.Tensor
    skipped: tf.Tensor  # site updates skipped by the step's minibatch refresh
    applied: tf.Tensor  # False: the step was not finite and the model kept its previous state


class WorkerFailedError(RuntimeError):
    """Under a multi-worker strategy, another worker stopped answering (it died, hung or lost its network)."""


#: what a collective operation raises when a peer worker is gone (died, hung or lost its network)
PEER_FAILURES = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError)


def paper_adadelta():
    """ADADELTA as in the SEP paper: ρ = 0.9, ε = 1e-5, no global learning rate (lr = 1)."""
    return tf_keras.optimizers.Adadelta(learning_rate=1.0, rho=0.9, epsilon=1e-5)


def gradient_loss(model, batch):
    """The loss whose gradient the step follows (models without minibatch EP)."""
    if holds_data(model):
        return model.training_loss()
    return model.training_loss(batch[:2])


def optimizer_state(optimizer) -> List[tf.Variable]:
    """The optimiser's own variables (step count, moments), for keras and this package's optimisers."""
    state = getattr(optimizer, "variables", [])
    return list(state() if callable(state) else state)


def all_finite(tensors) -> tf.Tensor:
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tensors])


class FiniteGuard:
    """
    Keeps a model's trainable variables and the optimiser's state as they were before a step and
    puts them back when the step's loss or new values are not finite (call in cross-replica context).
    """

    def __init__(self, variables, optimizer):
        self.variables = list(variables) + optimizer_state(optimizer)
        self.trainable = list(variables)

    def save(self):
        """The values to restore: a copy of every guarded variable."""
        return [tf.identity(v) for v in self.variables]

    def check_and_restore(self, saved, loss) -> tf.Tensor:
        """True when ``loss`` and the trainable variables are finite; else restore ``saved`` and return False."""
        applied = tf.math.is_finite(loss) & all_finite(self.trainable)

        def restore():
            for variable, value in zip(self.variables, saved):
                variable.assign(value)
            return tf.constant(False)

        return tf.cond(applied, lambda: tf.constant(True), restore)


def check_made_in_scope(model, strategy: tf.distribute.Strategy) -> None:
    """A distributed step needs every model variable made under the strategy's scope (else an opaque TF error)."""
    outside = [v.name for v in model.variables if not strategy.extended.variable_created_in_scope(v)]
    if outside:
        raise ValueError(
            f"model: {len(outside)} of its variables were made outside strategy.scope() (e.g. {outside[0]!r}); "
            "build the model and everything it holds (kernel, likelihood, mean function) and the optimiser under "
            "`with strategy.scope():`"
        )


def make_train_step(
    model, optimizer, *, strategy: Optional[tf.distribute.Strategy] = None, batch_spec=None
) -> Callable:
    """
    A compiled step ``step(batch) -> StepResult(loss, skipped, applied)``: for a minibatch-EP model
    the site refresh (:class:`~gpflow_ep.optimizers.MinibatchEP`) and the gradient step on -F_M at
    the refreshed q, sharing the batch's frame, the loss reported being the minibatch estimate of
    -log Z_EP - log p(θ) (:meth:`~gpflow_ep.optimizers.MinibatchEP.refreshed_loss`); for any other
    model the gradient step on its training loss. One step for
    one device or several: it runs in the replicas of ``strategy`` (default: TensorFlow's default
    strategy, one device), ``batch`` then being a distributed batch. A step whose loss or new
    parameters are not finite is undone (parameters and optimiser state restored; a refresh never
    writes non-finite sites) and reported as ``applied = False``. With ``strategy``, every variable
    of the model must have been made under ``strategy.scope()`` (``ValueError`` otherwise).
    ``batch_spec``: the batches' ``element_spec`` (of the dataset, or of the strategy's distributed
    dataset), so that the step is traced once whatever the batch size (an epoch's last batch
    included); by default it is traced once per batch shape.
    """
    if strategy is not None:
        check_made_in_scope(model, strategy)
    strategy = strategy or tf.distribute.get_strategy()
    variables = model.trainable_variables
    if isinstance(optimizer, tf_keras.optimizers.Optimizer):  # slots now: the step is traced once, not twice
        with strategy.scope():
            optimizer.build(variables)
    guard = FiniteGuard(variables, optimizer)
    replicas = strategy.num_replicas_in_sync
    minibatch_ep = MinibatchEP() if uses_minibatch_ep(model) else None

    def replica_step(batch):
        skipped = tf.constant(0)
        with tf.GradientTape() as tape:
            if minibatch_ep is not None:  # site refresh, then the loss at the refreshed q (one frame)
                loss, skipped = minibatch_ep.refreshed_loss(model, batch)
            else:
                loss = gradient_loss(model, batch)
            loss = loss / replicas  # the optimiser sums the replicas' gradients
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss, skipped

    def step(batch):
        saved = guard.save()
        losses, skipped = strategy.run(replica_step, args=(batch,))
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
        skipped = strategy.experimental_local_results(skipped)[0]  # the merged refresh's count, on every replica
        # (stateful ops of a tf.function run in program order: the check sees the new values)
        return StepResult(loss, skipped, guard.check_and_restore(saved, loss))

    return tf.function(step, autograph=False, input_signature=None if batch_spec is None else [batch_spec])


def run_step(step: Callable, batch, *, strategy, steps_done: int, checkpoint_dir: Optional[str]):
    """
    ``step(batch)``; under a ``strategy``, a peer worker that stopped answering is a
    :class:`WorkerFailedError` saying how to resume (from ``checkpoint_dir``'s last checkpoint).
    """
    try:
        return step(batch)
    except PEER_FAILURES as error:
        if strategy is None:
            raise
        raise WorkerFailedError(worker_failure_message(error, steps_done, checkpoint_dir)) from error


def worker_failure_message(error, steps: int, checkpoint_dir: Optional[str]) -> str:
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    found = f"{type(error).__name__}: {first_line}"
    if checkpoint_dir is None:
        resume = "no checkpoint_dir was given, so training has to start again; pass fit(checkpoint_dir=...) to resume"
    else:
        latest = tf.train.latest_checkpoint(checkpoint_dir)
        saved = f"the last checkpoint is {latest}" if latest else "no checkpoint was saved yet"
        resume = (
            f"{saved}; restart every worker with the same fit(..., checkpoint_dir={checkpoint_dir!r}) call to "
            "resume from it (the steps after it are repeated with the same minibatches)"
        )
    return f"fit: another worker stopped answering during step {steps + 1} ({found}). {resume}."
