"""EP models: drop-in replacements for GPflow's VGP/SVGP."""

from .ep_settings import EPSettings
from .epgpc import EPGPC, EPPosterior
from .power_ep import PowerEP
from .relaxed_ep import RelaxedEP
from .sepgpc import SEPGPC

__all__ = ["EPGPC", "PowerEP", "RelaxedEP", "SEPGPC", "EPPosterior", "EPSettings"]
