r"""
The Laplace (double-exponential) likelihood for robust regression, with its EP closed form.

    p(y | f) = exp(-|y - f| / b) / (2b),     b = ``scale``.

**Tilted normaliser.** With u = f - y, μ = m - y, κ = α/b and s = √v, the power-α tilted integral
splits at the kink u = 0 into two Gaussian tails (each e^{∓κu} N(u; μ, v) is a shifted Gaussian):

    Z = (2b)^-α [I₊ + I₋],
    I₊ = ∫₀^∞ e^{-κu} N(u; μ, v) du = exp(-κμ + κ²v/2) Φ(a₊),   a₊ = μ/s - κs,
    I₋ = ∫₋∞^0 e^{κu} N(u; μ, v) du = exp( κμ + κ²v/2) Φ(a₋),   a₋ = -μ/s - κs

(the form of GPML's ``likLaplace``, Rasmussen & Nickisch 2010). Since exp(∓κμ + κ²v/2) φ(a±) = s N(μ; 0, v)
for both signs, I± = s N(μ; 0, v) / r±, with the inverse Mills ratios r± = φ(a±)/Φ(a±), and
differentiating under the integral (the boundary terms cancel) gives

    ∂log Z/∂m   = κ (r₊ - r₋) / (r₊ + r₋),
    ∂²log Z/∂m² = -2κ r₊ r₋ [h(a₊) + h(a₋)] / (s (r₊ + r₋)²),     h(a) = a + r(a) > 0,

where the second form, unlike (Var_p̂ - v)/v², has no cancellation at narrow cavities (v → 0 gives
-2κ N(μ; 0, v), the kink's δ-function curvature, exactly). The tilted distribution is the mixture of
the two truncated Gaussians with weights w± = r∓/(r₊ + r₋), whose means are ±s h(a±), so
E_p̂|y - f| = s (w₊ h(a₊) + w₋ h(a₋)) (relaxed EP's T1).
"""

import numpy as np
import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow import Parameter
from gpflow.likelihoods import ScalarLikelihood
from gpflow.utilities import positive

from ..ep.tilted import log_normal_pdf, tilted_expected_log_likelihood, tilted_kinks, tilted_moments
from ..numerics import log_ndtr, ndtr
from ..validation import require_float64

__all__ = ["Laplace", "laplace_tilted"]


class Laplace(ScalarLikelihood):
    r"""
    p(y | f) = exp(-abs(y - f) / b) / (2b) with scale b > 0 (a ``Parameter``); variance 2b².

    Usable in GPflow's VGP/SVGP (closed-form variational expectations) and in every EP model
    (closed-form tilted moments at any power α, module docstring).
    """

    def __init__(self, scale: float = 1.0, **kwargs):
        require_float64(type(self).__name__)
        super().__init__(**kwargs)
        scale = float(scale)
        if not np.isfinite(scale) or scale <= 0.0:
            raise ValueError(f"scale must be a positive finite number, got {scale}")
        self.scale = Parameter(scale, transform=positive())

    def _scalar_log_prob(self, X, F, Y):
        return -tf.abs(Y - F) / self.scale - tf.math.log(2.0 * self.scale)

    def _conditional_mean(self, X, F):
        return tf.identity(F)

    def _conditional_variance(self, X, F):
        return tf.fill(tf.shape(F), tf.squeeze(2.0 * tf.square(tf.convert_to_tensor(self.scale))))

    @inherit_check_shapes
    def _variational_expectations(self, X, Fmu, Fvar, Y):
        r"""E_{N(f; μ, σ²)}|y - f| = d (2Φ(d/σ) - 1) + 2σ φ(d/σ), d = y - μ."""
        sd = tf.sqrt(Fvar)
        d = Y - Fmu
        z = d / sd
        mean_abs = d * (2.0 * ndtr(z) - 1.0) + 2.0 * sd * tf.exp(log_normal_pdf(z))
        return tf.reduce_sum(-mean_abs / self.scale - tf.math.log(2.0 * self.scale), axis=-1)

    @inherit_check_shapes
    def _predict_mean_and_var(self, X, Fmu, Fvar):
        return tf.identity(Fmu), Fvar + 2.0 * tf.square(tf.convert_to_tensor(self.scale))

    @inherit_check_shapes
    def _predict_log_density(self, X, Fmu, Fvar, Y):
        log_z, _, _ = laplace_tilted(Y, Fmu, Fvar, tf.convert_to_tensor(self.scale), 1.0)
        return tf.reduce_sum(log_z, axis=-1)


def _parts(Y, m, v, scale, power):
    s = tf.sqrt(v)
    mu = m - Y
    kappa = power / scale
    a_plus, a_minus = mu / s - kappa * s, -mu / s - kappa * s
    log_phi_plus, log_phi_minus = log_ndtr(a_plus), log_ndtr(a_minus)
    r_plus = tf.exp(log_normal_pdf(a_plus) - log_phi_plus)
    r_minus = tf.exp(log_normal_pdf(a_minus) - log_phi_minus)
    log_z = (
        -power * tf.math.log(2.0 * scale)
        + 0.5 * tf.square(kappa) * v
        + tf.reduce_logsumexp(tf.stack([-kappa * mu + log_phi_plus, kappa * mu + log_phi_minus]), axis=0)
    )
    return s, kappa, log_z, (a_plus, r_plus), (a_minus, r_minus)


def laplace_tilted(Y, m, v, scale, power):
    """log Z, ∂log Z/∂m, ∂²log Z/∂m² of exp(-α|y - f|/b) (2b)^-α N(f; m, v) (module docstring)."""
    s, kappa, log_z, (a_plus, r_plus), (a_minus, r_minus) = _parts(Y, m, v, scale, power)
    total = r_plus + r_minus
    dlog_z = kappa * (r_plus - r_minus) / total
    d2log_z = -2.0 * kappa * r_plus * r_minus * ((a_plus + r_plus) + (a_minus + r_minus)) / (s * tf.square(total))
    return log_z, dlog_z, d2log_z


@tilted_moments.register(Laplace)
def _laplace_tilted(likelihood, X, Y, m, v, power):
    return laplace_tilted(Y, m, v, tf.convert_to_tensor(likelihood.scale), power)


@tilted_expected_log_likelihood.register(Laplace)
def _laplace_expected(likelihood, X, Y, m, v):
    """E_p̂[log p] = -log 2b - E_p̂|y - f| / b (module docstring)."""
    scale = tf.convert_to_tensor(likelihood.scale)
    s, _, _, (a_plus, r_plus), (a_minus, r_minus) = _parts(Y, m, v, scale, 1.0)
    total = r_plus + r_minus
    mean_abs = s * (r_minus * (a_plus + r_plus) + r_plus * (a_minus + r_minus)) / total
    return -tf.math.log(2.0 * scale) - mean_abs / scale


@tilted_kinks.register(Laplace)
def _laplace_kinks(likelihood, X, Y):
    """|y - f| bends at f = y."""
    return Y[None]
