r"""
The EP (and power-EP) approximation to the log marginal likelihood, for every model.

With Gaussian log-normalisers g(θ) = ½ log|S| + ½ mᵀS⁻¹m (constants cancel), the power-EP energy
(Minka 2004, Sec. 3; for α = 1 Rasmussen & Williams 2006, eq. 3.65, and Hernández-Lobato &
Hernández-Lobato 2016, eqs. 26–28; for factors that are not likelihoods Hernández-Lobato &
Hernández-Lobato 2011, eq. 9) is

    log Z_EP = g(q) - g(prior) + (1/α) Σ_i [ log Z_i + g(q^{\i}) - g(q_i) ],

where Z_i = ∫ t_i(h)^α q^{\i}(h) dh is the tilted normaliser and q_i, q^{\i} are the 1-D
marginal and cavity of site i. The bracket is evaluated in a division-free form (the 1-D form of
Hernández-Lobato & Hernández-Lobato 2016, eq. 29, with its printed factor ½ and sign corrected,
generalised to a removed fraction β = α):

    g(q^{\i}) - g(q_i) = ½ [ -log d_i + (β τ_i μ_i² - 2 β ν_i μ_i + β² ν_i² σ_i²) / d_i ],
    d_i = 1 - β τ_i σ_i².

For a Gaussian likelihood it is exact, for any α. At an EP fixed point its gradient with respect to
hyper-parameters, with the sites held fixed, is the gradient of the converged log Z_EP (the tilted
moments match, so the derivative with respect to the cavity vanishes).

:func:`ep_log_marginal_likelihood` takes a model's posterior algebra, its factors, the sites and
the settings, and is the evidence of every EP model. The algebra's :class:`~gpflow_ep.ep.SitePosterior`
gives g(q) - g(prior) and the marginals in its centred coordinates (the prior mean removed; the
constant factors exp(ν o - ½τ o²) that centring takes out of the sites cancel between the two terms),
and the offsets o are added to the cavity mean only where the factors are evaluated.
"""

from typing import NamedTuple

import tensorflow as tf
from check_shapes import check_shapes

from .algebra import SiteAlgebra
from .factors import SiteFactor
from .settings import EPSettings
from .sites import cavity_distribution

__all__ = ["EPEnergy", "cavity_log_normaliser_gap", "site_energy_terms", "ep_log_marginal_likelihood"]


class EPEnergy(NamedTuple):
    """log Z_EP (-∞ when q is improper, which has no evidence) and the sites it left out."""

    log_marginal_likelihood: tf.Tensor  # []
    num_left_out: tf.Tensor  # [] int32: sites whose cavity was improper (they contribute 0)
    proper: tf.Tensor  # [] bool: q is proper


@check_shapes(
    "marginal_mean: [N, 1]",
    "marginal_var: [N, 1]",
    "precision: [N, 1]",
    "natural_mean: [N, 1]",
    "return: [N, 1]",
)
def cavity_log_normaliser_gap(marginal_mean, marginal_var, precision, natural_mean, removed_fraction: float):
    r"""
    g(q^{\i}) - g(q_i) of every site (module docstring: the division-free form, β = ``removed_fraction``),
    from the site's 1-D marginal N(μ_i, σ_i²) under q and its (τ_i, ν_i); meaningless (and finite)
    where the cavity is improper (d_i ≤ 0), which the caller masks.
    """
    beta = removed_fraction
    d = 1.0 - beta * precision * marginal_var
    safe_d = tf.where((d > 0.0) & tf.math.is_finite(d), d, tf.ones_like(d))
    quad = (
        beta * precision * tf.square(marginal_mean)
        - 2.0 * beta * natural_mean * marginal_mean
        + beta**2 * tf.square(natural_mean) * marginal_var
    )
    return 0.5 * (-tf.math.log(safe_d) + quad / safe_d)


@check_shapes(
    "marginal_mean: [N, 1]",
    "marginal_var: [N, 1]",
    "precision: [N, 1]",
    "natural_mean: [N, 1]",
    "return[0]: [N, 1]",
    "return[1]: [N, 1]",
)
def site_energy_terms(
    marginal_mean, marginal_var, precision, natural_mean, factor: SiteFactor, settings: EPSettings, *, offset=0.0
):
    r"""
    Per-site terms (1/α)[log Z_i + g(q^{\i}) - g(q_i)], [N, 1], and a mask of the sites whose
    cavity is proper (an improper cavity contributes 0 and should be reported).
    """
    power, beta = settings.power, settings.removed_fraction
    cav = cavity_distribution(marginal_mean, marginal_var, precision, natural_mean, beta)
    log_z = factor.tilted(cav.mean + offset, cav.var, power).log_z
    terms = (log_z + cavity_log_normaliser_gap(marginal_mean, marginal_var, precision, natural_mean, beta)) / power
    valid = factor.joint_validity(cav.valid & tf.math.is_finite(terms))
    return tf.where(valid, terms, tf.zeros_like(terms)), valid


@check_shapes("precision: [N, 1]", "natural_mean: [N, 1]")
def ep_log_marginal_likelihood(
    algebra: SiteAlgebra, factor: SiteFactor, precision, natural_mean, settings: EPSettings
) -> EPEnergy:
    """
    log Z_EP (module docstring) of the sites (τ, ν) under the model's ``algebra`` and ``factor``,
    for ``settings.power`` and ``settings.cavity``; differentiable in whatever the algebra and the
    factor depend on, with the sites held fixed.

    :raises ValueError: when the algebra has no log normaliser.
    """
    q = algebra.posterior(precision, natural_mean)
    if q.log_normaliser is None:
        raise ValueError(f"algebra: {type(algebra).__name__} has no log normaliser, so it has no EP energy")
    terms, valid = site_energy_terms(q.mean, q.var, q.precision, q.natural_mean, factor, settings, offset=q.offset)
    value = q.log_normaliser + tf.reduce_sum(terms)
    value = tf.where(q.proper, value, tf.constant(-float("inf"), value.dtype))
    return EPEnergy(value, tf.reduce_sum(tf.cast(~valid, tf.int32)), q.proper)
