r"""
PowerEP: EP with a fractional power α (Minka 2004; Qi & Guo 2012, App. C).

The cavity removes the fraction α of a site, the tilted distribution uses p(y|f)^α, and the new
site is (proj[p̂] / q^{\i})^{1/α}. The evidence is the power-EP energy
(:mod:`gpflow_ep.ep.energy`). ``power=1`` is :class:`~gpflow_ep.models.EPGPC` exactly: this class
only sets options of the one EP engine.
"""

from typing import Optional

from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction

from ..validation import check_choice
from .epgpc import EPGPC

PREDICT_WITH = ("sites", "dual")


class PowerEP(EPGPC):
    """
    :param power: α ∈ (0, 1] (the paper's u; 0.8 in its experiments).
    :param cavity: "fractional" (default, standard power EP: q / t̃^α) or "full" (q / t̃, the literal
        reading of Qi & Guo's "only two modifications" to Minka's kernel EP).
    :param predict_with: "sites" (default, the posterior q) or "dual" (Minka's toolbox predictor
        μ* = m(x*) + Σ_j a_j k(x*, x_j), with a_j = ∂log Z_j/∂(cavity mean) from the last visit,
        kept in ``sites.dual``; Minka and Qi & Guo call a_j "α_j"). The variance
        always comes from q.

    Other keyword arguments are those of :class:`~gpflow_ep.models.EPGPC`.
    """

    def __init__(
        self,
        data,
        kernel: Kernel,
        likelihood: Likelihood,
        mean_function: Optional[MeanFunction] = None,
        *,
        power: float = 0.8,
        cavity: str = "fractional",
        predict_with: str = "sites",
        **ep_options,
    ):
        self.predict_with = check_choice(predict_with, "predict_with", PREDICT_WITH)
        super().__init__(data, kernel, likelihood, mean_function, power=power, cavity=cavity, **ep_options)
