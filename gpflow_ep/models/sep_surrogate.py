r"""
SEP's minibatch surrogate F_M (SEP spec §2.6) and its exact gradient, for
:class:`~gpflow_ep.models.SEPGPC`'s minibatch step: the frame of a minibatch's quantities at the
current hyper-parameters and the objective whose gradient estimates the evidence's.
"""

from typing import NamedTuple, Optional

import tensorflow as tf

from ..ep import EPSettings, SitePairs, WhitenedGaussian, blocked
from ..ep.whitened import eye_like

__all__ = ["Frame", "PriorBlocks", "SiteBatch", "surrogate_objective", "unless_same"]


class SiteBatch(NamedTuple):
    """Validated data as the sites see it (``SEPGPC._site_data``)."""

    X: tf.Tensor  # [P, D] the points
    Y: tf.Tensor  # [S, 1] the sites' targets
    pairs: SitePairs  # the (block, point) pair each site acts on
    index: Optional[tf.Tensor] = None  # [S] int32: the sites (minibatch)
    pair_rows: Optional[tf.Tensor] = None  # [C·P] int32: the pairs' rows of ``site_directions`` (minibatch)


class PriorBlocks(NamedTuple):
    """The prior quantities of every block at a minibatch's points (``SEPGPC._prior_blocks``)."""

    Kuu: tf.Tensor  # [C, M, M], with jitter
    Kuf: tf.Tensor  # [C, M, P]
    Kff_diag: tf.Tensor  # [C, P]
    mean: tf.Tensor  # [C, P]


class Frame(NamedTuple):
    """
    A minibatch's quantities at the current hyper-parameters (``SEPGPC._minibatch_frame``), per
    block and (block, point) pair: L [C, M, M], A [C, M, P], U_old and pair rows [C·P, ...], all
    without gradient, and the ``prior`` blocks they came from (with gradient).
    """

    prior: PriorBlocks
    L: tf.Tensor
    A_new: tf.Tensor
    A_old: tf.Tensor
    U_old: tf.Tensor
    s: tf.Tensor
    prior_mean: tf.Tensor
    q: WhitenedGaussian
    pairs: SitePairs
    same: Optional[tf.Tensor] = None  # True when A_old = A_new (all batch sites on fresh directions)


def unless_same(same, value, compute):
    """``value`` when ``same`` is a true tensor, else ``compute()`` (always ``compute()`` if ``same`` is None)."""
    return compute() if same is None else tf.cond(same, lambda: value, compute)


def surrogate_objective(model, sites, fr: "Frame", settings: EPSettings) -> tf.Tensor:
    r"""
    F_M with an exact gradient and no differentiation through Cholesky factors: F depends on the
    hyper-parameters ξ only through K_uu, K_uf, diag K_ff, m(X) and the likelihood, so it is
    returned as its value plus ⟨∂F/∂K, K(ξ) - K(ξ₀)⟩ for each of these (zero in value, exact
    in gradient at ξ₀). With whitened quantities (a = L⁻¹k, Ã = L⁻¹K_uf, B = I + LᵀΛ_uL,
    μ_v = L⁻¹μ, g_m, g_v the derivatives of log Z_i in the cavity mean and variance, scaled by
    n/(α|M|), and the cavity's shift d_i and scale c_i):

        R  = ∂F/∂ã_i = g_m (μ_v + d_i B⁻¹a_i^old) + 2 g_v (B⁻¹ã_i + c_i σ_no,i B⁻¹a_i^old),
        ∂F/∂K_uf = L⁻ᵀ(R - 2Ã diag g_v),       ∂F/∂diag K_ff = g_v,      ∂F/∂m(X) = g_m,
        ∂F/∂K_uu = L⁻ᵀ[½(B⁻¹ + μ_vμ_vᵀ - I) - (R - Ã diag g_v)Ãᵀ]L⁻¹,

    the last from d(υ) = K_uu⁻¹(dk - dK_uu υ), ds_i = υ_iᵀdK_uuυ_i - 2υ_iᵀdk_i and
    d(-½log|K| - ½tr K⁻¹S) = ½tr[(K⁻¹SK⁻¹ - K⁻¹)dK]. Every term is linear in the sites' g_m, g_v
    given their pair's vectors, so the sites' contributions are summed on their (block, point)
    pairs and each block's matrices are formed once, in O(C m² P).
    """
    index = sites.index
    tau = tf.gather(model.sites.precision, index)
    nu = tf.gather(model.sites.natural_mean, index)
    cav, new, old, cross = model._batch_cavities(fr, tau, nu, settings, fr.same)
    pairs = fr.pairs
    factor = model._factor(sites.X, sites.Y, pairs.gather(fr.s))
    valid = factor.joint_validity(cav.valid)
    mean = tf.where(valid, cav.mean, tf.zeros_like(cav.mean))
    var = tf.where(valid, cav.var, tf.ones_like(cav.var))
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([mean, var])
        log_z = tf.where(valid, factor.tilted(mean, var, settings.power).log_z, tf.zeros_like(mean))
    g_m, g_v = (tf.stop_gradient(g) for g in tape.gradient(log_z, [mean, var]))
    dtype = log_z.dtype
    scale = tf.cast(model.num_sites, dtype) / tf.cast(tf.size(index), dtype) / settings.power  # n/|M|
    g_m, g_v = scale * g_m, scale * g_v  # [S, 1]

    q, L, A = fr.q, fr.L, fr.A_new

    def on_pairs(site_values):  # [S, 1] summed on the pairs, as [C, 1, P]
        return tf.linalg.matrix_transpose(blocked(pairs.sum(site_values), A))

    G_m, G_v = on_pairs(g_m), on_pairs(g_v)
    G_old = on_pairs(g_m * cav.shift + 2.0 * g_v * cav.scale * pairs.gather(cross))
    mu_v = q.mean  # [C, M, 1]
    V_new = q.solve(new.half)  # B⁻¹ã
    V_old = unless_same(fr.same, V_new, lambda: q.solve(old.half))
    R = mu_v * G_m + V_old * G_old + 2.0 * V_new * G_v
    B_inv = q.covariance()
    H = 0.5 * (B_inv - eye_like(B_inv) + mu_v * tf.linalg.matrix_transpose(mu_v))
    H -= tf.matmul(R - A * G_v, A, transpose_b=True)
    half = tf.linalg.triangular_solve(L, H, adjoint=True)  # L⁻ᵀH
    dF_dKuu = tf.linalg.matrix_transpose(tf.linalg.triangular_solve(L, tf.linalg.matrix_transpose(half), adjoint=True))
    dF_dKuf = tf.linalg.triangular_solve(L, R - 2.0 * A * G_v, adjoint=True)

    value = (
        -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)))
        - 0.5 * (tf.reduce_sum(tf.linalg.trace(B_inv)) + tf.reduce_sum(tf.square(mu_v)))
        + scale * tf.reduce_sum(log_z)
    )
    live = [
        (dF_dKuu, fr.prior.Kuu),
        (dF_dKuf, fr.prior.Kuf),
        (G_v[..., 0, :], fr.prior.Kff_diag),
        (G_m[..., 0, :], fr.prior.mean),
    ]
    return value + tf.add_n([tf.reduce_sum(g * (t - tf.stop_gradient(t))) for g, t in live])
