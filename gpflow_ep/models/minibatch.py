"""
The minibatch-EP interface: what :func:`gpflow_ep.training.fit` (and a plain GPflow loop) needs
from a model whose sites are refreshed one minibatch at a time.

A step on a minibatch ``(X, Y, index)`` is: refresh the batch's sites (one damped EP update each,
``EPSettings.minibatch_damping``), update q accordingly, and take a gradient step on an objective
whose gradient estimates that of the evidence at the refreshed q (SEP spec §3). The refresh is
split into a proposal that writes nothing and its application, so that ``tf.distribute`` replicas
can propose from the same q and the proposals can be merged before q changes
(per-site and per-pair rows are concatenated in replica order, q's changes summed, on every worker).
"""

import abc
from typing import NamedTuple, Optional, Tuple

import tensorflow as tf

from ..summaries import summary_repr

__all__ = ["SiteRefresh", "MinibatchEP"]


class SiteRefresh(NamedTuple):
    """A proposed refresh of a minibatch's sites (nothing written yet)."""

    index: tf.Tensor  # [B] int32: the sites refreshed
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


class MinibatchEP(abc.ABC):
    """
    A model trained by minibatch EP. ``training_loss((X, Y, index))`` of such a model performs
    the whole step's refresh (so a plain GPflow loop trains it); the methods below are its parts.
    """

    @abc.abstractmethod
    def propose_refresh(self, batch) -> SiteRefresh:
        """The refresh of the sites of ``batch = (X, Y, index)`` from the current q; writes nothing."""

    @abc.abstractmethod
    def apply_refresh(self, refresh: SiteRefresh) -> tf.Tensor:
        """
        Write a (merged) refresh: the sites' rows and q's change, unless it holds a non-finite value
        (then nothing is written). Call in cross-replica context. Returns the number of skipped updates.
        """

    @abc.abstractmethod
    def minibatch_objective(self, batch) -> tf.Tensor:
        """The objective of the gradient step at the stored q (its gradient estimates the evidence's)."""

    @abc.abstractmethod
    def refresh_and_objective(self, batch) -> Tuple[tf.Tensor, tf.Tensor]:
        """
        One single-device step's model part: refresh the batch's sites, then the objective at the
        refreshed q; returns (objective, number of skipped site updates). Equal to
        ``apply_refresh(propose_refresh(batch))`` followed by ``minibatch_objective(batch)``
        (implementations may share work between the two).
        """
