"""
The EP engine, written once and shared by every EP model in the package.

* :mod:`~gpflow_ep.ep.tilted` — tilted moments of any GPflow likelihood (closed form or adaptive
  Gauss–Hermite), the likelihood's only contribution;
* :mod:`~gpflow_ep.ep.sites` — site state, cavity (with power α), site update, damping;
* :mod:`~gpflow_ep.ep.relaxation` — relaxed EP's relaxation factor, objective and line search;
* :mod:`~gpflow_ep.ep.update` — one site update (cavity → relaxation → tilted → site);
* :mod:`~gpflow_ep.ep.schedules` — parallel and sequential ``tf.while_loop`` drivers;
* :mod:`~gpflow_ep.ep.energy` — the (power-)EP log marginal likelihood;
* :mod:`~gpflow_ep.ep.gp_factorisation` — the posterior algebra of a full GP with sites;
* :mod:`~gpflow_ep.ep.whitened` — the posterior algebra of inducing-point models (whitened).
"""

from .energy import ep_log_marginal_likelihood, site_energy_terms
from .gp_factorisation import GPSiteFactorisation
from .relaxation import MESSAGE_UPDATES, OBJECTIVES, Relaxation, penalised_line_search, relaxation_objective
from .schedules import CRITERIA, SCHEDULES, EPRun, run_parallel_ep, run_sequential_ep
from .sites import CAVITY_CHOICES, Cavity, SiteParameters, cavity, damp, site_update
from .tilted import TiltedMoments, gauss_hermite_tilted_moments, tilted_expected_log_likelihood, tilted_moments
from .update import SiteProposal, propose_sites, site_means
from .whitened import WhitenedGaussian

__all__ = [
    "TiltedMoments",
    "tilted_moments",
    "tilted_expected_log_likelihood",
    "Relaxation",
    "relaxation_objective",
    "penalised_line_search",
    "MESSAGE_UPDATES",
    "OBJECTIVES",
    "SiteProposal",
    "propose_sites",
    "site_means",
    "CRITERIA",
    "gauss_hermite_tilted_moments",
    "SiteParameters",
    "Cavity",
    "cavity",
    "site_update",
    "damp",
    "CAVITY_CHOICES",
    "EPRun",
    "run_parallel_ep",
    "run_sequential_ep",
    "SCHEDULES",
    "ep_log_marginal_likelihood",
    "site_energy_terms",
    "GPSiteFactorisation",
    "WhitenedGaussian",
]
