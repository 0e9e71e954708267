"""
What every EP model shares: its sites, settings and diagnostics, and the wiring of the one EP
engine (site update closure, schedule dispatch, evidence). A model adds only its posterior algebra.
"""

from typing import Callable, Optional

import tensorflow as tf

from ..ep import (
    SiteParameters,
    ep_log_marginal_likelihood,
    propose_sites,
    run_parallel_ep,
    run_sequential_ep,
    tilted_expected_log_likelihood,
    tilted_moments,
)
from .diagnostics import EPDiagnostics
from .ep_settings import EPSettings


class EPEngineMixin:
    """
    Mixin for GPflow models whose likelihood terms are EP sites (``self.likelihood`` is a GPflow
    likelihood). Call :meth:`_init_ep` from ``__init__``.
    """

    #: relaxed-EP settings (:class:`~gpflow_ep.ep.Relaxation`); ``None``: (power) EP
    relaxation = None
    #: "sites": predict from q; "alpha": mean from the per-site α vector (see ``PowerEP``)
    predict_with = "sites"

    def _init_ep(self, num_sites: int, settings: EPSettings) -> None:
        self.ep_settings = settings
        self.sites = SiteParameters(num_sites)
        self.ep_diagnostics = EPDiagnostics()

    # ---------------------------------------------------------------- likelihood side

    def _tilted_fn(self, X, Y, extra_var=None) -> Callable:
        """(cavity mean, cavity var) → tilted moments; ``extra_var`` is added to the cavity (FITC)."""

        def tilted(mean, var):
            var = var if extra_var is None else var + extra_var
            return tilted_moments(self.likelihood, X, Y, mean, var, self.ep_settings.power)

        return tilted

    def _propose_fn(self, X, Y, extra_var=None) -> Callable:
        """The engine's site update for these sites, for all of them or one (``index``)."""

        def propose(cavity, precision, natural_mean, index=None):
            Xi, Yi, si = X, Y, extra_var
            if index is not None:
                Xi, Yi = X[index : index + 1], Y[index : index + 1]
                si = None if extra_var is None else extra_var[index : index + 1]

            def expected(mean, var):
                var = var if si is None else var + si
                return tilted_expected_log_likelihood(self.likelihood, Xi, Yi, mean, var)

            return propose_sites(
                cavity,
                precision,
                natural_mean,
                self._tilted_fn(Xi, Yi, si),
                power=self.ep_settings.power,
                relaxation=self.relaxation,
                expected_log_lik_fn=expected,
            )

        return propose

    # ---------------------------------------------------------------- running EP

    def _run_schedule(
        self,
        settings: EPSettings,
        propose: Callable,
        marginals_fn: Callable,
        joint_fn: Callable,
        projection: Optional[tf.Tensor] = None,
        offset: Optional[tf.Tensor] = None,
    ):
        """Run the chosen schedule from the stored sites and store the outcome on the model."""
        tau, nu = self.sites.read()
        common = dict(
            power=settings.power,
            cavity_kind=settings.cavity,
            damping=settings.resolved_damping,
            max_sweeps=settings.max_sweeps,
            tol=settings.tol,
            criterion=settings.criterion,
        )
        if settings.schedule == "parallel":
            run = run_parallel_ep(marginals_fn, propose, tau, nu, **common)
        else:
            run = run_sequential_ep(joint_fn, propose, tau, nu, projection=projection, offset=offset, **common)
        self.sites.assign(run.precision, run.natural_mean)
        self.sites.alpha.assign(run.alpha)
        self.sites.relaxation.assign(run.relaxation)
        self.ep_diagnostics.record(run)
        return run

    def _evidence(self, log_normaliser_ratio, mean, var, precision, centred_natural_mean, tilted_fn, offset):
        """The (power-)EP energy of :mod:`gpflow_ep.ep.energy` for this model's settings."""
        log_z, _ = ep_log_marginal_likelihood(
            log_normaliser_ratio,
            mean,
            var,
            precision,
            centred_natural_mean,
            tilted_fn,
            offset=offset,
            power=self.ep_settings.power,
            cavity_kind=self.ep_settings.cavity,
        )
        return log_z
