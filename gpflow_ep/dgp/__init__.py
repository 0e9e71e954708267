"""
Building blocks of deep GPs trained with approximate EP (:class:`gpflow_ep.models.DGPAEP`):
kernel expectations, the tied factor, the FITC layer and the reference initialisation.
"""

from .initialisation import initial_layers
from .layer import AEPLayer, LayerBlocks
from .psi import PsiStatistics, PsiTraces, psi_statistics, psi_traces
from .tied_factor import TiedFactor, WhitenedMoments, random_factor

__all__ = [
    "AEPLayer",
    "LayerBlocks",
    "TiedFactor",
    "WhitenedMoments",
    "random_factor",
    "PsiStatistics",
    "PsiTraces",
    "psi_statistics",
    "psi_traces",
    "initial_layers",
]
