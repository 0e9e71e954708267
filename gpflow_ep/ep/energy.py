r"""
The EP (and power-EP) approximation to the log marginal likelihood.

With Gaussian log-normalisers g(θ) = ½ log|S| + ½ mᵀS⁻¹m (constants cancel), the power-EP energy
(Minka 2004; SEP spec §2.5 for α = 1; spike-and-slab spec §6 item 6) is

    log Z_EP = g(q) - g(prior) + (1/α) Σ_i [ log Z_i + g(q^{\i}) - g(q_i) ],

where Z_i = ∫ p(y_i | f)^α q^{\i}(f) df is the tilted normaliser and q_i, q^{\i} are the 1-D
marginal and cavity of site i. The bracket is evaluated in the division-free form (SEP spec
§2.5, corrected eq. 29, generalised to a removed fraction β = α):

    g(q^{\i}) - g(q_i) = ½ [ -log d_i + (β τ_i μ_i² - 2 β ν_i μ_i + β² ν_i² σ_i²) / d_i ],
    d_i = 1 - β τ_i σ_i².

For α = 1 this is R&W eq. 3.65 (and rep spec §3.3). For a Gaussian likelihood it is exact, for
any α. At an EP fixed point its gradient with respect to hyper-parameters, with the sites held
fixed, is the gradient of the converged log Z_EP (the tilted moments match, so the derivative with
respect to the cavity vanishes).

All quantities here are in the coordinates of the posterior algebra (the prior mean removed);
``offset`` (the prior mean) is added to the cavity mean only when the likelihood is evaluated.
"""

from typing import TYPE_CHECKING

import tensorflow as tf
from check_shapes import check_shapes

from .factors import SiteFactor
from .sites import cavity_distribution

if TYPE_CHECKING:  # settings import the schedule registry
    from .settings import EPSettings

__all__ = ["site_energy_terms", "ep_log_marginal_likelihood"]


@check_shapes(
    "marginal_mean: [N, 1]",
    "marginal_var: [N, 1]",
    "precision: [N, 1]",
    "natural_mean: [N, 1]",
    "return[0]: [N, 1]",
    "return[1]: [N, 1]",
)
def site_energy_terms(
    marginal_mean, marginal_var, precision, natural_mean, factor: SiteFactor, settings: "EPSettings", *, offset=0.0
):
    r"""
    Per-site terms (1/α)[log Z_i + g(q^{\i}) - g(q_i)], [N, 1], and a mask of the sites whose
    cavity is proper (an improper cavity contributes 0 and should be reported).
    """
    power, beta = settings.power, settings.removed_fraction
    cav = cavity_distribution(marginal_mean, marginal_var, precision, natural_mean, beta)
    log_z = factor.tilted(cav.mean + offset, cav.var, power).log_z
    d = 1.0 - beta * precision * marginal_var
    safe_d = tf.where(cav.valid, d, tf.ones_like(d))
    quad = (
        beta * precision * tf.square(marginal_mean)
        - 2.0 * beta * natural_mean * marginal_mean
        + beta**2 * tf.square(natural_mean) * marginal_var
    )
    terms = (log_z + 0.5 * (-tf.math.log(safe_d) + quad / safe_d)) / power
    valid = factor.joint_validity(cav.valid & tf.math.is_finite(terms))
    return tf.where(valid, terms, tf.zeros_like(terms)), valid


@check_shapes(
    "log_normaliser_ratio: []",
    "marginal_mean: [N, 1]",
    "marginal_var: [N, 1]",
    "precision: [N, 1]",
    "natural_mean: [N, 1]",
    "return[0]: []",
    "return[1]: []",
)
def ep_log_marginal_likelihood(
    log_normaliser_ratio, marginal_mean, marginal_var, precision, natural_mean, factor, settings, *, offset=0.0
):
    """log Z_EP (module docstring) and the number of sites left out for an improper cavity."""
    terms, valid = site_energy_terms(
        marginal_mean, marginal_var, precision, natural_mean, factor, settings, offset=offset
    )
    return log_normaliser_ratio + tf.reduce_sum(terms), tf.reduce_sum(tf.cast(~valid, tf.int32))
