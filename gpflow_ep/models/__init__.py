"""EP models: drop-in replacements for GPflow's VGP/SVGP."""

from ..ep import EPSettings
from .dgp_aep import DGPAEP
from .ep_base import CheckedExternalDataTrainingLossMixin, EPModel, SiteProblem
from .epgp import EPGP
from .epgpc import EPGPC
from .minibatch import AppliedRefresh, MinibatchEPModel, SiteRefresh
from .power_ep import PowerEP
from .relaxed_ep import RelaxedEP
from .sepgp import SEPGP
from .sepgpc import SEPGPC
from .sepmgpc import SEPMGPC
from .spike_slab import SpikeSlabRegression, exact_spike_slab_posterior
from .spike_slab_factor import SpikeSlabFactor

__all__ = [
    "EPGP",
    "SEPGP",
    "EPGPC",
    "PowerEP",
    "RelaxedEP",
    "SEPGPC",
    "SEPMGPC",
    "DGPAEP",
    "SpikeSlabRegression",
    "exact_spike_slab_posterior",
    "SpikeSlabFactor",
    "EPSettings",
    "EPModel",
    "SiteProblem",
    "CheckedExternalDataTrainingLossMixin",
    "MinibatchEPModel",
    "SiteRefresh",
    "AppliedRefresh",
]
