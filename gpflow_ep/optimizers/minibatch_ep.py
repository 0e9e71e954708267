r"""
The minibatch site refresh of sparse EP as an optimiser step (Hernández-Lobato & Hernández-Lobato
2016, "Scalable Gaussian process classification via expectation propagation", AISTATS, Sec. 2.3, eq. 6):
``MinibatchEP().step(model, batch)`` updates the sites of a minibatch and q(u) the way
``gpflow.optimizers.NaturalGradient`` updates ``q_mu``/``q_sqrt``, and a gradient optimiser (Adam,
ADADELTA) steps the hyper-parameters on the model's minibatch loss -F_M at the refreshed q.

A step works in a replica context (``tf.distribute``; without a strategy, the default one): each
replica builds its share's frame once (:meth:`~gpflow_ep.models.SEPGPC.minibatch_frame`: prior
blocks, chol(K_uu), projections, stored q), proposes its sites' refresh from the same q, and the
proposals are merged and written once in cross-replica context (``merge_call``: per-site and
per-pair rows gathered in replica order, q's changes summed), so several devices give the numbers
of one. A merged refresh with a non-finite value, or whose q would be improper, is not written
(every update of the batch counts as skipped). The replica then evaluates F_M on the same frame at
the refreshed q: the batch's cavities are computed once at the stored q (for the refresh) and once
at the refreshed q (for F_M), and the kernel matrices and chol(K_uu) once per step.

**The loss's value and its gradient.** F_M's gradient is the right one (an unbiased estimate of
the evidence's at a fixed point), but its value is not an evidence: it depends on the inducing
inputs' conditioning and reads far below zero for binary labels. :meth:`MinibatchEP.refreshed_loss`
(the loss of ``fit``'s step and of :meth:`MinibatchEP.loss_closure`) therefore returns

    loss = reported + (surrogate - stop_gradient(surrogate)),
    reported = stop_gradient(-(log Ẑ_M + log p(θ))),     surrogate = -(F_M + log p(θ)),

whose value is ``reported`` exactly (x - x = 0 in floating point) — log Ẑ_M the unbiased minibatch
estimate of log Z_EP on the scale of the full data
(:meth:`~gpflow_ep.models.SEPGPC.minibatch_log_marginal_likelihood`), comparable with SVGP's
-ELBO — and whose gradient is the surrogate's: ``optimizer.minimize(loss_closure)`` differentiates
what the closure returns, so training is unchanged. A non-finite value of either part makes the
loss non-finite (so ``fit``'s finite guard still sees a bad F_M).
"""

from typing import Callable, Tuple

import tensorflow as tf

from ..ep.whitened import WhitenedGaussian
from ..models.minibatch import MinibatchEPModel, SiteRefresh

__all__ = ["MinibatchEP", "merge_refreshes"]


def merge_refreshes(strategy: tf.distribute.Strategy, per_replica: SiteRefresh) -> SiteRefresh:
    """All replicas' refreshes on every worker: site and pair rows gathered in replica order, q's changes summed."""
    if strategy.num_replicas_in_sync == 1:
        return tf.nest.map_structure(lambda t: strategy.experimental_local_results(t)[0], per_replica)
    total = tf.distribute.ReduceOp.SUM
    return SiteRefresh(
        None if per_replica.index is None else strategy.gather(per_replica.index, axis=0),
        tuple(strategy.gather(rows, axis=0) for rows in per_replica.site_state),
        tuple(strategy.reduce(total, change, axis=None) for change in per_replica.posterior_change),
        strategy.reduce(total, per_replica.num_skipped, axis=None),
        None if per_replica.pair_index is None else strategy.gather(per_replica.pair_index, axis=0),
        tuple(strategy.gather(rows, axis=0) for rows in per_replica.pair_state),
    )


def _check_model(model) -> None:
    if not isinstance(model, MinibatchEPModel):
        raise ValueError(
            f"model must be a minibatch EP model (gpflow_ep.models.SEPGPC or SEPMGPC); got {type(model).__name__}"
        )


class MinibatchEP:
    """
    The minibatch site refresh of sparse EP (module docstring), paired with a gradient optimiser as
    GPflow pairs ``NaturalGradient`` with Adam. With ``batches`` an iterator of ``(X, Y, index)``
    minibatches (``gpflow_ep.training.make_dataset``)::

        minibatch_ep = gpflow_ep.optimizers.MinibatchEP()
        loss = minibatch_ep.loss_closure(model, batches)  # each call: next batch, refresh its sites, the loss
        adam = tf_keras.optimizers.Adam(0.01)
        step = tf.function(lambda: adam.minimize(loss, model.trainable_variables))
        for _ in range(1000):
            step()

    or, in two explicit steps per batch (the frame is then built twice)::

        minibatch_ep.step(model, batch)
        adam.minimize(model.training_loss_closure(batch), model.trainable_variables)

    :func:`gpflow_ep.training.fit` does the first, compiled, on one device or several. The damping
    of the refresh is the model's (``minibatch_damping``, capped for large batches,
    :func:`~gpflow_ep.models.sparse_sites.refresh_damping`).
    """

    def step(self, model, batch) -> tf.Tensor:
        """
        Refresh the sites of ``batch = (X, Y, index)`` and q(u) (eagerly or inside a ``tf.function``,
        with or without a ``tf.distribute`` strategy); returns the number of site updates skipped.
        """
        _check_model(model)
        return self._refresh(model, model.minibatch_frame(batch))[0]

    def refreshed_objective(self, model, batch) -> Tuple[tf.Tensor, tf.Tensor]:
        """
        One step's model part: refresh the batch's sites, then F_M at the refreshed q, sharing the
        batch's frame; returns (F_M, number of skipped site updates). Differentiate F_M (the refresh
        itself is EP state, never differentiated). Equal to :meth:`step` followed by
        ``model.minibatch_objective(batch)``.
        """
        _check_model(model)
        model.check_minibatch_objective()  # before anything is written
        frame = model.minibatch_frame(batch)
        skipped, frame = self._refresh(model, frame)
        return model.minibatch_objective(frame), skipped

    def refreshed_loss(self, model, batch) -> Tuple[tf.Tensor, tf.Tensor]:
        """
        One step's loss: refresh the batch's sites, then at the refreshed q (one frame) the loss
        whose value is the minibatch estimate of -log Z_EP - log p(θ) and whose gradient is that of
        -(F_M + log p(θ)) (module docstring); returns (loss, number of skipped site updates).
        """
        _check_model(model)
        model.check_minibatch_objective()  # before anything is written
        skipped, frame = self._refresh(model, model.minibatch_frame(batch))
        log_prior = model.log_prior_density()
        objective, log_marginal_likelihood = model.minibatch_objective_and_evidence(frame)
        surrogate = -(objective + log_prior)
        reported = tf.stop_gradient(-(log_marginal_likelihood + log_prior))
        return reported + (surrogate - tf.stop_gradient(surrogate)), skipped

    def loss_closure(self, model, data, *, compile: bool = True) -> Callable[[], tf.Tensor]:
        """
        A closure for ``optimizer.minimize``: each call takes the next batch of ``data`` (an
        iterator of ``(X, Y, index)`` batches; or one such batch, used every time), refreshes its
        sites and returns the loss at the refreshed q (:meth:`refreshed_loss`): its value is the
        minibatch estimate of -log Z_EP - log p(θ) on the full data's scale, its gradient that of
        -(F_M + log p(θ)). Compiled with ``tf.function`` unless ``compile=False``. Batches are
        validated (labels, shapes, NaN, site indices) as they are drawn when the closure is called
        eagerly; inside a compiled step (``tf.function(lambda: optimizer.minimize(loss, ...))``) only
        the repeated-index check remains, so validate the data once beforehand:
        ``model.validate_training_data((X, Y))`` (``make_dataset`` checks X and Y's shape).
        """
        _check_model(model)

        def loss(batch):
            return self.refreshed_loss(model, batch)[0]

        if isinstance(data, (tuple, list)):
            model.validate_training_data(tuple(data))
            batch = tuple(data)
            compiled = tf.function(loss, autograph=False) if compile else loss
            return lambda: compiled(batch)
        compiled = tf.function(loss, autograph=False) if compile else loss

        def closure() -> tf.Tensor:
            batch = next(data)
            if tf.executing_eagerly():
                model.validate_training_data(tuple(batch))
            return compiled(batch)

        return closure

    @staticmethod
    def _refresh(model, frame):
        """Propose from ``frame`` in this replica, merge and write once; the frame at the refreshed q."""
        context = tf.distribute.get_replica_context()
        if context is None:
            raise ValueError(
                "MinibatchEP: call it in a replica context (inside strategy.run, as gpflow_ep.training.fit does), "
                "not in a strategy's cross-replica context"
            )
        refresh, A_refreshed = model.propose_refresh(frame)

        def write(strategy, refresh, cholesky):
            merged = merge_refreshes(strategy, refresh)
            applied = model.apply_refresh(merged, strategy.experimental_local_results(cholesky)[0])
            q = applied.posterior
            return applied.num_skipped, applied.accepted, q.cholesky, q.half_mean, q.proper, merged.posterior_change

        skipped, accepted, cholesky, half_mean, proper, change = context.merge_call(write, args=(refresh, frame.L))
        q_refreshed = WhitenedGaussian.from_factor(cholesky, half_mean, proper)
        return skipped, frame.after(accepted, A_refreshed, refresh.num_skipped, q_refreshed, change)
