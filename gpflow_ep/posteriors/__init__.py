"""
GPflow posteriors of the EP models (``gpflow.posteriors.AbstractPosterior`` subclasses, built from
tensors and variables — kernel, inputs or inducing variable, the sites or q(u), mean function — never
from a model), returned by ``model.posterior(precompute_cache)``, with GPflow's ``PrecomputeCacheType``
caches, ``update_cache()`` and ``fused_predict_f``.
"""

from .gp import EPGPPosterior
from .sparse import SparseEPPosterior

__all__ = ["EPGPPosterior", "SparseEPPosterior"]
