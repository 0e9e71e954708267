r"""
Provably convergent double-loop EP (PC-EP; :cite:t:`HernandezLobato2011`, Sec. 3: the
expectation-consistent energy of :cite:t:`OpperWinther2005` with positivity constraints),
written for any model of the engine: a :class:`~gpflow_ep.ep.SiteAlgebra` with a
``log_normaliser`` and any :class:`~gpflow_ep.ep.SiteFactor`. Registered as the schedule
``"convergent"``.

With site natural parameters ṽ = (ν, τ), marginal natural parameters v = (v₁, v₂) of the site
variables h_i and cavities v̂ = v - ṽ, the energy (their eq. 9) is

    E(v, v̂, ṽ) = -log Z(ṽ) - Σ_i log Ẑ_i(v̂_i) + Σ_i log Z̃_i(v_i),

log Z(ṽ) the algebra's normaliser of q, log Ẑ_i(v̂) = log ∫ exp(v̂₁h - ½v̂₂h²) t_i(h) dh the factor's
tilted normaliser of the unnormalised cavity, log Z̃_i(v) = ½ log 2π - ½ log v₂ + v₁²/(2v₂). At an
EP fixed point -E is the EP log evidence. With ε = ``settings.min_precision`` (1e-6 when unset):

* **inner loop** (their eq. 19; L-BFGS-B in rescaled variables is our choice): for fixed v,
  minimise the convex F_t(ṽ) = log Z(ṽ) + Σ log Ẑ_i(v - ṽ)
  over ν free and ε ≤ τ_i ≤ v₂ᵢ - ε, by L-BFGS-B (scipy) in the rescaled variables ν/√v₂, τ/v₂,
  warm-started; then E(v) = -min F_t + Σ log Z̃_i(v_i);
* **outer step** (their eqs. 20–28): per site, the mean and variance of the tilted distribution, or of
  q's marginal where the cavity bound τ_i = v₂ᵢ - ε is active; v₂ ← max(3ε, 1/variance) (≤ 10¹²),
  v₁ ← mean · v₂. E(v) never increases (up to the inner solver's accuracy), and is bounded below;
* **stop** when E fell by less than ``settings.tol`` · max(1, |E|) in 3 consecutive outer steps,
  or after ``settings.max_sweeps`` outer steps (``EPRun.converged`` False), or when an inner solve
  or outer step is not finite: then the last finite sites are kept and
  ``DoubleLoopResult.non_finite`` says so (``EPRun.converged`` False).

The limit is a KKT point of the *constrained* problem: where a site bound is active it need not be
an EP fixed point, which :class:`DoubleLoopResult` reports.

**How long it takes.** The paper proves that E never increases and is bounded below, so it
converges, but gives no rate and no stopping rule. The energy can approach its limit only as some
marginal precisions v₂ᵢ grow without bound (weights the data pin at zero, whose tilted variance
shrinks at every outer step), so the fall of E per outer step decays like a power of the step, not
geometrically, and a run can stop at ``max_sweeps`` with an :class:`~gpflow_ep.ep.EPConvergenceWarning`
although its q has long settled (a run log is in the documentation's benchmark pages, "Cost of the
engine's numerical rules"). It runs eagerly (scipy inside: each inner evaluation is a scipy →
TensorFlow round trip, each outer step eager tilted moments), so call it outside ``tf.function``;
only α = 1. Robust EP's fallback uses the compiled double loop of :mod:`gpflow_ep.ep.power_double_loop`
(any α, negative site precisions allowed, one factorisation and one tilted evaluation per inner
step) instead.

A run can be long (each outer step is a full L-BFGS-B solve): with ``progress=None`` (default) it
shows its outer iteration, energy and last energy decrease on stderr when stderr is a terminal
(redrawn in place), and is quiet otherwise (logs, CI); ``progress=True`` always shows it (a line every
30 s when stderr is not a terminal), ``False`` never.
"""

import time
from typing import List, NamedTuple, Optional, Tuple

import numpy as np
import scipy.optimize
import tensorflow as tf

from ..progress import StatusLine
from ..summaries import summary_repr
from .algebra import SiteAlgebra
from .factors import SiteFactor, gaussian_log_normaliser
from .schedules import EPRun, Schedule, register_schedule
from .settings import EPSettings

__all__ = [
    "DoubleLoopResult",
    "DoubleLoopSchedule",
    "run_double_loop",
    "outer_step",
    "site_log_normaliser",
    "DEFAULT_EPSILON",
]

DEFAULT_EPSILON = 1e-6
MAX_PRECISION = 1e12


#: log Z̃(v) = log ∫ exp(v₁h - ½v₂h²) dh = ½ log 2π - ½ log v₂ + v₁²/(2v₂), per site
site_log_normaliser = gaussian_log_normaliser


class DoubleLoopResult(NamedTuple):
    """The :class:`~gpflow_ep.ep.EPRun` of a double-loop run and what only the double loop has."""

    run: EPRun
    energies: np.ndarray  # E(v^(t)) after every inner solve
    marginal: tuple  # (v₁, v₂) at the end, [N, 1] each
    active_site_bounds: int  # sites with τ_i = ε
    active_cavity_bounds: int  # sites with τ_i = v₂ᵢ - ε
    kkt_residual: float  # max_i |E_q[h_i] - E_p̂[h_i]| at the last inner optimum (first moments match there)
    inner_iterations: int  # L-BFGS-B iterations, summed
    non_finite: bool  # stopped because a step was not finite; the last finite state was kept

    def __repr__(self) -> str:  # the run's summary, the counts and the arrays' shapes
        return summary_repr(self)


def _objective(algebra: SiteAlgebra, factor: SiteFactor):
    @tf.function(autograph=False)
    def f_and_grad(nu, tau, v1, v2):
        with tf.GradientTape() as tape:
            tape.watch([nu, tau])
            value = algebra.log_normaliser(tau, nu) + tf.reduce_sum(factor.cavity_log_normaliser(v1 - nu, v2 - tau))
        g_nu, g_tau = tape.gradient(value, [nu, tau])
        return value, g_nu, g_tau

    return f_and_grad


def outer_step(mean, var, eps: float):
    """
    The closed-form outer step (their eq. 28): argmin over v₂ ≥ 3ε, v₁ of λ₁v₁ + λ₂v₂ + log Z̃(v) with
    λ₁ = -mean, λ₂ = ½(var + mean²): v₂ = max(3ε, 1/var) (≤ 10¹²), v₁ = mean · v₂.
    """
    v2 = np.clip(1.0 / np.maximum(var, 1.0 / MAX_PRECISION), 3.0 * eps, MAX_PRECISION)
    return mean * v2, v2


def _inner_solve(f_and_grad, nu, tau, v1, v2, eps, dtype):
    """min F_t over ν and ε ≤ τ ≤ v₂ - ε by L-BFGS-B in the rescaled u = (ν/√v₂, τ/v₂), warm-started."""
    scale = np.concatenate([np.sqrt(v2[:, 0]), v2[:, 0]])
    d = len(v1)
    V1, V2 = tf.constant(v1, dtype), tf.constant(v2, dtype)

    def fun(u):
        x = u * scale
        value, g_nu, g_tau = f_and_grad(tf.constant(x[:d, None], dtype), tf.constant(x[d:, None], dtype), V1, V2)
        return float(value), np.concatenate([g_nu.numpy()[:, 0], g_tau.numpy()[:, 0]]) * scale

    lower, upper = eps / v2[:, 0], 1.0 - eps / v2[:, 0]
    u0 = np.concatenate([nu[:, 0], np.clip(tau[:, 0] / v2[:, 0], lower, upper) * v2[:, 0]]) / scale
    bounds = [(None, None)] * d + list(zip(lower, upper))
    sol = scipy.optimize.minimize(
        fun, u0, jac=True, method="L-BFGS-B", bounds=bounds, options=dict(maxiter=5000, ftol=0.0, gtol=1e-10)
    )
    x = sol.x * scale
    return x[:d, None], np.clip(x[d:], eps, v2[:, 0] - eps)[:, None], float(sol.fun), int(sol.nit)


class _Progress(StatusLine):
    """The outer loop's status on stderr (module docstring): in place on a terminal, else a line every 30 s."""

    def __init__(self, progress: Optional[bool], max_outer: int, tol: float, stream=None):
        super().__init__(stream)
        self.enabled = self.interactive if progress is None else bool(progress)
        self.max_outer, self.tol = max_outer, tol
        self.start = time.perf_counter()

    def _line(self, energies, inner_iterations: int) -> str:
        drop = f"{energies[-2] - energies[-1]:.3g}" if len(energies) > 1 else "-"
        target = self.tol * max(1.0, abs(energies[-1]))
        return (
            f"PC-EP outer {len(energies)}/{self.max_outer}  E {energies[-1]:.6g}  last fall {drop} "
            f"(stops below {target:.3g} three times)  inner L-BFGS-B steps {inner_iterations}  "
            f"{time.perf_counter() - self.start:.1f} s"
        )

    def update(self, energies, inner_iterations: int, final: bool = False) -> None:
        if not self.enabled or not energies:
            return
        if self.due(time.perf_counter() - self.start) or final:
            self.write(self._line(energies, inner_iterations), final)


def _selected_moments(algebra, factor, nu, tau, v1, v2, eps):
    """Mean and variance for the outer step (per the active multiplier of eq. 20), active bounds, KKT residual."""
    q = algebra.marginals(tau, nu)
    cav_v1, cav_v2 = v1 - nu, v2 - tau
    cav_var = 1.0 / cav_v2
    cav_mean = cav_v1 * cav_var
    tilted_mean, tilted_var = factor.tilted(cav_mean, cav_var, 1.0).mean_and_var(cav_mean, cav_var)
    cavity_bound = tau.numpy() >= (v2.numpy() - eps) * (1.0 - 1e-12)
    site_bound = tau.numpy() <= eps * (1.0 + 1e-12)
    mean = np.where(cavity_bound, q.mean.numpy(), tilted_mean.numpy())
    var = np.where(cavity_bound, q.var.numpy(), tilted_var.numpy())
    kkt = float(np.max(np.abs(q.mean.numpy() - tilted_mean.numpy())))
    dual = ((tilted_mean - cav_mean) / cav_var).numpy()
    return mean, var, int(site_bound.sum()), int(cavity_bound.sum()), kkt, dual


def run_double_loop(
    algebra: SiteAlgebra,
    factor: SiteFactor,
    precision,
    natural_mean,
    settings: EPSettings,
    progress: Optional[bool] = None,
) -> DoubleLoopResult:
    """
    PC-EP from the warm-start sites (module docstring).

    :param progress: show the outer loop's progress on stderr: ``None`` (default) when stderr is a
        terminal, ``True`` always, ``False`` never.
    """
    if settings.power != 1.0:
        raise ValueError("power: the convergent double loop is written for EP (power=1)")
    if settings.relaxation is not None:
        raise ValueError("relaxation: the convergent double loop does not relax sites")
    if not tf.executing_eagerly():
        raise ValueError(
            "schedule='convergent' runs eagerly (scipy L-BFGS-B): call run_ep outside tf.function; "
            "to learn hyper-parameters use ep_mode='alternated' and run EP between gradient steps"
        )
    eps = DEFAULT_EPSILON if settings.min_precision is None else settings.min_precision
    dtype = precision.dtype
    f_and_grad = _objective(algebra, factor)

    tau = np.maximum(np.asarray(precision, dtype=np.float64), eps)
    nu = np.asarray(natural_mean, dtype=np.float64)
    q = algebra.marginals(tf.constant(tau, dtype), tf.constant(nu, dtype))
    v2 = np.clip(1.0 / q.var.numpy(), 3.0 * eps, MAX_PRECISION)
    v1 = q.mean.numpy() * v2
    tau = np.minimum(tau, v2 - eps)
    energies: List[float] = []
    small_steps, inner_iterations, converged = 0, 0, False
    non_finite, n_site, n_cavity, kkt, dual = False, 0, 0, float("nan"), np.zeros_like(nu)
    bar = _Progress(progress, settings.max_sweeps, settings.tol)
    for outer in range(settings.max_sweeps):
        V1, V2 = tf.constant(v1, dtype), tf.constant(v2, dtype)
        new_nu, new_tau, value, nit = _inner_solve(f_and_grad, nu, tau, v1, v2, eps, dtype)
        inner_iterations += nit
        if not (np.isfinite(value) and np.all(np.isfinite(new_nu)) and np.all(np.isfinite(new_tau))):
            non_finite = True  # keep the last finite sites (and the v they were solved for)
            break
        nu, tau = new_nu, new_tau
        log_site = float(tf.reduce_sum(site_log_normaliser(V1, V2)))
        energies.append(-value + log_site)
        bar.update(energies, inner_iterations)
        if outer > 0 and energies[-2] - energies[-1] < settings.tol * max(1.0, abs(energies[-1])):
            small_steps += 1
        else:
            small_steps = 0
        mean, var, n_site, n_cavity, kkt, dual = _selected_moments(
            algebra, factor, tf.constant(nu, dtype), tf.constant(tau, dtype), V1, V2, eps
        )
        if small_steps >= 3:
            converged = True
            break
        new_v1, new_v2 = outer_step(mean, var, eps)
        if not (np.all(np.isfinite(new_v1)) and np.all(np.isfinite(new_v2))):
            non_finite = True
            break
        v1, v2 = new_v1, new_v2
        tau = np.minimum(tau, v2 - eps)  # warm start, projected into the new box
    bar.update(energies, inner_iterations, final=True)
    history = np.zeros(settings.max_sweeps)
    history[: len(energies)] = energies
    zeros = tf.zeros_like(precision)
    run = EPRun(
        precision=tf.constant(tau, dtype),
        natural_mean=tf.constant(nu, dtype),
        converged=tf.constant(converged),
        sweeps=tf.constant(len(energies)),
        max_change=tf.constant(energies[-2] - energies[-1] if len(energies) > 1 else np.inf, dtype),
        num_skipped=tf.constant(0),
        num_rejected=tf.constant(0),
        skipped_last_sweep=tf.constant(0),
        dual=tf.constant(dual, dtype),
        relaxation=zeros,
        history=tf.constant(history, dtype),
    )
    return DoubleLoopResult(run, np.asarray(energies), (v1, v2), n_site, n_cavity, kkt, inner_iterations, non_finite)


class DoubleLoopSchedule(Schedule):
    """
    The ``"convergent"`` schedule: :func:`run_double_loop`; ``EPRun.history`` holds the energies
    E(v^(t)), and :meth:`run_with_extras` returns the :class:`DoubleLoopResult` too. It runs eagerly
    (scipy's L-BFGS-B solves the inner problem) and needs the algebra's log normaliser.
    """

    compiled = False
    needs_log_normaliser = True

    def run(self, algebra, factor, precision, natural_mean, settings) -> EPRun:
        return run_double_loop(algebra, factor, precision, natural_mean, settings).run

    def run_with_extras(
        self, algebra, factor, precision, natural_mean, settings, *, progress: Optional[bool] = None
    ) -> Tuple[EPRun, DoubleLoopResult]:
        """(the run, its :class:`DoubleLoopResult`); ``progress`` as in :func:`run_double_loop`."""
        result = run_double_loop(algebra, factor, precision, natural_mean, settings, progress=progress)
        return result.run, result

    def non_convergence_message(self, run, settings, where: str = "") -> str:
        where = f" ({where})" if where else ""
        sweeps = int(run.sweeps.numpy())
        change = float(run.max_change.numpy())
        return (
            f"The convergent double loop{where} stopped after {sweeps} outer iterations (max_sweeps="
            f"{settings.max_sweeps}) without converging: the energy fell by {change:.3g} in the last one; "
            f"it stops when it falls by less than tol·max(1, |E|) (tol={settings.tol:g}) three times running. "
            "Its energy can keep falling slowly (sublinearly) long after q's moments have settled, while the "
            "marginal precisions of weights pinned at zero grow without bound: check whether q still moves, "
            "raise max_sweeps or tol, or use regular EP (a damped parallel or sequential schedule) where it converges."
        )


register_schedule("convergent", DoubleLoopSchedule())
