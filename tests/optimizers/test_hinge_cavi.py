"""HingeCAVI: the corrected coordinate ascent of the Bayesian SVM (Wistuba & Rawat 2018, App. C, Algorithm 1)."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.mean_functions import Constant

from gpflow_ep.likelihoods import BinaryHinge, MultiClassHinge
from gpflow_ep.optimizers import HingeCAVI

C = 3


def _model(likelihood, whiten, rng, N=40, M=8, mean=None):
    X = rng.normal(size=(N, 2))
    Z = X[:M].copy()
    P = 1 if isinstance(likelihood, BinaryHinge) else C
    model = gpflow.models.SVGP(
        gpflow.kernels.SquaredExponential(lengthscales=1.2),
        likelihood,
        gpflow.inducing_variables.InducingPoints(Z),
        num_latent_gps=P,
        whiten=whiten,
        num_data=N,
        mean_function=mean,
    )
    model.q_mu.assign(0.3 * rng.normal(size=(M, P)))
    model.q_sqrt.assign(np.stack([np.tril(0.2 * rng.normal(size=(M, M))) + 0.5 * np.eye(M) for _ in range(P)]))
    if isinstance(likelihood, BinaryHinge):
        Y = (X[:, :1] + 0.3 * rng.normal(size=(N, 1)) > 0).astype(float)
    else:
        Y = rng.integers(0, C, size=(N, 1)).astype(float)
    return model, X, Y


def _directions(model, X, Y):
    """c_n (e_y - e_t, or y in {-1, +1}) at the current q, as numpy (independent of the module)."""
    mean = model.predict_f(X)[0].numpy()
    if isinstance(model.likelihood, BinaryHinge):
        return 2.0 * Y - 1.0
    own = np.eye(C)[Y[:, 0].astype(int)]
    return own - np.eye(C)[np.argmax(np.where(own > 0, -np.inf, mean), axis=1)]


def _uncollapsed_elbo(model, X, c, alpha):
    """ELBO with q(λ_n) = GIG(½, 1, α_n) and the competitors held fixed (E_q[log φ_n] + H[q(λ_n)], Theorem 1):
    Σ_n -E[b_n] - ½ (E[b_n²] / √α_n + √α_n) - KL, with b_n = 1 - c_nᵀ f_n."""
    mean, var = model.predict_f(X)
    mean_b = 1.0 - tf.reduce_sum(c * mean, -1)
    second = tf.square(mean_b) + tf.reduce_sum(c**2 * var, -1)
    return tf.reduce_sum(-mean_b - 0.5 * (second / np.sqrt(alpha) + np.sqrt(alpha))) - model.prior_kl()


def _alpha_star(model, X, c):
    mean, var = (t.numpy() for t in model.predict_f(X))
    return (1.0 - np.sum(c * mean, -1)) ** 2 + np.sum(c**2 * var, -1)


def _gradients(model, X, c, alpha):
    with tf.GradientTape() as tape:
        elbo = _uncollapsed_elbo(model, X, c, alpha)
    g_mu, g_sqrt = tape.gradient(elbo, [model.q_mu.unconstrained_variable, model.q_sqrt.unconstrained_variable])
    return elbo.numpy(), g_mu.numpy(), g_sqrt.numpy()


LIKELIHOODS = {
    "multiclass": lambda: MultiClassHinge(C, bound="augmented"),
    "binary": lambda: BinaryHinge(bound="augmented"),
}


@pytest.mark.parametrize("whiten", [True, False])
@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_one_class_step_is_exact_coordinate_ascent(name, whiten):
    """ρ = 1, full batch, one class: ∂ELBO(α, t fixed)/∂(μ_j, Σ_j) = 0 afterwards and the ELBO
    does not decrease; the other classes are untouched. The stationarity is exact algebra, so the
    tolerance is float64 round-off through an M × M Cholesky (1e-8)."""
    rng = np.random.default_rng(0)
    model, X, Y = _model(
        LIKELIHOODS[name](), whiten, rng, mean=Constant(np.array([0.3, -0.2, 0.1][: 1 if name == "binary" else C]))
    )
    c = _directions(model, X, Y)
    alpha = _alpha_star(model, X, c)
    before, g_mu_before, _ = _gradients(model, X, c, alpha)
    j = 1 if name == "multiclass" else 0
    assert np.max(np.abs(g_mu_before[:, j])) > 0.1  # the check below could fail
    others = np.delete(model.q_mu.numpy(), j, axis=1), np.delete(model.q_sqrt.numpy(), j, axis=0)

    HingeCAVI(step_size=1.0).step(model, (X, Y), classes=[j])

    after, g_mu, g_sqrt = _gradients(model, X, c, alpha)
    assert np.max(np.abs(g_mu[:, j])) < 1e-8
    assert np.max(np.abs(g_sqrt[j])) < 1e-8
    assert after >= before - 1e-10
    np.testing.assert_array_equal(np.delete(model.q_mu.numpy(), j, axis=1), others[0])
    np.testing.assert_array_equal(np.delete(model.q_sqrt.numpy(), j, axis=0), others[1])


def test_printed_update_is_not_stationary():
    """Negative control: the paper's printed eqs. (45)-(46) (μ = +½η₂⁻¹η₁ in eqs. (42)-(44) and the extra
    minus of eq. (45)) leave a gradient of order one and a lower ELBO than the corrected step."""
    rng = np.random.default_rng(1)
    model, X, Y = _model(MultiClassHinge(C, bound="augmented"), False, rng)
    c = _directions(model, X, Y)
    alpha = _alpha_star(model, X, c)
    j = 1
    kern, Z = model.kernel, model.inducing_variable.Z.numpy()
    Kuu = kern(Z).numpy() + gpflow.config.default_jitter() * np.eye(len(Z))
    kappa = np.linalg.solve(Kuu, kern(Z, X).numpy()).T  # κ_n = k_nᵀ K⁻¹, [N, M]
    mean = model.predict_f(X)[0].numpy()
    r = 1.0 / np.sqrt(alpha)
    y, t = np.argmax(c > 0, 1), np.argmax(c < 0, 1)
    m_y, m_t = mean[np.arange(len(X)), y], mean[np.arange(len(X)), t]
    # eq. (45) with κ ½η₂⁻¹η₁ read as +m (the printed conversion): -N κᵀ{-(r(1 + m_y) + 1); (r(1 - m_t) + 1)}
    coef = np.where(t == j, r * (1 + m_y) + 1, 0.0) - np.where(y == j, r * (1 - m_t) + 1, 0.0)
    eta1 = kappa.T @ coef
    involved = (y == j) | (t == j)
    eta2 = -0.5 * np.linalg.inv(Kuu) - 0.5 * (kappa[involved].T * r[involved]) @ kappa[involved]
    Sigma = np.linalg.inv(-2.0 * eta2)
    printed = model.q_mu.numpy().copy()
    printed[:, j] = Sigma @ eta1
    q_sqrt = model.q_sqrt.numpy().copy()
    q_sqrt[j] = np.linalg.cholesky(Sigma)
    model.q_mu.assign(printed)
    model.q_sqrt.assign(q_sqrt)
    printed_elbo, g_mu, _ = _gradients(model, X, c, alpha)
    assert np.max(np.abs(g_mu[:, j])) > 0.5

    model2, _, _ = _model(MultiClassHinge(C, bound="augmented"), False, np.random.default_rng(1))
    HingeCAVI(step_size=1.0).step(model2, (X, Y), classes=[j])
    assert _uncollapsed_elbo(model2, X, c, alpha).numpy() > printed_elbo + 1.0


@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_envelope_gradient(name):
    """The gradient of the collapsed ELBO (the likelihood's "augmented" term in SVGP.elbo) wrt
    q_mu equals that of the uncollapsed ELBO with α held at α* (same competitors). Both are the same
    closed-form derivative, so rtol 1e-8."""
    rng = np.random.default_rng(2)
    model, X, Y = _model(LIKELIHOODS[name](), True, rng)
    c = _directions(model, X, Y)
    alpha = _alpha_star(model, X, c)
    with tf.GradientTape() as tape:
        collapsed = model.elbo((X, Y))
    g_collapsed = tape.gradient(collapsed, model.q_mu.unconstrained_variable).numpy()
    uncollapsed, g_uncollapsed, _ = _gradients(model, X, c, alpha)
    np.testing.assert_allclose(uncollapsed, collapsed.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g_uncollapsed, g_collapsed, rtol=1e-8, atol=1e-12)


def test_minibatch_scale():
    """
    The minibatch scale N/|B| (the paper's eqs. (45)-(46) are for one point): a minibatch B with
    num_data = 2|B| gives the same step as the data B twice over.
    """
    rng = np.random.default_rng(3)
    model, X, Y = _model(MultiClassHinge(C, bound="augmented"), True, rng, N=20)
    twin, _, _ = _model(MultiClassHinge(C, bound="augmented"), True, np.random.default_rng(3), N=20)
    model.num_data = twin.num_data = 40
    HingeCAVI(0.7).step(model, (X, Y))
    HingeCAVI(0.7).step(twin, (np.vstack([X, X]), np.vstack([Y, Y])))
    np.testing.assert_allclose(model.q_mu.numpy(), twin.q_mu.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.q_sqrt.numpy(), twin.q_sqrt.numpy(), rtol=1e-9, atol=1e-12)


def test_blobs_reach_accuracy():
    """ρ = 0.5 on 3-class Gaussian blobs (N = 300, P = 10, RBF lengthscale 1) reaches ≥ 0.85
    training accuracy within 30 iterations, with the ELBO (α at its optimum) increasing overall."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=300, centers=3, cluster_std=1.0, random_state=0)  # logistic regression: 0.93
    X = (X - X.mean(0)) / X.std(0)
    Y = y[:, None].astype(float)
    Z = X[np.random.default_rng(0).choice(300, 10, replace=False)]
    model = gpflow.models.SVGP(
        gpflow.kernels.SquaredExponential(lengthscales=1.0),
        MultiClassHinge(C, bound="augmented"),
        gpflow.inducing_variables.InducingPoints(Z),
        num_latent_gps=C,
        num_data=300,
    )
    model.q_mu.assign(0.01 * np.random.default_rng(1).normal(size=(10, C)))  # break the competitor ties at q_mu = 0
    start = model.elbo((X, Y)).numpy()
    cavi = HingeCAVI(step_size=0.5)
    for _ in range(30):
        cavi.step(model, (X, Y))
    accuracy = np.mean(np.argmax(model.predict_f(X)[0].numpy(), 1) == y)
    assert accuracy >= 0.85
    assert model.elbo((X, Y)).numpy() > start


def test_bad_input_is_a_value_error():
    rng = np.random.default_rng(4)
    model, X, Y = _model(MultiClassHinge(C), True, rng)
    with pytest.raises(ValueError, match="step_size"):
        HingeCAVI(step_size=1.5)
    with pytest.raises(ValueError, match=r"data\[1\] \(Y\)"):
        HingeCAVI().step(model, (X, Y + 3))
    with pytest.raises(ValueError, match=r"data\[0\] \(X\)"):
        HingeCAVI().step(model, (np.full_like(X, np.nan), Y))
    with pytest.raises(ValueError, match=r"data\[0\] \(X\) must have 2 columns"):
        HingeCAVI().step(model, (np.hstack([X, X]), Y))
    with pytest.raises(ValueError, match="classes"):
        HingeCAVI().step(model, (X, Y), classes=[C])
    probit = gpflow.models.SVGP(
        gpflow.kernels.SquaredExponential(),
        gpflow.likelihoods.Bernoulli(),
        gpflow.inducing_variables.InducingPoints(X[:4]),
    )
    with pytest.raises(ValueError, match="likelihood"):
        HingeCAVI().step(probit, (X, (Y > 0).astype(float)))
    binary, Xb, Yb = _model(BinaryHinge(), True, rng)
    with pytest.raises(ValueError, match=r"data\[1\] \(Y\)"):
        HingeCAVI().step(binary, (Xb, 2.0 * Yb - 1.0))
