"""The compiled moment-matching double loop for power EP (schedule "double_loop"), against closed forms."""

import gpflow
import numpy as np
import pytest

from gpflow_ep.models import EPGP

TOL = 1e-9


@pytest.mark.parametrize("power", [1.0, 0.5])
def test_gaussian_likelihood_gives_the_exact_sites_and_evidence(power):
    """
    With a Gaussian likelihood every power-EP fixed point has the exact sites τ = 1/σ², ν = y/σ² and
    log Z_EP = GPR's log marginal likelihood (Minka 2004). The run stops when q's and the tilted
    variances agree to a relative TOL, so each site precision is within ~TOL/s_q (the change of 1/s) per
    unit of relative mismatch, times 1/α (a site moves by 1/α of the moment change), with a factor 4 for
    the outer Gaussian's own TOL and second-order terms; the evidence is stationary in the sites, so its
    error is second order (≤ 1e-8 absolute).
    """
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (12, 1))
    Y = np.sin(2 * X) + 0.2 * rng.standard_normal(X.shape)
    noise = 0.04
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=0.7)
    model = EPGP(
        (X, Y), kernel, gpflow.likelihoods.Gaussian(variance=noise), schedule="double_loop", power=power, tol=TOL
    )
    run = model.run_ep()
    assert bool(run.converged)
    tau, nu = model.sites.read()
    q = model.prior_algebra().marginals(tau, nu)
    atol = 4 * TOL * float(np.max(1.0 / q.var.numpy())) / power
    np.testing.assert_allclose(tau.numpy(), 1.0 / noise, rtol=0, atol=atol)
    np.testing.assert_allclose(nu.numpy(), Y / noise, rtol=0, atol=atol * (1 + np.max(np.abs(Y))))
    gpr = gpflow.models.GPR((X, Y), kernel, noise_variance=noise)
    np.testing.assert_allclose(
        model.log_marginal_likelihood().numpy(), gpr.log_marginal_likelihood().numpy(), atol=1e-8
    )
    energies = run.history.numpy()[: int(run.sweeps) + 1]
    assert np.all(np.isfinite(energies))
    np.testing.assert_allclose(-energies[int(run.sweeps)], gpr.log_marginal_likelihood().numpy(), atol=1e-8)
