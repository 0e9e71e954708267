r"""
EP schedules: the loops that drive the site update of :mod:`gpflow_ep.ep.update`.

Both loops are ``tf.while_loop``s (DESIGN principle 4) and are model-agnostic. A model supplies its
posterior algebra as callables; the site update comes as ``propose_fn(cavity, τ, ν, index)``
(``index=None`` for all sites at once, or the visited site in the sequential schedule).

* **parallel**: every site is updated from the same q, the update is damped, then q is rebuilt
  from all sites (``marginals_fn(τ, ν) -> (mean, var, proper)``). A sweep whose damped sites give
  an improper q (possible only with negative site precisions) is rejected and the damping halved.
* **sequential**: sites are visited in order; q is kept as (Σ, μ) in some basis and updated by a
  rank-one Sherman–Morrison step after each site (Minka 2001; rep spec §3.2, eq. 17);
  ``joint_fn(τ, ν) -> (Σ, μ, proper)`` refreshes it at the start of every sweep. The marginal of
  site i is N(w_iᵀμ + o_i, w_iᵀΣw_i) with w_i the i-th row of ``projection`` (identity when
  ``None``) and o_i the i-th entry of ``offset`` (a prior mean outside the state, default 0). An
  update that would make q improper (1 + Δτ σ_i² ≤ 0) is skipped.

Convergence (``criterion``):

* "sites" (default): the largest change of a site natural parameter in a sweep (on the undamped
  proposal, so damping cannot fake convergence) is ≤ ``tol`` and no site was skipped in it;
* "alpha": the paper's R = ‖α_t - α_{t-1}‖₂ ≤ ``tol`` over the vector of per-site
  α_i = ∂log Z_i/∂(cavity mean) of the latest visits (Qi & Guo §6.2; rep spec §3.2), with at
  least one site accepted in the sweep.

Improper cavities are skipped and counted, never turned into NaN. ``EPRun.history`` holds the
convergence statistic of every sweep (zeros after the last).
"""

from typing import Callable, NamedTuple, Optional

import tensorflow as tf

from .sites import cavity, damp

__all__ = ["EPRun", "run_parallel_ep", "run_sequential_ep", "SCHEDULES", "CRITERIA"]

SCHEDULES = ("parallel", "sequential")
CRITERIA = ("sites", "alpha")


class EPRun(NamedTuple):
    """Outcome of one EP run (tensors; see :class:`gpflow_ep.optimizers.EPResult`)."""

    precision: tf.Tensor
    natural_mean: tf.Tensor
    converged: tf.Tensor
    sweeps: tf.Tensor
    max_change: tf.Tensor  # the convergence statistic of the last sweep
    num_skipped: tf.Tensor
    num_rejected: tf.Tensor
    skipped_last_sweep: tf.Tensor
    alpha: tf.Tensor  # [N, 1] per-site α of the latest visits
    relaxation: tf.Tensor  # [N, 1] relaxation precisions b of the latest visits (relaxed EP)
    history: tf.Tensor  # [max_sweeps] convergence statistic per sweep


def _site_change(old_tau, new_tau, old_nu, new_nu, ok):
    diff = tf.maximum(tf.abs(new_tau - old_tau), tf.abs(new_nu - old_nu))
    return tf.reduce_max(tf.where(ok, diff, tf.zeros_like(diff)))


def _converged(change, tol, skipped_now, criterion, num_sites):
    """ "sites": small change and nothing skipped; "alpha": small R and at least one accepted update
    (a sweep that skips every site leaves α unchanged, R = 0, and proves nothing)."""
    done = change <= tol
    return done & (skipped_now < num_sites) if criterion == "alpha" else done & (skipped_now == 0)


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
    propose_fn: Callable,
    precision,
    natural_mean,
    *,
    power: float = 1.0,
    cavity_kind: str = "fractional",
    damping: float = 0.8,
    max_sweeps: int = 100,
    tol: float = 1e-6,
    criterion: str = "sites",
) -> EPRun:
    """Damped parallel EP from warm-start sites (reset to flat sites if they give an improper q)."""
    dtype = precision.dtype
    tau, nu, mean, var = _warm_start(marginals_fn, precision, natural_mean)
    zeros = tf.zeros_like(precision)

    def body(sweep, tau, nu, mean, var, alpha, b, rho, change, skipped, rejected, skipped_now, history):
        cav = cavity(mean, var, tau, nu, power, cavity_kind)
        prop = propose_fn(cav, tau, nu, None)
        ok = prop.valid
        new_alpha = tf.where(ok, prop.alpha, alpha)
        if criterion == "alpha":
            change = tf.norm(new_alpha - alpha)
        else:
            change = _site_change(tau, prop.precision, nu, prop.natural_mean, ok)
        tau_p = tf.where(ok, damp(tau, prop.precision, rho), tau)
        nu_p = tf.where(ok, damp(nu, prop.natural_mean, rho), nu)
        mean_p, var_p, accept = marginals_fn(tau_p, nu_p)
        skipped_now = tf.reduce_sum(tf.cast(~ok, tf.int32))
        new = (tau_p, nu_p, mean_p, var_p, new_alpha, tf.where(ok, prop.relaxation, b))
        old = (tau, nu, mean, var, alpha, b)
        tau, nu, mean, var, alpha, b = [tf.where(accept, a, c) for a, c in zip(new, old)]
        rho = tf.where(accept, rho, 0.5 * rho)
        rejected += tf.cast(~accept, tf.int32)
        change = tf.where(accept, change, tf.constant(float("inf"), dtype))
        recorded = tf.where(accept, change, tf.constant(-1.0, dtype))
        history = tf.tensor_scatter_nd_update(history, [[sweep]], [recorded])
        return (
            sweep + 1,
            tau,
            nu,
            mean,
            var,
            alpha,
            b,
            rho,
            change,
            skipped + skipped_now,
            rejected,
            skipped_now,
            history,
        )

    def cond(sweep, *state):
        change, skipped_now = state[-5], state[-2]
        return (sweep < max_sweeps) & ~_converged(change, tol, skipped_now, criterion, tf.shape(precision)[0])

    init = (
        tf.constant(0),
        tau,
        nu,
        mean,
        var,
        zeros,
        zeros,
        tf.constant(damping, dtype),
        tf.constant(float("inf"), dtype),
        tf.constant(0),
        tf.constant(0),
        tf.constant(0),
        tf.zeros([max_sweeps], dtype),
    )
    sweep, tau, nu, _, _, alpha, b, _, change, skipped, rejected, skipped_now, history = tf.while_loop(cond, body, init)
    converged = _converged(change, tol, skipped_now, criterion, tf.shape(precision)[0])
    return EPRun(tau, nu, converged, sweep, change, skipped, rejected, skipped_now, alpha, b, history)


def run_sequential_ep(
    joint_fn: Callable,
    propose_fn: Callable,
    precision,
    natural_mean,
    *,
    projection: Optional[tf.Tensor] = None,
    offset: Optional[tf.Tensor] = None,
    power: float = 1.0,
    cavity_kind: str = "fractional",
    damping: float = 1.0,
    max_sweeps: int = 100,
    tol: float = 1e-6,
    criterion: str = "sites",
) -> EPRun:
    """Sequential EP with rank-one updates of (Σ, μ); ``propose_fn`` gets [1, 1] site slices."""
    dtype = precision.dtype
    n = tf.shape(precision)[0]
    tau, nu, Sigma, mu = _warm_start(joint_fn, precision, natural_mean)
    zeros = tf.zeros_like(precision)

    def column(Sigma, i):
        if projection is None:
            return Sigma[:, i]
        return tf.linalg.matvec(Sigma, projection[i])

    def project(vec, i):
        if projection is None:
            return vec[i]
        return tf.reduce_sum(projection[i] * vec)

    def site_body(i, tau, nu, Sigma, mu, alpha, b, change, skipped_now):
        s = column(Sigma, i)
        var_i = tf.reshape(project(s, i), [1, 1])
        mean_i = tf.reshape(project(mu[:, 0], i), [1, 1])
        if offset is not None:
            mean_i = mean_i + offset[i : i + 1]
        tau_i, nu_i = tau[i : i + 1], nu[i : i + 1]
        cav = cavity(mean_i, var_i, tau_i, nu_i, power, cavity_kind)
        prop = propose_fn(cav, tau_i, nu_i, i)
        d_tau = damp(tau_i, prop.precision, damping) - tau_i
        d_nu = damp(nu_i, prop.natural_mean, damping) - nu_i
        den = 1.0 + d_tau * var_i
        ok = prop.valid & (den > 0.0)
        ok_s = tf.reshape(ok, [])
        safe_den = tf.where(ok, den, tf.ones_like(den))
        c = tf.reshape(tf.where(ok, d_tau / safe_den, tf.zeros_like(den)), [])
        shift = tf.reshape(tf.where(ok, (d_nu - d_tau * mean_i) / safe_den, tf.zeros_like(den)), [])
        Sigma = Sigma - c * s[:, None] * s[None, :]
        mu = mu + shift * s[:, None]
        idx = [[i]]
        tau = tf.tensor_scatter_nd_add(tau, idx, tf.where(ok, d_tau, tf.zeros_like(d_tau)))
        nu = tf.tensor_scatter_nd_add(nu, idx, tf.where(ok, d_nu, tf.zeros_like(d_nu)))
        alpha = tf.tensor_scatter_nd_update(alpha, idx, tf.where(ok, prop.alpha, alpha[i : i + 1]))
        b = tf.tensor_scatter_nd_update(b, idx, tf.where(ok, prop.relaxation, b[i : i + 1]))
        if criterion == "sites":
            site_change = _site_change(tau_i, prop.precision, nu_i, prop.natural_mean, ok)
            change = tf.where(ok_s, tf.maximum(change, site_change), change)
        return i + 1, tau, nu, Sigma, mu, alpha, b, change, skipped_now + tf.cast(~ok_s, tf.int32)

    def sweep_body(sweep, tau, nu, Sigma, mu, alpha, b, change, skipped, skipped_now, history):
        S, m, ok = joint_fn(tau, nu)  # refresh against round-off drift
        Sigma = tf.where(ok, S, Sigma)
        mu = tf.where(ok, m, mu)
        alpha_old = alpha
        _, tau, nu, Sigma, mu, alpha, b, change, skipped_now = tf.while_loop(
            lambda i, *_: i < n,
            site_body,
            (tf.constant(0), tau, nu, Sigma, mu, alpha, b, tf.zeros([], dtype), tf.constant(0)),
        )
        if criterion == "alpha":
            change = tf.norm(alpha - alpha_old)
        history = tf.tensor_scatter_nd_update(history, [[sweep]], [change])
        return sweep + 1, tau, nu, Sigma, mu, alpha, b, change, skipped + skipped_now, skipped_now, history

    def cond(sweep, *state):
        change, skipped_now = state[-4], state[-2]
        return (sweep < max_sweeps) & ~_converged(change, tol, skipped_now, criterion, tf.shape(precision)[0])

    init = (
        tf.constant(0),
        tau,
        nu,
        Sigma,
        mu,
        zeros,
        zeros,
        tf.constant(float("inf"), dtype),
        tf.constant(0),
        tf.constant(0),
        tf.zeros([max_sweeps], dtype),
    )
    sweep, tau, nu, _, _, alpha, b, change, skipped, skipped_now, history = tf.while_loop(cond, sweep_body, init)
    converged = _converged(change, tol, skipped_now, criterion, tf.shape(precision)[0])
    return EPRun(tau, nu, converged, sweep, change, skipped, tf.constant(0), skipped_now, alpha, b, history)
