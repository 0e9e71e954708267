"""
The EP engine, written once and shared by every EP model in the package.

A model supplies its posterior algebra (:class:`SiteAlgebra`) and the factors its sites
approximate (:class:`SiteFactor`, e.g. :class:`LikelihoodFactor`); the engine does the rest:

* :mod:`~gpflow_ep.ep.settings` — :class:`EPSettings`, the one carrier of EP options;
* :mod:`~gpflow_ep.ep.tilted` — tilted moments of any GPflow likelihood (closed forms registered
  next to the likelihoods, adaptive Gauss–Hermite otherwise);
* :mod:`~gpflow_ep.ep.predictive` — the predictive mean and variance of an observation under a
  Gaussian predictive (``predict_y``), closed form or by the same quadrature;
* :mod:`~gpflow_ep.ep.factors` — the site-factor interface;
* :mod:`~gpflow_ep.ep.sites` — site state, cavity (with power α), site update, clipping, damping;
* :mod:`~gpflow_ep.ep.relaxation` — relaxed EP's relaxation factor, objective and line search;
* :mod:`~gpflow_ep.ep.update` — one site proposal (cavity → relaxation → tilted → site) and its
  damped acceptance;
* :mod:`~gpflow_ep.ep.schedules` — the schedule interface, parallel and sequential schedules;
* :mod:`~gpflow_ep.ep.run` — :class:`EPRun`, the record of a run, the same for every schedule;
* :mod:`~gpflow_ep.ep.double_loop` — the convergent double loop for any power, compiled, PC-EP's box
  constraints an option of it (schedules "double_loop" and "convergent"), and
  :mod:`~gpflow_ep.ep.fallback` — parallel EP falling back to it (schedule "robust", the default of
  :func:`robust_settings`);
* :mod:`~gpflow_ep.ep.convergence` — :class:`EPConvergenceWarning` for a run that did not converge;
* :mod:`~gpflow_ep.ep.energy` — the (power-)EP log marginal likelihood of any algebra and factor;
* :mod:`~gpflow_ep.ep.algebra` — the posterior-algebra interface; implemented by
  :mod:`~gpflow_ep.ep.gp_factorisation` (full GP), :mod:`~gpflow_ep.ep.whitened`
  (inducing points) and :mod:`~gpflow_ep.ep.linear_gaussian` (linear model, sites on the weights).
"""

from .algebra import (
    JointPosterior,
    SiteAlgebra,
    SiteMarginals,
    SitePosterior,
    centred_natural_mean,
    eye_like,
    is_positive_definite,
    project_sites,
    safe_cholesky,
)
from .convergence import EPConvergenceWarning, non_convergence_message, warn_if_not_converged
from .double_loop import DoubleLoopSchedule, run_double_loop
from .energy import EPEnergy, ep_log_marginal_likelihood, site_energy_terms
from .factors import LikelihoodFactor, SiteFactor
from .fallback import FallbackSchedule, used_fallback
from .gp_factorisation import GPAlgebra, GPSiteFactorisation
from .linear_gaussian import LinearGaussianAlgebra
from .predictive import expectation_of_positive, predictive_moments, variance_of_positive
from .presets import robust_settings
from .quadrature import TiltedIntegral, adaptive_tilted_integral, gauss_hermite_tilted_integral
from .relaxation import MESSAGE_UPDATES, OBJECTIVES, Relaxation, penalised_line_search, relaxation_objective
from .run import MEASURES, DoubleLoopInfo, EPRun, FallbackInfo, SweepInfo
from .schedules import (
    ParallelSchedule,
    Schedule,
    SequentialSchedule,
    get_schedule,
    register_schedule,
    run_ep,
    schedule_names,
)
from .settings import CAVITY_CHOICES, CRITERIA, DEFAULT_DAMPING, EP_MODES, EPSettings
from .sites import Cavity, SiteParameters, cavity_distribution, clip_site, damp, site_update
from .tilted import (
    TiltedMoments,
    gauss_hermite_tilted_moments,
    has_tilted_moments,
    quadrature_tilted_moments,
    tilted_expected_log_likelihood,
    tilted_kinks,
    tilted_moments,
)
from .update import SiteProposal, accept_proposal, propose_sites, site_means
from .whitened import Projections, SitePairs, WhitenedAlgebra, WhitenedGaussian, blocked, flat

__all__ = [
    "robust_settings",
    "FallbackSchedule",
    "used_fallback",
    "EPConvergenceWarning",
    "non_convergence_message",
    "warn_if_not_converged",
    "DoubleLoopSchedule",
    "run_double_loop",
    "LinearGaussianAlgebra",
    "EPSettings",
    "DEFAULT_DAMPING",
    "CAVITY_CHOICES",
    "CRITERIA",
    "EP_MODES",
    "SiteAlgebra",
    "SiteMarginals",
    "SitePosterior",
    "JointPosterior",
    "centred_natural_mean",
    "safe_cholesky",
    "is_positive_definite",
    "project_sites",
    "eye_like",
    "GPAlgebra",
    "GPSiteFactorisation",
    "WhitenedAlgebra",
    "WhitenedGaussian",
    "Projections",
    "SitePairs",
    "blocked",
    "flat",
    "SiteFactor",
    "LikelihoodFactor",
    "TiltedMoments",
    "tilted_moments",
    "has_tilted_moments",
    "tilted_expected_log_likelihood",
    "tilted_kinks",
    "TiltedIntegral",
    "predictive_moments",
    "expectation_of_positive",
    "variance_of_positive",
    "adaptive_tilted_integral",
    "gauss_hermite_tilted_integral",
    "gauss_hermite_tilted_moments",
    "quadrature_tilted_moments",
    "SiteParameters",
    "Cavity",
    "cavity_distribution",
    "site_update",
    "clip_site",
    "damp",
    "SiteProposal",
    "propose_sites",
    "accept_proposal",
    "site_means",
    "Relaxation",
    "relaxation_objective",
    "penalised_line_search",
    "MESSAGE_UPDATES",
    "OBJECTIVES",
    "EPRun",
    "SweepInfo",
    "DoubleLoopInfo",
    "FallbackInfo",
    "MEASURES",
    "Schedule",
    "ParallelSchedule",
    "SequentialSchedule",
    "register_schedule",
    "get_schedule",
    "schedule_names",
    "run_ep",
    "EPEnergy",
    "ep_log_marginal_likelihood",
    "site_energy_terms",
]
