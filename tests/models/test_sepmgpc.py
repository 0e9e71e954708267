"""
SEPMGPC (scalable multi-class EP): the paired factor's tilted moments against 2-D quadrature,
GPflow's multi-output kernels and inducing variables, probabilities that sum to 1, the minibatch
fixed point = the batch fixed point, the gradient at convergence = finite differences of the
re-converged evidence, C = 2 against SEPGPC, and the API (labels, refused options, fit). Two
devices = one: tests/training/test_step.py.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.inducing_variables import (
    InducingPoints,
    InducingVariables,
    SeparateIndependentInducingVariables,
    SharedIndependentInducingVariables,
)
from gpflow.kernels import SeparateIndependent, SharedIndependent
from scipy import linalg, special

from gpflow_ep.covariances import block_Kuf, block_Kuu
from gpflow_ep.datasets import two_dimensional
from gpflow_ep.ep.whitened import SitePairs
from gpflow_ep.likelihoods import DifferenceFactor, MultiClassStep, Probit
from gpflow_ep.likelihoods.argmax import argmax_probabilities
from gpflow_ep.models import SEPGPC, SEPMGPC
from gpflow_ep.models.sparse_sites import SiteBatch
from gpflow_ep.optimizers import MinibatchEP
from gpflow_ep.training import fit


@pytest.fixture(scope="module")
def three_classes():
    """40 points, D = 2, three classes by angle sectors, 10 % of the labels shuffled."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 2))
    y = np.digitize(np.arctan2(X[:, 1], X[:, 0]), [-np.pi / 3, np.pi / 3])
    flip = rng.permutation(40)[:4]
    y[flip] = rng.integers(0, 3, size=4)
    return X, y[:, None]


def _kernel():
    return gpflow.kernels.SquaredExponential(variance=1.5, lengthscales=[0.9, 1.2])


def _model(X, noise=1.0, **options):
    options.setdefault("tol", 1e-10)
    options.setdefault("max_sweeps", 3000)
    return SEPMGPC(_kernel(), MultiClassStep(3, noise_variance=noise), X[::5].copy(), num_data=len(X), **options)


# ------------------------------------------------------------------------------ the factor


@pytest.mark.parametrize(
    "m_y, m_k, v_y, v_k, s, noise",
    [(0.3, -0.2, 0.5, 1.2, 0.1, 0.2), (-1.5, 1.0, 0.3, 0.4, 0.0, 0.05), (4.0, 0.5, 2.0, 0.1, 0.5, 0.5)],
)
def test_difference_factor_moments_equal_two_dimensional_quadrature(m_y, m_k, v_y, v_k, s, noise):
    """
    log Z and the tilted mean and variance of h_y and of h_k under Θ(h_y + ε_y - h_k - ε_k)
    N(h_y; m_y, v_y + s) N(h_k; m_k, v_k + s): the closed form against a 2-D Gauss–Hermite rule
    (200 × 200 nodes on Φ((h_y - h_k)/√(2σ²)), smooth, so 1e-8).
    """
    factor = DifferenceFactor(noise, tf.constant([[s], [s]], tf.float64))
    t = factor.tilted(tf.constant([[m_y], [m_k]], tf.float64), tf.constant([[v_y], [v_k]], tf.float64))
    x, w = np.polynomial.hermite.hermgauss(200)
    hy = m_y + np.sqrt(2 * (v_y + s)) * x[:, None]
    hk = m_k + np.sqrt(2 * (v_k + s)) * x[None, :]
    weight = np.outer(w, w) / np.pi * special.ndtr((hy - hk) / np.sqrt(2 * noise))
    Z = weight.sum()
    assert t.log_z.numpy()[0, 0] == pytest.approx(np.log(Z), abs=1e-8) and t.log_z.numpy()[1, 0] == 0.0
    for row, h in ((0, hy), (1, hk)):
        mean_q = (weight * h).sum() / Z
        var_q = (weight * h**2).sum() / Z - mean_q**2
        mean, var = t.mean_and_var(
            tf.constant([[m_y], [m_k]], tf.float64), tf.constant([[v_y + s], [v_k + s]], tf.float64)
        )
        assert mean.numpy()[row, 0] == pytest.approx(mean_q, abs=1e-8)
        assert var.numpy()[row, 0] == pytest.approx(var_q, abs=1e-8)


def test_a_pair_is_updated_together_or_not_at_all():
    factor = DifferenceFactor(0.1)
    valid = tf.constant([[True], [False], [True], [True]])  # pairs (0, 2) and (1, 3)
    np.testing.assert_array_equal(factor.joint_validity(valid).numpy()[:, 0], [True, False, True, False])


def test_the_sites_of_a_point_are_updated_together_or_not_at_all():
    """C = 3: two factors per point, sites (y-sites of points 0, 0, 1, 1; then their k-sites)."""
    factor = DifferenceFactor(0.1, factors_per_point=2)
    valid = np.ones((8, 1), bool)
    valid[5] = False  # point 0's second k-site
    np.testing.assert_array_equal(factor.joint_validity(tf.constant(valid)).numpy()[:, 0], [0, 0, 1, 1, 0, 0, 1, 1])


def test_argmax_probabilities_sum_to_one_and_match_monte_carlo():
    rng = np.random.default_rng(0)
    mean = rng.normal(scale=2.0, size=(6, 4))
    var = rng.uniform(0.05, 3.0, size=(6, 4))
    p = argmax_probabilities(tf.constant(mean), tf.constant(var)).numpy()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-10)  # tests/likelihoods/test_argmax.py
    draws = mean[:, :, None] + np.sqrt(var)[:, :, None] * rng.normal(size=(6, 4, 200_000))
    counts = np.stack([(np.argmax(draws, axis=1) == k).mean(axis=1) for k in range(4)], axis=1)
    np.testing.assert_allclose(p, counts, atol=4 * np.sqrt(0.25 / 200_000))  # 4 Monte Carlo s.e.


# ------------------------------------------------------------------------------ kernels and inducing inputs


def test_call_forms_map_onto_gpflow_multioutput_objects():
    """
    One kernel: ``SharedIndependent`` (shared hyper-parameters); C kernels: ``SeparateIndependent``;
    one [M, D] array: C trainable copies (``SeparateIndependentInducingVariables``); one
    ``InducingPoints``: shared by the classes; GPflow's objects as given.
    """
    Z = np.random.default_rng(1).normal(size=(4, 2))
    m = SEPMGPC(_kernel(), MultiClassStep(3), Z, num_data=10)
    assert isinstance(m.kernel, SharedIndependent) and m.kernel.output_dim == 3
    assert isinstance(m.inducing_variable, SeparateIndependentInducingVariables)
    Zs = [iv.Z for iv in m.inducing_variable.inducing_variable_list]
    assert len({id(z) for z in Zs}) == 3 and all(np.array_equal(z.numpy(), Z) for z in Zs)
    m = SEPMGPC([_kernel() for _ in range(3)], MultiClassStep(3), InducingPoints(Z), num_data=10)
    assert isinstance(m.kernel, SeparateIndependent) and isinstance(
        m.inducing_variable, SharedIndependentInducingVariables
    )
    shared = SharedIndependentInducingVariables(InducingPoints(Z))
    m = SEPMGPC(SharedIndependent(_kernel(), 3), MultiClassStep(3), shared, num_data=10)
    assert m.inducing_variable is shared  # K_uu factorised once for all classes, q(u) per class:
    assert block_Kuu(m.inducing_variable, m.kernel).shape == (1, 4, 4)
    assert block_Kuf(m.inducing_variable, m.kernel, Z).shape == (1, 4, 4)
    assert m.ep_state.posterior_precision.shape == (3, 4, 4)
    with pytest.raises(ValueError, match="kernel: SharedIndependent has output_dim 2"):
        SEPMGPC(SharedIndependent(_kernel(), 2), MultiClassStep(3), shared, num_data=10)
    with pytest.raises(ValueError, match="inducing_variable has 2 sets"):
        SEPMGPC(_kernel(), MultiClassStep(3), [Z, Z], num_data=10)
    with pytest.raises(ValueError, match="same number of inducing inputs"):
        SEPMGPC(_kernel(), MultiClassStep(3), [Z, Z, Z[:3]], num_data=10)


def test_shared_inducing_inputs_equal_separate_copies_at_the_same_values(three_classes):
    """
    Shared Z (one K_uu factorised once) against C equal copies of it (K_uu per class): the same
    model, so batch EP, the evidence and its gradient in the kernel's parameters, a minibatch
    refresh and F_M agree to round-off (float64; sites to 1e-9 after EP converged to 1e-11).
    """
    X, Y = three_classes
    options = dict(tol=1e-11, max_sweeps=3000)
    shared = SEPMGPC(_kernel(), MultiClassStep(3, 0.5), InducingPoints(X[::5].copy()), num_data=40, **options)
    separate = SEPMGPC(_kernel(), MultiClassStep(3, 0.5), X[::5].copy(), num_data=40, **options)
    for m in (shared, separate):
        assert bool(m.run_ep((X, Y)).converged)
    np.testing.assert_allclose(shared.sites.precision.numpy(), separate.sites.precision.numpy(), rtol=0, atol=1e-9)
    results = []
    for m in (shared, separate):
        with tf.GradientTape() as tape:
            value = m.log_marginal_likelihood((X, Y))
        results.append([value] + tape.gradient(value, list(m.kernel.kernel.trainable_variables)))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
    idx = np.arange(8, dtype=np.int32)
    for m in (shared, separate):
        assert int(MinibatchEP().step(m, (X[idx], Y[idx], idx))) == 0
    objectives = [float(m.minibatch_objective((X[idx], Y[idx], idx))) for m in (shared, separate)]
    np.testing.assert_allclose(objectives[0], objectives[1], rtol=1e-10)
    np.testing.assert_allclose(shared.predict_f(X[:5])[1], separate.predict_f(X[:5])[1], rtol=1e-9)


# ------------------------------------------------------------------------------ EP


class StackedInducingPoints(InducingVariables):
    """C copies of inducing inputs Z [M, D], stacked as u = (u^0, …, u^{C-1}) [CM] (the oracle's)."""

    def __init__(self, Z, num_classes):
        super().__init__()
        self.inducing_variable_list = [InducingPoints(Z.copy()) for _ in range(num_classes)]

    @property
    def num_inducing(self):
        return sum(iv.num_inducing for iv in self.inducing_variable_list)

    @property
    def shape(self):
        return (self.num_inducing, self.inducing_variable_list[0].Z.shape[-1], None)


class StackedSEPMGPC(SEPGPC):
    """
    The oracle of the per-class algebra: SEPMGPC as plain SEPGPC over the class-augmented sites
    (one site per column of a dense [CM, S] K_uf whose rows are zero outside the site's class, a
    block-diagonal [CM, CM] K_uu, one stored direction per site), the way SEPMGPC was first written.
    """

    input_dim = 2  # X's columns (the sites' inputs have a class column besides)

    def __init__(self, kernel, likelihood, Z, num_data, **options):
        self.C = likelihood.num_classes
        super().__init__(kernel, likelihood, StackedInducingPoints(Z, self.C), num_data, **options)
        directions = np.zeros((self.num_sites, self.C * len(Z)))  # one per site
        self.ep_state.site_directions = tf.Variable(directions, trainable=False)

    def _num_sites(self, num_data):
        return 2 * num_data * (self.C - 1)

    def _check_likelihood(self, likelihood):  # its factor is SEPMGPC's paired one (below), not the likelihood's
        pass

    def _factor(self, X, Y, extra_var=None):
        return DifferenceFactor(self.likelihood.noise_variance, extra_var, self.C - 1)

    def _block_Kuu(self):
        blocks = [
            self.kernel(iv.Z) + gpflow.config.default_jitter() * tf.eye(iv.num_inducing, dtype=tf.float64)
            for iv in self.inducing_variable.inducing_variable_list
        ]
        return tf.linalg.LinearOperatorBlockDiag([tf.linalg.LinearOperatorFullMatrix(b) for b in blocks]).to_dense()[
            None
        ]

    def _block_Kuf(self, X):  # X = (x, class) per site: rows of the other classes are zero
        x, c = X[:, :-1], tf.cast(X[:, -1], tf.int32)
        K = tf.stack([self.kernel(iv.Z, x) for iv in self.inducing_variable.inducing_variable_list])  # [C, M, S]
        mask = tf.transpose(tf.one_hot(c, self.C, dtype=tf.float64))[:, None, :]
        return tf.reshape(K * mask, [-1, tf.shape(x)[0]])[None]

    def _block_Kff(self, X, full_cov):
        assert not full_cov
        return self.kernel(X[:, :-1], full_cov=False)[None]

    def _block_mean(self, X):
        return tf.transpose(self.mean_function(X[:, :-1]))

    def _site_data(self, X, Y, index=None):
        reference = SEPMGPC(self.kernel, self.likelihood, np.zeros((1, 2)), self.num_data)  # the sites' layout
        sites = reference._site_data(X, Y, index)
        points = tf.tile(tf.convert_to_tensor(X, tf.float64), [self.C, 1])  # the pairs, block-major
        classes = tf.repeat(tf.range(self.C), tf.shape(X)[0])
        augmented = tf.concat([points, tf.cast(classes, tf.float64)[:, None]], axis=1)
        site_X = tf.gather(augmented, sites.pairs.index)
        if index is None:
            return SiteBatch(site_X, sites.Y, SitePairs())
        return SiteBatch(site_X, sites.Y, SitePairs(), sites.index, sites.index)


def test_per_class_algebra_equals_the_dense_stacked_one(three_classes):
    """
    Batch EP (sites, evidence, its gradient) and minibatch refreshes from flat sites (sites, Λ_u,
    η_u, then F_M and its gradient) of SEPMGPC equal those of the dense stacked oracle, whose
    algebra is plain SEPGPC's; float64, EP converged to 1e-11, the two differing only in the order
    of summation (tolerances 1e-9 on sites, 1e-10 relative on values, 1e-8 on gradients).
    """
    X, Y = three_classes

    def both():
        options = dict(tol=1e-11, max_sweeps=3000)
        likelihood = MultiClassStep(3, noise_variance=0.5)
        return [
            SEPMGPC(_kernel(), likelihood, X[::5].copy(), num_data=40, **options),
            StackedSEPMGPC(_kernel(), likelihood, X[::5].copy(), num_data=40, **options),
        ]

    def assert_same(values, rtol=1e-10):
        np.testing.assert_allclose(values[0], values[1], rtol=rtol)

    def value_and_gradient(m, objective):
        with tf.GradientTape() as tape:
            value = objective(m)
        return [value] + list(tape.gradient(value, m.trainable_variables))

    models = both()
    for m in models:
        assert bool(m.run_ep((X, Y)).converged)
    np.testing.assert_allclose(*(m.sites.precision.numpy() for m in models), rtol=0, atol=1e-9)
    results = [value_and_gradient(m, lambda m: m.log_marginal_likelihood((X, Y))) for m in models]
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)

    models, rng = both(), np.random.default_rng(3)
    for _ in range(6):
        idx = rng.permutation(40)[:8].astype(np.int32)
        for m in models:
            assert int(MinibatchEP().step(m, (X[idx], Y[idx], idx))) == 0
    per_class, stacked = models
    for a, b in zip(per_class.sites.read(), stacked.sites.read()):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        linalg.block_diag(*per_class.ep_state.posterior_precision.numpy()),
        stacked.ep_state.posterior_precision,
        rtol=0,
        atol=1e-9,
    )
    np.testing.assert_allclose(
        per_class.ep_state.posterior_shift.numpy().reshape(-1, 1), stacked.ep_state.posterior_shift, rtol=0, atol=1e-9
    )
    idx = np.arange(8, dtype=np.int32)
    results = [value_and_gradient(m, lambda m: m.minibatch_objective((X[idx], Y[idx], idx))) for m in models]
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_minibatch_refreshes_reach_the_batch_fixed_point(three_classes):
    """Fixed hyper-parameters: repeated minibatch refreshes (ρ = 0.99) converge to batch EP's sites."""
    X, Y = three_classes
    batch = _model(X)
    run = batch.run_ep((X, Y))
    assert bool(run.converged) and int(run.num_skipped) == 0
    mb = _model(X)
    refresh = tf.function(lambda batch: MinibatchEP().step(mb, batch))
    rng = np.random.default_rng(0)
    for _ in range(150):
        perm = rng.permutation(len(X))
        for j in range(0, 40, 8):
            idx = perm[j : j + 8]
            assert int(refresh((X[idx], Y[idx], idx.astype(np.int32)))) == 0
    for a, b in zip(mb.sites.read(), batch.sites.read()):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-7)
    np.testing.assert_allclose(mb.predict_y(X[:6])[0], batch.predict_y(X[:6])[0], rtol=0, atol=1e-7)


def test_gradient_at_convergence_equals_finite_differences(three_classes, assert_gradients_match_finite_differences):
    X, Y = three_classes
    m = _model(X)
    m.run_ep((X, Y))
    with tf.GradientTape() as tape:
        value = m.log_marginal_likelihood((X, Y))
    variables = [
        m.kernel.kernel.lengthscales.unconstrained_variable,
        m.likelihood.noise_variance.unconstrained_variable,
    ]
    grads = tape.gradient(value, variables)

    def converged_evidence():
        m.run_ep((X, Y))
        return float(m.log_marginal_likelihood((X, Y)))

    assert_gradients_match_finite_differences(variables, grads, converged_evidence)


def test_predictions_are_class_probabilities(three_classes):
    X, Y = three_classes
    m = _model(X)
    m.run_ep((X, Y))
    p, _ = m.predict_y(X)
    assert p.shape == (40, 3)
    np.testing.assert_allclose(p.numpy().sum(axis=1), 1.0, rtol=0, atol=1e-5)
    mean, var = m.predict_f(X)
    assert mean.shape == var.shape == (40, 3) and np.all(var.numpy() > 0)
    log_density = m.predict_log_density((X, Y)).numpy()
    np.testing.assert_allclose(log_density, np.log(np.take_along_axis(p.numpy(), Y, axis=1)[:, 0]), rtol=1e-12)
    assert np.mean(np.argmax(p, axis=1) == Y[:, 0]) > 0.8


def test_two_classes_agree_with_sepgpc():
    """C = 2: SEPMGPC's decision p(y=1) > ½ against SEPGPC's probit decision, both trained by fit."""
    (X, Y), (Xt, Yt) = two_dimensional(300, seed=2), two_dimensional(500, seed=3)
    binary = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:20].copy(), num_data=len(X))
    multi = SEPMGPC(gpflow.kernels.SquaredExponential(), MultiClassStep(2), X[:20].copy(), num_data=len(X))
    for model in (binary, multi):
        fit(model, (X, Y), batch_size=50, epochs=20)
    decide_binary = binary.predict_y(Xt)[0].numpy()[:, 0] > 0.5
    decide_multi = multi.predict_y(Xt)[0].numpy()[:, 1] > 0.5
    assert np.mean(decide_binary == decide_multi) > 0.95
    accuracy = [np.mean(d == (Yt[:, 0] > 0.5)) for d in (decide_binary, decide_multi)]
    assert abs(accuracy[0] - accuracy[1]) < 2 * np.sqrt(0.25 / len(Xt))  # two binomial s.e.


def test_api_labels_and_refused_options(three_classes):
    X, Y = three_classes
    m = _model(X)
    with pytest.raises(ValueError, match=r"integer class labels in \[0, 3\); found \[3.0\]"):
        m.training_loss((X, Y + 1))
    with pytest.raises(ValueError, match="Xnew must have 2 columns"):
        m.predict_y(X[:, :1])
    for options, match in (
        (dict(schedule="sequential"), "schedule"),
        (dict(power=0.5), "power"),
        (dict(schedule="convergent"), "schedule"),
    ):
        with pytest.raises(ValueError, match=match):
            _model(X, **options)
    with pytest.raises(ValueError, match="MultiClassStep"):
        SEPMGPC(_kernel(), Probit(), X[:5], num_data=40)
    with pytest.raises(ValueError, match="kernel: give one kernel or 3"):
        SEPMGPC([_kernel(), _kernel()], MultiClassStep(3), X[:5], num_data=40)
    result = fit(m, (X, Y), batch_size=10, iterations=3)
    assert result.steps == 3 and result.rejected_steps == 0 and np.all(np.isfinite(result.losses))


def test_reprojecting_fresh_sites_keeps_the_posterior(three_classes):
    """After batch EP every site already lies on its fresh direction: re-projection changes q only by round-off."""
    X, Y = three_classes
    m = _model(X)
    m.run_ep((X, Y))
    before = m.predict_y(X[:6])[0].numpy()
    m.reproject_sites((X, Y), chunk_size=15)  # three chunks
    np.testing.assert_allclose(m.predict_y(X[:6])[0].numpy(), before, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="all num_data=40 points"):
        m.reproject_sites((X[:10], Y[:10]))


def test_class_probabilities_of_separate_kernels_sum_to_one():
    """
    With a kernel and inducing inputs per class the classes' predictive variances differ by orders of
    magnitude (a class confident where another is not): predict_y's rows still sum to 1 (1e-10, the argmax
    rule's accuracy) after batch EP on digits-like data.
    """
    X, Y = two_dimensional(60, seed=5)
    Y = np.digitize(X[:, :1] + 0.3 * X[:, 1:], [-0.5, 0.5]).astype(np.int64)
    kernel = SeparateIndependent([gpflow.kernels.SquaredExponential(lengthscales=ls) for ls in (0.3, 1.0, 4.0)])
    m = SEPMGPC(kernel, MultiClassStep(3), X[::6].copy(), num_data=len(X))
    m.run_ep((X, Y))
    Xs = np.random.default_rng(2).uniform(-4, 4, size=(40, 2))
    _, var = m.predict_f(Xs)
    assert np.max(var.numpy().max(axis=1) / var.numpy().min(axis=1)) > 10  # the case that needs it
    p, _ = m.predict_y(Xs)
    np.testing.assert_allclose(p.numpy().sum(axis=1), 1.0, rtol=0, atol=1e-10)
