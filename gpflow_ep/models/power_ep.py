r"""
PowerEP: EP with a fractional power α (Minka 2004; Qi & Guo 2012, App. C).

The cavity removes the fraction α of a site, the tilted distribution uses p(y|f)^α, and the new
site is (proj[p̂] / q^{\i})^{1/α}. The evidence is the power-EP energy (:mod:`gpflow_ep.ep.energy`).
This class is :class:`~gpflow_ep.models.EPGP` with the power-EP options as its defaults
(``power=0.8``, the paper's u); ``power=1`` is EP exactly.
"""

from typing import Optional

from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction

from .epgp import EPGP

__all__ = ["PowerEP"]


class PowerEP(EPGP):
    """
    :param power: α ∈ (0, 1] (the paper's u; 0.8 in its experiments).
    :param cavity: "fractional" (default, standard power EP: q / t̃^α) or "full" (q / t̃, the literal
        reading of Qi & Guo's "only two modifications" to Minka's kernel EP).
    :param predict_with: "sites" (default, the posterior q) or "dual" (Minka's toolbox predictor,
        see :class:`~gpflow_ep.models.EPGP`; Minka and Qi & Guo call the dual weights "α_j").

    Other arguments are those of :class:`~gpflow_ep.models.EPGP`.
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
        **ep_options,
    ):
        super().__init__(data, kernel, likelihood, mean_function, power=power, cavity=cavity, **ep_options)
