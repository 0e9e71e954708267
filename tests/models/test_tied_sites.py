"""
Tied sites (stochastic EP, Li, Hernández-Lobato & Turner 2015) in the sparse EP models, against references
written from the equations:

* a minibatch refresh against a dense NumPy refresh (u-space, explicit inverses, the probit's closed-form
  tilted moments with SciPy's normal functions): q(u)'s change ρ Σ_{i∈B} (f_i - ḡ);
* batch EP's fixed point Λ̄ = (1/n) Σ_i τ_i υ_iυ_iᵀ, η̄ = (1/n) Σ_i ν_i υ_i at the tied cavity, by the same
  NumPy update on all n points;
* with every point the same, tied EP is per-point EP (every per-point site is ḡ at that fixed point);
* the evidence: the average of the minibatch estimates over a partition of the data is the full-data value,
  and F_M's gradient is autodiff of F_M written in u-space with dense inverses;
* the state is O(C·M²) whatever n, and bad input is refused as on the per-point path.

Tolerances (float64, M ≤ 6 well-spread inducing inputs, cond(K_uu) ≲ 1e3): the model's whitened Cholesky
algebra and the references' explicit inverses agree to round-off times cond² ≈ 1e-10 relative; a fixed point
reached to tol = 1e-12 in the average site's natural parameters satisfies its equation to 1e-9.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.ep import tilted_moments
from gpflow_ep.ep.relaxation import Relaxation
from gpflow_ep.likelihoods import MultiClassStep, Probit
from gpflow_ep.models import SEPGP, SEPGPC, SEPMGPC
from gpflow_ep.optimizers import MinibatchEP


@pytest.fixture(scope="module")
def data():
    return two_dimensional(30, seed=6)


def _kernel():
    return gpflow.kernels.SquaredExponential(variance=1.4, lengthscales=[0.9, 1.2])


Z = np.array([[-1.5, -1.0], [-0.4, 1.1], [0.3, -0.5], [1.2, 0.9], [0.8, -1.6]])


def _tied(data, **options):
    return SEPGPC(_kernel(), Probit(), Z.copy(), num_data=len(data[0]), sites="tied", **options)


def _dense_new_sites(m, X, Y):
    """
    The engine's undamped site of every point at the tied cavity, in NumPy from the equations: cavity
    N(μ_c, Σ_c) in u-space, Σ_c = (K⁻¹ + κΛ_u)⁻¹, μ_c = κΣ_cη_u; h_i = υ_iᵀu with υ_i = K⁻¹k_i, cavity
    mean m_i = υ_iᵀμ_c and variance v_i = υ_iᵀΣ_cυ_i; the probit's Z = Φ(y m / √(1 + v + s_i)) with the
    FITC variance s_i; the site τ = (1/σ̂² - 1/v), ν = μ̂/σ̂² - m/v from the tilted mean μ̂ and variance σ̂².
    """
    K = m.kernel(Z).numpy() + gpflow.config.default_jitter() * np.eye(len(Z))
    Kuf = m.kernel(Z, X).numpy()
    n = m.num_data
    kappa = (n - 1.0) / n
    Lambda, eta = m.ep_state.posterior_precision.numpy(), m.ep_state.posterior_shift.numpy()
    Sigma_c = np.linalg.inv(np.linalg.inv(K) + kappa * Lambda)
    mu_c = kappa * Sigma_c @ eta
    U = np.linalg.solve(K, Kuf)  # υ_i, columns
    mean = (U.T @ mu_c)[:, 0]
    var = np.einsum("mi,mk,ki->i", U, Sigma_c, U)
    s = np.diag(m.kernel(X).numpy()) - np.einsum("mi,mi->i", Kuf, U)
    y = 2.0 * Y[:, 0] - 1.0
    total = 1.0 + var + s
    z = y * mean / np.sqrt(total)
    r = np.exp(stats.norm.logpdf(z) - stats.norm.logcdf(z))
    d1, d2 = y * r / np.sqrt(total), -r * (z + r) / total
    tilted_mean, tilted_var = mean + var * d1, var + var**2 * d2
    tau = 1.0 / tilted_var - 1.0 / var
    nu = tilted_mean / tilted_var - mean / var
    return U, tau, nu


def _dense_change(m, X, Y, damping):
    """ρ Σ_{i∈B} (f_i - ḡ): f_i = (τ_i υ_iυ_iᵀ, ν_i υ_i), ḡ = (Λ_u, η_u)/n (zero mean function)."""
    U, tau, nu = _dense_new_sites(m, X, Y)
    Lambda, eta = m.ep_state.posterior_precision.numpy(), m.ep_state.posterior_shift.numpy()
    n, b = m.num_data, len(X)
    d_Lambda = (U * tau) @ U.T - b * Lambda / n
    d_eta = U @ nu[:, None] - b * eta / n
    return damping * d_Lambda, damping * d_eta


def test_a_minibatch_refresh_equals_the_dense_update(data):
    X, Y = data
    m = _tied(data)
    for start in (0, 10):  # a non-trivial state first: two refreshes from the prior
        MinibatchEP().step(m, (X[start : start + 10], Y[start : start + 10]))
    batch = (X[20:], Y[20:])
    refresh, _ = m.propose_refresh(batch)
    damping = min(0.99, 0.8 * 30 / 10)  # min(minibatch_damping, damping·n/|B|)
    expected = _dense_change(m, *batch, damping)
    for ours, theirs in zip(refresh.posterior_change, expected):
        np.testing.assert_allclose(ours.numpy()[0], theirs, rtol=1e-10, atol=1e-10 * np.abs(theirs).max())
    assert refresh.index is None and refresh.site_state == ()  # nothing per point to write
    before = m.ep_state.posterior_precision.numpy().copy()
    assert int(m.apply_refresh(refresh).num_skipped) == 0
    np.testing.assert_allclose(m.ep_state.posterior_precision.numpy(), before + expected[0], rtol=1e-10, atol=1e-12)


def test_batch_ep_reaches_the_tied_fixed_point(data):
    X, Y = data
    m = _tied(data, tol=1e-12, max_sweeps=500)
    run = m.run_ep(data)
    assert bool(run.converged) and run.measure_name == "average site"
    U, tau, nu = _dense_new_sites(m, X, Y)
    n = len(X)
    Lambda, eta = m.ep_state.posterior_precision.numpy(), m.ep_state.posterior_shift.numpy()
    np.testing.assert_allclose(Lambda / n, (U * tau) @ U.T / n, rtol=0, atol=1e-9 * np.abs(Lambda / n).max())
    np.testing.assert_allclose(eta / n, U @ nu[:, None] / n, rtol=0, atol=1e-9 * np.abs(eta / n).max())
    assert bool(m.ep_state_is_current())


@pytest.mark.parametrize("power", [1.0, 0.5])
@pytest.mark.parametrize("model", ["SEPGPC", "SEPGP Poisson"])
def test_with_every_point_the_same_tied_ep_is_per_point_ep(model, power):
    """All n points equal: at per-point EP's fixed point every site is the same, the average site."""
    n = 12
    X, Zs = np.tile([[0.3, -0.5]], (n, 1)), Z[:3]
    if model == "SEPGPC":
        Y, build = np.ones((n, 1)), lambda **o: SEPGPC(_kernel(), Probit(), Zs.copy(), num_data=n, **o)
    else:
        Y = np.full((n, 1), 3.0)
        build = lambda **o: SEPGP(_kernel(), gpflow.likelihoods.Poisson(), Zs.copy(), num_data=n, **o)  # noqa: E731
    options = dict(tol=1e-13, max_sweeps=2000, power=power)
    tied, per_point = build(sites="tied", **options), build(ep_mode="alternated", **options)
    assert bool(tied.run_ep((X, Y)).converged) and bool(per_point.run_ep((X, Y)).converged)
    for name in ("posterior_precision", "posterior_shift"):
        a, b = (getattr(m.ep_state, name).numpy() for m in (tied, per_point))
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * np.abs(b).max())
    evidence = [float(m.log_marginal_likelihood((X, Y))) for m in (tied, per_point)]
    np.testing.assert_allclose(*evidence, rtol=1e-10)


def test_minibatch_evidence_estimates_average_to_the_full_evidence(data):
    """(n/|B|) Σ_{i∈B} over a partition into equal batches averages to Σ_i: the estimate is unbiased."""
    X, Y = data
    m = _tied(data)
    m.run_ep(data)
    MinibatchEP().step(m, (X[:10], Y[:10]))  # a state that is not a fixed point
    estimates = [float(m.minibatch_log_marginal_likelihood((X[i : i + 10], Y[i : i + 10]))) for i in (0, 10, 20)]
    full = float(m.log_marginal_likelihood(data))
    np.testing.assert_allclose(np.mean(estimates), full, rtol=1e-12)
    assert np.ptp(estimates) > 1e-3  # the batches differ


def test_the_minibatch_objective_has_the_gradient_of_its_definition(data):
    """
    F_M = -½ log|K| - ½ tr(K⁻¹(Σ + μμᵀ)) + (n/|B|) Σ_{i∈B} log Z_i, q and the tied cavity held in u-space
    (dense inverses, autodiff), against the model's written-out gradient.
    """
    X, Y = data
    m = _tied(data)
    m.run_ep(data)
    m.kernel.lengthscales.assign([1.1, 0.8])  # away from where the state was fitted
    batch = (X[5:17], Y[5:17])
    with tf.GradientTape() as tape:
        ours = m.minibatch_objective(batch)
    g_ours = tape.gradient(ours, m.trainable_variables)

    with tf.GradientTape() as tape:
        Kuu = gpflow.covariances.Kuu(m.inducing_variable, m.kernel, jitter=gpflow.config.default_jitter())
        K0 = tf.stop_gradient(Kuu)
        Lambda, eta = m.ep_state.posterior_precision, m.ep_state.posterior_shift
        Sigma = tf.linalg.inv(tf.linalg.inv(K0) + Lambda)
        mu = Sigma @ eta
        kappa = (m.num_data - 1.0) / m.num_data
        Sigma_c = tf.linalg.inv(tf.linalg.inv(K0) + kappa * Lambda)
        mu_c = kappa * Sigma_c @ eta
        Xb, Yb = (tf.constant(t) for t in batch)
        Kuf = gpflow.covariances.Kuf(m.inducing_variable, m.kernel, Xb)
        ups = tf.linalg.solve(Kuu, Kuf)
        s = m.kernel(Xb, full_cov=False)[:, None] - tf.reduce_sum(Kuf * ups, axis=0)[:, None]
        mean = tf.transpose(ups) @ mu_c
        var = tf.reduce_sum(ups * (Sigma_c @ ups), axis=0)[:, None] + s
        log_z = tilted_moments(m.likelihood, Xb, Yb, mean, var, 1.0).log_z
        second_moment = Sigma + mu * tf.transpose(mu)
        prior = -0.5 * tf.linalg.logdet(Kuu) - 0.5 * tf.linalg.trace(tf.linalg.solve(Kuu, second_moment))
        reference = prior + m.num_data / len(batch[0]) * tf.reduce_sum(log_z)
    g_reference = tape.gradient(reference, m.trainable_variables)
    np.testing.assert_allclose(ours, reference, rtol=1e-10)
    for a, b, v in zip(g_ours, g_reference, m.trainable_variables):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10, err_msg=v.name)


def test_in_nested_mode_the_loss_on_all_the_data_runs_tied_ep_first(data):
    """ep_mode="nested" (for Scipy on all the data): the loss is -log Z_EP after batch EP of the average site."""
    nested, alternated = _tied(data, ep_mode="nested"), _tied(data)
    loss = float(nested.training_loss(data))
    assert bool(nested.ep_state_is_current())
    alternated.run_ep(data)
    np.testing.assert_allclose(loss, -float(alternated.log_marginal_likelihood(data)), rtol=1e-10)
    assert float(alternated.training_loss(data)) != loss  # alternated: the minibatch objective -F_M of the batch


def test_q_stays_symmetric_over_many_refreshes(data):
    """
    Λ_u stays symmetric refresh after refresh: a refresh's change holds -ρ(|B|/n)Λ_v, and mapping it back to
    u-space as its transpose would grow round-off's antisymmetric part of Λ_u by 1 + ρ|B|/n per refresh (here
    1 + 0.99/3, so by ~1e18 over 150 refreshes, from ~1e-16 relative). Symmetric to round-off: 1e-12 relative.
    """
    X, Y = data
    m = _tied(data)
    refresh = tf.function(lambda X, Y: MinibatchEP().step(m, (X, Y)))
    for k in range(150):
        start = 10 * (k % 3)
        assert int(refresh(X[start : start + 10], Y[start : start + 10])) == 0
    Lambda = m.ep_state.posterior_precision.numpy()
    assert np.abs(Lambda - Lambda.T).max() <= 1e-12 * np.abs(Lambda).max()


def test_the_state_does_not_grow_with_the_data():
    """O(C·M²) variables whatever n (no per-point site or direction); per-point sites grow as n."""

    def size(model):
        return sum(int(np.prod(v.shape)) for v in model.variables)

    small, large = (
        SEPMGPC(_kernel(), MultiClassStep(4), Z.copy(), num_data=n, sites="tied") for n in (100, 1_000_000)
    )
    assert size(small) == size(large) < 1000  # q(u) per class, parameters, diagnostics
    assert size(SEPGPC(_kernel(), Probit(), Z.copy(), num_data=1000)) > 5 * 1000


def test_tied_sites_train_on_a_plain_pipeline_of_x_y_batches(data):
    """A user's tf.data pipeline of (X, Y) batches, as for SVGP, through MinibatchEP's closure in a plain loop."""
    X, Y = data
    m = _tied(data)
    batches = iter(tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(30, seed=1).batch(10).repeat())
    loss = MinibatchEP().loss_closure(m, batches)
    optimizer = gpflow.keras.tf_keras.optimizers.Adam(0.05)
    step = tf.function(lambda: optimizer.minimize(loss, m.trainable_variables))
    for _ in range(4):
        step()
    assert int(m.ep_diagnostics.refreshes.numpy()) == 4 and np.isfinite(float(loss()))
    p, _ = m.predict_y(X)
    assert np.all((p.numpy() > 0) & (p.numpy() < 1))


def test_multiclass_tied_sites_refresh_and_predict(data):
    """SEPMGPC with tied sites: each block's average site, a refresh of (X, Y) batches, class probabilities."""
    X, Y = data
    Yc = np.digitize(X[:, :1], [-0.5, 0.5]).astype(np.int64)
    m = SEPMGPC(_kernel(), MultiClassStep(3, noise_variance=0.1), Z.copy(), num_data=len(X), sites="tied")
    assert m.ep_state.posterior_precision.shape == (3, 5, 5)
    for start in (0, 10, 20):
        assert int(MinibatchEP().step(m, (X[start : start + 10], Yc[start : start + 10]))) == 0
    p, _ = m.predict_y(X[:5])
    np.testing.assert_allclose(p.numpy().sum(axis=1), 1.0, rtol=0, atol=1e-10)
    assert np.isfinite(float(m.minibatch_log_marginal_likelihood((X[:10], Yc[:10]))))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda data: _tied(data, ep_mode="nested").training_loss((data[0][:5], data[1][:5])), r"^data: batch EP"),
        (lambda data: _tied(data, schedule="sequential"), r"^schedule: tied sites are refreshed together"),
        (lambda data: _tied(data, relaxation=Relaxation(penalty=0.1)), r"^relaxation: relaxed EP's per-site slack"),
        (lambda data: _tied(data).reproject_sites(data), r"^sites: tied sites keep one average site"),
        (lambda data: SEPGPC(_kernel(), Probit(), Z, num_data=30, sites="average"), r"^sites must be one of"),
        (lambda data: _tied(data).training_loss((data[0][:5], np.full((5, 1), -1.0))), r"batch\[1\] \(Y\)"),
        (lambda data: _tied(data).training_loss((np.full((5, 2), np.nan), data[1][:5])), r"batch\[0\] \(X\)"),
        (lambda data: MinibatchEP().step(_tied(data), (data[0][:5, :1], data[1][:5])), r"batch\[0\] \(X\)"),
    ],
    ids=["nested-batch", "sequential", "relaxation", "reproject", "layout", "labels", "nan", "columns"],
)
def test_bad_input_is_a_value_error_naming_it(data, call, match):
    with pytest.raises(ValueError, match=match):
        call(data)
