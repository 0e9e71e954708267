"""gpflow_ep: expectation propagation for GPflow 2.

EP, power EP and relaxed EP for Gaussian-process classification, scalable sparse EP and the EP
engine they share, written in GPflow's own idiom (models, likelihoods, kernels, inducing variables,
optimisers and monitoring are GPflow's).

As in GPflow, the top level holds the package's modules and its version, nothing else:
``gpflow_ep.models.EPGPC``, ``gpflow_ep.likelihoods.Probit``, ``gpflow_ep.training.fit``. Each
module is imported on first use (``gpflow_ep.models``, ``from gpflow_ep import models``,
``from gpflow_ep.models import EPGPC`` all work), so that ``import gpflow_ep`` and the command
line's ``--help`` do not load TensorFlow.

Benchmarks and paper reproductions are not part of the package: they live in the repository's
top-level ``benchmarks/`` folder.
"""

import importlib

__version__ = "0.1.0"

#: the package's public modules (the API reference has a page for each), imported on first use
_MODULES = (
    "compare",
    "datasets",
    "dgp",
    "ep",
    "evaluation",
    "kernels",
    "likelihoods",
    "models",
    "monitor",
    "optimizers",
    "posteriors",
    "training",
)


def __getattr__(name: str):
    if name in _MODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_MODULES))


__all__ = ["__version__", *_MODULES]
