"""
Likelihoods for EP; all are full GPflow likelihoods usable in VGP/SVGP too. Each module registers
its EP closed forms (:func:`gpflow_ep.ep.tilted_moments`) next to the likelihood; ``gaussian``
registers those of GPflow's own ``Gaussian``, ``gpflow_tilted`` those of GPflow's ``Bernoulli``
(probit closed form, logistic quadrature) and ``StudentT``; ``gpflow_predictive`` registers accurate
predictive moments (:func:`gpflow_ep.ep.predictive_moments`, what EP models' ``predict_y`` returns) of
GPflow's ``Bernoulli``, ``Poisson``, ``Exponential``, ``Gamma``, ``StudentT`` and ``Ordinal``.
"""

from . import (
    gaussian,  # noqa: F401  (registers GPflow's Gaussian with the EP engine)
    gpflow_predictive,  # noqa: F401  (registers predictive moments of GPflow's likelihoods)
    gpflow_tilted,  # noqa: F401  (registers GPflow's Bernoulli and StudentT)
)
from .hinge import BinaryHinge
from .labels import binary_labels_to_sign, check_binary_labels, class_labels_to_index
from .laplace import Laplace
from .log_concavity import is_log_concave
from .multiclass_hinge import MultiClassHinge
from .multiclass_step import DifferenceFactor, MultiClassStep
from .noisy_step import NoisyStep
from .probit import Probit
from .targets import check_targets

__all__ = [
    "Probit",
    "Laplace",
    "NoisyStep",
    "BinaryHinge",
    "MultiClassHinge",
    "MultiClassStep",
    "DifferenceFactor",
    "check_binary_labels",
    "binary_labels_to_sign",
    "class_labels_to_index",
    "check_targets",
    "is_log_concave",
]
