r"""
One training loop for every model: EP models and GPflow's own SVGP/VGP alike (SEP spec §11.3).

    result = gpflow_ep.training.fit(model, (X, Y), batch_size=200, epochs=10)

Per step, for a minibatch M:

* models with minibatch EP (:class:`~gpflow_ep.models.MinibatchEP`, e.g.
  :class:`~gpflow_ep.models.SEPGPC`) first refresh the sites of M (damped by the model's
  ``EPSettings.minibatch_damping``), then take a gradient step on the surrogate -F_M of SEP spec
  §2.6 at the refreshed q (``refresh_and_objective``). With the full batch,
  ``minibatch_damping=0.5`` and :class:`~gpflow_ep.optimizers.SignAdaptive` this is the paper's
  batch SEP ("inner" updates, SEP spec §2.7); with minibatches it is the paper's stochastic SEP
  (spec §3);
* EP models that hold their data (:class:`~gpflow_ep.models.EPModel` with GPflow's internal-data
  loss: :class:`~gpflow_ep.models.EPGPC` and subclasses) are trained in alternated mode: EP to
  convergence (``run_ep``) every ``ep_every`` steps, gradient steps on ``training_loss()`` between;
* any other GPflow model takes the gradient step only: ``training_loss()`` for models that hold
  their data (``VGP``), ``training_loss((X, Y))`` otherwise (``SVGP``).

Only public methods of the models are called.

``strategy=`` a ``tf.distribute`` strategy (build the model and the optimiser under
``strategy.scope()``) splits every batch over the replicas: each replica computes its part of the
site refresh from the same q(u); the changes of q(u) are summed across replicas and all state is
assigned in cross-replica context, so the run gives the same numbers as on one device. Each replica
differentiates F_{M_r}/R (or SVGP's loss / R); the optimiser sums the gradients, which equals the
single-device gradient of F_M when the replicas get equal batch shares.
"""

import contextlib
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from gpflow.models import InternalDataTrainingLossMixin

from .models import EPModel, MinibatchEP, SiteRefresh
from .validation import check_positive_int

__all__ = ["fit", "FitResult", "ProgressBar", "make_dataset", "make_train_step", "paper_adadelta"]


@dataclass
class FitResult:
    """What :func:`fit` did: steps, epochs, wall time, and the loss of every step."""

    steps: int = 0
    epochs: float = 0.0
    seconds: float = 0.0
    losses: List[float] = field(default_factory=list)
    skipped_site_updates: int = 0


def paper_adadelta():
    """ADADELTA as in the SEP paper: ρ = 0.9, ε = 1e-5, no global learning rate (lr = 1)."""
    return tf_keras.optimizers.Adadelta(learning_rate=1.0, rho=0.9, epsilon=1e-5)


def _uses_minibatch_ep(model) -> bool:
    return isinstance(model, MinibatchEP)


def _holds_data(model) -> bool:
    return isinstance(model, InternalDataTrainingLossMixin)


def _runs_batch_ep(model) -> bool:
    return isinstance(model, EPModel) and _holds_data(model)


def make_dataset(data, batch_size: int, *, shuffle: bool = True, seed: int = 0, repeat: bool = True) -> tf.data.Dataset:
    """
    ``tf.data.Dataset`` of minibatches ``(X, Y, index)`` from arrays ``(X, Y)`` (X in float64, Y in
    float64 unless it holds integers, which are kept for GPflow's ``Softmax``); the index tells a
    minibatch-EP model which sites the rows belong to (other models ignore it). Every epoch is a
    fresh permutation cut into whole batches (the remainder is dropped), so no batch repeats a site.
    """
    X, Y = np.asarray(data[0], dtype=np.float64), np.asarray(data[1])
    if not np.issubdtype(Y.dtype, np.integer):  # integer class labels stay integers (GPflow's Softmax needs them)
        Y = Y.astype(np.float64)
    index = np.arange(X.shape[0], dtype=np.int32)
    ds = tf.data.Dataset.from_tensor_slices((X, Y, index))
    if shuffle:
        ds = ds.shuffle(X.shape[0], seed=seed, reshuffle_each_iteration=True)
    # batch within an epoch, then repeat: a batch never holds the same site twice (a minibatch
    # site refresh would remove that site's old contribution twice)
    ds = ds.batch(batch_size, drop_remainder=True)
    return ds.repeat() if repeat else ds


def _gradient_loss(model, batch):
    """The loss whose gradient the step follows, without any site refresh."""
    if _uses_minibatch_ep(model):
        return -(model.minibatch_objective(batch) + model.log_prior_density())
    if _holds_data(model):
        return model.training_loss()
    return model.training_loss(batch[:2])


def make_train_step(model, optimizer, *, strategy: Optional[tf.distribute.Strategy] = None) -> Callable:
    """
    A compiled step ``step(batch) -> (loss, skipped)``: minibatch site refresh (for a
    :class:`~gpflow_ep.models.MinibatchEP` model) followed by one optimiser step; with
    ``strategy``, ``batch`` is a distributed batch.
    """
    variables = model.trainable_variables
    if isinstance(optimizer, tf_keras.optimizers.Optimizer):  # slots now: the step is traced once, not twice
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            optimizer.build(variables)

    if strategy is None:

        @tf.function(autograph=False)
        def step(batch):
            skipped = tf.constant(0)
            with tf.GradientTape() as tape:
                if _uses_minibatch_ep(model):  # site refresh, then F_M at the refreshed q (shared work)
                    objective, skipped = model.refresh_and_objective(batch)
                    loss = -(objective + model.log_prior_density())
                else:
                    loss = _gradient_loss(model, batch)
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss, skipped

        return step

    replicas = strategy.num_replicas_in_sync

    def replica_gradient_step(batch):
        with tf.GradientTape() as tape:
            loss = _gradient_loss(model, batch) / replicas
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    def merged(per_replica: SiteRefresh) -> SiteRefresh:
        return SiteRefresh.merge([SiteRefresh(*local) for local in strategy.experimental_local_results(per_replica)])

    @tf.function(autograph=False)
    def step(batch):
        skipped = tf.constant(0)
        if _uses_minibatch_ep(model):  # every replica proposes from the same q; merged, then written once
            refresh = merged(strategy.run(model.propose_refresh, args=(batch,)))
            model.apply_refresh(refresh)
            skipped = refresh.num_skipped
        losses = strategy.run(replica_gradient_step, args=(batch,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None), skipped

    return step


class ProgressBar:
    """
    A one-line text progress bar, redrawn at most every ``interval`` seconds: the fraction done is
    steps/``total`` or elapsed/``time_budget``, whichever is larger.
    """

    def __init__(self, total: float, time_budget: Optional[float], stream=None, width: int = 30, interval: float = 0.2):
        self.total, self.time_budget, self.width, self.interval = total, time_budget, width, interval
        self.stream = sys.stderr if stream is None else stream
        self._last = -np.inf

    def _fraction(self, steps: int, elapsed: float) -> float:
        done = steps / self.total if np.isfinite(self.total) else 0.0
        if self.time_budget:
            done = max(done, elapsed / self.time_budget)
        return min(done, 1.0)

    def render(self, steps: int, loss: float, elapsed: float) -> str:
        frac = self._fraction(steps, elapsed)
        filled = int(round(frac * self.width))
        total = f"/{int(self.total)}" if np.isfinite(self.total) else ""
        return (
            f"|{'#' * filled}{'.' * (self.width - filled)}| {frac:4.0%} step {steps}{total}"
            f"  {elapsed:6.1f} s  loss {loss:.4g}"
        )

    def update(self, steps: int, loss: float, elapsed: float) -> None:
        if elapsed - self._last >= self.interval:
            self._last = elapsed
            self.stream.write("\r" + self.render(steps, loss, elapsed))
            self.stream.flush()

    def close(self, steps: int, loss: float, elapsed: float) -> None:
        self.stream.write("\r" + self.render(steps, loss, elapsed) + "\n")
        self.stream.flush()


def fit(
    model,
    data,
    *,
    optimizer=None,
    batch_size: Optional[int] = None,
    epochs: Optional[float] = None,
    iterations: Optional[int] = None,
    time_budget: Optional[float] = None,
    ep_every: int = 50,
    strategy: Optional[tf.distribute.Strategy] = None,
    monitor: Optional[Callable] = None,
    progress: bool = False,
    seed: int = 0,
    train_step: Optional[Callable] = None,
) -> FitResult:
    """
    Train ``model`` on ``data``.

    :param data: arrays ``(X, Y)`` (minibatches are drawn with indices) or a ``tf.data.Dataset``
        of ``(X, Y, index)`` batches.
    :param optimizer: a ``tf_keras`` optimiser (default Adam(0.01); :func:`paper_adadelta` is the
        SEP paper's); create it under ``strategy.scope()`` when distributing.
    :param batch_size: minibatch size (default: all data, i.e. batch gradient steps).
    :param epochs, iterations, time_budget: stop at whichever comes first (default 1 epoch).
    :param ep_every: for models that hold their data: run EP to convergence every this many steps.
    :param strategy: a ``tf.distribute`` strategy; the batch is split over its replicas.
    :param monitor: called as ``monitor(step)`` after every step (e.g. a ``gpflow.monitor.Monitor``).
    :param progress: draw a progress bar (steps or time budget, elapsed time, last loss) on stderr.
    :param train_step: a step from :func:`make_train_step` for this model, optimiser and
        strategy, to reuse across ``fit`` calls (each call otherwise compiles a new one).

    EP options (damping of the minibatch refresh, power, ...) are the model's ``ep_settings``.
    """
    optimizer = optimizer or tf_keras.optimizers.Adam(0.01)
    if isinstance(data, tf.data.Dataset):
        dataset = data
        steps_per_epoch = None
    else:
        n = np.asarray(data[0]).shape[0]
        batch_size = n if batch_size is None else check_positive_int(batch_size, "batch_size")
        dataset = make_dataset(data, batch_size, seed=seed, shuffle=batch_size < n)
        steps_per_epoch = max(n // batch_size, 1)
    if iterations is None and epochs is None and time_budget is None:
        epochs = 1
    limit = np.inf
    if iterations is not None:
        limit = check_positive_int(iterations, "iterations")
    if epochs is not None:
        if steps_per_epoch is None:
            raise ValueError("epochs needs array data (X, Y); with a Dataset give iterations or time_budget")
        limit = min(limit, int(np.ceil(float(epochs) * steps_per_epoch)))
    if strategy is not None:
        dataset = strategy.experimental_distribute_dataset(dataset)
    step = train_step or make_train_step(model, optimizer, strategy=strategy)

    result = FitResult()
    bar = ProgressBar(limit, time_budget) if progress else None
    start = time.perf_counter()
    iterator = iter(dataset)
    while result.steps < limit and (time_budget is None or time.perf_counter() - start < time_budget):
        if _runs_batch_ep(model) and result.steps % ep_every == 0:
            model.run_ep()
        loss, skipped = step(next(iterator))
        result.steps += 1
        result.losses.append(float(loss))
        result.skipped_site_updates += int(skipped)
        if monitor is not None:
            monitor(result.steps)
        if bar is not None:
            bar.update(result.steps, result.losses[-1], time.perf_counter() - start)
    result.seconds = time.perf_counter() - start
    if bar is not None:
        bar.close(result.steps, result.losses[-1] if result.losses else float("nan"), result.seconds)
    if steps_per_epoch:
        result.epochs = result.steps / steps_per_epoch
    return result
