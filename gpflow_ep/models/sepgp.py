r"""
SEPGP: sparse EP with inducing points for any scalar likelihood (regression, robust regression,
counts, ordinal data, classification).

The model is that of :class:`~gpflow_ep.models.SEPGPC` (Hernández-Lobato & Hernández-Lobato 2016):
inducing values u = f(Z) with FITC conditionals p(f_i | u) = N(υ_iᵀu, s_i), one scalar Gaussian site
per point in h_i = υ_iᵀu, the FITC variance s_i added to the cavity of the likelihood's tilted
moments, evidence log Z_q (their eq. 4) in full batch, or minibatch site refreshes with the unbiased
surrogate gradient. SEPGP is the name a regression user looks for; it checks Y against the
likelihood's support (:func:`~gpflow_ep.likelihoods.check_targets`) wherever data enter eagerly
(``training_loss``, ``run_ep``, ``log_marginal_likelihood``, ``gpflow_ep.training.fit``'s batches),
and predicts as GPflow's ``SVGP`` does (``predict_y``, ``predict_log_density`` through the likelihood).
"""

from typing import Optional

import tensorflow as tf
from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction
from gpflow.models.util import InducingVariablesLike

from ..ep import EPRun
from ..likelihoods.targets import check_targets
from .epgp import check_scalar_likelihood
from .sepgpc import SEPGPC

__all__ = ["SEPGP"]


class SEPGP(SEPGPC):
    """
    Sparse EP for any scalar likelihood, a drop-in for ``gpflow.models.SVGP``.

    :param kernel: any GPflow kernel.
    :param likelihood: any scalar GPflow likelihood: ``Gaussian``, ``StudentT``,
        ``gpflow_ep.likelihoods.Laplace``, ``Poisson``, ``Ordinal``, ``Bernoulli``, ...
    :param inducing_variable: ``InducingPoints`` or an [M, D] array of inducing inputs Z.
    :param num_data: n, the number of training points (one site each).
    :param mean_function: GPflow mean function (default zero).
    :param jitter: added to K_uu (default ``gpflow.config.default_jitter()``).
    :param ep_options: the options of :class:`~gpflow_ep.ep.EPSettings`.
    """

    def __init__(
        self,
        kernel: Kernel,
        likelihood: Likelihood,
        inducing_variable: InducingVariablesLike,
        num_data: int,
        mean_function: Optional[MeanFunction] = None,
        *,
        jitter: Optional[float] = None,
        **ep_options,
    ):
        check_scalar_likelihood(likelihood)
        super().__init__(kernel, likelihood, inducing_variable, num_data, mean_function, jitter=jitter, **ep_options)

    def _check_targets(self, data, name: str) -> None:
        """Y of ``data`` (or a minibatch) in the likelihood's support; eager only (a graph holds no values)."""
        if tf.executing_eagerly() and isinstance(data, (tuple, list)) and len(data) in (2, 3):
            check_targets(self.likelihood, data[1], f"{name}[1] (Y)")

    def validate_training_data(self, data) -> None:
        super().validate_training_data(data)
        self._check_targets(data, "batch" if isinstance(data, (tuple, list)) and len(data) == 3 else "data")

    def run_ep(self, data, **overrides) -> EPRun:
        self._check_targets(data, "data")
        return super().run_ep(data, **overrides)

    run_ep.__doc__ = SEPGPC.run_ep.__doc__

    def log_marginal_likelihood(self, data) -> tf.Tensor:
        self._check_targets(data, "data")
        return super().log_marginal_likelihood(data)

    log_marginal_likelihood.__doc__ = SEPGPC.log_marginal_likelihood.__doc__
