"""Likelihoods for EP classification; all are full GPflow likelihoods usable in VGP/SVGP too."""

from .labels import binary_labels_to_sign, check_binary_labels
from .noisy_step import NoisyStep
from .probit import Probit

__all__ = ["Probit", "NoisyStep", "check_binary_labels", "binary_labels_to_sign"]
