"""
EP posteriors as GPflow posteriors (``gpflow.posteriors.AbstractPosterior``): built from tensors —
kernel, inputs or inducing variable, the sites or q(u), mean function — with GPflow's
``PrecomputeCacheType`` caches, ``update_cache()`` and ``fused_predict_f``.
"""

from .gp import EPGPPosterior

__all__ = ["EPGPPosterior"]
