"""gpflow_ep: expectation propagation for GPflow 2.

EP, power EP and relaxed EP for Gaussian-process classification, scalable sparse EP and the EP
engine they share, written in GPflow's own idiom (models, likelihoods, kernels, inducing variables,
optimisers and monitoring are GPflow's).

Benchmarks and paper reproductions are not part of the package: they live in the repository's
top-level ``benchmarks/`` folder.

The subpackages are imported on first use (``gpflow_ep.models``, ``from gpflow_ep import models``,
``from gpflow_ep.models import EPGPC`` all work), so that ``import gpflow_ep`` and the command
line's ``--help`` do not load TensorFlow.
"""

import importlib

__version__ = "0.1.0"

_SUBPACKAGES = ("datasets", "dgp", "ep", "kernels", "likelihoods", "models", "optimizers", "posteriors")
#: models also exported at the top level (``gpflow_ep.EPGP``), imported on first use
_MODELS = ("EPGP", "SEPGP")


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    if name in _MODELS:
        return getattr(importlib.import_module(".models", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES) | set(_MODELS))


__all__ = ["EPGP", "SEPGP", "datasets", "dgp", "ep", "kernels", "likelihoods", "models", "optimizers", "__version__"]
