r"""
A compiled moment-matching double loop for power EP (any α ∈ (0, 1]), registered as the schedule
``"double_loop"``: the convergent fallback of robust EP (Jylänki, Vanhatalo & Vehtari 2011, Sec. 5),
written as one ``tf.while_loop`` so that it runs inside a compiled training loss.

**The energy.** Power EP with sites θ_i = (τ_i, ν_i) and power α is EP on the factors t_i^α, each
counted 1/α times, with the tied sites t̃_i^α (Minka 2004, Sec. 3). The double-loop energy of
Hernández-Lobato & Hernández-Lobato (2011, eq. 9; Opper & Winther's expectation-consistent free energy)
with these counting numbers is, with marginal natural parameters v_i = (v₁ᵢ, v₂ᵢ) of the site variables
h_i and cavities ĉ_i = v_i - αθ_i,

    E(v, θ) = -log Z(θ) - (1/α) Σ_i log Ẑ_i(v_i - αθ_i) + (1/α) Σ_i log Z̃(v_i),

log Z(θ) the algebra's normaliser of q ∝ p₀ Π exp(ν_i h_i - ½τ_i h_i²) (:meth:`SiteAlgebra.log_normaliser`),
log Ẑ_i(ĉ) = log ∫ exp(ĉ₁h - ½ĉ₂h²) t_i(h)^α dh and log Z̃(v) = log ∫ exp(v₁h - ½v₂h²) dh. At a point
where q's marginal, the tilted distribution p̂_i ∝ exp(ĉ₁h - ½ĉ₂h²) t_i^α and N(v_i) share their mean
and variance, ĉ_i is the power-EP cavity q/t̃_i^α, the sites are a power-EP fixed point and -E is the
power-EP log evidence of :func:`~gpflow_ep.ep.ep_log_marginal_likelihood` (Minka 2004).

* **inner loop** (fixed v): minimise the convex F(θ) = log Z(θ) + (1/α) Σ_i log Ẑ_i(v_i - αθ_i) over
  the θ for which q and every cavity are proper (negative site precisions allowed, as in Jylänki et
  al.'s robust EP). ∂F/∂ν_i = E_q[h_i] - E_p̂ᵢ[h_i] and ∂F/∂τ_i = ½(E_p̂ᵢ[h_i²] - E_q[h_i²]): the
  stationary points are where q's marginals match the tilted moments. The step is the parallel
  moment-matching update with the cavities held at v - αθ,

      Δθ_i = (η(p̂_i) - η(q_i)) / α,  η(N(m, s)) = (1/s, m/s) in (τ, ν),

  a descent direction (⟨Δθ, ∇F⟩ = -(1/α) Σ_i ⟨η(p̂_i) - η(q_i), μ(p̂_i) - μ(q_i)⟩ ≤ 0, the Gaussian's
  mean map μ(η) being the gradient of a convex function), taken with an **adaptive step size** s:
  θ + sΔθ is accepted when q and the cavities are proper and F decreases (Armijo, 10⁻⁴, or a slope
  ⟨∇F(θ + sΔθ), Δθ⟩ ≤ 0, which by convexity along the line means F did not increase and is immune to
  the round-off of comparing two values of F). The next s is the secant estimate of the line's
  minimiser from the slopes at 0 and s, within [s/2, min(2s, 1)] after an accepted step and
  [s/10, s/2] after a rejected one. The inner loop ends when q's marginals match the tilted
  moments to max(``settings.tol``, a tenth of the outer gap) (the measure below), after
  :data:`MAX_INNER` steps, or when s < 10⁻⁴.
* **outer step** (concave-convex procedure; Hernández-Lobato & Hernández-Lobato 2011, eqs. 20–28):
  the term -(1/α) Σ log Ẑ_i(v_i - αθ_i) is concave in v, linearised at v it gives the convex upper
  bound of E whose minimiser is v_i = η(p̂_i), the tilted moments; E never increases. The bound is
  separable over sites, so a site whose cavity would become improper moves part of the way (half
  way to the cavity's boundary), which still decreases the bound; an outer step whose point is not
  valid (e.g. non-finite tilted moments) is halved, and the run stops when it falls below 10⁻⁴.
* **stop** when q's marginals, the tilted distributions and N(v_i) agree to ``settings.tol``:
  max_i max(|m_a - m_b| / √s_b, |s_a / s_b - 1|) ≤ tol over the pairs (q, p̂) and (p̂, v), a
  power-EP fixed point; or after ``settings.max_sweeps`` outer steps (``EPRun.converged`` False).

With the inner loop solved exactly, E(v) = max_θ E(v, θ) never increases (the procedure's guarantee);
solved to a tenth of the outer gap, as here, the value recorded after each inner loop, E(v, θ), is a
lower bound of E(v) that is tight only as the gaps close, so the first recorded values can rise.
``EPRun.history`` holds E(v, θ) after every inner loop (zeros after the last outer step), ``max_change``
the last value of the measure, ``sweeps`` the outer steps, ``num_rejected`` the rejected inner steps
and ``num_skipped`` the site updates of the outer step that did not go all the way. Every accepted
state is finite and proper, so the run never returns NaN. Each inner step costs one factorisation of q
and one evaluation of the tilted moments.
"""

from typing import NamedTuple

import tensorflow as tf

from .algebra import SiteAlgebra
from .factors import SiteFactor, gaussian_log_normaliser
from .schedules import EPRun, Schedule, register_schedule, warm_start
from .settings import EPSettings

__all__ = ["PowerDoubleLoopSchedule", "run_power_double_loop", "moment_mismatch", "MAX_INNER"]

#: the cap on inner steps per outer step
MAX_INNER = 100
#: the Armijo constant of the inner line search
ARMIJO = 1e-4
#: the inner loop stops when q and the tilted moments are this fraction of the outer gap apart (or tol)
INEXACT = 0.1
#: the smallest inner step size before the inner loop gives up
MIN_STEP = 1e-4


def moment_mismatch(mean_a, var_a, mean_b, var_b):
    """max_i max(|m_a - m_b| / √s_b, |s_a / s_b - 1|): a scale-free distance between 1-D Gaussians."""
    return tf.reduce_max(tf.maximum(tf.abs(mean_a - mean_b) / tf.sqrt(var_b), tf.abs(var_a / var_b - 1.0)))


class _Point(NamedTuple):
    """Everything the loop needs at (θ, v): q's marginals, the tilted moments, F and whether it is valid."""

    q_mean: tf.Tensor
    q_var: tf.Tensor
    t_mean: tf.Tensor
    t_var: tf.Tensor
    objective: tf.Tensor  # F(θ; v)
    valid: tf.Tensor  # [] q and every cavity proper, everything finite


def _evaluate(algebra: SiteAlgebra, factor: SiteFactor, tau, nu, v1, v2, power: float) -> _Point:
    q = algebra.posterior(tau, nu)
    o = q.offset
    log_z_q = q.log_normaliser + tf.reduce_sum(nu * o - 0.5 * tau * tf.square(o))
    q_mean, q_var = q.marginals.mean, q.marginals.var
    c1, c2 = v1 - power * nu, v2 - power * tau
    cavity_ok = c2 > 0.0
    safe_c2 = tf.where(cavity_ok, c2, tf.ones_like(c2))
    c_var = 1.0 / safe_c2
    c_mean = c1 * c_var
    tilted = factor.tilted(c_mean, c_var, power)
    t_mean, t_var = tilted.mean_and_var(c_mean, c_var)
    log_z_hat = tilted.log_z + gaussian_log_normaliser(c1, safe_c2)
    objective = log_z_q + tf.reduce_sum(log_z_hat) / power
    finite = [objective, q_mean, q_var, t_mean, t_var]
    valid = (
        q.proper
        & tf.reduce_all(cavity_ok)
        & tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in finite])
        & tf.reduce_all(q_var > 0.0)
        & tf.reduce_all(t_var > 0.0)
    )
    return _Point(q_mean, q_var, t_mean, t_var, objective, valid)


class _State(NamedTuple):
    outer: tf.Tensor
    inner: tf.Tensor  # inner steps since the last outer step
    steps: tf.Tensor  # inner steps in all
    precision: tf.Tensor
    natural_mean: tf.Tensor
    v1: tf.Tensor
    v2: tf.Tensor
    point: _Point
    step: tf.Tensor
    change: tf.Tensor
    rejected: tf.Tensor
    partial: tf.Tensor
    outer_step: tf.Tensor  # the fraction of the outer step, halved when a step gives an invalid point
    failed: tf.Tensor  # the outer step fraction fell below MIN_STEP: stop there
    history: tf.Tensor


def _start(algebra, factor, precision, natural_mean, power):
    """
    The warm start: the given sites and v = η(q_i), raised where the cavity q_i/t̃_i^α would be improper
    to v₂ᵢ = ατ_i + 1/s_i (a valid cavity of precision 1/s_i); flat sites (q = prior) when q is improper.
    """
    tau, nu, mean, var = warm_start(algebra, precision, natural_mean)
    zeros = tf.zeros_like(precision)
    v2 = 1.0 / var
    v2 = tf.where(v2 - power * tau > 0.0, v2, power * tau + 1.0 / var)
    v1 = mean / var + tf.where(1.0 / var - power * tau > 0.0, zeros, power * nu)
    return tau, nu, v1, v2


def run_power_double_loop(
    algebra: SiteAlgebra, factor: SiteFactor, precision, natural_mean, settings: EPSettings
) -> EPRun:
    """The double loop (module docstring) from the warm-start sites; traceable (TensorFlow ops only)."""
    if settings.relaxation is not None:
        raise ValueError("relaxation: the double loop does not relax sites; leave relaxation=None")
    if settings.cavity != "fractional":
        raise ValueError("cavity: the double loop's energy is that of the fractional cavity q / t̃^α")
    power = settings.power
    dtype = precision.dtype
    max_outer = settings.max_sweeps
    tau0, nu0, v10, v20 = _start(algebra, factor, precision, natural_mean, power)

    def evaluate(tau, nu, v1, v2):
        return _evaluate(algebra, factor, tau, nu, v1, v2, power)

    def energy(s: _State):
        return -s.point.objective + tf.reduce_sum(gaussian_log_normaliser(s.v1, s.v2)) / power

    def body(s: _State) -> _State:
        p = s.point
        inner_gap = moment_mismatch(p.q_mean, p.q_var, p.t_mean, p.t_var)
        outer_gap = moment_mismatch(s.v1 / s.v2, 1.0 / s.v2, p.t_mean, p.t_var)
        change = tf.maximum(inner_gap, outer_gap)
        # the inner loop is solved to a tenth of the outer gap (at least to tol): exact inner solutions
        # early on would be wasted, as the outer step moves the cavities anyway
        inner_target = tf.maximum(tf.constant(settings.tol, dtype), INEXACT * outer_gap)
        do_outer = (inner_gap <= inner_target) | (s.inner >= MAX_INNER) | (s.step < MIN_STEP)

        # outer step: v_i = η(p̂_i), part of the way where the cavity would become improper
        target2, target1 = 1.0 / p.t_var, p.t_mean / p.t_var
        c2 = s.v2 - power * s.precision
        full = target2 - power * s.precision > 0.0
        fraction = tf.where(full, tf.ones_like(c2), 0.5 * c2 / tf.where(full, tf.ones_like(c2), s.v2 - target2))
        fraction = fraction * s.outer_step
        new_v2 = s.v2 + fraction * (target2 - s.v2)
        new_v1 = s.v1 + fraction * (target1 - s.v1)

        # inner step: the moment-matching direction with the adaptive step size
        d_tau = (1.0 / p.t_var - 1.0 / p.q_var) / power
        d_nu = (p.t_mean / p.t_var - p.q_mean / p.q_var) / power
        slope = tf.reduce_sum(
            d_nu * (p.q_mean - p.t_mean) + d_tau * 0.5 * (p.t_var + tf.square(p.t_mean) - p.q_var - tf.square(p.q_mean))
        )
        tau = tf.where(do_outer, s.precision, s.precision + s.step * d_tau)
        nu = tf.where(do_outer, s.natural_mean, s.natural_mean + s.step * d_nu)
        v1 = tf.where(do_outer, new_v1, s.v1)
        v2 = tf.where(do_outer, new_v2, s.v2)
        new = evaluate(tau, nu, v1, v2)
        # F is convex along the line: a slope ≤ 0 at the new point means F did not increase (and the test
        # does not suffer the round-off of comparing two values of F near its minimum)
        new_slope = tf.reduce_sum(
            d_nu * (new.q_mean - new.t_mean)
            + d_tau * 0.5 * (new.t_var + tf.square(new.t_mean) - new.q_var - tf.square(new.q_mean))
        )
        decrease = (new.objective <= p.objective + ARMIJO * s.step * slope) | (new_slope <= 0.0)
        stop = change <= settings.tol  # a fixed point: keep it (the loop ends on this iteration)
        accept = new.valid & (do_outer | decrease) & ~stop
        do_outer = do_outer & ~stop
        # the next step size: where the slope along Δθ, interpolated linearly between 0 and s, vanishes
        rising = new.valid & (new_slope > slope)
        secant = tf.where(
            rising, s.step * slope / tf.where(rising, slope - new_slope, -tf.ones_like(slope)), 2.0 * s.step
        )

        def pick(a, b):
            return tf.where(accept, a, b)

        recorded = tf.tensor_scatter_nd_update(s.history, [[tf.minimum(s.outer, max_outer - 1)]], [energy(s)])
        return _State(
            outer=s.outer + tf.cast(do_outer & accept, tf.int32),
            inner=tf.where(do_outer & accept, tf.zeros_like(s.inner), s.inner + tf.cast(~do_outer, tf.int32)),
            steps=s.steps + tf.cast(~do_outer & ~stop, tf.int32),
            precision=pick(tau, s.precision),
            natural_mean=pick(nu, s.natural_mean),
            v1=pick(v1, s.v1),
            v2=pick(v2, s.v2),
            point=_Point(*(pick(a, b) for a, b in zip(new, p))),
            step=tf.where(
                do_outer,
                tf.where(accept, tf.maximum(s.step, 2.0 * MIN_STEP), s.step),
                tf.where(
                    accept,
                    tf.clip_by_value(secant, 0.5 * s.step, tf.minimum(2.0 * s.step, 1.0)),
                    tf.clip_by_value(secant, 0.1 * s.step, 0.5 * s.step),
                ),
            ),
            change=change,
            rejected=s.rejected + tf.cast(~accept & ~do_outer & ~stop, tf.int32),
            partial=s.partial + tf.cast(do_outer & accept, tf.int32) * tf.reduce_sum(tf.cast(~full, tf.int32)),
            outer_step=tf.where(do_outer, tf.where(accept, tf.ones_like(s.step), 0.5 * s.outer_step), s.outer_step),
            failed=do_outer & ~accept & (s.outer_step < MIN_STEP),
            history=tf.where((do_outer & accept) | stop, recorded, s.history),
        )

    def done(s: _State):
        return s.change <= settings.tol

    def cond(s: _State):
        return (s.outer < max_outer) & ~done(s) & ~s.failed & start.valid

    start = evaluate(tau0, nu0, v10, v20)
    init = _State(
        outer=tf.constant(0),
        inner=tf.constant(0),
        steps=tf.constant(0),
        precision=tau0,
        natural_mean=nu0,
        v1=v10,
        v2=v20,
        point=start,
        step=tf.ones([], dtype),
        change=tf.constant(float("inf"), dtype),
        rejected=tf.constant(0),
        partial=tf.constant(0),
        outer_step=tf.ones([], dtype),
        failed=tf.constant(False),
        history=tf.zeros([max_outer], dtype),
    )
    s = tf.while_loop(cond, lambda s: (body(s),), (init,))[0]
    p = s.point
    change = tf.maximum(
        moment_mismatch(p.q_mean, p.q_var, p.t_mean, p.t_var),
        moment_mismatch(s.v1 / s.v2, 1.0 / s.v2, p.t_mean, p.t_var),
    )
    converged = (change <= settings.tol) & start.valid
    c_var = 1.0 / (s.v2 - power * s.precision)
    zeros = tf.zeros_like(precision)
    return EPRun(
        precision=s.precision,
        natural_mean=s.natural_mean,
        converged=converged,
        sweeps=s.outer,
        max_change=change,
        num_skipped=s.partial,
        num_rejected=s.rejected,
        skipped_last_sweep=tf.constant(0),
        dual=(p.t_mean - (s.v1 - power * s.natural_mean) * c_var) / c_var,
        relaxation=zeros,
        history=s.history,
    )


class PowerDoubleLoopSchedule(Schedule):
    """
    The ``"double_loop"`` schedule: :func:`run_power_double_loop`, compiled (TensorFlow ops only), for
    any power α; it needs the algebra's log normaliser.
    """

    needs_log_normaliser = True

    def run(self, algebra, factor, precision, natural_mean, settings) -> EPRun:
        return run_power_double_loop(algebra, factor, precision, natural_mean, settings)

    def non_convergence_message(self, run, settings, where: str = "") -> str:
        where = f" ({where})" if where else ""
        return (
            f"The moment-matching double loop{where} stopped after {int(run.sweeps.numpy())} outer steps "
            f"(max_sweeps={settings.max_sweeps}) with q's marginals, the tilted distributions and the outer "
            f"Gaussians {float(run.max_change.numpy()):.3g} apart (scale-free), above tol={settings.tol:g}; "
            f"{int(run.num_rejected.numpy())} inner steps were rejected. Raise max_sweeps or tol."
        )


register_schedule("double_loop", PowerDoubleLoopSchedule())
