r"""
One EP site update, the same for every schedule and model: cavity → (relaxation) → tilted
moments → new site (→ clipping) and, separately, the damped acceptance of a proposal. Power EP
is ``settings.power`` (and ``settings.cavity``), relaxed EP is ``settings.relaxation``; b = 0
reduces relaxed EP to EP exactly (the relaxed cavity equals the cavity).
"""

from typing import NamedTuple

import tensorflow as tf
from check_shapes import check_shapes

from .factors import SiteFactor
from .relaxation import penalised_line_search, relaxation_objective, relaxed_message, relaxed_terms
from .settings import EPSettings
from .sites import Cavity, clip_site, damp, site_update

__all__ = ["SiteProposal", "propose_sites", "accept_proposal", "site_means"]


class SiteProposal(NamedTuple):
    """New (undamped) sites for the visited sites, and what the update saw."""

    precision: tf.Tensor
    natural_mean: tf.Tensor
    valid: tf.Tensor
    dual: tf.Tensor  # ∂log Z/∂(cavity mean): the per-site statistic of Qi & Guo's convergence test
    relaxation: tf.Tensor  # b (zeros without relaxation)


def site_means(precision, natural_mean):
    """Site means m = ν/τ, with m = 0 for flat sites (τ = 0), as in the EP initialisation."""
    flat = tf.equal(precision, 0.0)
    return tf.where(
        flat, tf.zeros_like(natural_mean), natural_mean / tf.where(flat, tf.ones_like(precision), precision)
    )


@check_shapes(
    "cavity.mean: [N, 1]",
    "cavity.var: [N, 1]",
    "precision: [N, 1]",
    "natural_mean: [N, 1]",
    "return.precision: [N, 1]",
    "return.natural_mean: [N, 1]",
    "return.valid: [N, 1]",
)
def propose_sites(cavity: Cavity, precision, natural_mean, factor: SiteFactor, settings: EPSettings) -> SiteProposal:
    """
    The undamped EP update of the visited sites (:mod:`gpflow_ep.ep.sites`, steps 2–3).

    :param cavity: the cavities of the visited sites (:func:`~gpflow_ep.ep.sites.cavity_distribution`).
    :param precision: their current site precisions τ (the relaxation is centred on the sites' means).
    :param natural_mean: their current site natural means ν.
    :param factor: the visited sites' factors (:class:`~gpflow_ep.ep.SiteFactor`).
    :param settings: ``power``, ``relaxation`` and ``min_precision`` are read.
    """
    power, relaxation = settings.power, settings.relaxation
    if relaxation is None:
        t = factor.tilted(cavity.mean, cavity.var, power)
        tau, nu, valid = site_update(cavity, t, power)
        tau, nu = clip_site(tau, nu, cavity, t, power, settings.min_precision)
        return SiteProposal(tau, nu, factor.joint_validity(valid), t.dlog_z, tf.zeros_like(tau))

    centre = site_means(precision, natural_mean)

    def objective(b):
        return relaxation_objective(
            b, cavity.mean, cavity.var, centre, factor.tilted, factor.expected_log_factor, relaxation
        )

    b_max = relaxation.b_max_scale / cavity.var
    b_min = -0.999 / cavity.var if relaxation.allow_negative_b else None
    b = penalised_line_search(objective, b_max, b_min, relaxation.grid_size, relaxation.golden_steps)
    b = tf.where(cavity.valid, b, tf.zeros_like(b))
    terms = relaxed_terms(b, cavity.mean, cavity.var, centre, factor.tilted)
    tau, nu, valid = relaxed_message(terms, b, centre, relaxation.message_update)
    return SiteProposal(tau, nu, factor.joint_validity(valid & cavity.valid), terms.dlog_z, b)


@check_shapes(
    "precision: [N, 1]", "natural_mean: [N, 1]", "proposal.precision: [N, 1]", "return[0]: [N, 1]", "return[1]: [N, 1]"
)
def accept_proposal(precision, natural_mean, proposal: SiteProposal, damping):
    """
    Damped new sites (:mod:`gpflow_ep.ep.sites`, step 4) where the proposal is valid, the old
    sites elsewhere: (τ, ν), each of the shape of ``precision``.
    """
    ok = proposal.valid
    return (
        tf.where(ok, damp(precision, proposal.precision, damping), precision),
        tf.where(ok, damp(natural_mean, proposal.natural_mean, damping), natural_mean),
    )
