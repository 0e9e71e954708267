"""EP models: drop-in replacements for GPflow's VGP/SVGP."""

from .ep_settings import EPSettings
from .epgpc import EPGPC, EPPosterior

__all__ = ["EPGPC", "EPPosterior", "EPSettings"]
