r"""
RelaxedEP: EP with relaxed moment matching (Qi & Guo 2012, Secs. 3–4 and App. B).

Before each site is moment-matched, its cavity is multiplied by a Gaussian relaxation factor
r_i ∝ exp(-½ b_i (f - m_i)²) centred on the site's mean, with the precision b_i ≥ 0 chosen per site
by a bounded line search on the penalised objective Q(b_i) + c|b_i| (App. B eq. 36). b = 0 is EP
exactly, and a large penalty c makes every b_i = 0. The relaxation is an option of the one EP
engine (:mod:`gpflow_ep.ep.relaxation`), carried by ``EPSettings.relaxation``; the last b vector is
kept in ``model.sites.relaxation``. This class is :class:`~gpflow_ep.models.EPGP` with the
relaxation as a settings preset (and the paper's sequential schedule as the default).

Evidence: the paper defines none for REP. ``log_marginal_likelihood()`` is the EP energy (b = 0)
evaluated at REP's sites; its gradient with the sites fixed is the exact gradient of the converged
EP evidence only where REP and EP coincide (all b_i = 0).
"""

from typing import Optional

from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction

from ..ep import Relaxation
from ..ep.relaxation import MESSAGE_UPDATES, OBJECTIVES
from ..validation import check_choice, check_range
from .epgp import EPGP


class RelaxedEP(EPGP):
    """
    :param penalty: c ≥ 0, the l1 weight on b (c → ∞ is EP). A precision scale: REP with
        (κK, c) equals REP with (K, c/κ); the paper used c = 20 (toy) and 10 (synthetic).
    :param message_update: "A" (default; the message is the relaxed moment-matched site), "B"
        (paper eq. 16 literally) or "C" (the paper's text: r removed from the site).
    :param objective: "paper" (eq. 36 verbatim, default) or "exact" (the true relaxed KL).
    :param allow_negative_b: also search b ∈ (-0.999/λ_c, 0).
    :param schedule: "sequential" by default, as in the paper (Minka's kernel EP); "parallel"
        vectorises the line search over all sites.

    Other arguments are those of :class:`~gpflow_ep.models.EPGP` (``predict_with``, ...; ``power`` must be 1).
    """

    def __init__(
        self,
        data,
        kernel: Kernel,
        likelihood: Likelihood,
        mean_function: Optional[MeanFunction] = None,
        *,
        penalty: float = 10.0,
        message_update: str = "A",
        objective: str = "paper",
        allow_negative_b: bool = False,
        schedule: str = "sequential",
        **ep_options,
    ):
        relaxation = Relaxation(
            penalty=check_range(penalty, "penalty", 0.0, float("inf"), low_open=False, high_open=True),
            message_update=check_choice(message_update, "message_update", MESSAGE_UPDATES),
            objective=check_choice(objective, "objective", OBJECTIVES),
            allow_negative_b=bool(allow_negative_b),
        )
        super().__init__(
            data, kernel, likelihood, mean_function, schedule=schedule, relaxation=relaxation, **ep_options
        )
