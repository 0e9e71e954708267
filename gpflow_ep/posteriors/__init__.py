"""
GPflow posteriors of the EP models (``gpflow.posteriors.AbstractPosterior``, built from tensors and
variables — kernel, inputs or inducing variable, the sites or q(u), mean function — never from a
model), returned by ``model.posterior(precompute_cache)``, with GPflow's ``PrecomputeCacheType``
caches, ``update_cache()`` and ``fused_predict_f``: the full-GP EP posterior (:class:`EPGPPosterior`),
the sparse models' q(u) in GPflow's own SVGP posterior (:func:`sparse_ep_posterior`), and the
linear model's q(w) (:class:`LinearModelPosterior`).
"""

from .gp import EPGPPosterior
from .linear import LinearModelPosterior
from .sparse import q_from_natural_parameters, sparse_ep_posterior

__all__ = ["EPGPPosterior", "LinearModelPosterior", "sparse_ep_posterior", "q_from_natural_parameters"]
