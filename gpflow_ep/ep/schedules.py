r"""
EP schedules: the loops that drive the site update of :mod:`gpflow_ep.ep.update`.

A schedule is a :class:`Schedule`: ``run(algebra, factor, precision, natural_mean, settings)``
takes a model's posterior algebra (:class:`~gpflow_ep.ep.SiteAlgebra`), the sites' factors
(:class:`~gpflow_ep.ep.SiteFactor`), warm-start sites and the :class:`~gpflow_ep.ep.EPSettings`,
and returns an :class:`EPRun`. Schedules are registered by name (:func:`register_schedule`) and
chosen with ``EPSettings(schedule=name)``, so a new one (e.g. a convergent double loop) is an
addition, not a copy. A schedule declares what it needs (:attr:`Schedule.needs_log_normaliser`,
:attr:`Schedule.one_site_at_a_time`) and refuses what it does not run (:meth:`Schedule.check_settings`),
so models ask their schedule instead of testing its name. Every schedule is TensorFlow ops only, so a
run compiles into one graph, and returns the same record, :class:`~gpflow_ep.ep.EPRun`
(:mod:`gpflow_ep.ep.run`), with its own part in ``EPRun.info``. The two sweeping loops here:

* **parallel**: every site is updated from the same q, the update is damped, then q is rebuilt
  from all sites (``algebra.marginals``). A sweep whose damped sites give an improper q
  (possible only with negative site precisions) is rejected and the damping halved.
* **sequential**: sites are visited in order; q is kept as (Σ, μ) (``algebra.joint``, refreshed
  at the start of every sweep against round-off drift) and updated by ``algebra.update_joint``
  after each site. An update that would make q improper (1 + Δτ σ_i² ≤ 0) is skipped.

Convergence (``settings.criterion``):

* "sites" (default): the largest change of a site natural parameter in a sweep (on the undamped
  proposal, so damping cannot fake convergence) is ≤ ``tol`` and no site was skipped in it;
* "alpha": the paper's R = ‖a_t - a_{t-1}‖₂ ≤ ``tol`` over the per-site statistics
  a_i = ∂log Z_i/∂(cavity mean) of the latest visits (``dual``; Qi & Guo 2012, Sec. 6.2),
  with at least one site accepted in the sweep;
* "moments": the largest change of a marginal mean or variance of the site variables under q over
  the sweep (after damping) is ≤ ``tol`` and no site was skipped (the rule of Hernández-Lobato &
  Hernández-Lobato 2011, whose R-EP runs until q's moments settle).

Improper cavities are skipped and counted, never turned into NaN. ``EPRun.history`` holds the
convergence statistic of every sweep (zeros after the last; -1 for a rejected parallel sweep);
``EPRun.info`` is a :class:`~gpflow_ep.ep.SweepInfo`. The double loop (schedules "double_loop" and
"convergent") is :mod:`gpflow_ep.ep.double_loop`, parallel EP with its fallback ("robust")
:mod:`gpflow_ep.ep.fallback`.
"""

import abc
from typing import Dict, NamedTuple

import tensorflow as tf
from check_shapes import check_shapes

from .algebra import JointPosterior, SiteAlgebra
from .factors import SiteFactor
from .run import EPRun, SweepInfo, measure_code
from .settings import EPSettings
from .sites import cavity_distribution
from .update import accept_proposal, propose_sites

__all__ = [
    "EPRun",
    "Schedule",
    "ParallelSchedule",
    "SequentialSchedule",
    "register_schedule",
    "get_schedule",
    "schedule_names",
    "run_ep",
]


class Schedule(abc.ABC):
    """
    An EP driver: runs site updates until convergence or ``settings.max_sweeps`` sweeps. The class
    attributes declare what it needs; models and optimisers read them rather than the schedule's name.
    """

    #: True: it needs :meth:`SiteAlgebra.log_normaliser` (the algebra's :attr:`SitePosterior.log_normaliser`)
    needs_log_normaliser: bool = False
    #: True: it visits one site at a time, through :meth:`SiteAlgebra.joint` and :meth:`SiteAlgebra.update_joint`
    one_site_at_a_time: bool = False

    def check_settings(self, settings: EPSettings) -> None:
        """A ``ValueError`` naming an option of ``settings`` this schedule does not run; none by default."""
        del settings

    @abc.abstractmethod
    def run(
        self,
        algebra: SiteAlgebra,
        factor: SiteFactor,
        precision: tf.Tensor,
        natural_mean: tf.Tensor,
        settings: EPSettings,
    ) -> EPRun:
        """EP from the warm-start sites (``precision``, ``natural_mean``, each [N, 1]); TensorFlow ops only."""


_SCHEDULES: Dict[str, Schedule] = {}


def register_schedule(name: str, schedule: Schedule) -> Schedule:
    """Make ``schedule`` available as ``EPSettings(schedule=name)``."""
    if not isinstance(schedule, Schedule):
        raise ValueError(f"schedule must be a gpflow_ep.ep.Schedule; got {schedule!r}")
    _SCHEDULES[name] = schedule
    return schedule


def get_schedule(name: str) -> Schedule:
    """The schedule registered as ``name``; a ``ValueError`` naming ``schedule`` when there is none."""
    if name not in _SCHEDULES:
        raise ValueError(f"schedule must be one of {schedule_names()}; got {name!r}")
    return _SCHEDULES[name]


def schedule_names():
    return tuple(_SCHEDULES)


@check_shapes(
    "precision: [N, 1]",
    "natural_mean: [N, 1]",
    "return.precision: [N, 1]",
    "return.natural_mean: [N, 1]",
    "return.dual: [N, 1]",
    "return.relaxation: [N, 1]",
    "return.converged: []",
    "return.sweeps: []",
    "return.max_change: []",
)
def run_ep(algebra: SiteAlgebra, factor: SiteFactor, precision, natural_mean, settings: EPSettings) -> EPRun:
    """Run the schedule named by ``settings.schedule`` (:func:`get_schedule`)."""
    return get_schedule(settings.schedule).run(algebra, factor, precision, natural_mean, settings)


# ------------------------------------------------------------------------------------------ helpers


def site_change(old_tau, new_tau, old_nu, new_nu, ok):
    """The largest change of a site natural parameter among the accepted (``ok``) sites."""
    diff = tf.maximum(tf.abs(new_tau - old_tau), tf.abs(new_nu - old_nu))
    return tf.reduce_max(tf.where(ok, diff, tf.zeros_like(diff)))


def converged(change, skipped_now, num_sites, settings: EPSettings):
    """ "sites": small change and nothing skipped; "alpha": small R and at least one accepted update
    (a sweep that skips every site leaves the statistics unchanged, R = 0, and proves nothing)."""
    done = change <= settings.tol
    return done & (skipped_now < num_sites) if settings.criterion == "alpha" else done & (skipped_now == 0)


def moment_change(mean, var, new_mean, new_var):
    """The largest change of a marginal mean or variance ("moments" criterion)."""
    return tf.maximum(tf.reduce_max(tf.abs(new_mean - mean)), tf.reduce_max(tf.abs(new_var - var)))


def warm_start(algebra: SiteAlgebra, precision, natural_mean):
    """
    (τ, ν, mean, var) to start a run from: the stored sites and q's marginals at them, or flat sites
    and the prior's marginals when the stored sites give an improper q, e.g. negative-precision sites
    kept from other hyper-parameters. A cold start (every site flat, the prior proper) reads the
    prior off :meth:`SiteAlgebra.prior_marginals` instead of factorising at the flat sites.
    """
    prior = algebra.prior_marginals(precision)

    def stored_start():
        q = algebra.marginals(precision, natural_mean)

        def pick(stored, flat):
            return tf.where(q.proper, stored, flat)

        zeros = tf.zeros_like(precision)
        return pick(precision, zeros), pick(natural_mean, zeros), pick(q.mean, prior.mean), pick(q.var, prior.var)

    def cold_start():
        return precision, natural_mean, prior.mean, prior.var

    flat = prior.proper & tf.reduce_all(tf.equal(precision, 0.0)) & tf.reduce_all(tf.equal(natural_mean, 0.0))
    return tf.cond(flat, cold_start, stored_start)


def record(history, sweep, value):
    return tf.tensor_scatter_nd_update(history, [[sweep]], [value])


def outcome(state, num_sites, settings: EPSettings, num_rejected) -> EPRun:
    """The :class:`EPRun` of a sweeping schedule's final loop state."""
    return EPRun(
        precision=state.precision,
        natural_mean=state.natural_mean,
        converged=converged(state.change, state.skipped_now, num_sites, settings),
        sweeps=state.sweep,
        measure=tf.constant(measure_code(settings.criterion)),
        max_change=state.change,
        history=state.history,
        num_skipped=state.skipped,
        num_rejected=num_rejected,
        dual=state.dual,
        relaxation=state.relaxation,
        info=SweepInfo(skipped_last_sweep=state.skipped_now),
    )


# ------------------------------------------------------------------------------------------ parallel


class _ParallelState(NamedTuple):
    sweep: tf.Tensor
    precision: tf.Tensor
    natural_mean: tf.Tensor
    mean: tf.Tensor
    var: tf.Tensor
    dual: tf.Tensor
    relaxation: tf.Tensor
    damping: tf.Tensor
    change: tf.Tensor
    skipped: tf.Tensor
    rejected: tf.Tensor
    skipped_now: tf.Tensor
    history: tf.Tensor


class ParallelSchedule(Schedule):
    """
    Damped parallel EP (module docstring). A run from flat sites factorises once per sweep
    (:func:`warm_start` reads the prior without factorising).
    """

    def run(self, algebra, factor, precision, natural_mean, settings) -> EPRun:
        dtype = precision.dtype
        num_sites = tf.shape(precision)[0]
        tau, nu, mean, var = warm_start(algebra, precision, natural_mean)
        zeros = tf.zeros_like(precision)
        inf = tf.constant(float("inf"), dtype)

        def body(s: _ParallelState) -> _ParallelState:
            cav = cavity_distribution(s.mean, s.var, s.precision, s.natural_mean, settings.removed_fraction)
            prop = propose_sites(cav, s.precision, s.natural_mean, factor, settings)
            ok = prop.valid
            dual = tf.where(ok, prop.dual, s.dual)
            tau_p, nu_p = accept_proposal(s.precision, s.natural_mean, prop, s.damping)
            q = algebra.marginals(tau_p, nu_p)
            accept = q.proper
            if settings.criterion == "alpha":
                change = tf.norm(dual - s.dual)
            elif settings.criterion == "moments":
                change = moment_change(s.mean, s.var, q.mean, q.var)
            else:
                change = site_change(s.precision, prop.precision, s.natural_mean, prop.natural_mean, ok)

            def pick(new, old):
                return tf.where(accept, new, old)

            skipped_now = tf.reduce_sum(tf.cast(~ok, tf.int32))
            return _ParallelState(
                sweep=s.sweep + 1,
                precision=pick(tau_p, s.precision),
                natural_mean=pick(nu_p, s.natural_mean),
                mean=pick(q.mean, s.mean),
                var=pick(q.var, s.var),
                dual=pick(dual, s.dual),
                relaxation=pick(tf.where(ok, prop.relaxation, s.relaxation), s.relaxation),
                damping=pick(s.damping, 0.5 * s.damping),
                change=pick(change, inf),
                skipped=s.skipped + skipped_now,
                rejected=s.rejected + tf.cast(~accept, tf.int32),
                skipped_now=skipped_now,
                history=record(s.history, s.sweep, pick(change, tf.constant(-1.0, dtype))),
            )

        def cond(s: _ParallelState):
            return (s.sweep < settings.max_sweeps) & ~converged(s.change, s.skipped_now, num_sites, settings)

        init = _ParallelState(
            sweep=tf.constant(0),
            precision=tau,
            natural_mean=nu,
            mean=mean,
            var=var,
            dual=zeros,
            relaxation=zeros,
            damping=tf.constant(settings.damping, dtype),
            change=inf,
            skipped=tf.constant(0),
            rejected=tf.constant(0),
            skipped_now=tf.constant(0),
            history=tf.zeros([settings.max_sweeps], dtype),
        )
        s = tf.while_loop(cond, lambda s: (body(s),), (init,))[0]
        return outcome(s, num_sites, settings, s.rejected)


# ------------------------------------------------------------------------------------------ sequential


class _SweepState(NamedTuple):
    sweep: tf.Tensor
    precision: tf.Tensor
    natural_mean: tf.Tensor
    joint_cov: tf.Tensor
    joint_mean: tf.Tensor
    dual: tf.Tensor
    relaxation: tf.Tensor
    change: tf.Tensor
    skipped: tf.Tensor
    skipped_now: tf.Tensor
    history: tf.Tensor


class SequentialSchedule(Schedule):
    """Sequential EP with rank-one updates of q (module docstring)."""

    one_site_at_a_time = True

    def run(self, algebra, factor, precision, natural_mean, settings) -> EPRun:
        dtype = precision.dtype
        n = tf.shape(precision)[0]
        prior = algebra.prior_joint(precision)
        zeros = tf.zeros_like(precision)
        damping = settings.damping

        def visit(i, s: _SweepState) -> _SweepState:
            current = JointPosterior(s.joint_cov, s.joint_mean, tf.constant(True))
            mean_i, var_i, column = algebra.site_marginal(current, i)
            tau_i, nu_i = s.precision[i : i + 1], s.natural_mean[i : i + 1]
            cav = cavity_distribution(mean_i, var_i, tau_i, nu_i, settings.removed_fraction)
            prop = propose_sites(cav, tau_i, nu_i, factor.site(i), settings)
            new_tau, new_nu = accept_proposal(tau_i, nu_i, prop, damping)
            d_tau, d_nu = new_tau - tau_i, new_nu - nu_i
            ok = prop.valid & (1.0 + d_tau * var_i > 0.0)
            d_tau, d_nu = tf.where(ok, d_tau, tf.zeros_like(d_tau)), tf.where(ok, d_nu, tf.zeros_like(d_nu))
            updated = algebra.update_joint(current, column, mean_i, var_i, d_tau, d_nu)
            idx = [[i]]
            ok_s = tf.reshape(ok, [])
            change = s.change
            if settings.criterion == "sites":
                change = tf.where(
                    ok_s,
                    tf.maximum(change, site_change(tau_i, prop.precision, nu_i, prop.natural_mean, ok)),
                    change,
                )
            return s._replace(
                precision=tf.tensor_scatter_nd_add(s.precision, idx, d_tau),
                natural_mean=tf.tensor_scatter_nd_add(s.natural_mean, idx, d_nu),
                joint_cov=updated.cov,
                joint_mean=updated.mean,
                dual=tf.tensor_scatter_nd_update(s.dual, idx, tf.where(ok, prop.dual, s.dual[i : i + 1])),
                relaxation=tf.tensor_scatter_nd_update(
                    s.relaxation, idx, tf.where(ok, prop.relaxation, s.relaxation[i : i + 1])
                ),
                change=change,
                skipped_now=s.skipped_now + tf.cast(~ok_s, tf.int32),
            )

        def sweep(s: _SweepState) -> _SweepState:
            # q from the sites, against round-off drift; before the first sweep this is the warm
            # start: stored sites that give an improper q are replaced by flat ones (q = prior)
            fresh = algebra.joint(s.precision, s.natural_mean)
            cold = ~fresh.proper & tf.equal(s.sweep, 0)
            start = s._replace(
                precision=tf.where(cold, zeros, s.precision),
                natural_mean=tf.where(cold, zeros, s.natural_mean),
                joint_cov=tf.where(fresh.proper, fresh.cov, tf.where(cold, prior.cov, s.joint_cov)),
                joint_mean=tf.where(fresh.proper, fresh.mean, tf.where(cold, prior.mean, s.joint_mean)),
                change=tf.zeros([], dtype),
                skipped_now=tf.constant(0),
            )
            _, end = tf.while_loop(lambda i, _: i < n, lambda i, st: (i + 1, visit(i, st)), (tf.constant(0), start))
            if settings.criterion == "alpha":
                change = tf.norm(end.dual - s.dual)
            elif settings.criterion == "moments":
                before = algebra.site_moments(JointPosterior(start.joint_cov, start.joint_mean, tf.constant(True)))
                after = algebra.site_moments(JointPosterior(end.joint_cov, end.joint_mean, tf.constant(True)))
                change = moment_change(*before, *after)
            else:
                change = end.change
            return end._replace(
                sweep=s.sweep + 1,
                change=change,
                skipped=s.skipped + end.skipped_now,
                history=record(s.history, s.sweep, change),
            )

        def cond(s: _SweepState):
            return (s.sweep < settings.max_sweeps) & ~converged(s.change, s.skipped_now, n, settings)

        init = _SweepState(
            sweep=tf.constant(0),
            precision=precision,
            natural_mean=natural_mean,
            joint_cov=prior.cov,
            joint_mean=prior.mean,
            dual=zeros,
            relaxation=zeros,
            change=tf.constant(float("inf"), dtype),
            skipped=tf.constant(0),
            skipped_now=tf.constant(0),
            history=tf.zeros([settings.max_sweeps], dtype),
        )
        s = tf.while_loop(cond, lambda s: (sweep(s),), (init,))[0]
        return outcome(s, n, settings, tf.constant(0))


register_schedule("parallel", ParallelSchedule())
register_schedule("sequential", SequentialSchedule())
