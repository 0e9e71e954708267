"""gpflow_ep: expectation propagation for GPflow 2.

EP, power EP and relaxed EP for Gaussian-process classification, scalable sparse EP and the EP
engine they share, written in GPflow's own idiom (models, likelihoods, kernels, inducing variables,
optimisers and monitoring are GPflow's).

Benchmarks and paper reproductions are not part of the package: they live in the repository's
top-level ``benchmarks/`` folder.
"""

from . import datasets, dgp, ep, kernels, likelihoods, models, optimizers

__version__ = "0.1.0"

__all__ = ["datasets", "dgp", "ep", "kernels", "likelihoods", "models", "optimizers", "__version__"]
