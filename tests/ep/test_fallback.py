"""
Robust EP's fallback (schedule "robust"; Jylänki, Vanhatalo & Vehtari 2011, Sec. 5): damped fractional
parallel EP, continued by the moment-matching double loop of gpflow_ep.ep.double_loop when it
does not converge.
"""

import numpy as np
import pytest
import scipy.stats
import tensorflow as tf
from neal_data import neal_outlier_data, student_t_epgp
from scipy_tilted import tilted_reference

from gpflow_ep.ep import EPConvergenceWarning, robust_settings, used_fallback
from gpflow_ep.ep.sites import cavity_distribution

TOL = 1e-7


@pytest.mark.slow
def test_fallback_not_used_where_parallel_ep_converges():
    """Parallel EP converges: the "robust" run is the parallel run, to round-off (1e-12 of the sites' scale)."""
    data = neal_outlier_data()
    with_fallback = student_t_epgp(data, **robust_settings(), tol=TOL)
    without = student_t_epgp(data, **robust_settings(fallback=False), tol=TOL)
    run, plain = with_fallback.run_ep(), without.run_ep()
    assert bool(plain.converged) and bool(run.converged)
    assert not bool(used_fallback(run))
    scale = float(np.max(np.abs(plain.precision.numpy())))
    np.testing.assert_allclose(run.precision.numpy(), plain.precision.numpy(), rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(run.natural_mean.numpy(), plain.natural_mean.numpy(), rtol=0, atol=1e-12 * scale)
    assert int(run.sweeps) == int(plain.sweeps)


def _fixed_point_gap(model, settings):
    """
    The largest scale-free gap max(|m_q - m_p̂|/√s_p̂, |s_q/s_p̂ - 1|) between q's marginals and the
    power-EP tilted distributions p̂_i ∝ q/t̃_i^α · p(y_i | f_i)^α, the tilted moments by SciPy's
    quadrature, and the largest ratio of a tilted to its cavity variance.
    """
    tau, nu = model.sites.read()
    q = model.prior_algebra().marginals(tau, nu)
    cav = cavity_distribution(q.mean, q.var, tau, nu, settings.power)
    assert bool(tf.reduce_all(cav.valid))
    Y = model.data[1].numpy()[:, 0]
    scale, df = float(model.likelihood.scale.numpy()), float(model.likelihood.df.numpy())
    gap, ratio = 0.0, 0.0
    for i in range(len(Y)):
        m, v = float(cav.mean[i, 0]), float(cav.var[i, 0])

        def log_lik(f, y=Y[i]):
            return scipy.stats.t.logpdf(y, df, loc=f, scale=scale)

        _, d1, d2 = tilted_reference(log_lik, m, v, settings.power)
        t_mean, t_var = m + v * d1, v + v * v * d2
        q_mean, q_var = float(q.mean[i, 0]), float(q.var[i, 0])
        gap = max(gap, abs(q_mean - t_mean) / np.sqrt(t_var), abs(q_var / t_var - 1.0))
        ratio = max(ratio, t_var / v)
    return gap, ratio


#: undamped EP (α = 1, ρ = 1) as the parallel phase: it does not converge on these data (checked below)
PLAIN = dict(power=1.0, damping=1.0, max_sweeps=300)


@pytest.fixture(scope="module")
def fallen_back():
    """A model whose parallel phase fails (shown with fallback=False), run with the fallback."""
    data = neal_outlier_data()
    without = student_t_epgp(data, **robust_settings(**PLAIN, fallback=False), tol=TOL)
    with pytest.warns(EPConvergenceWarning):
        assert not bool(without.run_ep().converged)
    model = student_t_epgp(data, **robust_settings(**PLAIN), tol=TOL)
    run = model.run_ep()
    return model, run


@pytest.mark.slow
def test_fallback_reaches_a_power_ep_fixed_point(fallen_back):
    """
    The double loop stops when q, the tilted distributions p̂_v (cavities v - αθ) and N(v) agree to tol
    in the scale-free measure. Then q and N(v) are within 2·tol, so the standard cavity q/t̃^α is within
    ~2·tol of v - αθ, and the tilted moments move by at most (1 + s_p̂/s_cavity) times that: the gap of q
    to the tilted moments of the standard cavity (SciPy quadrature, accurate to ~1e-10) is
    ≤ tol + 2·tol·(1 + max s_p̂/s_cav) to first order (a factor 2 of margin for the second-order terms).
    The energy is finite and -E equals the EP evidence log Z_EP (to first order the mismatch does not
    change it: ≤ N·tol relative).
    """
    model, run = fallen_back
    settings = model.ep_settings
    assert bool(used_fallback(run)) and bool(run.converged)
    gap, ratio = _fixed_point_gap(model, settings)
    assert gap <= 2 * (TOL + 2 * TOL * (1 + ratio)), (gap, ratio)
    assert run.measure_name == "mismatch" and int(run.info.parallel_sweeps) == settings.max_sweeps
    energies = run.info.double_loop.energies.numpy()[: int(run.sweeps) + 1]
    assert len(energies) > 0 and np.all(np.isfinite(energies))
    lml = float(model.log_marginal_likelihood())
    assert np.isfinite(lml)
    assert abs(-energies[-1] - lml) <= model.num_data * TOL * max(1.0, abs(lml))


@pytest.mark.slow
def test_evidence_gradient_after_fallback_matches_finite_differences(
    fallen_back, assert_gradients_match_finite_differences
):
    """
    After the fallback, the gradient of log Z_EP with the sites fixed equals the derivative of the
    converged evidence (it is stationary in the sites at a fixed point): central differences with
    h = 1e-4 in the unconstrained parameters (error O(h²) ≈ 1e-8), each evaluation re-converging EP
    (parallel, then the fallback) to tol = 1e-7, whose effect on log Z_EP is second order; rtol 1e-4.
    """
    model, _ = fallen_back
    variables = [p.unconstrained_variable for p in model.trainable_parameters]
    with tf.GradientTape() as tape:
        lml = model.log_marginal_likelihood()
    grads = tape.gradient(lml, variables)

    def converged_evidence():
        run = model.run_ep()
        assert bool(run.converged)
        return float(model.log_marginal_likelihood())

    assert_gradients_match_finite_differences(variables, grads, converged_evidence, h=1e-4, rtol=1e-4)
