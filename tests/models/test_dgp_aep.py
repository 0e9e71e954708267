"""DGPAEP: the AEP energy, its exact cases, gradients, prediction and training (Bui et al. 2016)."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow import covariances
from gpflow.keras import tf_keras
from scipy.stats import norm

from gpflow_ep.dgp import AEPLayer, TiedFactor, random_factor
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import DGPAEP
from gpflow_ep.training import fit


def single_layer_model(rng, X, Z, num_data, noise=0.2, factor=None, kernel=None):
    """L = 1: one FITC GP, Gaussian likelihood (the observation noise)."""
    kernel = kernel or gpflow.kernels.SquaredExponential(variance=1.4, lengthscales=[0.8] * X.shape[1])
    factor = factor or random_factor(1, len(Z), 0.5, num_data, rng)
    return DGPAEP([AEPLayer(kernel, [Z], factor)], gpflow.likelihoods.Gaussian(variance=noise), num_data)


def factor_variables(model):
    return [v for layer in model.layers for v in (layer.factor.factor_cholesky, layer.factor.factor_shift)]


def maximise_over_factors(model, data, gtol=1e-10):
    """max over (T, t) of F with every hyper-parameter fixed (L-BFGS)."""
    variables = [p.unconstrained_variable for p in factor_variables(model)]
    gpflow.optimizers.Scipy().minimize(
        model.training_loss_closure(data, compile=True), variables, options=dict(maxiter=5000, gtol=gtol, ftol=0.0)
    )


def u_posterior(factor, L, beta=1.0, d=0):
    R, t = factor.factor_cholesky.numpy()[d], factor.factor_shift.numpy()[d, :, 0]
    P = np.linalg.inv(L @ L.T) + beta * R @ R.T
    V = np.linalg.inv(P)
    return V @ (beta * t), V, P


def test_one_data_point_gives_the_prior_evidence(rng):
    """N = 1, L = 1: the cavity is the prior, F = log N(y; 0, σ_f² + σ²) for any (T, t) and Z."""
    X, Y = np.array([[0.3, -0.2]]), np.array([[0.7]])
    for seed in range(3):
        r = np.random.default_rng(seed)
        m = single_layer_model(r, X, r.normal(size=(4, 2)), num_data=1)
        expected = norm.logpdf(0.7, 0.0, np.sqrt(1.4 + 0.2))
        np.testing.assert_allclose(m.maximum_log_likelihood_objective((X, Y)).numpy(), expected, rtol=1e-10)


def test_replicated_data_reaches_the_fitc_evidence(rng):
    """N copies of one (x, y), L = 1: max over (T, t) of F = GPRFITC's log marginal likelihood (1e-4)."""
    N = 10
    X, Y = np.tile([[0.4, -0.3]], (N, 1)), np.full((N, 1), 0.8)
    Z = rng.normal(size=(3, 2))
    kernel = gpflow.kernels.SquaredExponential(variance=1.2, lengthscales=[0.9, 1.3])
    m = single_layer_model(rng, X, Z, N, noise=0.3, kernel=kernel)
    maximise_over_factors(m, (X, Y))
    fitc = gpflow.models.GPRFITC((X, Y), kernel, Z.copy(), noise_variance=0.3)
    np.testing.assert_allclose(
        m.maximum_log_likelihood_objective((X, Y)).numpy(), fitc.maximum_log_likelihood_objective().numpy(), atol=1e-4
    )


def test_stationary_point_matches_averaged_tilted_moments(rng):
    """
    At a maximum over (T, t) (L = 1), E_q[u] and E_q[uuᵀ] are the averages of the tilted moments
    p̂_n ∝ q\\(u) N(y_n; c_nᵀu, r_n) (the averaged moment matching of Bui et al. 2016, §4.2; to the optimiser's 1e-6).
    """
    N, M = 30, 4
    X = rng.normal(size=(N, 2))
    Y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(N, 1))
    Z = rng.normal(size=(M, 2))
    noise = 0.2
    m = single_layer_model(rng, X, Z, N, noise=noise)
    maximise_over_factors(m, (X, Y))
    layer = m.layers[0]
    kernel, factor = layer.kernels[0], layer.factor
    L = np.linalg.cholesky(covariances.Kuu(layer.inducing_variables[0], kernel, jitter=layer.jitter).numpy())
    K_inv = np.linalg.inv(L @ L.T)
    mean, V, _ = u_posterior(factor, L)
    mean_c, _, P_c = u_posterior(factor, L, factor.removed_fraction)
    k = kernel(Z, X).numpy()  # [M, N]
    first, second = np.zeros(M), np.zeros((M, M))
    for n in range(N):
        c = K_inv @ k[:, n]
        r = noise + kernel.variance.numpy() - k[:, n] @ c
        precision = P_c + np.outer(c, c) / r
        cov = np.linalg.inv(precision)
        mu = cov @ (P_c @ mean_c + c * Y[n, 0] / r)
        first += mu / N
        second += (cov + np.outer(mu, mu)) / N
    np.testing.assert_allclose(mean, first, atol=1e-6)
    np.testing.assert_allclose(V + np.outer(mean, mean), second, atol=1e-6)
    # F is close to the FITC evidence but not a bound (an EP approximation, Bui et al. 2016, §4.1): only near,
    # in nats per point
    fitc = (
        gpflow.models.GPRFITC((X, Y), kernel, Z.copy(), noise_variance=noise).maximum_log_likelihood_objective().numpy()
    )
    assert abs(m.maximum_log_likelihood_objective((X, Y)).numpy() - fitc) < 0.1 * N


def test_minibatch_estimates_average_to_the_full_batch_objective(rng):
    """F̂ over the batches of a partition averages to F (unbiased, Bui et al. 2016, §6; exact up to round-off)."""
    X, Y = rng.normal(size=(12, 2)), rng.normal(size=(12, 1))
    m = DGPAEP.from_data(X, Y, [2, 2, 1], num_inducing=4, seed=1)
    full = m.maximum_log_likelihood_objective((X, Y)).numpy()
    parts = [m.maximum_log_likelihood_objective((X[i : i + 4], Y[i : i + 4])).numpy() for i in (0, 4, 8)]
    np.testing.assert_allclose(np.mean(parts), full, rtol=1e-12)


def test_gradients_match_finite_differences(rng, assert_gradients_match_finite_differences):
    """
    Autodiff gradients of F̂ in every parameter = central differences (L = 2, D = 2, width 2, M = 4,
    N = 10).
    """
    X = rng.normal(size=(10, 2))
    Y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(10, 1))
    m = DGPAEP.from_data(X, Y, [2, 2, 1], num_inducing=4, seed=2)
    variables = m.trainable_variables
    with tf.GradientTape() as tape:
        loss = m.training_loss((X, Y))
    grads = tape.gradient(loss, variables)
    # layer 1: shared kernel (2), 2 × Z, (R, t) of both GPs, noise; layer 2: kernel (2), Z, (R, t); likelihood variance
    assert len(variables) == 13
    loss_at = tf.function(lambda: m.training_loss((X, Y)))  # compiled once: ~170 entries × 2 evaluations
    # the difference's error: h² |F_xxx| / 6 (the factors enter F scaled by N) plus round-off |F| 1e-16 / h,
    # about 1e-8 for |F| ~ 100 at h = 1e-6: entries are compared to 1e-5 relative with an absolute floor of 1e-5
    assert_gradients_match_finite_differences(variables, grads, lambda: loss_at().numpy(), h=1e-6, floor=1.0)


def test_single_layer_prediction_is_the_fitc_predictive(rng):
    """L = 1: mean k*ᵀK⁻¹m, variance k** - k*ᵀK⁻¹k* + k*ᵀK⁻¹VK⁻¹k* (+σ² for y) (Bui et al. 2016, §5, m_1 and v_1)."""
    X, Z, Xs = rng.normal(size=(8, 2)), rng.normal(size=(5, 2)), rng.normal(size=(6, 2))
    m = single_layer_model(rng, X, Z, num_data=8, noise=0.25)
    layer = m.layers[0]
    kernel = layer.kernels[0]
    L = np.linalg.cholesky(covariances.Kuu(layer.inducing_variables[0], kernel, jitter=layer.jitter).numpy())
    K_inv = np.linalg.inv(L @ L.T)
    mean, V, _ = u_posterior(layer.factor, L)
    k = kernel(Z, Xs).numpy()
    expected_mean = k.T @ K_inv @ mean
    expected_var = 1.4 - np.sum(k * (K_inv @ k), 0) + np.sum(k * (K_inv @ V @ K_inv @ k), 0)
    f_mean, f_var = m.predict_f(Xs)
    np.testing.assert_allclose(f_mean[:, 0], expected_mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(f_var[:, 0], expected_var, rtol=1e-9)
    y_mean, y_var = m.predict_y(Xs)
    np.testing.assert_allclose(y_var[:, 0], expected_var + 0.25, rtol=1e-9)
    np.testing.assert_allclose(y_mean, f_mean, rtol=1e-15)
    log_density = m.predict_log_density((Xs, np.zeros((6, 1)))).numpy()
    np.testing.assert_allclose(log_density, norm.logpdf(0.0, expected_mean, np.sqrt(expected_var + 0.25)), rtol=1e-9)


def test_prior_limit(rng):
    """T = 0, t = 0 (q = prior), L = 1: the predictive is N(0, σ_f² + σ²) (T = 1e-20 I here)."""
    X, Z = rng.normal(size=(5, 2)), rng.normal(size=(4, 2))
    m = single_layer_model(rng, X, Z, 5, noise=0.3, factor=TiedFactor(1e-10 * np.eye(4), np.zeros((4, 1)), 5))
    mean, var = m.predict_y(rng.normal(size=(3, 2)))
    np.testing.assert_allclose(mean, 0.0, atol=1e-12)
    np.testing.assert_allclose(var, 1.4 + 0.3, rtol=1e-6)  # the jitter 1e-6 on K_uu moves k*ᵀK⁻¹k* by ~1e-6


def test_two_layer_moments_match_monte_carlo_of_the_fitc_chain(rng):
    """
    L = 2, hidden width 2: (m_2, v_2) are the exact moments of the FITC chain (h_1 is
    Gaussian given x, linear in u_1, so the second layer's moments of Bui et al. 2016, §5 are exact):
    2·10⁵ samples of u_1, h_1, u_2, h_2 under the posterior, within 4 standard errors.
    """
    X = rng.normal(size=(20, 2))
    Y = np.sin(X[:, :1])
    m = DGPAEP.from_data(X, Y, [2, 2, 1], num_inducing=5, seed=4, share_kernel=False)
    x = np.array([[0.2, -0.5]])
    m2, v2 = (t.numpy()[0, 0] for t in m.predict_f(x))
    S = 200_000

    def sample_layer(layer, inputs, d):
        kernel, Z = layer.kernels[d], layer.inducing_variables[d].Z.numpy()
        L = np.linalg.cholesky(covariances.Kuu(layer.inducing_variables[d], kernel, jitter=layer.jitter).numpy())
        mean, V, _ = u_posterior(layer.factor, L, d=d)
        u = mean + rng.standard_normal((S, mean.size)) @ np.linalg.cholesky(V).T
        k = kernel(inputs, Z).numpy()
        c = k @ np.linalg.inv(L @ L.T)
        r = kernel.variance.numpy() - np.sum(c * k, axis=1)
        if layer.noise_variance is not None:
            r = r + layer.noise_variance.numpy()
        return np.sum(c * u, axis=1) + np.sqrt(np.maximum(r, 0.0)) * rng.standard_normal(S)

    first = m.layers[0]
    h1 = np.stack([sample_layer(first, np.repeat(x, S, axis=0), d) for d in range(2)], axis=1)
    h2 = sample_layer(m.layers[1], h1, 0)
    assert abs(h2.mean() - m2) <= 4 * h2.std() / np.sqrt(S)
    assert abs(h2.var() - v2) <= 4 * np.std((h2 - h2.mean()) ** 2) / np.sqrt(S)


def test_probit_output(rng):
    """
    A probit output: log Z_n = log Φ(y m/√(1 + v)) at the propagated cavity moments, = Monte Carlo
    of E[Φ(y f)] (Bui et al. 2016, App. F).
    """
    X = rng.normal(size=(30, 2))
    Y = (X[:, :1] > 0).astype(float)
    m = DGPAEP.from_data(X, Y, [2, 2, 1], num_inducing=4, likelihood=Probit(), seed=0)
    mean, var = (t.numpy()[:3, 0] for t in m.propagate(X[:3], cavity=True)[-1])
    y = 2 * Y[:3, 0] - 1
    expected = norm.logcdf(y * mean / np.sqrt(1 + var))
    np.testing.assert_allclose(m.log_tilted_normalisers(X[:3], Y[:3]).numpy(), expected, rtol=1e-12)
    f = mean + np.sqrt(var) * rng.standard_normal((400_000, 3))
    mc = norm.cdf(y * f)
    assert np.all(np.abs(mc.mean(0) - np.exp(expected)) <= 4 * mc.std(0) / np.sqrt(f.shape[0]))
    p, _ = m.predict_y(X[:5])
    assert np.all((p.numpy() > 0) & (p.numpy() < 1))


@pytest.mark.parametrize("share_kernel, tie_inducing", [(True, False), (False, True)])
def test_from_data_builds_the_reference_initialisation(rng, share_kernel, tie_inducing):
    """
    The reference code's initialisation: k-means Z, median-distance lengthscales in layer 1, ℓ = e
    and diagonal Z above, noise 0.01.
    """
    X = rng.normal(size=(60, 3))
    Y = rng.normal(size=(60, 1))
    m = DGPAEP.from_data(X, Y, [3, 2, 1], num_inducing=6, share_kernel=share_kernel, tie_inducing=tie_inducing)
    first, second = m.layers
    i, j = np.triu_indices(60)
    median = np.median(np.linalg.norm(X[i] - X[j], axis=1))
    np.testing.assert_allclose(first.kernels[0].lengthscales.numpy(), [median] * 3, rtol=1e-12)
    np.testing.assert_allclose(second.kernels[0].lengthscales.numpy(), [np.e] * 2, rtol=1e-12)
    np.testing.assert_allclose(second.inducing_variables[0].Z.numpy(), np.repeat(np.linspace(-1, 1, 6)[:, None], 2, 1))
    np.testing.assert_allclose(first.noise_variance.numpy(), 0.01, rtol=1e-12)
    assert second.noise_variance is None and np.isclose(m.likelihood.variance.numpy(), 0.01)
    assert (first.kernels[0] is first.kernels[1]) == share_kernel
    assert (first.inducing_variables[0] is first.inducing_variables[1]) == tie_inducing
    means, variances = zip(*m.predict_layers(X[:7]))
    assert [t.shape for t in means] == [(7, 2), (7, 1)] and all(np.all(v.numpy() > 0) for v in variances)


def test_bad_input_is_a_value_error_naming_the_argument(rng):
    X, Y = rng.normal(size=(20, 2)), rng.normal(size=(20, 1))
    with pytest.raises(ValueError, match="widths"):
        DGPAEP.from_data(X, Y, [3, 1], num_inducing=4)
    with pytest.raises(ValueError, match="widths"):
        DGPAEP.from_data(X, Y, [2, 2], num_inducing=4)
    with pytest.raises(ValueError, match="num_inducing"):
        DGPAEP.from_data(X, Y, [2, 1], num_inducing=50)
    bad = Y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="Y"):
        DGPAEP.from_data(X, bad, [2, 1], num_inducing=4)
    m = DGPAEP.from_data(X, Y, [2, 1], num_inducing=4)
    with pytest.raises(ValueError, match="Xnew"):
        m.predict_y(rng.normal(size=(3, 3)))
    with pytest.raises(ValueError, match="full_cov"):
        m.predict_f(X, full_cov=True)
    with pytest.raises(ValueError, match="Y"):
        m.training_loss((X, bad))
    with pytest.raises(ValueError, match="labels|Y"):
        DGPAEP.from_data(X, np.sign(Y), [2, 1], num_inducing=4, likelihood=Probit())


def _step_data(n, seed):
    """
    The 1-D step toy of the authors' reference code (github.com/thangbui/deepGP_approxEP):
    x ~ U[-1, 1], y = step(x) + 0.05 ε.
    """
    r = np.random.default_rng(seed)
    X = r.uniform(-1, 1, (n, 1))
    return X, (X > 0).astype(float) + 0.05 * r.standard_normal((n, 1))


@pytest.mark.slow
def test_deep_gp_fits_a_step_better_than_one_layer():
    """
    On the step toy (300 points, M = 20, Adam 0.02, batch 50, 60 epochs) the
    [1, 2, 1] DGP reaches a higher test log-likelihood than the one-layer GP, with a sharp step.
    """
    X, Y = _step_data(300, 0)
    Xt, Yt = _step_data(200, 1)
    mean, std = Y.mean(), Y.std()
    scores = {}
    for widths in ([1, 1], [1, 2, 1]):
        m = DGPAEP.from_data(X, (Y - mean) / std, widths, num_inducing=20, seed=0)
        fit(m, (X, (Y - mean) / std), batch_size=50, epochs=60, optimizer=tf_keras.optimizers.Adam(0.02))
        scores[len(widths)] = np.mean(m.predict_log_density((Xt, (Yt - mean) / std)).numpy()) - np.log(std)
        if len(widths) == 3:
            mu = m.predict_y(np.array([[-0.1], [0.1]]))[0].numpy()[:, 0] * std + mean
            assert mu[0] < 0.25 and mu[1] > 0.75  # the step from 0 to 1 happens within ±0.1
    assert scores[3] > scores[2], scores


def test_full_batch_objective_rises_during_training():
    """
    ``fit`` on the full batch with plain gradient ascent of step η (SGD) makes gradient steps on the
    objective F (Bui et al. 2016; no hyper-priors): a step d = η∇F changes F by ∇F·d up to (L/2)‖d‖², L
    bounding F's curvature along the step, so for η ≤ 1/L every step raises F by between η‖∇F‖²/2 and
    3η‖∇F‖²/2, with ∇F at the step's start. Deterministic: no minibatch order, no sampling.
    """
    X, Y = _step_data(300, 2)
    Y = (Y - Y.mean()) / Y.std()
    m = DGPAEP.from_data(X, Y, [1, 2, 1], num_inducing=10, seed=1)
    eta, variables, trace = 3e-4, m.trainable_variables, []

    @tf.function
    def objective_and_squared_gradient():
        with tf.GradientTape() as tape:
            objective = m.maximum_log_likelihood_objective((X, Y))
        gradient = tape.gradient(objective, variables)
        return objective, tf.add_n([tf.reduce_sum(tf.square(g)) for g in gradient])

    def record(step):  # before the first step (step 0) and after every step
        trace.append([value.numpy() for value in objective_and_squared_gradient()])

    fit(m, (X, Y), iterations=20, optimizer=tf_keras.optimizers.SGD(eta), monitor=record, progress=False)
    assert len(trace) == 21 and float(m.log_prior_density()) == 0.0
    objective, squared_gradient = np.array(trace).T
    rise = np.diff(objective) / (eta * squared_gradient[:-1])
    assert np.all((0.5 <= rise) & (rise <= 1.5)), rise
    assert objective[-1] > objective[0]


def test_hinge_output_uses_the_registered_tilted_moments(rng):
    """Any likelihood with EP tilted moments is an output: the hinge's closed-form log Z at the cavity moments."""
    from gpflow_ep.ep import tilted_moments
    from gpflow_ep.likelihoods import BinaryHinge

    X = rng.normal(size=(20, 2))
    Y = (X[:, :1] > 0).astype(float)
    m = DGPAEP.from_data(X, Y, [2, 2, 1], num_inducing=4, likelihood=BinaryHinge(), seed=0)
    mean, var = m.propagate(X, cavity=True)[-1]
    expected = tilted_moments(m.likelihood, X, Y, mean, var).log_z.numpy()[:, 0]
    np.testing.assert_allclose(m.log_tilted_normalisers(X, Y).numpy(), expected, rtol=1e-14)
    with tf.GradientTape() as tape:
        loss = m.training_loss((X, Y))
    assert np.isfinite(loss.numpy()) and all(np.all(np.isfinite(g)) for g in tape.gradient(loss, m.trainable_variables))


def test_predictions_integrate_the_likelihood_accurately(rng):
    """
    predict_log_density and predict_y integrate the likelihood against the moment-matched predictive with the
    EP models' rules: a Student-t 20 times narrower than the predictive (sd ≈ 1.2 at the prior) to 1e-8 relative
    against SciPy's adaptive quadrature split at y, where GPflow's 20-point Gauss–Hermite rule is far off, and
    the Poisson's closed-form predictive moments E[y] = e^{m + v/2}, Var[y] = E[y] + E[y]² (e^v − 1).
    """
    from scipy import integrate, stats

    X, Z = rng.normal(size=(5, 2)), rng.normal(size=(4, 2))
    prior = TiedFactor(1e-10 * np.eye(4), np.zeros((4, 1)), 5)
    m = single_layer_model(rng, X, Z, 5, factor=prior)
    m.likelihood = gpflow.likelihoods.StudentT(scale=0.05, df=3.0)
    Xs, Ys = rng.normal(size=(2, 2)), np.array([[0.4], [-1.1]])
    mean, var = (t.numpy()[:, 0] for t in m.predict_f(Xs))
    ours = m.predict_log_density((Xs, Ys)).numpy()
    for i in range(2):
        y, mu, sd = Ys[i, 0], mean[i], np.sqrt(var[i])

        def density(f, y=y, mu=mu, sd=sd):
            return stats.t.pdf(y, 3.0, f, 0.05) * stats.norm.pdf(f, mu, sd)

        value = integrate.quad(density, mu - 40 * sd, mu + 40 * sd, points=[y], limit=1000, epsabs=0.0, epsrel=1e-12)
        np.testing.assert_allclose(ours[i], np.log(value[0]), rtol=1e-8)
    gauss_hermite = m.likelihood.predict_log_density(Xs, mean[:, None], var[:, None], Ys).numpy()
    assert np.max(np.abs(gauss_hermite - ours)) > 0.1

    m.likelihood = gpflow.likelihoods.Poisson()
    y_mean, y_var = (t.numpy()[:, 0] for t in m.predict_y(Xs))
    np.testing.assert_allclose(y_mean, np.exp(mean + var / 2), rtol=1e-12)
    np.testing.assert_allclose(y_var, y_mean + y_mean**2 * np.expm1(var), rtol=1e-12)


def _graph_ops(model, data):
    """The op types of the compiled objective's graph (function bodies included)."""
    loss = tf.function(model.maximum_log_likelihood_objective, autograph=False)
    graph = loss.get_concrete_function(data).graph.as_graph_def()
    return [n.op for n in graph.node] + [n.op for f in graph.library.function for n in f.node_def]


def test_shared_structure_batches_the_units_of_a_layer(rng):
    """
    A layer whose GPs share the kernel and the inducing inputs is one batch: the objective's graph is the
    same size for hidden widths 2 and 5 (no op per GP), with three Cholesky factorisations per layer (K_uu
    once, the w posteriors and the w cavities batched). With a Z per GP (the reference code's default),
    K_uu is one [w, M, M] batch whose Cholesky is also one op.
    """
    X, Y = rng.normal(size=(12, 2)), rng.normal(size=(12, 1))
    counts = {}
    for tie in (True, False):
        for w in (2, 5):
            m = DGPAEP.from_data(X, Y, [2, w, w, 1], num_inducing=4, tie_inducing=tie)
            assert m.layers[1].shares_kernel and m.layers[1].shares_inducing == tie
            ops = _graph_ops(m, (X, Y))
            counts[tie, w] = (len(ops), ops.count("Cholesky"))
    assert counts[True, 2] == counts[True, 5]
    assert counts[True, 2][1] == counts[False, 2][1] == counts[False, 5][1] == 3 * 3


def test_shared_structure_is_the_separate_model_with_tied_values(rng):
    """
    A three-layer model whose layers share the kernel and the inducing inputs across their GPs (GPflux's
    default structure, one K_uu and one set of Psi statistics per layer) and the same model with a kernel and a
    Z per GP at tied values give the same objective, layer moments and predictive density to 1e-10 relative.
    """
    from gpflow.inducing_variables import InducingPoints, SeparateIndependentInducingVariables
    from gpflow.kernels import SeparateIndependent

    X, Y = rng.normal(size=(15, 2)), rng.normal(size=(15, 1))
    shared = DGPAEP.from_data(X, Y, [2, 3, 3, 1], num_inducing=5, tie_inducing=True, seed=3)
    layers = []
    for layer in shared.layers:
        w = layer.num_outputs
        kernel = SeparateIndependent([gpflow.utilities.deepcopy(layer.kernels[0]) for _ in range(w)])
        Z = layer.inducing_variables[0].Z.numpy()
        inducing = SeparateIndependentInducingVariables([InducingPoints(Z.copy()) for _ in range(w)])
        factor = TiedFactor(layer.factor.factor_cholesky.numpy(), layer.factor.factor_shift.numpy(), len(X))
        noise = None if layer.noise_variance is None else layer.noise_variance.numpy()
        layers.append(AEPLayer(kernel, inducing, factor, noise))
    separate = DGPAEP(layers, gpflow.likelihoods.Gaussian(variance=shared.likelihood.variance.numpy()), len(X))
    assert shared.layers[1].shares_inducing and not separate.layers[1].shares_kernel

    def outputs(model):
        values = [model.maximum_log_likelihood_objective((X, Y)), model.predict_log_density((X[:4], Y[:4]))]
        return [t.numpy() for t in values] + [t.numpy() for pair in model.predict_layers(X[:4]) for t in pair]

    for a, b in zip(outputs(shared), outputs(separate), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.max(np.abs(b)))
