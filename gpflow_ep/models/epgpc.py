r"""
EPGPC: Gaussian-process classification with expectation propagation (Minka 2001; Rasmussen &
Williams 2006, Sec. 3.6; Qi & Guo 2012, Sec. 4), the name a classification user looks for.

It is :class:`~gpflow_ep.models.EPGP` (full-GP EP for any scalar likelihood) with its signature:
binary labels Y in {0, 1} [N, 1] and a binary likelihood such as ``gpflow_ep.likelihoods.Probit``
(exact probit, closed-form moments) or ``NoisyStep`` (label-flip noise). Power EP is ``power=α``,
the convergent double loop ``schedule="convergent"``.
"""

from .epgp import EPGP

__all__ = ["EPGPC"]


class EPGPC(EPGP):
    """
    Full-GP EP classification, a drop-in for ``gpflow.models.VGP``: :class:`~gpflow_ep.models.EPGP`
    (its parameters and methods), named for classification.
    """
