r"""
SEP's minibatch surrogate F_M (SEP spec §2.6) and its exact gradient, for
:class:`~gpflow_ep.models.SEPGPC`'s minibatch step: the frame of a minibatch's quantities at the
current hyper-parameters and the objective whose gradient estimates the evidence's.
"""

from typing import NamedTuple, Optional

import tensorflow as tf
from gpflow import covariances

from ..ep import EPSettings, WhitenedGaussian

__all__ = ["Frame", "surrogate_objective", "unless_same"]


class Frame(NamedTuple):
    """A minibatch's quantities at the current hyper-parameters (``SEPGPC._minibatch_frame``)."""

    L: tf.Tensor
    A_new: tf.Tensor
    A_old: tf.Tensor
    U_old: tf.Tensor
    s: tf.Tensor
    prior_mean: tf.Tensor
    q: WhitenedGaussian
    same: Optional[tf.Tensor] = None  # True when A_old = A_new (all batch sites on fresh directions)


def unless_same(same, value, compute):
    """``value`` when ``same`` is a true tensor, else ``compute()`` (always ``compute()`` if ``same`` is None)."""
    return compute() if same is None else tf.cond(same, lambda: value, compute)


def surrogate_objective(model, X, Y, index, fr: "Frame", settings: EPSettings) -> tf.Tensor:
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
    d(-½log|K| - ½tr K⁻¹S) = ½tr[(K⁻¹SK⁻¹ - K⁻¹)dK].
    """
    tau = tf.gather(model.sites.precision, index)
    nu = tf.gather(model.sites.natural_mean, index)
    cav, new, old, cross = model._batch_cavities(fr, tau, nu, settings, fr.same)
    factor = model._factor(X, Y, fr.s)
    valid = factor.joint_validity(cav.valid)
    mean = tf.where(valid, cav.mean, tf.zeros_like(cav.mean))
    var = tf.where(valid, cav.var, tf.ones_like(cav.var))
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([mean, var])
        log_z = tf.where(valid, factor.tilted(mean, var, settings.power).log_z, tf.zeros_like(mean))
    g_m, g_v = (tf.stop_gradient(g) for g in tape.gradient(log_z, [mean, var]))
    dtype = log_z.dtype
    scale = tf.cast(model.num_sites, dtype) / tf.cast(tf.shape(X)[0], dtype) / settings.power  # n/|M|
    g_m, g_v = scale * g_m, scale * g_v  # [B, 1]

    q, L, A = fr.q, fr.L, fr.A_new
    mu_v = q.mean
    V_new = q.solve(new.half)  # B⁻¹ã
    V_old = unless_same(fr.same, V_new, lambda: q.solve(old.half))
    R = mu_v * tf.transpose(g_m) + V_old * tf.transpose(g_m * cav.shift + 2.0 * g_v * cav.scale * cross)
    R += 2.0 * V_new * tf.transpose(g_v)
    eye = tf.eye(tf.shape(L)[0], dtype=L.dtype)
    B_inv = q.covariance()
    H = 0.5 * (B_inv - eye + mu_v * tf.transpose(mu_v)) - tf.matmul(R - A * tf.transpose(g_v), A, transpose_b=True)
    half = tf.linalg.triangular_solve(L, H, adjoint=True)  # L⁻ᵀH
    dF_dKuu = tf.transpose(tf.linalg.triangular_solve(L, tf.transpose(half), adjoint=True))
    dF_dKuf = tf.linalg.triangular_solve(L, R - 2.0 * A * tf.transpose(g_v), adjoint=True)

    value = (
        -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)))
        - 0.5 * (tf.linalg.trace(B_inv) + tf.reduce_sum(tf.square(mu_v)))
        + scale * tf.reduce_sum(log_z)
    )
    live = [
        (dF_dKuu, covariances.Kuu(model.inducing_variable, model.kernel, jitter=model.jitter)),
        (dF_dKuf, covariances.Kuf(model.inducing_variable, model.kernel, X)),
        (g_v[:, 0], model.kernel(X, full_cov=False)),
        (g_m, model.mean_function(X)),
    ]
    return value + tf.add_n([tf.reduce_sum(g * (t - tf.stop_gradient(t))) for g, t in live])
