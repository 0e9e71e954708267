"""
The double loop (gpflow_ep.ep.double_loop): the energy of Hernández-Lobato & Hernández-Lobato (2011,
eq. 9) with power α (Minka 2004), its inner objective (eq. 19), the box's outer step (eq. 28), the
lower bound of their Sec. 3.1, closed-form fixed points, and the record it returns.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy.optimize import minimize_scalar

from gpflow_ep.datasets import spike_slab_problem
from gpflow_ep.ep import DoubleLoopInfo, EPSettings, run_ep
from gpflow_ep.ep.double_loop import _evaluate, _gradient_dot, box_outer_step, run_double_loop, site_log_normaliser
from gpflow_ep.models import EPGP, SpikeSlabRegression

TOL = 1e-9


@pytest.fixture(scope="module")
def paper_model():
    X, y, *_ = spike_slab_problem(3, n_train=10, d=12)
    return SpikeSlabRegression((X, y), 0.05**2, 1.0, 0.2)


def _inner(model, v1, v2, power=1.0):
    """F(θ; v) and its gradient (∂F/∂ν, ∂F/∂τ) from the moments at θ = (τ, ν)."""
    problem = model.site_problem()

    def F(nu, tau):
        tau, nu = tf.constant(tau), tf.constant(nu)
        p = _evaluate(problem.algebra, problem.factor, tau, nu, tf.constant(v1), tf.constant(v2), power)
        g_nu = (p.q_mean - p.t_mean).numpy()
        g_tau = 0.5 * (p.t_var + p.t_mean**2 - p.q_var - p.q_mean**2).numpy()
        return p.objective.numpy(), g_nu, g_tau

    return F


def _feasible_point(rng, d):
    v2 = rng.uniform(1.0, 30.0, size=(d, 1))
    return rng.normal(size=(d, 1)) * v2, v2, rng.normal(size=(d, 1)), v2 * rng.uniform(0.1, 0.9, size=(d, 1))


def test_inner_objective_gradient_and_convexity(paper_model, rng):
    """
    Test 6: F's gradient from the moments (∂F/∂ν = E_q[h] - E_p̂[h], ∂F/∂τ = ½(E_p̂[h²] - E_q[h²]))
    matches central differences (h = 1e-6: error O(h²) ≈ 1e-10 relative to F's curvature), the
    direction derivative of the loop (_gradient_dot) is its inner product, and F's second differences
    along random directions are ≥ 0 (convexity).
    """
    d = paper_model.sites.num_sites
    v1, v2, nu, tau = _feasible_point(rng, d)
    F = _inner(paper_model, v1, v2)
    _, g_nu, g_tau = F(nu, tau)
    h = 1e-6
    for i in range(d):
        e = np.zeros((d, 1))
        e[i] = h
        fd_nu = (F(nu + e, tau)[0] - F(nu - e, tau)[0]) / (2 * h)
        fd_tau = (F(nu, tau + e)[0] - F(nu, tau - e)[0]) / (2 * h)
        np.testing.assert_allclose(g_nu[i, 0], fd_nu, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_tau[i, 0], fd_tau, rtol=1e-5, atol=1e-6)
    problem = paper_model.site_problem()
    p = _evaluate(problem.algebra, problem.factor, tf.constant(tau), tf.constant(nu), v1, v2, 1.0)
    dn, dt = rng.normal(size=(d, 1)), rng.normal(size=(d, 1))
    np.testing.assert_allclose(_gradient_dot(p, dt, dn).numpy(), np.sum(g_nu * dn + g_tau * dt), rtol=1e-12)
    for _ in range(5):
        dn, dt = rng.normal(size=(d, 1)), rng.normal(size=(d, 1)) * tau * 0.05
        t = 1e-3
        second = F(nu + t * dn, tau + t * dt)[0] - 2 * F(nu, tau)[0] + F(nu - t * dn, tau - t * dt)[0]
        assert second / t**2 >= -1e-6


def test_outer_step_is_the_minimiser():
    """Test 7: the box's closed-form outer step equals a numerical minimisation of λ₁v₁ + λ₂v₂ + log Z̃(v),
    with and without the 3ε clamp (tolerance: scipy's bounded scalar minimiser, xatol 1e-12)."""
    eps = 1e-2
    for mean, var in [(0.7, 0.3), (-1.2, 2.0), (0.4, 1e3)]:  # the last needs the clamp: 1/var < 3ε
        lam1, lam2 = -mean, 0.5 * (var + mean**2)

        def after_v1(v2, lam1=lam1, lam2=lam2):  # v₁ minimised out: v₁ = -λ₁ v₂
            v1 = -lam1 * v2
            return lam1 * v1 + lam2 * v2 + site_log_normaliser(tf.constant(v1), tf.constant(v2)).numpy()

        best = minimize_scalar(after_v1, bounds=(3 * eps, 1e3), method="bounded", options=dict(xatol=1e-12)).x
        step = box_outer_step(tf.constant([mean], tf.float64), tf.constant([var], tf.float64), eps)
        v1, v2 = (t.numpy() for t in step)
        np.testing.assert_allclose(v2[0], best, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(v1[0], mean * v2[0], rtol=1e-12)


def test_energy_lower_bound(paper_model, rng):
    """Test 8: E(v, v/2, v/2) ≥ n/2 log 2πσ² - d/2 log 2 for random feasible v (the paper's Sec. 3.1)."""
    n, d = paper_model.data[0].shape
    bound = 0.5 * n * np.log(2 * np.pi * paper_model.noise_variance.numpy()) - 0.5 * d * np.log(2.0)
    for _ in range(5):
        v1, v2, _, _ = _feasible_point(rng, d)
        F = _inner(paper_model, v1, v2)
        energy = -F(0.5 * v1, 0.5 * v2)[0] + np.sum(site_log_normaliser(tf.constant(v1), tf.constant(v2)).numpy())
        assert energy >= bound


@pytest.mark.parametrize("power", [1.0, 0.5])
@pytest.mark.parametrize("box", [None, 1e-8])
def test_gaussian_likelihood_gives_the_exact_sites_and_evidence(power, box):
    """
    With a Gaussian likelihood every power-EP fixed point has the exact sites τ = 1/σ², ν = y/σ² and
    log Z_EP = GPR's log marginal likelihood (Minka 2004), with or without the box (no bound binds:
    τ = 25 ≫ ε). The run stops when q's and the tilted variances agree to a relative TOL, so each site
    precision is within ~TOL/s_q (the change of 1/s) per unit of relative mismatch, times 1/α (a site
    moves by 1/α of the moment change), with a factor 4 for the outer Gaussian's own TOL and
    second-order terms; the evidence is stationary in the sites, so its error is second order (≤ 1e-8).
    """
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (12, 1))
    Y = np.sin(2 * X) + 0.2 * rng.standard_normal(X.shape)
    noise = 0.04
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=0.7)
    likelihood = gpflow.likelihoods.Gaussian(variance=noise)
    model = EPGP((X, Y), kernel, likelihood, schedule="double_loop", power=power, tol=TOL, min_precision=box)
    run = model.run_ep()
    assert bool(run.converged) and run.measure_name == "mismatch" and isinstance(run.info, DoubleLoopInfo)
    tau, nu = model.sites.read()
    q = model.prior_algebra().marginals(tau, nu)
    atol = 4 * TOL * float(np.max(1.0 / q.var.numpy())) / power
    np.testing.assert_allclose(tau.numpy(), 1.0 / noise, rtol=0, atol=atol)
    np.testing.assert_allclose(nu.numpy(), Y / noise, rtol=0, atol=atol * (1 + np.max(np.abs(Y))))
    gpr = gpflow.models.GPR((X, Y), kernel, noise_variance=noise)
    np.testing.assert_allclose(
        model.log_marginal_likelihood().numpy(), gpr.log_marginal_likelihood().numpy(), atol=1e-8
    )
    energies = run.info.energies.numpy()[: int(run.sweeps) + 1]
    assert np.all(np.isfinite(energies))
    np.testing.assert_allclose(-energies[int(run.sweeps)], gpr.log_marginal_likelihood().numpy(), atol=1e-8)
    assert int(run.info.active_site_bounds) == 0 and int(run.info.active_cavity_bounds) == 0


@pytest.mark.slow
def test_convergent_schedule_on_a_gp_classifier_reaches_the_ep_fixed_point():
    """The double loop is the engine's, not the spike-and-slab model's: on EPGPC with the (log-
    concave) probit no bound binds and PC-EP reaches the parallel schedule's fixed point (log Z to
    1e-6), its energy falling after every outer step up to the inner loop's accuracy (tol)."""
    from gpflow_ep.datasets import two_dimensional
    from gpflow_ep.likelihoods import Probit
    from gpflow_ep.models import EPGPC

    X, Y = two_dimensional(24, seed=1)
    ep = EPGPC((X, Y), gpflow.kernels.SquaredExponential(lengthscales=0.7), Probit(), tol=1e-10, max_sweeps=500)
    ep.run_ep()
    dl = EPGPC(
        (X, Y),
        gpflow.kernels.SquaredExponential(lengthscales=0.7),
        Probit(),
        schedule="convergent",
        max_sweeps=500,
        tol=1e-10,
    )
    run = dl.run_ep()
    assert bool(run.converged)
    np.testing.assert_allclose(
        dl.log_marginal_likelihood().numpy(), ep.log_marginal_likelihood().numpy(), rtol=0, atol=1e-6
    )
    energies = run.info.energies.numpy()[: int(run.sweeps)]
    assert np.all(np.diff(energies) <= 1e-8 * np.maximum(1.0, np.abs(energies[1:])))


def test_the_double_loop_refuses_what_it_does_not_do_and_compiles():
    """Relaxation, the full cavity and the "alpha" criterion are refused (a ValueError naming the option,
    when a model is built and when the engine runs); it runs inside tf.function as eagerly."""
    from gpflow_ep.ep import GPAlgebra, LikelihoodFactor, Relaxation, get_schedule
    from gpflow_ep.likelihoods import Probit

    K = tf.eye(3, dtype=tf.float64)
    algebra, factor = (
        GPAlgebra(K, tf.zeros([3, 1], tf.float64)),
        LikelihoodFactor(Probit(), None, tf.ones([3, 1], tf.float64)),
    )
    zeros = tf.zeros([3, 1], tf.float64)
    for schedule in ("double_loop", "convergent", "robust"):
        for bad, name in (
            (dict(relaxation=Relaxation(penalty=0.1)), "relaxation"),
            (dict(cavity="full", power=0.5), "cavity"),
            (dict(criterion="alpha"), "criterion"),
        ):
            settings = EPSettings(schedule=schedule, **bad)
            with pytest.raises(ValueError, match=name):
                get_schedule(schedule).check_settings(settings)
            if schedule != "robust":
                with pytest.raises(ValueError, match=name):
                    run_ep(algebra, factor, zeros, zeros, settings)
    tol = 1e-8
    settings = EPSettings(schedule="convergent", tol=tol)
    compiled = tf.function(lambda: run_ep(algebra, factor, zeros, zeros, settings))()
    eager = run_ep(algebra, factor, zeros, zeros, settings)
    assert bool(compiled.converged) and bool(eager.converged)
    # both stop within tol (relative, in the moments) of the fixed point, on paths that the graph's op
    # order changes at round-off: the sites agree to a few tol
    np.testing.assert_allclose(compiled.precision.numpy(), eager.precision.numpy(), rtol=100 * tol)


def test_an_invalid_region_is_never_entered(paper_model):
    """
    A factor whose tilted moments turn NaN once a cavity precision exceeds 140 (from this start the
    cavities' precisions grow past it): every step into that region is rejected or halved, so the run
    returns finite sites, energies and record, never NaN.
    """

    class Poisoned(type(paper_model.site_problem().factor)):
        def tilted(self, cav_mean, cav_var, power):
            moments = super().tilted(cav_mean, cav_var, power)
            nan = tf.constant(np.nan, cav_var.dtype)
            return moments._replace(log_z=tf.where(cav_var < 1.0 / 140.0, nan, moments.log_z))

    base = paper_model.site_problem().factor
    d = paper_model.sites.num_sites
    tau0 = tf.fill([d, 1], tf.constant(5.0, tf.float64))
    settings = EPSettings(schedule="convergent", max_sweeps=50, criterion="moments", tol=1e-8)
    algebra, factor = paper_model.site_problem().algebra, Poisoned(base.slab_variance, base.prior_inclusion)
    run = tf.function(lambda: run_double_loop(algebra, factor, tau0, tf.zeros_like(tau0), settings))()
    assert int(run.num_rejected) > 0 or bool(run.info.stalled)
    info = run.info
    for value in (run.precision, run.natural_mean, run.dual, run.max_change, info.energies, info.outer_precision):
        assert np.all(np.isfinite(value.numpy()))


def test_a_double_loop_run_prints_as_one_short_line(paper_model):
    """The run's scalars and the arrays' shapes, its DoubleLoopInfo nested (the energies stay ``.info.energies``)."""
    run = paper_model.run_ep(schedule="convergent", max_sweeps=3, tol=1e-15)
    text = repr(run)
    assert "\n" not in text and len(text) < 900
    assert "info=DoubleLoopInfo(" in text and "energies=<float64 [3]>" in text and "sweeps=3" in text
