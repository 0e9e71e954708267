r"""
The double loop: convergent EP for any power α ∈ (0, 1], written once, as one compiled
``tf.while_loop`` (it runs in ``run_ep()`` and inside a compiled training loss), with the box
constraints of PC-EP as an option. Registered as two schedules of the same loop:

* ``"double_loop"`` — the box only when ``settings.min_precision`` is set; robust EP's fallback
  (Jylänki, Vanhatalo & Vehtari 2011, Sec. 5; :mod:`gpflow_ep.ep.fallback`) and any model with a
  log normaliser;
* ``"convergent"`` — PC-EP (:cite:t:`HernandezLobato2011`, Sec. 3): the box always, with
  ε = ``settings.min_precision`` (10⁻⁶ when unset).

**The energy.** Power EP with sites θ_i = (τ_i, ν_i) and power α is EP on the factors t_i^α, each
counted 1/α times, with the tied sites t̃_i^α (Minka 2004, Sec. 3). The double-loop energy of
Hernández-Lobato & Hernández-Lobato (2011, eq. 9; Opper & Winther's expectation-consistent free energy)
with these counting numbers is, with marginal ("outer") natural parameters v_i = (v₁ᵢ, v₂ᵢ) of the site
variables h_i and cavities ĉ_i = v_i - αθ_i,

    E(v, θ) = -log Z(θ) - (1/α) Σ_i log Ẑ_i(v_i - αθ_i) + (1/α) Σ_i log Z̃(v_i),

log Z(θ) the algebra's normaliser of q ∝ p₀ Π exp(ν_i h_i - ½τ_i h_i²) (:meth:`SiteAlgebra.log_normaliser`),
log Ẑ_i(ĉ) = log ∫ exp(ĉ₁h - ½ĉ₂h²) t_i(h)^α dh and log Z̃(v) = ½ log 2π - ½ log v₂ + v₁²/(2v₂). Where
q's marginal, the tilted distribution p̂_i ∝ exp(ĉ₁h - ½ĉ₂h²) t_i^α and N(v_i) share their mean and
variance, ĉ_i is the power-EP cavity q/t̃_i^α, the sites are a power-EP fixed point and -E is the
power-EP log evidence of :func:`~gpflow_ep.ep.ep_log_marginal_likelihood` (Minka 2004).

* **inner loop** (fixed v; their eq. 19): minimise the convex F(θ) = log Z(θ) + (1/α) Σ log Ẑ_i(v_i - αθ_i)
  over the θ for which q and every cavity are proper (negative site precisions allowed, as in robust
  EP), or over the box ε ≤ τ_i ≤ (v₂ᵢ - ε)/α (their constraints (13), with α; ε raised to 10⁻⁸ v₂ᵢ in
  the cavity bound where that is larger, so that v₂ᵢ - ατ_i stays resolvable in float64 as v₂ᵢ grows).
  ∂F/∂ν_i = E_q[h_i] - E_p̂ᵢ[h_i] and ∂F/∂τ_i = ½(E_p̂ᵢ[h_i²] - E_q[h_i²]). The step is the parallel
  moment-matching update with the cavities held at v - αθ,

      Δθ_i = (η(p̂_i) - η(q_i)) / α,  η(N(m, s)) = (1/s, m/s) in (τ, ν),

  a descent direction site by site (⟨Δθ_i, ∇_i F⟩ = -(1/α)⟨η(p̂_i) - η(q_i), μ(p̂_i) - μ(q_i)⟩ ≤ 0, the
  mean map μ(η) being the gradient of a convex function). With the box, a site at a bound whose
  Δτ_i points out of it keeps τ_i and moves ν_i by (m_p̂ - m_q)/(s_q + α s_p̂) (the Newton step of
  its first moment), and steps are clipped into the box. A step Δ is accepted when q and the
  cavities are proper and F decreases along it (Armijo, 10⁻⁴, or a slope ⟨∇F(θ + Δ), Δ⟩ ≤ 0, which by
  convexity along the segment means F did not increase and is immune to the round-off of comparing
  two values of F); the next step size is the secant estimate of the line's minimiser, within
  [s/2, min(2s, 1)] after an accepted step and [s/10, s/2] after a rejected one. The inner loop ends
  when q matches the tilted moments (on the box: where no bound is active, and in the mean where one
  is, the KKT conditions) to ``tol`` — without the box to max(``tol``, a tenth of the outer progress),
  as exact inner solutions early on are wasted — after :data:`MAX_INNER` steps, or when s < 10⁻⁴.
* **outer step** (concave-convex procedure; their eqs. 20–28): -(1/α) Σ log Ẑ_i(v_i - αθ_i) is concave
  in v; linearised at v it gives a convex upper bound of E whose minimiser is v_i = η(p̂_i), the tilted
  moments, so E never increases. Without the box, a site whose cavity would become improper moves
  part of the way (half way to the cavity's boundary; counted in ``DoubleLoopInfo.partial_outer_steps``),
  which still lowers the bound. With the box (their eq. 28), the moments are q's where the cavity
  bound is active (their eq. 20's multiplier), v₂ᵢ ← min(max(3ε, 1/s), 10¹²), v₁ᵢ ← m·v₂ᵢ, and τ_i is
  projected into the new box. An outer step whose point is not valid (e.g. non-finite tilted
  moments) is halved; the run stops when it falls below 10⁻⁴ (``DoubleLoopInfo.stalled``).

**What ``tol`` means** (``EPRun.measure``):

* ``criterion="moments"`` — the largest change of a marginal mean or variance of q over the last outer
  step, with the inner problem solved to ``tol``: the run ends when q has stopped moving. This is the
  rule for PC-EP, whose energy can fall sublinearly long after q has settled (while the marginal
  precisions of weights pinned at zero grow without bound), so a rule on E's fall alone runs for
  thousands of outer steps (:cite:t:`HernandezLobato2011` give no stopping rule);
* otherwise (``"sites"``, the default) — the fixed-point mismatch: q's marginals, the tilted moments and
  N(v_i) agree to ``tol`` in max_i max(|m_a - m_b| / √s_b, |s_a / s_b - 1|) over the pairs (q, p̂) and
  (p̂, v) (on the box, the KKT conditions instead of (q, p̂)); "alpha" is refused.

Either way the run ends after ``settings.max_sweeps`` outer steps (``EPRun.converged`` False). With the
inner loop solved exactly, E(v) = max_θ E(v, θ) never increases; solved inexactly, the value recorded
after each inner loop (``DoubleLoopInfo.energies``) is a lower bound of E(v), tight as the gaps close.
Every accepted state is finite and proper, so the run never returns NaN. Each inner step costs one
factorisation of q and one evaluation of the tilted moments.
"""

from typing import NamedTuple, Optional

import tensorflow as tf

from .algebra import SiteAlgebra
from .factors import SiteFactor, gaussian_log_normaliser
from .run import DoubleLoopInfo, EPRun, measure_code
from .schedules import Schedule, moment_change, register_schedule, warm_start
from .settings import EPSettings

__all__ = [
    "DoubleLoopSchedule",
    "run_double_loop",
    "moment_mismatch",
    "box_outer_step",
    "site_log_normaliser",
    "MAX_INNER",
    "DEFAULT_EPSILON",
    "MAX_PRECISION",
]

#: the cap on inner steps per outer step
MAX_INNER = 1000
#: the Armijo constant of the inner line search
ARMIJO = 1e-4
#: without the box, the inner loop stops when q and the tilted moments are this fraction of the outer progress apart
INEXACT = 0.1
#: the smallest inner step size, and the smallest outer-step fraction, before the loop gives up
MIN_STEP = 1e-4
#: ε of the box when ``settings.min_precision`` is unset (schedule "convergent")
DEFAULT_EPSILON = 1e-6
#: the largest outer precision v₂ of the box's outer step (their eq. 28)
MAX_PRECISION = 1e12
#: the box's cavity bound keeps v₂ - ατ ≥ this fraction of v₂ (and ≥ ε), resolvable in float64
CAVITY_RESOLUTION = 1e-8

#: log Z̃(v) = log ∫ exp(v₁h - ½v₂h²) dh = ½ log 2π - ½ log v₂ + v₁²/(2v₂), per site
site_log_normaliser = gaussian_log_normaliser


def moment_mismatch(mean_a, var_a, mean_b, var_b):
    """max_i max(|m_a - m_b| / √s_b, |s_a / s_b - 1|): a scale-free distance between 1-D Gaussians."""
    return tf.reduce_max(_mismatch(mean_a, var_a, mean_b, var_b))


def _mismatch(mean_a, var_a, mean_b, var_b):
    return tf.maximum(tf.abs(mean_a - mean_b) / tf.sqrt(var_b), tf.abs(var_a / var_b - 1.0))


class _Point(NamedTuple):
    """Everything the loop needs at (θ, v): q's marginals, the tilted moments, F and whether it is valid."""

    q_mean: tf.Tensor
    q_var: tf.Tensor
    t_mean: tf.Tensor
    t_var: tf.Tensor
    objective: tf.Tensor  # F(θ; v)
    valid: tf.Tensor  # [] q and every cavity proper, everything finite


def _evaluate(
    algebra: SiteAlgebra, factor: SiteFactor, tau, nu, v1, v2, power: float, boxed: bool = False
) -> _Point:
    """
    The point (θ, v). With the box, a cavity can be as wide as 1/ε and a tilted variance as small as
    the data pin it: the variance v + v²∂²log Z then cancels to round-off, so it is floored at
    1/:data:`MAX_PRECISION` (the largest precision the box's outer step takes).
    """
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
    if boxed:
        t_var = tf.maximum(t_var, 1.0 / MAX_PRECISION)
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


def box_outer_step(mean, var, epsilon: float):
    """
    The outer step of the box (their eq. 28): the minimiser over v₂ ≥ 3ε, v₁ of λ₁v₁ + λ₂v₂ + log Z̃(v)
    with λ₁ = -mean, λ₂ = ½(var + mean²): (v₁, v₂) = (mean · v₂, min(max(3ε, 1/var), 10¹²)).
    """
    v2 = tf.clip_by_value(1.0 / var, 3.0 * epsilon, MAX_PRECISION)
    return mean * v2, v2


def _gradient_dot(p: _Point, d_tau, d_nu):
    """⟨∇F(θ), Δθ⟩ at the point ``p`` (∂F/∂ν = m_q - m_p̂, ∂F/∂τ = ½(E_p̂[h²] - E_q[h²]))."""
    second = p.t_var + tf.square(p.t_mean) - p.q_var - tf.square(p.q_mean)
    return tf.reduce_sum(d_nu * (p.q_mean - p.t_mean) + d_tau * 0.5 * second)


class _Box(NamedTuple):
    """The constraints ε ≤ τ ≤ (v₂ - ε)/α, or none (``epsilon`` None)."""

    epsilon: Optional[float]
    power: float

    def upper(self, v2):
        """(v₂ - ε')/α with ε' = max(ε, 10⁻⁸ v₂): the cavity precision v₂ - ατ must stay resolvable in
        float64 where v₂ grows to 10¹² (ε = 10⁻⁶ is below its round-off there)."""
        return (v2 - tf.maximum(tf.cast(self.epsilon, v2.dtype), CAVITY_RESOLUTION * v2)) / self.power

    def at_lower(self, tau):
        return tau <= self.epsilon * (1.0 + 1e-12)

    def at_upper(self, tau, v2):
        return tau >= self.upper(v2) * (1.0 - 1e-12)

    def held(self, tau, v2, d_tau):
        """Sites at a bound whose moment-matching step points out of the box (their τ is held)."""
        if self.epsilon is None:
            return tf.zeros_like(tau, dtype=tf.bool)
        return (self.at_lower(tau) & (d_tau < 0.0)) | (self.at_upper(tau, v2) & (d_tau > 0.0))

    def clip(self, tau, v2):
        if self.epsilon is None:
            return tau
        return tf.clip_by_value(tau, self.epsilon, self.upper(v2))

    def outer_target(self, p: _Point, tau, v2):
        """The moments of the outer step and of the outer gap: p̂'s, or q's where the cavity bound is active."""
        if self.epsilon is None:
            return p.t_mean, p.t_var
        active = self.at_upper(tau, v2)
        return tf.where(active, p.q_mean, p.t_mean), tf.where(active, p.q_var, p.t_var)


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
    change: tf.Tensor  # the measure at the last check
    progress: tf.Tensor  # what the inner loop is solved relative to: the outer gap, or q's last move
    last_mean: tf.Tensor  # q's marginals at the end of the last inner loop ("moments")
    last_var: tf.Tensor
    rejected: tf.Tensor
    partial: tf.Tensor
    outer_step: tf.Tensor  # the fraction of the outer step, halved when a step gives an invalid point
    stalled: tf.Tensor  # the outer step fraction fell below MIN_STEP: stop there
    done: tf.Tensor
    history: tf.Tensor
    energies: tf.Tensor


def _start(algebra, precision, natural_mean, box: _Box):
    """
    The warm start: the given sites and v = η(q_i). Without the box, v₂ᵢ is raised where the cavity
    q_i/t̃_i^α would be improper to ατ_i + 1/s_i (a valid cavity of precision 1/s_i), and flat sites
    (q = prior) replace sites that give an improper q. With the box, τ is first raised to ε, v₂ is
    clipped to [3ε, 10¹²] and τ projected into the box.
    """
    power = box.power
    if box.epsilon is not None:
        tau = tf.maximum(precision, box.epsilon)
        q = algebra.marginals(tau, natural_mean)
        v2 = tf.clip_by_value(1.0 / q.var, 3.0 * box.epsilon, MAX_PRECISION)
        return box.clip(tau, v2), natural_mean, q.mean * v2, v2
    tau, nu, mean, var = warm_start(algebra, precision, natural_mean)
    zeros = tf.zeros_like(precision)
    v2 = 1.0 / var
    v2 = tf.where(v2 - power * tau > 0.0, v2, power * tau + 1.0 / var)
    v1 = mean / var + tf.where(1.0 / var - power * tau > 0.0, zeros, power * nu)
    return tau, nu, v1, v2


def check_double_loop_settings(settings: EPSettings) -> None:
    """A ``ValueError`` naming the option the double loop does not run."""
    if settings.relaxation is not None:
        raise ValueError("relaxation: the double loop does not relax sites; leave relaxation=None")
    if settings.cavity != "fractional":
        raise ValueError("cavity: the double loop's energy is that of the fractional cavity q / t̃^α")
    if settings.criterion == "alpha":
        raise ValueError(
            "criterion: the double loop measures q's moments ('moments') or the fixed-point mismatch "
            "('sites', the default); 'alpha' is for the sweeping schedules"
        )


def run_double_loop(
    algebra: SiteAlgebra,
    factor: SiteFactor,
    precision,
    natural_mean,
    settings: EPSettings,
    epsilon: Optional[float] = None,
) -> EPRun:
    """
    The double loop (module docstring) from the warm-start sites; traceable (TensorFlow ops only).

    :param epsilon: ε of the box ε ≤ τ ≤ (v₂ - ε)/α; ``None`` (default): ``settings.min_precision``,
        and no box when that is unset.
    """
    check_double_loop_settings(settings)
    power = settings.power
    box = _Box(settings.min_precision if epsilon is None else epsilon, power)
    by_moments = settings.criterion == "moments"
    inexact = 0.0 if box.epsilon is not None else INEXACT
    dtype = precision.dtype
    max_outer = settings.max_sweeps
    tol = tf.constant(settings.tol, dtype)
    inf = tf.constant(float("inf"), dtype)
    tau0, nu0, v10, v20 = _start(algebra, precision, natural_mean, box)

    def evaluate(tau, nu, v1, v2):
        return _evaluate(algebra, factor, tau, nu, v1, v2, power, boxed=box.epsilon is not None)

    def energy(s: _State):
        return -s.point.objective + tf.reduce_sum(gaussian_log_normaliser(s.v1, s.v2)) / power

    def gaps(p: _Point, tau, nu, v1, v2):
        """(inner gap, outer gap, held sites, Δτ, Δν): the KKT residual of the inner problem, the
        distance of N(v) to its outer target, and the inner step's direction."""
        d_tau = (1.0 / p.t_var - 1.0 / p.q_var) / power
        d_nu = (p.t_mean / p.t_var - p.q_mean / p.q_var) / power
        held = box.held(tau, v2, d_tau)
        mean_gap = tf.abs(p.q_mean - p.t_mean)
        if by_moments:  # absolute, as the measure
            per_site = tf.where(held, mean_gap, tf.maximum(mean_gap, tf.abs(p.q_var - p.t_var)))
        else:
            per_site = tf.where(held, mean_gap / tf.sqrt(p.t_var), _mismatch(*p[:4]))
        target_mean, target_var = box.outer_target(p, tau, v2)
        outer_gap = moment_mismatch(v1 / v2, 1.0 / v2, target_mean, target_var)
        d_nu = tf.where(held, (p.t_mean - p.q_mean) / (p.q_var + power * p.t_var), d_nu)
        return tf.reduce_max(per_site), outer_gap, held, tf.where(held, tf.zeros_like(d_tau), d_tau), d_nu

    def body(s: _State) -> _State:
        p = s.point
        inner_gap, outer_gap, _, d_tau, d_nu = gaps(p, s.precision, s.natural_mean, s.v1, s.v2)
        progress = tf.minimum(s.progress, outer_gap) if by_moments else outer_gap
        inner_target = tf.maximum(tol, inexact * progress)
        do_outer = (inner_gap <= inner_target) | (s.inner >= MAX_INNER) | (s.step < MIN_STEP)
        if by_moments:
            moved = moment_change(s.last_mean, s.last_var, p.q_mean, p.q_var)
            change = tf.where(do_outer, tf.maximum(moved, inner_gap), s.change)
            stop = do_outer & (change <= tol)
        else:
            moved = outer_gap
            change = tf.maximum(inner_gap, outer_gap)
            stop = change <= tol  # a fixed point: keep it (the loop ends on this iteration)

        # outer step: v_i towards the target moments
        target_mean, target_var = box.outer_target(p, s.precision, s.v2)
        if box.epsilon is None:  # part of the way where the cavity would become improper
            target2 = 1.0 / target_var
            c2 = s.v2 - power * s.precision
            full = target2 - power * s.precision > 0.0
            fraction = tf.where(full, tf.ones_like(c2), 0.5 * c2 / tf.where(full, tf.ones_like(c2), s.v2 - target2))
            target1 = target_mean * target2
        else:
            target1, target2 = box_outer_step(target_mean, target_var, box.epsilon)
            full = tf.ones_like(s.precision, dtype=tf.bool)
            fraction = tf.ones_like(s.v2)
        fraction = fraction * s.outer_step
        new_v2 = s.v2 + fraction * (target2 - s.v2)
        new_v1 = s.v1 + fraction * (target1 - s.v1)

        # inner step: the moment-matching direction, clipped into the box, with the adaptive step size
        tau = tf.where(do_outer, box.clip(s.precision, new_v2), box.clip(s.precision + s.step * d_tau, s.v2))
        nu = tf.where(do_outer, s.natural_mean, s.natural_mean + s.step * d_nu)
        v1 = tf.where(do_outer, new_v1, s.v1)
        v2 = tf.where(do_outer, new_v2, s.v2)
        new = evaluate(tau, nu, v1, v2)
        delta_tau, delta_nu = tau - s.precision, nu - s.natural_mean
        slope, new_slope = _gradient_dot(p, delta_tau, delta_nu), _gradient_dot(new, delta_tau, delta_nu)
        decrease = (slope < 0.0) & ((new.objective <= p.objective + ARMIJO * slope) | (new_slope <= 0.0))
        accept = new.valid & (do_outer | decrease) & ~stop
        do_outer = do_outer & ~stop
        outer_done = do_outer & accept
        # the next step size: where the slope along Δ, interpolated linearly between 0 and s, vanishes
        rising = new.valid & (new_slope > slope)
        secant = tf.where(
            rising, s.step * slope / tf.where(rising, slope - new_slope, -tf.ones_like(slope)), 2.0 * s.step
        )

        def pick(a, b):
            return tf.where(accept, a, b)

        slot = [[tf.minimum(s.outer, max_outer - 1)]]
        record = outer_done | stop
        return _State(
            outer=s.outer + tf.cast(outer_done, tf.int32),
            inner=tf.where(outer_done, tf.zeros_like(s.inner), s.inner + tf.cast(~do_outer, tf.int32)),
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
            progress=tf.where(outer_done, moved, s.progress) if by_moments else progress,
            last_mean=tf.where(outer_done, p.q_mean, s.last_mean),
            last_var=tf.where(outer_done, p.q_var, s.last_var),
            rejected=s.rejected + tf.cast(~accept & ~do_outer & ~stop, tf.int32),
            partial=s.partial + tf.cast(outer_done, tf.int32) * tf.reduce_sum(tf.cast(~full, tf.int32)),
            outer_step=tf.where(do_outer, tf.where(accept, tf.ones_like(s.step), 0.5 * s.outer_step), s.outer_step),
            stalled=do_outer & ~accept & (s.outer_step < MIN_STEP),
            done=stop,
            history=tf.where(record, tf.tensor_scatter_nd_update(s.history, slot, [change]), s.history),
            energies=tf.where(record, tf.tensor_scatter_nd_update(s.energies, slot, [energy(s)]), s.energies),
        )

    def cond(s: _State):
        return (s.outer < max_outer) & ~s.done & ~s.stalled

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
        change=inf,
        progress=inf,
        last_mean=start.q_mean,
        last_var=start.q_var + inf,
        rejected=tf.constant(0),
        partial=tf.constant(0),
        outer_step=tf.ones([], dtype),
        stalled=~start.valid,
        done=tf.constant(False),
        history=tf.zeros([max_outer], dtype),
        energies=tf.zeros([max_outer], dtype),
    )
    s = tf.while_loop(cond, lambda s: (body(s),), (init,))[0]
    p = s.point
    inner_gap, outer_gap, _, _, _ = gaps(p, s.precision, s.natural_mean, s.v1, s.v2)
    change = s.change if by_moments else tf.maximum(inner_gap, outer_gap)
    converged = (change <= tol) & start.valid
    c_var = 1.0 / (s.v2 - power * s.precision)
    zeros = tf.zeros_like(precision)
    if box.epsilon is None:
        at_site_bound = at_cavity_bound = tf.constant(0)
    else:
        at_site_bound = tf.reduce_sum(tf.cast(box.at_lower(s.precision), tf.int32))
        at_cavity_bound = tf.reduce_sum(tf.cast(box.at_upper(s.precision, s.v2), tf.int32))
    info = DoubleLoopInfo(
        energies=s.energies,
        inner_steps=s.steps,
        partial_outer_steps=s.partial,
        active_site_bounds=at_site_bound,
        active_cavity_bounds=at_cavity_bound,
        outer_natural=s.v1,
        outer_precision=s.v2,
        kkt_residual=tf.reduce_max(tf.abs(p.q_mean - p.t_mean)),
        stalled=s.stalled,
    )
    return EPRun(
        precision=s.precision,
        natural_mean=s.natural_mean,
        converged=converged,
        sweeps=s.outer,
        measure=tf.constant(measure_code("moments" if by_moments else "mismatch")),
        max_change=change,
        history=s.history,
        num_skipped=tf.constant(0),
        num_rejected=s.rejected,
        dual=(p.t_mean - (s.v1 - power * s.natural_mean) * c_var) / c_var,
        relaxation=zeros,
        info=info,
    )


class DoubleLoopSchedule(Schedule):
    """
    The double loop (module docstring) as a schedule: ``"double_loop"`` (the box when
    ``settings.min_precision`` is set) or, with ``epsilon``, ``"convergent"`` (PC-EP: the box always,
    ε = ``settings.min_precision`` or ``epsilon``). It needs the algebra's log normaliser.
    """

    needs_log_normaliser = True

    def __init__(self, epsilon: Optional[float] = None):
        self.epsilon = epsilon

    def check_settings(self, settings: EPSettings) -> None:
        check_double_loop_settings(settings)

    def run(self, algebra, factor, precision, natural_mean, settings) -> EPRun:
        epsilon = settings.min_precision if settings.min_precision is not None else self.epsilon
        return run_double_loop(algebra, factor, precision, natural_mean, settings, epsilon=epsilon)


register_schedule("double_loop", DoubleLoopSchedule())
register_schedule("convergent", DoubleLoopSchedule(epsilon=DEFAULT_EPSILON))
