r"""
One EP site update, the same for every schedule and model: cavity → (relaxation) → tilted
moments → new site. Power EP is ``power`` (and ``cavity_kind``), relaxed EP is ``relaxation``;
b = 0 reduces relaxed EP to EP exactly (the relaxed cavity equals the cavity).
"""

from typing import Callable, NamedTuple, Optional

import tensorflow as tf

from .relaxation import (
    Relaxation,
    penalised_line_search,
    relaxation_objective,
    relaxed_message,
    relaxed_terms,
)
from .sites import site_update

__all__ = ["SiteProposal", "propose_sites", "site_means"]


class SiteProposal(NamedTuple):
    """New (undamped) sites for the visited sites, and what the update saw."""

    precision: tf.Tensor
    natural_mean: tf.Tensor
    valid: tf.Tensor
    alpha: tf.Tensor  # ∂log Z/∂(cavity mean): Minka's per-site α, the paper's convergence statistic
    relaxation: tf.Tensor  # b (zeros without relaxation)


def site_means(precision, natural_mean):
    """Site means m = ν/τ, with m = 0 for flat sites (τ = 0), as in the EP initialisation."""
    flat = tf.equal(precision, 0.0)
    return tf.where(
        flat, tf.zeros_like(natural_mean), natural_mean / tf.where(flat, tf.ones_like(precision), precision)
    )


def propose_sites(
    cavity,
    precision,
    natural_mean,
    tilted_fn: Callable,
    *,
    power: float = 1.0,
    relaxation: Optional[Relaxation] = None,
    expected_log_lik_fn: Optional[Callable] = None,
) -> SiteProposal:
    """
    :param cavity: the :class:`~gpflow_ep.ep.sites.Cavity` of the visited sites.
    :param precision, natural_mean: their current sites (the relaxation is centred on their means).
    :param tilted_fn: (mean, var) → :class:`~gpflow_ep.ep.tilted.TiltedMoments`.
    :param relaxation: relaxed-EP settings, or ``None`` for (power) EP.
    :param expected_log_lik_fn: (mean, var) → E_p̂[log p(y|f)], needed by the relaxation objective.
    """
    if relaxation is None:
        t = tilted_fn(cavity.mean, cavity.var)
        tau, nu, valid = site_update(cavity.mean, cavity.var, t, power)
        return SiteProposal(tau, nu, valid & cavity.valid, t.dlog_z, tf.zeros_like(tau))

    centre = site_means(precision, natural_mean)

    def objective(b):
        return relaxation_objective(b, cavity.mean, cavity.var, centre, tilted_fn, expected_log_lik_fn, relaxation)

    b_max = relaxation.b_max_scale / cavity.var
    b_min = -0.999 / cavity.var if relaxation.allow_negative_b else None
    b = penalised_line_search(objective, b_max, b_min, relaxation.grid_size, relaxation.golden_steps)
    b = tf.where(cavity.valid, b, tf.zeros_like(b))
    terms = relaxed_terms(b, cavity.mean, cavity.var, centre, tilted_fn)
    tau, nu, valid = relaxed_message(terms, b, centre, relaxation.message_update)
    return SiteProposal(tau, nu, valid & cavity.valid, terms.dlog_z, b)
