r"""
One training loop for every model: EP models and GPflow's own SVGP/VGP alike.

    result = gpflow_ep.training.fit(model, (X, Y), batch_size=200, epochs=10)

An epoch is one pass over a fresh permutation of the data in batches of ``batch_size``; the last
batch of an epoch holds the remainder (as in Keras and ``tf.data``), so every point is seen once
per epoch and no batch holds a site twice. Per step, for a minibatch M:

* models with minibatch EP (:class:`~gpflow_ep.models.MinibatchEPModel`: :class:`~gpflow_ep.models.SEPGPC`,
  :class:`~gpflow_ep.models.SEPMGPC`) first refresh the sites of M (the optimiser step
  :class:`~gpflow_ep.optimizers.MinibatchEP`, damped by the model's ``EPSettings.minibatch_damping``),
  then take a gradient step on the minibatch surrogate -F_M at the refreshed q of
  Hernández-Lobato & Hernández-Lobato (2016), "Scalable Gaussian process classification via
  expectation propagation", AISTATS, Sec. 2.3, on the same frame of the batch (kernel matrices and
  chol(K_uu) once per step). With the full batch, ``minibatch_damping=0.5`` and
  :class:`~gpflow_ep.optimizers.SignAdaptive` this is that paper's batch SEP with "inner" updates;
  with minibatches it is its stochastic SEP;
* EP models that hold their data (:class:`~gpflow_ep.models.EPModel` with GPflow's internal-data
  loss: :class:`~gpflow_ep.models.EPGPC` and subclasses, ``SpikeSlabRegression``) follow their
  ``ep_mode``: in ``"nested"`` (the default) every gradient step is on ``training_loss()``, which
  itself runs EP to convergence warm-started from the stored sites, so ``fit`` never calls
  ``run_ep`` (``ep_every`` does not apply and is refused); in ``"alternated"`` the loss uses the
  stored sites and ``fit`` runs EP to convergence (``run_ep``) every ``ep_every`` steps (default
  50, and before the first step), with gradient steps on ``training_loss()`` between;
* any other GPflow model takes the gradient step only: ``training_loss()`` for models that hold
  their data (``VGP``), ``training_loss((X, Y))`` otherwise (``SVGP``).

Only public methods of the models are called.

``strategy=`` a ``tf.distribute`` strategy (build the model and the optimiser under
``strategy.scope()``) splits every batch over the replicas; the step is the same function with or
without one (TensorFlow's default strategy then). Each replica computes its part of the site
refresh from the same q(u); the refreshes are merged (``merge_call``: rows gathered, changes of q(u)
summed) and written once in cross-replica context, so the run gives the same numbers as on one
device. Each replica differentiates F_{M_r}/R (or SVGP's loss / R); the optimiser sums the
gradients, which equals the single-device gradient of F_M when the replicas get equal batch
shares. The refreshes are gathered with ``strategy.gather``/``reduce``, so this holds across
processes too (``MultiWorkerMirroredStrategy``); a worker that stops answering is a
:class:`WorkerFailedError`.

Reliability: array data are validated before anything is compiled; a step whose loss or new
parameters are not finite is undone (the trainable variables and the optimiser's state, as built
before the step, are restored) and counted; ``checkpoint_dir`` saves and resumes the run exactly.
"""

import contextlib
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, List, NamedTuple, Optional

import numpy as np
import tensorflow as tf
from gpflow.config import default_float
from gpflow.keras import tf_keras
from gpflow.models import InternalDataTrainingLossMixin

from .models import CheckedExternalDataTrainingLossMixin, EPModel, MinibatchEPModel
from .monitor import PeriodicMonitor
from .optimizers import MinibatchEP
from .progress import ProgressBar, is_terminal
from .validation import check_inputs, check_positive_int, check_training_data

__all__ = [
    "fit",
    "FitResult",
    "NonFiniteStepWarning",
    "WorkerFailedError",
    "ProgressBar",
    "StepResult",
    "make_dataset",
    "make_train_step",
    "paper_adadelta",
]


@dataclass(repr=False)
class FitResult:
    """
    What :func:`fit` did: steps (counted from the start of training, so a run resumed from
    ``checkpoint_dir`` includes the restored ``initial_step``), epochs, wall time of this call, the
    loss of every step of this call (``losses``, one float per step), site updates skipped, and
    ``rejected_steps``: steps not applied because their loss, gradient or new parameters were not
    finite (the model kept its last finite state; :func:`fit` warns when there are any).

    Its ``repr`` is a one-line summary (the final loss and the number of losses, not the list).
    """

    steps: int = 0
    epochs: float = 0.0
    seconds: float = 0.0
    losses: List[float] = field(default_factory=list)
    skipped_site_updates: int = 0
    rejected_steps: int = 0
    initial_step: int = 0

    @property
    def final_loss(self) -> float:
        """The loss of the last step of this call (NaN if it took none)."""
        return self.losses[-1] if self.losses else float("nan")

    def __repr__(self) -> str:
        resumed = f", initial_step={self.initial_step}" if self.initial_step else ""
        return (
            f"FitResult(steps={self.steps}, epochs={self.epochs:.4g}, seconds={self.seconds:.3g}, "
            f"final_loss={self.final_loss:.6g}, losses=<{len(self.losses)} values>, "
            f"skipped_site_updates={self.skipped_site_updates}, rejected_steps={self.rejected_steps}{resumed})"
        )


class StepResult(NamedTuple):
    """One compiled training step's outcome (tensors)."""

    loss: tf.Tensor
    skipped: tf.Tensor  # site updates skipped by the step's minibatch refresh
    applied: tf.Tensor  # False: the step was not finite and the model kept its previous state


class NonFiniteStepWarning(UserWarning):
    """Some training steps were not applied because their loss or new parameters were not finite."""


class WorkerFailedError(RuntimeError):
    """Under a multi-worker strategy, another worker stopped answering (it died, hung or lost its network)."""


#: what a collective operation raises when a peer worker is gone (died, hung or lost its network)
_PEER_FAILURES = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError)


def paper_adadelta():
    """ADADELTA as in the SEP paper: ρ = 0.9, ε = 1e-5, no global learning rate (lr = 1)."""
    return tf_keras.optimizers.Adadelta(learning_rate=1.0, rho=0.9, epsilon=1e-5)


def _uses_minibatch_ep(model) -> bool:
    return isinstance(model, MinibatchEPModel)


def _holds_data(model) -> bool:
    return isinstance(model, InternalDataTrainingLossMixin)


def _runs_batch_ep(model) -> bool:
    return isinstance(model, EPModel) and _holds_data(model)


def _check_data_meets_model(model, X: np.ndarray, Y: np.ndarray, batch_size: Optional[int]) -> None:
    """
    ``fit``'s array data against the model: a model that holds its data trains on those (so other
    ``data`` or a ``batch_size`` would be ignored: refused), and a minibatch-EP model has one site per
    point of ``num_data``.
    """
    if _holds_data(model):
        held = [np.asarray(t) for t in model.data]
        if any(a.shape != b.shape or not np.array_equal(a, b.astype(a.dtype)) for a, b in zip(held, (X, Y))):
            raise ValueError(
                f"data: {type(model).__name__} holds its training data and trains on it; fit was given other data. "
                "Pass the model's own data (model.data), or build a model on the new data."
            )
        if batch_size is not None and batch_size < X.shape[0]:
            raise ValueError(
                f"batch_size: {type(model).__name__} holds its data and every step uses all of it (EP needs every "
                "site); leave batch_size out, or use a sparse model (SEPGPC/SEPGP) for minibatches"
            )
    if isinstance(model, MinibatchEPModel) and X.shape[0] != model.num_data:
        raise ValueError(
            f"data: {X.shape[0]} points, but the model was built with num_data={model.num_data} (one EP site per "
            "point): build it with num_data=len(X)"
        )


def make_dataset(
    data, batch_size: int, *, shuffle: bool = True, seed: int = 0, repeat: bool = True, drop_remainder: bool = False
) -> tf.data.Dataset:
    """
    ``tf.data.Dataset`` of minibatches ``(X, Y, index)`` from arrays ``(X, Y)`` (X in GPflow's default float, Y too
    unless it holds integers, which are kept for GPflow's ``Softmax``); the index tells a
    minibatch-EP model which sites the rows belong to (other models ignore it). Every epoch is a
    fresh permutation cut into batches of ``batch_size``; its last batch holds the remaining
    n mod ``batch_size`` rows (as ``tf.data`` and Keras; a ``batch_size`` larger than n gives one
    batch of all n), unless ``drop_remainder``, which drops them (every batch then has the same
    shape). Batches are cut within an epoch, so no batch holds the same site twice.
    """
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise ValueError("data must be arrays (X, Y)")
    batch_size = check_positive_int(batch_size, "batch_size")
    X, Y = check_inputs(data[0], "data[0] (X)"), np.asarray(data[1])
    if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
        raise ValueError(f"data[1] (Y) must have shape [{X.shape[0]}, P] like data[0] (X); got {Y.shape}")
    if not np.issubdtype(Y.dtype, np.integer):  # integer class labels stay integers (GPflow's Softmax needs them)
        Y = Y.astype(default_float())
    index = np.arange(X.shape[0], dtype=np.int32)
    ds = tf.data.Dataset.from_tensor_slices((X, Y, index))
    if shuffle:
        ds = ds.shuffle(X.shape[0], seed=seed, reshuffle_each_iteration=True)
    # batch within an epoch, then repeat: a batch never holds the same site twice (a minibatch
    # site refresh would remove that site's old contribution twice)
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    return ds.repeat() if repeat else ds


def _gradient_loss(model, batch):
    """The loss whose gradient the step follows (models without minibatch EP)."""
    if _holds_data(model):
        return model.training_loss()
    return model.training_loss(batch[:2])


def _optimizer_state(optimizer) -> List[tf.Variable]:
    """The optimiser's own variables (step count, moments), for keras and this package's optimisers."""
    state = getattr(optimizer, "variables", [])
    return list(state() if callable(state) else state)


def _all_finite(tensors) -> tf.Tensor:
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tensors])


class _FiniteGuard:
    """
    Keeps a model's trainable variables and the optimiser's state as they were before a step and
    puts them back when the step's loss or new values are not finite (call in cross-replica context).
    """

    def __init__(self, variables, optimizer):
        self.variables = list(variables) + _optimizer_state(optimizer)
        self.trainable = list(variables)

    def save(self):
        return [tf.identity(v) for v in self.variables]

    def check_and_restore(self, saved, loss) -> tf.Tensor:
        applied = tf.math.is_finite(loss) & _all_finite(self.trainable)

        def restore():
            for variable, value in zip(self.variables, saved):
                variable.assign(value)
            return tf.constant(False)

        return tf.cond(applied, lambda: tf.constant(True), restore)


def _check_made_in_scope(model, strategy: tf.distribute.Strategy) -> None:
    """A distributed step needs every model variable made under the strategy's scope (else an opaque TF error)."""
    outside = [v.name for v in model.variables if not strategy.extended.variable_created_in_scope(v)]
    if outside:
        raise ValueError(
            f"model: {len(outside)} of its variables were made outside strategy.scope() (e.g. {outside[0]!r}); "
            "build the model and everything it holds (kernel, likelihood, mean function) and the optimiser under "
            "`with strategy.scope():`"
        )


def make_train_step(model, optimizer, *, strategy: Optional[tf.distribute.Strategy] = None) -> Callable:
    """
    A compiled step ``step(batch) -> StepResult(loss, skipped, applied)``: for a minibatch-EP model
    the site refresh (:class:`~gpflow_ep.optimizers.MinibatchEP`) and the gradient step on -F_M at
    the refreshed q, sharing the batch's frame; for any other model the gradient step. One step for
    one device or several: it runs in the replicas of ``strategy`` (default: TensorFlow's default
    strategy, one device), ``batch`` then being a distributed batch. A step whose loss or new
    parameters are not finite is undone (parameters and optimiser state restored; a refresh never
    writes non-finite sites) and reported as ``applied = False``. With ``strategy``, every variable
    of the model must have been made under ``strategy.scope()`` (``ValueError`` otherwise).
    """
    if strategy is not None:
        _check_made_in_scope(model, strategy)
    strategy = strategy or tf.distribute.get_strategy()
    variables = model.trainable_variables
    if isinstance(optimizer, tf_keras.optimizers.Optimizer):  # slots now: the step is traced once, not twice
        with strategy.scope():
            optimizer.build(variables)
    guard = _FiniteGuard(variables, optimizer)
    replicas = strategy.num_replicas_in_sync
    minibatch_ep = MinibatchEP() if _uses_minibatch_ep(model) else None

    def replica_step(batch):
        skipped = tf.constant(0)
        with tf.GradientTape() as tape:
            if minibatch_ep is not None:  # site refresh, then F_M at the refreshed q (one frame)
                objective, skipped = minibatch_ep.refreshed_objective(model, batch)
                loss = -(objective + model.log_prior_density())
            else:
                loss = _gradient_loss(model, batch)
            loss = loss / replicas  # the optimiser sums the replicas' gradients
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss, skipped

    @tf.function(autograph=False)
    def step(batch):
        saved = guard.save()
        losses, skipped = strategy.run(replica_step, args=(batch,))
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
        skipped = strategy.experimental_local_results(skipped)[0]  # the merged refresh's count, on every replica
        # (stateful ops of a tf.function run in program order: the check sees the new values)
        return StepResult(loss, skipped, guard.check_and_restore(saved, loss))

    return step


def _check_dataset(model, dataset: tf.data.Dataset) -> None:
    """A user's ``tf.data.Dataset``: batches of (X, Y) or (X, Y, index); minibatch EP needs the index."""
    spec = dataset.element_spec
    if not isinstance(spec, tuple) or len(spec) not in (2, 3):
        raise ValueError(f"data: a Dataset must yield (X, Y) or (X, Y, index) batches; got elements {spec}")
    if _uses_minibatch_ep(model) and len(spec) != 3:
        raise ValueError(
            f"data: {type(model).__name__} refreshes the sites of each minibatch and needs (X, Y, index) batches "
            "with the rows' site indices; give arrays (X, Y) or a Dataset from gpflow_ep.training.make_dataset"
        )


def _check_batch(model, batch) -> None:
    """Eager validation of a batch from a user's Dataset (labels, shapes, NaN), named as ``data``."""
    if isinstance(model, CheckedExternalDataTrainingLossMixin):  # the model's own checks (site indices too)
        model.validate_training_data(tuple(batch) if _uses_minibatch_ep(model) else tuple(batch[:2]))
    else:
        check_training_data(model, tuple(batch[:2]), "data batch")


def _worker_failure_message(error, steps: int, checkpoint_dir: Optional[str]) -> str:
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


def _is_chief(strategy) -> bool:
    """Whether this process writes the checkpoints (every process without a multi-worker strategy)."""
    return strategy is None or bool(getattr(strategy.extended, "should_checkpoint", True))


def _positive_number(value, name: str) -> float:
    """A finite number > 0 (``epochs``, ``time_budget``), else a ``ValueError`` naming it."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not np.isfinite(number) or number <= 0:
        raise ValueError(f"{name} must be a positive number; got {value!r}")
    return number


def _check_ep_every(model, ep_every: Optional[int]) -> int:
    """``ep_every`` applies to EP models that hold their data in ``ep_mode="alternated"`` (default 50)."""
    if ep_every is None:
        return 50
    ep_every = check_positive_int(ep_every, "ep_every")
    if _runs_batch_ep(model) and model.ep_settings.ep_mode != "alternated":
        raise ValueError(
            f"ep_every: {type(model).__name__} is in ep_mode={model.ep_settings.ep_mode!r}: its training loss runs EP "
            "to convergence (warm-started) at every step, so fit runs no separate EP and ep_every has no effect; "
            "leave ep_every out, or build the model with ep_mode='alternated' to run EP every ep_every steps"
        )
    return ep_every


def _warn_if_monitor_never_runs(monitor, first_step: int, last_step: float) -> None:
    """A :class:`~gpflow_ep.monitor.PeriodicMonitor` that runs at no step of ``(first_step, last_step]``."""
    if not isinstance(monitor, PeriodicMonitor) or not np.isfinite(last_step):
        return
    period = monitor.period
    if int(last_step) // period > first_step // period:
        return
    writes = "only step 0 (the model before training)" if first_step == 0 else "nothing"
    warnings.warn(
        f"monitor: its period ({period} steps) is longer than this run (steps {first_step + 1} to {int(last_step)}), "
        f"so it writes {writes}; give a smaller period or more iterations/epochs",
        UserWarning,
        stacklevel=3,
    )


def fit(
    model,
    data,
    *,
    optimizer=None,
    batch_size: Optional[int] = None,
    epochs: Optional[float] = None,
    iterations: Optional[int] = None,
    time_budget: Optional[float] = None,
    ep_every: Optional[int] = None,
    strategy: Optional[tf.distribute.Strategy] = None,
    monitor: Optional[Callable] = None,
    progress: Optional[bool] = None,
    seed: int = 0,
    train_step: Optional[Callable] = None,
    checkpoint_dir: Optional[str] = None,
    checkpoint_every: Optional[int] = None,
) -> FitResult:
    """
    Train ``model`` on ``data`` (module docstring: what a step does for each kind of model).

    :param data: arrays ``(X, Y)`` (minibatches are drawn with indices) or a ``tf.data.Dataset``
        of ``(X, Y, index)`` batches (``(X, Y)`` for models without minibatch EP).
    :param optimizer: a ``tf_keras`` optimiser (default Adam(0.01); :func:`paper_adadelta` is the
        SEP paper's); create it under ``strategy.scope()`` when distributing.
    :param batch_size: minibatch size (default: all data, i.e. batch gradient steps). A
        ``batch_size`` larger than the data uses all of it, as ``tf.data`` and Keras do.
    :param epochs, iterations, time_budget: stop at whichever comes first (default 1 epoch);
        ``epochs`` and ``iterations`` count from the start of training, including steps restored
        from ``checkpoint_dir``. An epoch is ceil(n / ``batch_size``) steps: every point once,
        the last batch holding the remainder (with a ``strategy``: n // ``batch_size`` steps of
        whole batches, see below). Fractional epochs are rounded up to whole steps.
    :param ep_every: for EP models that hold their data in ``ep_mode="alternated"``: run EP to
        convergence before the first step and then every this many steps (default 50). A model in
        ``ep_mode="nested"`` runs EP inside its loss at every step, so giving ``ep_every`` for it is
        a ``ValueError``; other models ignore it.
    :param strategy: a ``tf.distribute`` strategy (``MirroredStrategy`` over local devices,
        ``MultiWorkerMirroredStrategy`` over processes or machines); the batch is split over its
        replicas. Every batch is then whole (``make_dataset(drop_remainder=True)``), so each
        replica's share and the summed gradient are those of the single-device step; an epoch
        leaves out n mod ``batch_size`` points (a different random set each epoch) and ``fit``
        warns when it does.
    :param monitor: called as ``monitor(0)`` before the first step of a fresh run (the model
        before training) and ``monitor(step)`` after every step, e.g. a ``gpflow.monitor.Monitor``:
        a ``MonitorTaskGroup`` with period p then writes steps 0, p, 2p, ..., the step numbers
        GPflow's ``Scipy().minimize(..., step_callback=monitor)`` writes. ``fit`` warns when the
        period of a :func:`~gpflow_ep.monitor.ep_monitor` is longer than the run.
    :param progress: draw a progress bar (steps or time budget, elapsed time, last loss) on stderr:
        redrawn in place on a terminal, a new line every 30 s otherwise (:class:`ProgressBar`).
        ``None`` (default): only when stderr is a terminal (as Keras), so logs and CI stay quiet;
        ``True``/``False`` force it on or off.
    :param seed: the seed of the minibatch shuffling: with the same seed two runs are identical.
    :param train_step: a step from :func:`make_train_step` for this model, optimiser and
        strategy, to reuse across ``fit`` calls (each call otherwise compiles a new one). It is
        traced once per batch shape: at most twice (whole batches and an epoch's last batch).
    :param checkpoint_dir: save the model (parameters, sites and all EP state), the optimiser and
        the step count there with a ``tf.train.CheckpointManager`` every ``checkpoint_every``
        steps (default: every epoch, or 100 steps with a Dataset) and at the end; if the directory
        already holds a checkpoint, training resumes from it: the same call after an interruption
        ends where an uninterrupted run would (same minibatches, same numbers). With a
        multi-worker strategy only the chief writes there (the others write to a temporary directory).
    :param checkpoint_every: the checkpoint interval in steps.

    Array data are validated before anything is compiled (``ValueError`` naming what is wrong:
    labels, shapes, NaN/Inf, empty data); batches of a user's Dataset are validated as they are
    drawn. A step whose loss or new parameters are not finite is not applied: the model keeps its
    last finite state, the step is counted in ``FitResult.rejected_steps`` and a
    :class:`NonFiniteStepWarning` is issued. EP options (damping of the minibatch refresh, power,
    ``ep_mode``, ...) are the model's ``ep_settings``.
    """
    optimizer = optimizer or tf_keras.optimizers.Adam(0.01)
    if not callable(getattr(optimizer, "apply_gradients", None)):
        raise ValueError(
            f"optimizer must be an optimiser object with apply_gradients (e.g. tf_keras.optimizers.Adam(0.01)); "
            f"got {optimizer!r}"
        )
    if monitor is not None and not callable(monitor):
        raise ValueError(f"monitor must be callable as monitor(step), e.g. a gpflow.monitor.Monitor; got {monitor!r}")
    ep_every = _check_ep_every(model, ep_every)
    epochs = None if epochs is None else _positive_number(epochs, "epochs")
    time_budget = None if time_budget is None else _positive_number(time_budget, "time_budget")
    user_dataset = isinstance(data, tf.data.Dataset)
    if user_dataset:
        _check_dataset(model, data)
        dataset = data
        steps_per_epoch = None
    else:
        X, Y = check_training_data(model, data)
        n = X.shape[0]
        _check_data_meets_model(model, X, Y, batch_size)
        batch_size = n if batch_size is None else min(check_positive_int(batch_size, "batch_size"), n)
        whole_batches = strategy is not None  # every replica gets its equal share of every batch
        if whole_batches and n % batch_size:
            warnings.warn(
                f"fit: with strategy= every batch is whole, so each epoch ({n // batch_size} x {batch_size} points) "
                f"leaves out {n % batch_size} of the {n} points (a different random set each epoch); choose a "
                f"batch_size that divides {n} to use every point",
                UserWarning,
                stacklevel=2,
            )
        dataset = make_dataset((X, Y), batch_size, seed=seed, shuffle=batch_size < n, drop_remainder=whole_batches)
        steps_per_epoch = n // batch_size if whole_batches else -(-n // batch_size)
    if iterations is None and epochs is None and time_budget is None:
        epochs = 1
    limit = np.inf
    if iterations is not None:
        limit = check_positive_int(iterations, "iterations")
    if epochs is not None:
        if steps_per_epoch is None:
            raise ValueError("epochs needs array data (X, Y); with a Dataset give iterations or time_budget")
        limit = min(limit, int(np.ceil(epochs * steps_per_epoch)))
    if checkpoint_every is not None:
        checkpoint_every = check_positive_int(checkpoint_every, "checkpoint_every")
    step = train_step or make_train_step(model, optimizer, strategy=strategy)

    result = FitResult()
    checkpoint = None
    if checkpoint_dir is not None:
        checkpoint = _TrainingCheckpoint(model, optimizer, checkpoint_dir, strategy)
        result.initial_step = checkpoint.restore()
        checkpoint_every = checkpoint_every or steps_per_epoch or 100
    result.steps = result.initial_step
    if result.initial_step:  # the batches the restored steps used, drawn again (same seed, same order)
        dataset = dataset.skip(result.initial_step)
    if strategy is not None:
        dataset = strategy.experimental_distribute_dataset(dataset)
    alternated_ep = _runs_batch_ep(model) and model.ep_settings.ep_mode == "alternated"
    if monitor is not None:
        _warn_if_monitor_never_runs(monitor, result.initial_step, limit)

    progress = is_terminal() if progress is None else bool(progress)
    bar = ProgressBar(limit, time_budget) if progress else None
    start = time.perf_counter()
    iterator = iter(dataset)
    if monitor is not None and result.initial_step == 0:
        monitor(0)  # the model before training, as Scipy's step_callback writes a step 0
    while result.steps < limit and (time_budget is None or time.perf_counter() - start < time_budget):
        try:
            batch = next(iterator)
        except (StopIteration, tf.errors.OutOfRangeError):
            if result.steps == result.initial_step:
                raise ValueError("data: the dataset yielded no batch (empty, or smaller than one batch)") from None
            break
        if user_dataset and strategy is None:
            _check_batch(model, batch)
        if alternated_ep and result.steps % ep_every == 0:
            model.run_ep()
        try:
            outcome = step(batch)
        except _PEER_FAILURES as error:
            if strategy is None:
                raise
            raise WorkerFailedError(_worker_failure_message(error, result.steps, checkpoint_dir)) from error
        result.steps += 1
        result.losses.append(float(outcome[0]))
        result.skipped_site_updates += int(outcome[1])
        result.rejected_steps += int(len(outcome) > 2 and not bool(outcome[2]))
        if checkpoint is not None and result.steps % checkpoint_every == 0:
            checkpoint.save(result.steps)
        if monitor is not None:
            monitor(result.steps)
        if bar is not None:
            bar.update(result.steps, result.losses[-1], time.perf_counter() - start)
    result.seconds = time.perf_counter() - start
    if monitor is not None and not np.isfinite(limit):  # a time budget: the run's length is known now
        _warn_if_monitor_never_runs(monitor, result.initial_step, result.steps)
    if checkpoint is not None and result.steps % checkpoint_every != 0:
        checkpoint.save(result.steps)
    if bar is not None:
        bar.close(result.steps, result.losses[-1] if result.losses else float("nan"), result.seconds)
    if steps_per_epoch:
        result.epochs = result.steps / steps_per_epoch
    if result.rejected_steps:
        warnings.warn(
            f"fit: {result.rejected_steps} of {len(result.losses)} steps were not applied because their loss or new "
            "parameters were not finite; the model kept its last finite state (try a smaller learning rate)",
            NonFiniteStepWarning,
            stacklevel=2,
        )
    return result


class _TrainingCheckpoint:
    """``fit``'s checkpoints: model, optimiser and step count in a ``tf.train.CheckpointManager``."""

    def __init__(self, model, optimizer, directory: str, strategy):
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="fit_step")
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=self.step)
        self.directory = directory
        if not _is_chief(strategy):  # every worker saves (collectively); only the chief's files are kept
            self._scratch = tempfile.TemporaryDirectory(prefix="gpflow_ep_worker_checkpoint_")
            directory = self._scratch.name
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=2)

    def restore(self) -> int:
        """Restore the latest checkpoint of ``directory`` (the chief's) if there is one; the step it was taken at."""
        latest = tf.train.latest_checkpoint(self.directory)
        if latest is None:
            return 0
        self.checkpoint.restore(latest).assert_existing_objects_matched()
        return int(self.step.numpy())

    def save(self, steps: int) -> None:
        self.step.assign(steps)
        self.manager.save(checkpoint_number=steps)
