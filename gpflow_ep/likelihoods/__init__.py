"""
Likelihoods for EP; all are full GPflow likelihoods usable in VGP/SVGP too. Each module registers
its EP closed forms (:func:`gpflow_ep.ep.tilted_moments`) next to the likelihood; ``gaussian``
registers those of GPflow's own ``Gaussian``.
"""

from . import gaussian  # noqa: F401  (registers GPflow's Gaussian with the EP engine)
from .hinge import BinaryHinge
from .labels import binary_labels_to_sign, check_binary_labels, class_labels_to_index
from .multiclass_hinge import MultiClassHinge
from .multiclass_step import DifferenceFactor, MultiClassStep
from .noisy_step import NoisyStep
from .probit import Probit

__all__ = [
    "Probit",
    "NoisyStep",
    "BinaryHinge",
    "MultiClassHinge",
    "MultiClassStep",
    "DifferenceFactor",
    "check_binary_labels",
    "binary_labels_to_sign",
    "class_labels_to_index",
]
