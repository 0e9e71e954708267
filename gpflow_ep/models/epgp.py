r"""
EPGP: full-GP expectation propagation for any scalar likelihood — regression, robust regression,
counts, ordinal data, classification.

The model is that of :class:`~gpflow_ep.models.EPGPC` (Rasmussen & Williams 2006, §3.6; Minka 2001):
f ~ GP(m(·), k(·, ·)), y_i | f ~ p(y_i | f(x_i)), every likelihood term replaced by a Gaussian site,

    q(f) ∝ N(f; m_X, K) Π_i exp(-½ τ_i f_i² + ν_i f_i),

the sites fitted by EP and the hyper-parameters learned by the gradient of the EP evidence log Z_EP
(R&W eq. 3.65). EPGP is the name a regression user looks for; EPGPC stays for classification, and the
two share one implementation. EPGP checks Y against the likelihood's support
(:func:`~gpflow_ep.likelihoods.check_targets`: finite for ``Gaussian``/``StudentT``/``Laplace``,
non-negative integers for ``Poisson``, classes 0…K for ``Ordinal``, {0, 1} for ``Bernoulli``) and
predicts as GPflow's models do (``predict_y``, ``predict_log_density`` through the likelihood).

The tilted moments are the likelihood's closed form where one is registered
(:func:`~gpflow_ep.ep.tilted_moments`: ``Gaussian``, ``Laplace``, the probit) and the adaptive
quadrature of its log density otherwise. For robust regression with a Student-t likelihood use
:func:`~gpflow_ep.ep.robust_settings` (Jylänki, Vanhatalo & Vehtari 2011).
"""

from typing import Optional

from gpflow.base import RegressionData
from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction

from ..likelihoods.targets import check_targets
from ..validation import check_data
from .epgpc import EPGPC

__all__ = ["EPGP", "check_scalar_likelihood"]


def check_scalar_likelihood(likelihood: Likelihood, name: str = "likelihood") -> None:
    """EP sites are scalar: the likelihood must act on one latent function per point."""
    if not isinstance(likelihood, Likelihood):
        raise ValueError(f"{name} must be a gpflow.likelihoods.Likelihood; got {type(likelihood).__name__}")
    latent_dim = getattr(likelihood, "latent_dim", 1)
    if latent_dim not in (None, 1):
        raise ValueError(
            f"{name}: {type(likelihood).__name__} has {latent_dim} latent functions per point; EPGP needs a "
            "scalar likelihood (one latent function). For multi-class data use gpflow_ep.models.SEPMGPC."
        )


class EPGP(EPGPC):
    """
    Full-GP EP for any scalar likelihood, a drop-in for ``gpflow.models.VGP``.

    :param data: (X [N, D], Y [N, 1]); Y in the likelihood's support (checked, ``ValueError`` naming
        ``data[1] (Y)`` otherwise).
    :param kernel: any GPflow kernel.
    :param likelihood: any scalar GPflow likelihood: ``Gaussian``, ``StudentT``,
        ``gpflow_ep.likelihoods.Laplace``, ``Poisson``, ``Ordinal``, ``Bernoulli``, ...
    :param mean_function: GPflow mean function (default zero).
    :param ep_options: the EP options of :class:`~gpflow_ep.ep.EPSettings` as keyword arguments
        (e.g. ``**gpflow_ep.ep.robust_settings()`` for a Student-t likelihood).
    """

    def __init__(
        self,
        data: RegressionData,
        kernel: Kernel,
        likelihood: Likelihood,
        mean_function: Optional[MeanFunction] = None,
        **ep_options,
    ):
        check_scalar_likelihood(likelihood)
        _, Y = check_data(data, likelihood)
        check_targets(likelihood, Y, "data[1] (Y)")
        super().__init__(data, kernel, likelihood, mean_function, **ep_options)
