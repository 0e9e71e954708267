"""
The minibatch-EP interface: what :class:`gpflow_ep.optimizers.MinibatchEP` (and through it
:func:`gpflow_ep.training.fit` and a plain GPflow loop) needs from a model whose sites are refreshed
one minibatch at a time.

A step on a minibatch ``(X, Y, index)`` is: build the batch's frame once (prior blocks, their
factorisation and the stored q), propose one damped EP update of each of its sites from it
(nothing written), apply the proposal (the sites and q), and take a gradient step on an objective
whose gradient estimates that of the evidence at the refreshed q (Hernández-Lobato &
Hernández-Lobato 2016, Sec. 2.3, "Training using minibatches"). Proposal and application are
separate so that ``tf.distribute`` replicas propose from the same q and the proposals are merged
before q changes (per-site and per-pair rows concatenated in replica order, q's changes summed, on
every worker).
"""

import abc
from typing import NamedTuple, Optional, Tuple

import tensorflow as tf

from ..summaries import summary_repr

__all__ = ["SiteRefresh", "AppliedRefresh", "MinibatchEPModel"]


class SiteRefresh(NamedTuple):
    """A proposed refresh of a minibatch's sites (nothing written yet)."""

    index: Optional[tf.Tensor]  # [B] int32: the sites refreshed (None for tied sites, which have no rows)
    site_state: Tuple[tf.Tensor, ...]  # per-site rows [B, ...] (new τ, ν and any per-site state)
    posterior_change: Tuple[tf.Tensor, ...]  # additive changes of q's state
    num_skipped: tf.Tensor  # [] int32: site updates skipped (improper cavity or tilted distribution)
    #: [P] int32: rows of state kept per projection rather than per site (SEPGPC's directions, one per
    #: (class, point) pair in SEPMGPC, where several sites share a pair), and those rows
    pair_index: Optional[tf.Tensor] = None
    pair_state: Tuple[tf.Tensor, ...] = ()

    def __repr__(self) -> str:  # the counts and the arrays' shapes, not every row
        return summary_repr(self)

    def is_finite(self) -> tf.Tensor:
        """True (a boolean tensor) when every row and every change of q is finite."""
        parts = list(self.site_state) + list(self.posterior_change) + list(self.pair_state)
        return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in parts])


class AppliedRefresh(NamedTuple):
    """What writing a refresh did: the site updates skipped, whether it was written, and q after it."""

    num_skipped: tf.Tensor  # [] int32 (all of the batch's when the refresh was refused)
    accepted: tf.Tensor  # [] bool
    posterior: object  # q(v) after the refresh (gpflow_ep.ep.whitened.WhitenedGaussian), factorised once


class MinibatchEPModel(abc.ABC):
    """
    A model trained by minibatch EP (:class:`~gpflow_ep.models.SEPGPC`, :class:`~gpflow_ep.models.SEPMGPC`).
    A refresh is proposed from the stored q (nothing written) and applied by :meth:`apply_refresh`,
    the model's one writer of its EP state between full runs; its objectives never write state.
    """

    @property
    @abc.abstractmethod
    def batches_carry_index(self) -> bool:
        """
        Whether a minibatch is ``(X, Y, index)``, its rows' site indices telling which stored sites to
        refresh (per-point sites), or any ``(X, Y)`` (tied sites).
        """

    @abc.abstractmethod
    def minibatch_frame(self, batch):
        """The quantities of ``batch = (X, Y, index)`` a step needs, computed once (a ``Frame``)."""

    @abc.abstractmethod
    def propose_refresh(self, batch) -> Tuple[SiteRefresh, tf.Tensor]:
        """
        The refresh of the sites of ``batch`` (or its frame) from the stored q (nothing written), and
        the pairs' projections after it.
        """

    @abc.abstractmethod
    def apply_refresh(self, refresh: SiteRefresh, cholesky=None) -> AppliedRefresh:
        """
        Write a (merged) refresh: the sites' rows and q's change, unless it holds a non-finite value
        or would make q improper (then nothing is written). Call in cross-replica context;
        ``cholesky``: chol(K_uu) at the current hyper-parameters when the caller has it.
        """

    @abc.abstractmethod
    def check_minibatch_objective(self) -> None:
        """A ``ValueError`` when the model's settings do not allow its minibatch objective (checked before a step)."""

    @abc.abstractmethod
    def minibatch_objective(self, batch) -> tf.Tensor:
        """The objective of the gradient step at the stored q (its gradient estimates the evidence's); pure."""

    @abc.abstractmethod
    def minibatch_log_marginal_likelihood(self, batch) -> tf.Tensor:
        """An unbiased minibatch estimate of the evidence log Z_EP at the stored q, to report (no gradient); pure."""

    def minibatch_objective_and_evidence(self, batch) -> Tuple[tf.Tensor, tf.Tensor]:
        """Both of the above for one batch (a model may share their work; by default computed apart)."""
        return self.minibatch_objective(batch), self.minibatch_log_marginal_likelihood(batch)
