"""
The EP engine, written once and shared by every EP model in the package.

The package exports what a user or a new model needs (the options, factors and tilted moments,
posterior algebras, schedules, the run record and the evidence; the engine guide shows each in
use); the building blocks the engine is made of stay in their modules below. A model supplies its
posterior algebra (:class:`SiteAlgebra`) and the factors its sites approximate (:class:`SiteFactor`,
e.g. :class:`LikelihoodFactor`); the engine does the rest:

* :mod:`~gpflow_ep.ep.settings` — :class:`EPSettings`, the one carrier of EP options;
* :mod:`~gpflow_ep.ep.tilted` — tilted moments of any GPflow likelihood (closed forms registered
  next to the likelihoods, an adaptive quadrature otherwise);
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

from .algebra import JointPosterior, SiteAlgebra, SiteMarginals, SitePosterior
from .convergence import EPConvergenceWarning, non_convergence_message
from .energy import ep_log_marginal_likelihood
from .factors import LikelihoodFactor, SiteFactor
from .fallback import used_fallback
from .gp_factorisation import GPAlgebra
from .linear_gaussian import LinearGaussianAlgebra
from .predictive import predictive_moments
from .presets import robust_settings
from .relaxation import Relaxation
from .run import DoubleLoopInfo, EPRun, FallbackInfo, SweepInfo
from .schedules import Schedule, get_schedule, register_schedule, run_ep, schedule_names
from .settings import EPSettings
from .tilted import TiltedMoments, has_tilted_moments, quadrature_tilted_moments, tilted_kinks, tilted_moments
from .whitened import WhitenedAlgebra

__all__ = [
    # options
    "EPSettings",
    "Relaxation",
    "robust_settings",
    # the factors the sites approximate, and their tilted moments
    "SiteFactor",
    "LikelihoodFactor",
    "TiltedMoments",
    "tilted_moments",
    "tilted_kinks",
    "has_tilted_moments",
    "quadrature_tilted_moments",
    "predictive_moments",
    # posterior algebras
    "SiteAlgebra",
    "SitePosterior",
    "SiteMarginals",
    "JointPosterior",
    "GPAlgebra",
    "WhitenedAlgebra",
    "LinearGaussianAlgebra",
    # schedules, runs and their record
    "Schedule",
    "register_schedule",
    "get_schedule",
    "schedule_names",
    "run_ep",
    "EPRun",
    "SweepInfo",
    "DoubleLoopInfo",
    "FallbackInfo",
    "used_fallback",
    "EPConvergenceWarning",
    "non_convergence_message",
    # the evidence
    "ep_log_marginal_likelihood",
]
