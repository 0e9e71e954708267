r"""
EP schedules: the loops that drive the site update of :mod:`gpflow_ep.ep.sites`.

Both loops are ``tf.while_loop``s (DESIGN principle 4) and are model-agnostic. A model supplies its
posterior algebra as callables; a likelihood supplies tilted moments through ``tilted_fn``.

* **parallel**: every site is updated from the same q, the update is damped, then q is rebuilt
  from all sites (``marginals_fn(τ, ν) -> (mean, var, proper)``). A sweep whose damped sites give
  an improper q (possible only with negative site precisions) is rejected and the damping halved.
* **sequential**: sites are visited in order; q is kept as (Σ, μ) in some basis and updated by a
  rank-one Sherman–Morrison step after each site (Minka 2001 §3.2 of the rep spec, eq. 17);
  ``joint_fn(τ, ν) -> (Σ, μ, proper)`` refreshes it at the start of every sweep. The marginal of
  site i is w_iᵀΣw_i with w_i the i-th row of ``projection`` (identity when ``None``). An update
  that would make q improper (1 + Δτ σ_i² ≤ 0) is skipped.

Convergence: the largest change of a site natural parameter in one sweep (measured on the
undamped proposal, so that damping cannot fake convergence) is at most ``tol``, and no site was
skipped in that sweep. Improper cavities are skipped and counted, never turned into NaN.
"""

from typing import Callable, NamedTuple, Optional

import tensorflow as tf

from .sites import cavity, damp, site_update

__all__ = ["EPRun", "run_parallel_ep", "run_sequential_ep", "SCHEDULES"]

SCHEDULES = ("parallel", "sequential")


class EPRun(NamedTuple):
    """Outcome of one EP run (tensors; see :class:`gpflow_ep.optimizers.EPResult`)."""

    precision: tf.Tensor
    natural_mean: tf.Tensor
    converged: tf.Tensor
    sweeps: tf.Tensor
    max_change: tf.Tensor
    num_skipped: tf.Tensor
    num_rejected: tf.Tensor
    skipped_last_sweep: tf.Tensor


def _max_change(old_tau, new_tau, old_nu, new_nu, ok):
    diff = tf.maximum(tf.abs(new_tau - old_tau), tf.abs(new_nu - old_nu))
    return tf.reduce_max(tf.where(ok, diff, tf.zeros_like(diff)))


def _warm_start(state_fn, precision, natural_mean):
    """
    (τ, ν, *state) of q at the stored sites, or at flat sites (q = prior) when the stored sites
    give an improper q, e.g. negative-precision sites kept from other hyper-parameters.
    """
    *state, proper = state_fn(precision, natural_mean)

    def cold_start():
        zeros = tf.zeros_like(precision)
        *cold_state, _ = state_fn(zeros, zeros)
        return (zeros, zeros, *cold_state)

    return tf.cond(proper, lambda: (precision, natural_mean, *state), cold_start)


def run_parallel_ep(
    marginals_fn: Callable,
    tilted_fn: Callable,
    precision,
    natural_mean,
    *,
    power: float = 1.0,
    cavity_kind: str = "fractional",
    damping: float = 0.5,
    max_sweeps: int = 100,
    tol: float = 1e-6,
) -> EPRun:
    """Damped parallel EP from warm-start sites (reset to flat sites if they give an improper q)."""
    dtype = precision.dtype
    tau, nu, mean, var = _warm_start(marginals_fn, precision, natural_mean)

    def body(sweep, tau, nu, mean, var, rho, change, skipped, rejected, skipped_now):
        cav = cavity(mean, var, tau, nu, power, cavity_kind)
        new_tau, new_nu, ok = site_update(cav.mean, cav.var, tilted_fn(cav.mean, cav.var), power)
        ok = ok & cav.valid
        change = _max_change(tau, new_tau, nu, new_nu, ok)
        tau_p = tf.where(ok, damp(tau, new_tau, rho), tau)
        nu_p = tf.where(ok, damp(nu, new_nu, rho), nu)
        mean_p, var_p, accept = marginals_fn(tau_p, nu_p)
        skipped_now = tf.reduce_sum(tf.cast(~ok, tf.int32))
        tau, nu, mean, var = [
            tf.where(accept, a, b) for a, b in zip((tau_p, nu_p, mean_p, var_p), (tau, nu, mean, var))
        ]
        rho = tf.where(accept, rho, 0.5 * rho)
        rejected += tf.cast(~accept, tf.int32)
        change = tf.where(accept, change, tf.constant(float("inf"), dtype))
        return sweep + 1, tau, nu, mean, var, rho, change, skipped + skipped_now, rejected, skipped_now

    def cond(sweep, tau, nu, mean, var, rho, change, skipped, rejected, skipped_now):
        return (sweep < max_sweeps) & ~((change <= tol) & (skipped_now == 0))

    init = (
        tf.constant(0),
        tau,
        nu,
        mean,
        var,
        tf.constant(damping, dtype),
        tf.constant(float("inf"), dtype),
        tf.constant(0),
        tf.constant(0),
        tf.constant(0),
    )
    sweep, tau, nu, _, _, _, change, skipped, rejected, skipped_now = tf.while_loop(cond, body, init)
    converged = (change <= tol) & (skipped_now == 0)
    return EPRun(tau, nu, converged, sweep, change, skipped, rejected, skipped_now)


def run_sequential_ep(
    joint_fn: Callable,
    tilted_one_fn: Callable,
    precision,
    natural_mean,
    *,
    projection: Optional[tf.Tensor] = None,
    power: float = 1.0,
    cavity_kind: str = "fractional",
    damping: float = 1.0,
    max_sweeps: int = 100,
    tol: float = 1e-6,
) -> EPRun:
    """
    Sequential EP with rank-one updates of (Σ, μ); ``tilted_one_fn(i, mean, var)`` gives the tilted
    moments of site i for a [1, 1] cavity.
    """
    dtype = precision.dtype
    n = tf.shape(precision)[0]
    tau, nu, Sigma, mu = _warm_start(joint_fn, precision, natural_mean)

    def column(Sigma, i):
        if projection is None:
            return Sigma[:, i]
        return tf.linalg.matvec(Sigma, projection[i])

    def project(vec, i):
        if projection is None:
            return vec[i]
        return tf.reduce_sum(projection[i] * vec)

    def site_body(i, tau, nu, Sigma, mu, change, skipped_now):
        s = column(Sigma, i)
        var_i = tf.reshape(project(s, i), [1, 1])
        mean_i = tf.reshape(project(mu[:, 0], i), [1, 1])
        tau_i, nu_i = tau[i : i + 1], nu[i : i + 1]
        cav = cavity(mean_i, var_i, tau_i, nu_i, power, cavity_kind)
        new_tau, new_nu, ok = site_update(cav.mean, cav.var, tilted_one_fn(i, cav.mean, cav.var), power)
        ok = ok & cav.valid
        d_tau = damp(tau_i, new_tau, damping) - tau_i
        d_nu = damp(nu_i, new_nu, damping) - nu_i
        den = 1.0 + d_tau * var_i
        ok = ok & (den > 0.0)
        ok_s = tf.reshape(ok, [])
        safe_den = tf.where(ok, den, tf.ones_like(den))
        c = tf.reshape(tf.where(ok, d_tau / safe_den, tf.zeros_like(den)), [])
        shift = tf.reshape(tf.where(ok, (d_nu - d_tau * mean_i) / safe_den, tf.zeros_like(den)), [])
        Sigma = Sigma - c * s[:, None] * s[None, :]
        mu = mu + shift * s[:, None]
        idx = [[i]]
        tau = tf.tensor_scatter_nd_add(tau, idx, tf.where(ok, d_tau, tf.zeros_like(d_tau)))
        nu = tf.tensor_scatter_nd_add(nu, idx, tf.where(ok, d_nu, tf.zeros_like(d_nu)))
        change = tf.where(ok_s, tf.maximum(change, _max_change(tau_i, new_tau, nu_i, new_nu, ok)), change)
        return i + 1, tau, nu, Sigma, mu, change, skipped_now + tf.cast(~ok_s, tf.int32)

    def sweep_body(sweep, tau, nu, Sigma, mu, change, skipped, skipped_now):
        S, m, ok = joint_fn(tau, nu)  # refresh against round-off drift
        Sigma = tf.where(ok, S, Sigma)
        mu = tf.where(ok, m, mu)
        _, tau, nu, Sigma, mu, change, skipped_now = tf.while_loop(
            lambda i, *_: i < n,
            site_body,
            (tf.constant(0), tau, nu, Sigma, mu, tf.zeros([], dtype), tf.constant(0)),
        )
        return sweep + 1, tau, nu, Sigma, mu, change, skipped + skipped_now, skipped_now

    def cond(sweep, tau, nu, Sigma, mu, change, skipped, skipped_now):
        return (sweep < max_sweeps) & ~((change <= tol) & (skipped_now == 0))

    init = (
        tf.constant(0),
        tau,
        nu,
        Sigma,
        mu,
        tf.constant(float("inf"), dtype),
        tf.constant(0),
        tf.constant(0),
    )
    sweep, tau, nu, _, _, change, skipped, skipped_now = tf.while_loop(cond, sweep_body, init)
    converged = (change <= tol) & (skipped_now == 0)
    return EPRun(tau, nu, converged, sweep, change, skipped, tf.constant(0), skipped_now)
