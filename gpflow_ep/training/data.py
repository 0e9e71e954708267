"""
The data pipeline of :func:`~gpflow_ep.training.fit`: minibatches ``(X, Y, index)`` of arrays
(:func:`make_dataset`), and the checks of training data against the model that trains on it, made
eagerly, before anything is compiled (``ValueError`` naming ``data`` or ``batch_size``).
"""

import warnings
from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf
from gpflow.config import default_float

from ..models import CheckedExternalDataTrainingLossMixin
from ..validation import check_inputs, check_positive_int, check_training_data
from .kinds import holds_data, needs_site_index, uses_minibatch_ep

__all__ = ["Batches", "check_batch", "check_data_meets_model", "check_dataset", "make_dataset", "training_batches"]


def _batches_per_epoch(num_data: int, batch_size: int, drop_remainder: bool) -> int:
    """The batches of an epoch of :func:`make_dataset`: the whole ones, and the remainder's unless dropped."""
    whole, remainder = divmod(num_data, min(batch_size, num_data))
    return whole + int(bool(remainder) and not drop_remainder)


def make_dataset(
    data,
    batch_size: int,
    *,
    shuffle: bool = True,
    seed: int = 0,
    repeat: bool = True,
    drop_remainder: bool = False,
    index: bool = True,
) -> tf.data.Dataset:
    """
    ``tf.data.Dataset`` of minibatches ``(X, Y, index)`` from arrays ``(X, Y)`` (X in GPflow's default float, Y too
    unless it holds integers, which are kept for GPflow's ``Softmax``); the index tells a per-point
    minibatch-EP model which sites the rows belong to (other models ignore it); ``index=False`` gives
    ``(X, Y)`` batches (what any GPflow model, and sparse EP with tied sites, takes). Every epoch is a
    fresh permutation cut into batches of ``batch_size``; its last batch holds the remaining
    n mod ``batch_size`` rows (as ``tf.data`` and Keras; a ``batch_size`` larger than n gives one
    batch of all n), unless ``drop_remainder``, which drops them (every batch then has the same
    shape). Batches are cut within an epoch, so no batch holds the same site twice.

    The arrays are checked here (X finite [N, D], Y [N, P]); labels are the model's to check
    (``model.validate_training_data``, or :func:`~gpflow_ep.training.fit`, which checks them).
    """
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise ValueError("data must be arrays (X, Y)")
    batch_size = check_positive_int(batch_size, "batch_size")
    X, Y = check_inputs(data[0], "data[0] (X)"), np.asarray(data[1])
    if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
        raise ValueError(f"data[1] (Y) must have shape [{X.shape[0]}, P] like data[0] (X); got {Y.shape}")
    if not np.issubdtype(Y.dtype, np.integer):  # integer class labels stay integers (GPflow's Softmax needs them)
        Y = Y.astype(default_float())
    n = X.shape[0]
    batch_size = min(batch_size, n)
    X, Y = tf.constant(X), tf.constant(Y)
    whole, remainder = divmod(n, batch_size)

    def epoch(number):
        """One epoch's batches of site indices: a permutation (seeded by (seed, epoch)) cut into rows."""
        order = tf.range(n, dtype=tf.int32)
        if shuffle:
            seeds = tf.stack([tf.constant(seed, tf.int64), number])
            order = tf.random.experimental.stateless_shuffle(order, seed=seeds)
        batches = tf.data.Dataset.from_tensor_slices(tf.reshape(order[: whole * batch_size], [whole, batch_size]))
        if remainder and not drop_remainder:
            batches = batches.concatenate(tf.data.Dataset.from_tensors(order[whole * batch_size :]))
        return batches

    def rows_of(rows):
        batch = (tf.gather(X, rows), tf.gather(Y, rows))
        return batch + (rows,) if index else batch

    # indices are permuted and cut, then the rows gathered per batch (no per-row shuffle buffer); a
    # batch never holds the same site twice (a minibatch site refresh would remove that site's old
    # contribution twice)
    epochs = tf.data.Dataset.range(np.iinfo(np.int64).max if repeat else 1)
    ds = epochs.flat_map(epoch).map(rows_of)
    # flat_map hides the number of batches; stating it keeps a multi-worker iterator from agreeing on
    # the end of the data with an all-reduce at every batch (as for repeat(): infinite)
    cardinality = tf.data.INFINITE_CARDINALITY if repeat else _batches_per_epoch(n, batch_size, drop_remainder)
    return ds.apply(tf.data.experimental.assert_cardinality(cardinality))


def check_data_meets_model(model, X: np.ndarray, Y: np.ndarray, batch_size: Optional[int]) -> None:
    """
    ``fit``'s array data against the model: a model that holds its data trains on those (so other
    ``data`` or a ``batch_size`` would be ignored: refused), and a minibatch-EP model has one site per
    point of ``num_data``.
    """
    if holds_data(model):
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
    if uses_minibatch_ep(model) and X.shape[0] != model.num_data:
        raise ValueError(
            f"data: {X.shape[0]} points, but the model was built with num_data={model.num_data} (one EP site per "
            "point): build it with num_data=len(X)"
        )


def check_dataset(model, dataset: tf.data.Dataset) -> None:
    """A user's ``tf.data.Dataset``: batches of (X, Y) or (X, Y, index); minibatch EP needs the index."""
    spec = dataset.element_spec
    if not isinstance(spec, tuple) or len(spec) not in (2, 3):
        raise ValueError(f"data: a Dataset must yield (X, Y) or (X, Y, index) batches; got elements {spec}")
    if needs_site_index(model) and len(spec) != 3:
        raise ValueError(
            f"data: {type(model).__name__} refreshes the sites of each minibatch and needs (X, Y, index) batches "
            "with the rows' site indices; give arrays (X, Y) or a Dataset from gpflow_ep.training.make_dataset"
        )


def check_batch(model, batch) -> None:
    """Eager validation of a batch from a user's Dataset (labels, shapes, NaN), named as ``data``."""
    if isinstance(model, CheckedExternalDataTrainingLossMixin):  # the model's own checks (site indices too)
        model.validate_training_data(tuple(batch) if needs_site_index(model) else tuple(batch[:2]))
    else:
        check_training_data(model, tuple(batch[:2]), "data batch")


class Batches(NamedTuple):
    """What :func:`fit` iterates over: the batches, the steps of an epoch (None for a user's Dataset)."""

    dataset: tf.data.Dataset
    steps_per_epoch: Optional[int]
    user_dataset: bool  # a user's Dataset: its batches are checked as they are drawn


def training_batches(model, data, batch_size: Optional[int], *, seed: int, whole_batches: bool) -> Batches:
    """
    ``fit``'s batches of ``data``: a user's ``tf.data.Dataset`` as given (checked), or arrays
    ``(X, Y)`` checked against the model and cut by :func:`make_dataset` (all the data when
    ``batch_size`` is None; shuffled when batches are smaller than the data). ``whole_batches``
    (under a ``tf.distribute`` strategy) drops each epoch's remainder, with a warning saying so.
    """
    if isinstance(data, tf.data.Dataset):
        check_dataset(model, data)
        return Batches(data, None, True)
    X, Y = check_training_data(model, data)
    n = X.shape[0]
    check_data_meets_model(model, X, Y, batch_size)
    batch_size = n if batch_size is None else min(check_positive_int(batch_size, "batch_size"), n)
    if whole_batches and n % batch_size:
        warnings.warn(
            f"fit: with strategy= every batch is whole, so each epoch ({n // batch_size} x {batch_size} points) "
            f"leaves out {n % batch_size} of the {n} points (a different random set each epoch); choose a "
            f"batch_size that divides {n} to use every point",
            UserWarning,
            stacklevel=3,
        )
    shuffle, index = batch_size < n, needs_site_index(model)
    dataset = make_dataset((X, Y), batch_size, seed=seed, shuffle=shuffle, drop_remainder=whole_batches, index=index)
    return Batches(dataset, _batches_per_epoch(n, batch_size, whole_batches), False)
