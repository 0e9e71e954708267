"""gpflow_ep.training.data: make_dataset's batches and the checks of fit's data against the model."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC, SEPGPC
from gpflow_ep.optimizers import MinibatchEP
from gpflow_ep.training import fit, make_dataset, make_train_step


def test_dataset_carries_site_indices(data):
    (X, Y), _ = data
    Xb, Yb, index = next(iter(make_dataset((X, Y), 32, seed=1)))
    np.testing.assert_array_equal(Xb.numpy(), X[index.numpy()])
    np.testing.assert_array_equal(Yb.numpy(), Y[index.numpy()])


def test_integer_labels(data):
    """Integer labels are kept (GPflow's Softmax needs them) and give EP models the same run as floats."""
    (X, Y), _ = data
    assert next(iter(make_dataset((X, Y.astype(int)), 32)))[1].dtype == tf.int64
    softmax = gpflow.models.SVGP(
        gpflow.kernels.SquaredExponential(),
        gpflow.likelihoods.Softmax(2),
        X[:10].copy(),
        num_latent_gps=2,
        num_data=len(X),
    )
    assert np.all(np.isfinite(fit(softmax, (X, Y.astype(int)), batch_size=100, epochs=1).losses))
    runs = []
    for labels in (Y, Y.astype(int)):
        m = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:10].copy(), num_data=len(X))
        runs.append(fit(m, (X, labels), batch_size=100, epochs=1).losses)
    np.testing.assert_array_equal(runs[0], runs[1])


def test_fit_refuses_data_the_model_would_ignore_and_a_num_data_it_was_not_built_for(data):
    (X, Y), _ = data
    kernel = gpflow.kernels.SquaredExponential()
    held = EPGPC((X, Y), kernel, Probit(), ep_mode="alternated")
    with pytest.raises(ValueError, match="^data: EPGPC holds its training data"):
        fit(held, (100 * X[:50], Y[:50]), iterations=1)
    with pytest.raises(ValueError, match="^batch_size: EPGPC holds its data"):
        fit(held, (X, Y), batch_size=20, iterations=1)
    sparse = SEPGPC(kernel, Probit(), X[:5].copy(), num_data=2 * len(X))
    message = rf"^data: {len(X)} points, but the model was built with num_data={2 * len(X)}"
    with pytest.raises(ValueError, match=message):
        fit(sparse, (X, Y), batch_size=20, iterations=1)


def test_make_dataset_validates_its_arguments_like_fit(data):
    (X, Y), _ = data
    with pytest.raises(ValueError, match="^batch_size must be"):
        make_dataset((X, Y), batch_size=0)
    with pytest.raises(ValueError, match=r"data\[0\] \(X\) contains NaN"):
        make_dataset((np.full_like(X, np.nan), Y), batch_size=10)
    with pytest.raises(ValueError, match=r"data\[1\] \(Y\) must have shape"):
        make_dataset((X, Y[:-1]), batch_size=10)


def test_under_a_strategy_batches_are_whole_and_fit_says_what_an_epoch_leaves_out(data):
    """With strategy=, every batch is whole (equal replica shares); fit warns that n mod batch_size points sit out."""
    (X, Y), _ = data
    X, Y = X[:398], Y[:398]
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        m = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), Probit(), X[:10].copy(), num_data=len(X))
        optimizer = tf_keras.optimizers.Adam(0.01)
    with pytest.warns(UserWarning, match=r"each epoch \(1 x 200 points\) leaves out 198 of the 398 points"):
        result = fit(m, (X, Y), batch_size=200, epochs=2, optimizer=optimizer, strategy=strategy)
    assert result.steps == 2 and result.epochs == 2.0 and np.all(np.isfinite(result.losses))


def test_batches_never_repeat_a_site_across_epoch_boundaries():
    """Regression: shuffle → repeat → batch put one site twice into a batch at epoch ends, which
    made a minibatch refresh remove that site's old contribution twice (found by the benchmark)."""
    X, Y = two_dimensional(50, seed=0)
    sizes = []
    for _, _, index in make_dataset((X, Y), 12, seed=3).take(40):
        assert len(np.unique(index.numpy())) == len(index)
        sizes.append(len(index))
    assert sizes[:10] == [12, 12, 12, 12, 2] * 2  # each epoch: 4 whole batches and the remaining 2 points


def test_each_epoch_is_a_fresh_seeded_permutation():
    """Every epoch holds each site once, in an order that changes from epoch to epoch and is fixed by the seed."""

    def epochs(seed, count=3):
        batches = [b[2].numpy() for b in make_dataset((X, Y), 12, seed=seed).take(5 * count)]
        return [np.concatenate(batches[5 * e : 5 * e + 5]) for e in range(count)]

    X, Y = two_dimensional(50, seed=0)
    first = epochs(seed=3)
    for order in first:
        np.testing.assert_array_equal(np.sort(order), np.arange(50))
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])
    np.testing.assert_array_equal(np.concatenate(first), np.concatenate(epochs(seed=3)))
    assert not np.array_equal(first[0], epochs(seed=4)[0])
    ordered = [b[2].numpy() for b in make_dataset((X, Y), 12, shuffle=False, repeat=False)]
    np.testing.assert_array_equal(np.concatenate(ordered), np.arange(50))



def test_the_number_of_batches_is_known():
    """Infinite when repeated, else an epoch's batches (a multi-worker iterator syncs per batch when it is unknown)."""
    X, Y = two_dimensional(50, seed=0)
    assert make_dataset((X, Y), 12).cardinality() == tf.data.INFINITE_CARDINALITY
    assert make_dataset((X, Y), 12, repeat=False).cardinality() == 5
    assert make_dataset((X, Y), 12, repeat=False, drop_remainder=True).cardinality() == 4
    assert len(list(make_dataset((X, Y), 12, repeat=False))) == 5


def test_minibatch_refresh_rejects_repeated_sites(data):
    import tensorflow as tf

    (X, Y), _ = data
    m = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:5].copy(), num_data=len(X))
    idx = np.array([3, 4, 3])
    with pytest.raises(ValueError, match="repeat a site"):
        MinibatchEP().step(m, (X[idx], Y[idx], idx))
    compiled = tf.function(lambda batch: MinibatchEP().step(m, batch))  # in a graph the check is an assertion
    with pytest.raises(tf.errors.InvalidArgumentError, match="repeat a site"):
        compiled((tf.constant(X[idx]), tf.constant(Y[idx]), tf.constant(idx)))


def test_a_batch_larger_than_the_data_uses_all_of_it(data):
    """As tf.data and Keras: batch_size > n is one batch of all n points per epoch (issue 27: 128 on iris's 105)."""
    (X, Y), _ = data
    X, Y = X[:105], Y[:105]
    m = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:8].copy(), num_data=len(X))
    seen = []
    result = fit(m, (X, Y), batch_size=128, epochs=2, monitor=lambda step: seen.append(step))
    assert result.steps == 2 and result.epochs == 2.0 and seen == [0, 1, 2]
    assert np.all(m.sites.precision.numpy() > 0.0)  # a full-batch refresh: every (probit) site was updated
    batches = list(make_dataset((X, Y), 128, repeat=False))
    assert len(batches) == 1 and batches[0][0].shape[0] == 105


def test_an_epoch_sees_every_point_and_the_step_is_traced_at_most_twice(data):
    """
    398 points in batches of 200: an epoch is 2 steps (200 + 198 points, as Keras), not one step
    that drops 198 points; each epoch's batches hold every index exactly once; the compiled step is
    traced once per batch shape (2), not once per epoch.
    """
    (X, Y), _ = data
    X, Y = X[:398], Y[:398]
    epoch = [index.numpy() for _, _, index in make_dataset((X, Y), 200, seed=4, repeat=False)]
    assert [len(i) for i in epoch] == [200, 198]
    np.testing.assert_array_equal(np.sort(np.concatenate(epoch)), np.arange(398))
    for _, _, index in make_dataset((X, Y), 200, seed=4).take(9):  # across epoch boundaries too
        assert len(np.unique(index.numpy())) == len(index)
    m = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:10].copy(), num_data=len(X))
    optimizer = tf_keras.optimizers.Adam(0.01)
    step = make_train_step(m, optimizer)
    result = fit(m, (X, Y), batch_size=200, epochs=3, optimizer=optimizer, train_step=step)
    assert result.steps == 6 and result.epochs == 3.0 and np.all(np.isfinite(result.losses))
    assert np.all(m.sites.precision.numpy() > 0.0)  # every site refreshed in the first epoch already
    assert step.experimental_get_tracing_count() == 2
