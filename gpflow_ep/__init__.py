"""gpflow_ep: expectation propagation for GPflow 2.

EP, power EP and relaxed EP for Gaussian-process classification, scalable sparse EP and the EP
engine they share, written in GPflow's own idiom (models, likelihoods, kernels, inducing variables,
optimisers and monitoring are GPflow's).

Subpackages are imported on first use, so that the command line starts without TensorFlow.
"""

import importlib

__version__ = "0.1.0"

_SUBPACKAGES = ("datasets", "ep", "likelihoods", "models", "optimizers")

__all__ = [*_SUBPACKAGES, "__version__"]


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
