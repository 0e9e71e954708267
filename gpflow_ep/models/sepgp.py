r"""
SEPGP: sparse EP with inducing points for any scalar likelihood (regression, robust regression,
counts, ordinal data, classification).

The model is that of :class:`~gpflow_ep.models.SEPGPC` (Hernández-Lobato & Hernández-Lobato 2016):
inducing values u = f(Z) with FITC conditionals p(f_i | u) = N(υ_iᵀu, s_i), one scalar Gaussian site
per point in h_i = υ_iᵀu, the FITC variance s_i added to the cavity of the likelihood's tilted
moments, evidence log Z_q (their eq. 4) in full batch, or minibatch site refreshes with the unbiased
surrogate gradient. Y is checked against the likelihood's support
(:func:`~gpflow_ep.likelihoods.check_targets`) wherever data enter eagerly, and the model predicts as
GPflow's ``SVGP`` does (``predict_y``, ``predict_log_density`` through the likelihood). SEPGP is the
name a regression user looks for; it holds no logic of its own.
"""

from .sepgpc import SEPGPC

__all__ = ["SEPGP"]


class SEPGP(SEPGPC):
    """
    Sparse EP for any scalar likelihood, a drop-in for ``gpflow.models.SVGP``: the model and
    arguments of :class:`~gpflow_ep.models.SEPGPC` (``kernel``, ``likelihood`` — ``Gaussian``,
    ``StudentT``, ``gpflow_ep.likelihoods.Laplace``, ``Poisson``, ``Ordinal``, ``Bernoulli``, ... —
    ``inducing_variable``, ``num_data``, ``mean_function``, ``jitter``, EP options).
    """
