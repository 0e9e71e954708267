r"""
SEPGPC: scalable sparse EP classification (Hernández-Lobato & Hernández-Lobato 2016, "Scalable
Gaussian process classification via expectation propagation", AISTATS), the name a classification
user looks for.

It is :class:`~gpflow_ep.models.SEPGP` (sparse EP with inducing points for any scalar likelihood)
with its signature: binary labels Y in {0, 1} [N, 1] and a binary likelihood such as
``gpflow_ep.likelihoods.Probit`` (the paper's). The paper's batch EP uses ``damping=0.5`` and its
minibatches ``minibatch_damping=0.99`` (the default).
"""

from .sepgp import SEPGP

__all__ = ["SEPGPC"]


class SEPGPC(SEPGP):
    """
    Sparse EP classification, a drop-in for ``gpflow.models.SVGP``: :class:`~gpflow_ep.models.SEPGP`
    (its parameters and methods), named for classification.
    """
