"""RelaxedEP: relaxed moment matching as an option of the EP engine (Qi & Guo 2012)."""

import gpflow
import numpy as np
import pytest

from gpflow_ep.datasets import noisy_mixture, two_dimensional
from gpflow_ep.likelihoods import NoisyStep, Probit
from gpflow_ep.models import EPGPC, RelaxedEP
from gpflow_ep.optimizers import EP


@pytest.fixture(scope="module")
def data():
    X, Y, _ = noisy_mixture(30, flip_rate=0.2, seed=5)
    return X, Y


def _kernel(variance=1.0):
    return gpflow.kernels.SquaredExponential(variance=variance, lengthscales=1.0)


@pytest.mark.parametrize("schedule", ["sequential", "parallel"])
@pytest.mark.slow
def test_large_penalty_follows_ep_trajectory(data, schedule):
    """c = 1e3 (unit amplitude) gives EP's sites sweep by sweep, all b = 0."""
    for sweeps in [1, 2, 4]:
        runs = []
        for cls, kw in [(EPGPC, {}), (RelaxedEP, dict(penalty=1e3))]:
            m = cls(data, _kernel(), NoisyStep(0.2), schedule=schedule, ep_mode="alternated", **kw)
            EP(max_sweeps=sweeps, warn=False).minimize(m)
            runs.append(m)
        ep, rep = runs
        assert np.all(rep.sites.relaxation.numpy() == 0.0)
        for a, b in zip(ep.sites.read(), rep.sites.read()):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ep.sites.dual.numpy(), rep.sites.dual.numpy(), atol=1e-12)


@pytest.mark.slow
def test_scale_equivariance_of_penalty(data):
    """
    Scaling g → 3g (kernel 9K) turns a relaxation precision b into b/9, so c|b| becomes (c/9)|b|:
    REP with (9K, c) equals REP with (K, c/9) (not the inverse pairing (K, 9c), which this derivation
    rules out).
    """
    Xs = two_dimensional(30, seed=9)[0]
    out = []
    for variance, c in [(1.0, 0.3), (9.0, 9.0 * 0.3)]:
        m = RelaxedEP(data, _kernel(variance), NoisyStep(0.2), penalty=c, max_sweeps=5, ep_mode="alternated")
        EP(warn=False).minimize(m)
        mu, var = m.predict_f(Xs)
        out.append((mu.numpy() / np.sqrt(var.numpy()), m.sites.relaxation.numpy()))
    (z1, b1), (z9, b9) = out
    assert np.any(b1 > 0), "the setting must actually relax some sites"
    np.testing.assert_allclose(z1, z9, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b9, b1 / 9.0, rtol=1e-5, atol=1e-10)


@pytest.mark.slow
def test_relaxation_targets_flipped_labels():
    """
    Behavioural: with c = 1 (Qi & Guo 2012's prototype value) the sites that get
    b > 0 are mislabelled more often than the base flip rate (20 %).
    """
    X, Y, clean = noisy_mixture(100, flip_rate=0.2, seed=1)
    m = RelaxedEP((X, Y), _kernel(), NoisyStep(0.2), penalty=1.0, criterion="alpha", tol=1e-3, ep_mode="alternated")
    EP(warn=False).minimize(m)
    relaxed = m.sites.relaxation.numpy()[:, 0] > 0
    assert relaxed.any()
    assert np.mean((Y != clean)[relaxed, 0]) > 0.2


@pytest.mark.parametrize("message_update", ["A", "B", "C"])
@pytest.mark.parametrize("objective", ["paper", "exact"])
def test_every_reading_runs_and_stays_finite(data, message_update, objective):
    m = RelaxedEP(
        data,
        _kernel(),
        NoisyStep(0.2),
        penalty=0.3,
        message_update=message_update,
        objective=objective,
        allow_negative_b=(objective == "exact"),
        max_sweeps=5,
        ep_mode="alternated",
    )
    result = EP(warn=False).minimize(m)
    assert np.isfinite(result.log_marginal_likelihood)
    assert all(np.all(np.isfinite(v)) for v in m.sites.read())
    assert np.all(np.isfinite(m.predict_y(data[0])[0]))


@pytest.mark.slow
def test_probit_through_quadrature_and_alternated_training():
    """Any scalar likelihood: T1 = E_p̂[log Φ] by Gauss–Hermite; hyper-parameters by alternation."""
    X, Y = two_dimensional(40, seed=3)
    m = RelaxedEP((X, Y), _kernel(), Probit(), penalty=0.5, schedule="parallel", ep_mode="alternated")
    first = EP(warn=False).minimize(m).log_marginal_likelihood
    adam = gpflow.keras.tf_keras.optimizers.Adam(0.05)
    for _ in range(3):
        for _ in range(10):
            adam.minimize(m.training_loss, m.trainable_variables)
        last = EP(warn=False).minimize(m).log_marginal_likelihood
    assert np.isfinite(last) and last > first


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(penalty=-1.0), "penalty"),
        (dict(message_update="D"), "message_update"),
        (dict(objective="kl"), "objective"),
        (dict(power=0.8), "power"),
        (dict(predict_with="x"), "predict_with"),
    ],
)
def test_bad_settings_raise_value_error(data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        RelaxedEP(data, _kernel(), NoisyStep(0.2), **kwargs)


@pytest.mark.slow
def test_hinge_sites_relax_and_a_huge_penalty_is_ep(data):
    """BinaryHinge in relaxed EP (its closed-form T1): finite relaxed sites, some b > 0 on flipped
    labels at a small penalty; with c = 1e6 the run equals EP's (b = 0 exactly)."""
    from gpflow_ep.likelihoods import BinaryHinge

    relaxed = RelaxedEP(data, _kernel(), BinaryHinge(), penalty=0.05, schedule="parallel", ep_mode="alternated")
    result = EP(warn=False).minimize(relaxed)
    assert np.isfinite(result.log_marginal_likelihood)
    assert np.all(np.isfinite(relaxed.sites.relaxation.numpy())) and np.any(relaxed.sites.relaxation.numpy() > 0)
    runs = []
    for cls, kw in [(EPGPC, {}), (RelaxedEP, dict(penalty=1e6))]:
        m = cls(data, _kernel(), BinaryHinge(), schedule="parallel", ep_mode="alternated", **kw)
        EP(max_sweeps=3, warn=False).minimize(m)
        runs.append(m)
    for a, b in zip(runs[0].sites.read(), runs[1].sites.read()):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
