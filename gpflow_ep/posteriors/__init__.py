"""
GPflow posteriors of the EP models (``gpflow.posteriors.AbstractPosterior`` subclasses, built from
tensors and variables, never from a model), returned by ``model.posterior(precompute_cache)``.
"""

from .sparse import SparseEPPosterior

__all__ = ["SparseEPPosterior"]
