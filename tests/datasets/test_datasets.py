"""Tests of the package's data sets: scikit-learn's bundled sets and the synthetic generators."""

import numpy as np
import pytest

from gpflow_ep.datasets import breast_cancer_split, noisy_mixture, sklearn_multiclass_split, standardise

# -------------------------------------------------------------------------------- bundled data


def test_breast_cancer_split_is_stratified_and_standardised():
    split = breast_cancer_split(seed=0, test_fraction=0.3)
    n_train, n_test = split.X_train.shape[0], split.X_test.shape[0]
    assert n_train + n_test == 569 and split.X_train.shape[1] == 30
    assert abs(n_test - 0.3 * 569) <= 1
    assert split.Y_train.shape == (n_train, 1) and split.Y_test.shape == (n_test, 1)
    assert set(np.unique(split.Y_train)) == {0.0, 1.0}
    # stratified: both parts keep the overall class balance (212 malignant / 357 benign)
    overall = 357 / 569
    assert abs(split.Y_train.mean() - overall) < 1.0 / n_train + 1e-12
    assert abs(split.Y_test.mean() - overall) < 1.0 / n_test + 1e-12
    np.testing.assert_allclose(split.X_train.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(split.X_train.std(0), 1.0, atol=1e-12)
    # the test part is not standardised with its own statistics
    assert not np.allclose(split.X_test.mean(0), 0.0, atol=1e-6)


def test_breast_cancer_split_is_seeded():
    a, b, c = breast_cancer_split(seed=0), breast_cancer_split(seed=0), breast_cancer_split(seed=1)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.Y_test, c.Y_test) or not np.array_equal(a.X_test, c.X_test)


# -------------------------------------------------------------------------------- synthetic data


@pytest.mark.parametrize("n_per_class, rate", [(200, 0.1), (50, 0.0), (37, 0.25), (100, 0.5)])
def test_noisy_mixture_flips_round_rate_times_n(n_per_class, rate):
    X, noisy, clean = noisy_mixture(n_per_class, flip_rate=rate, seed=3)
    n = 2 * n_per_class
    assert X.shape == (n, 2) and noisy.shape == (n, 1) and clean.shape == (n, 1)
    assert set(np.unique(noisy)) <= {0.0, 1.0}
    assert clean.sum() == n_per_class
    assert int((noisy != clean).sum()) == int(round(rate * n))


def test_noisy_mixture_is_seeded():
    a, b = noisy_mixture(30, seed=5), noisy_mixture(30, seed=5)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], noisy_mixture(30, seed=6)[0])


@pytest.mark.parametrize("name, n, C", [("iris", 150, 3), ("wine", 178, 3), ("digits", 1797, 10)])
def test_sklearn_multiclass_split_is_stratified(name, n, C):
    data = sklearn_multiclass_split(name, seed=2)
    assert len(data.Y_train) + len(data.Y_test) == n
    assert data.Y_train.dtype == data.Y_test.dtype == np.int64  # class indices, as GPflow's Softmax takes them
    assert data.Y_train.shape == (len(data.X_train), 1) and data.Y_test.shape == (len(data.X_test), 1)
    assert set(np.unique(data.Y_test)) == set(range(C))
    np.testing.assert_allclose(data.X_train.mean(0), 0.0, atol=1e-10)
    assert not np.array_equal(sklearn_multiclass_split(name, seed=3).Y_test, data.Y_test)
    with pytest.raises(ValueError, match="name"):
        sklearn_multiclass_split("mnist")


def test_a_stock_svgp_with_softmax_trains_on_the_multiclass_labels():
    """GPflow's ``Softmax`` takes integer labels only: ``fit`` trains a stock SVGP on the split as it comes."""
    import gpflow
    from gpflow.keras import tf_keras

    from gpflow_ep.training import fit

    data = sklearn_multiclass_split("iris", seed=0)
    X, Y = data.X_train, data.Y_train
    kernel = gpflow.kernels.SquaredExponential(lengthscales=[2.0] * X.shape[1])
    model = gpflow.models.SVGP(kernel, gpflow.likelihoods.Softmax(3), X[::12].copy(), num_latent_gps=3, num_data=len(X))
    result = fit(model, (X, Y), iterations=10, optimizer=tf_keras.optimizers.Adam(0.05), progress=False)
    losses = np.asarray(result.losses)
    assert losses.shape == (10,) and np.all(np.isfinite(losses))
    assert losses[-1] < losses[0]  # full-batch steps on the negative ELBO


def test_standardise_uses_the_training_part_and_keeps_constant_columns():
    X_train, X_test = np.array([[1.0, 5.0], [3.0, 5.0]]), np.array([[2.0, 7.0]])
    a, b = standardise(X_train, X_test)
    np.testing.assert_allclose(a, [[-1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(b, [[0.0, 2.0]])
