r"""
The multi-class step likelihood of scalable multi-class EP (Villacampa-Calvo & Hernández-Lobato,
ICML 2017) and its EP factors.

With C latent functions and independent Gaussian noise on each, f̃^c = f^c + ε^c, ε^c ~ N(0, σ²),
the label is the class of the largest noisy latent value:

    p(y | f) = Π_{k ≠ y} Θ(f̃^y - f̃^k)        (the paper's eq. 2, with its latent noise σ²).

EP approximates each of the C - 1 factors of a point, Θ(f̃^y - f̃^k), separately, by a product of
two scalar Gaussian sites, one on f^y and one on f^k (:class:`DifferenceFactor`), so q keeps the
classes independent. Under a cavity in which h_y and h_k are independent Gaussians N(m_y, v_y) and
N(m_k, v_k) (v including any FITC variance), the tilted normaliser is closed form,

    Z = Φ(z),   z = (m_y - m_k) / s,   s² = v_y + v_k + 2σ²,

∂log Z/∂m_y = r/s = -∂log Z/∂m_k and ∂²log Z/∂m_y² = ∂²log Z/∂m_k² = -r(z + r)/s², r = φ(z)/Φ(z)
(the probit's closed form, :func:`~gpflow_ep.likelihoods.probit.probit_log_z`), and each site's
update is the engine's scalar update with its own derivative pair.

Prediction integrates the argmax under independent Gaussian marginals N(m_k, v_k + σ²) by a
one-dimensional quadrature accurate to 1e-11 whatever the variances
(:func:`~gpflow_ep.likelihoods.argmax.argmax_probabilities`):

    p(y* = k) = ∫ N(f; m_k, v_k + σ²) Π_{j ≠ k} Φ((f - m_j) / √(v_j + σ²)) df.
"""

import numpy as np
import tensorflow as tf
from gpflow import Parameter
from gpflow.likelihoods import Likelihood
from gpflow.utilities import positive

from ..ep.factors import SiteFactor
from ..ep.tilted import TiltedMoments
from ..validation import check_positive_int, register_multiclass_likelihood, require_float64
from .argmax import argmax_probabilities
from .labels import class_labels_to_index
from .probit import probit_log_z

__all__ = ["MultiClassStep", "DifferenceFactor"]


@register_multiclass_likelihood
class MultiClassStep(Likelihood):
    """
    p(y | f) = Π_{k≠y} Θ(f^y + ε^y - f^k - ε^k), ε^c ~ N(0, ``noise_variance``) (module docstring);
    labels are integers in [0, C), [N, 1], as GPflow's ``MultiClass``.

    :param num_classes: C ≥ 2.
    :param noise_variance: σ² > 0, the latent noise (a trainable ``Parameter``).
    """

    def __init__(self, num_classes: int, noise_variance: float = 1e-3, **kwargs):
        require_float64(type(self).__name__)
        num_classes = check_positive_int(num_classes, "num_classes")
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2; got {num_classes}")
        if not float(noise_variance) > 0.0:
            raise ValueError(f"noise_variance must be positive; got {noise_variance}")
        super().__init__(input_dim=None, latent_dim=num_classes, observation_dim=None, **kwargs)
        self.num_classes = num_classes
        self.noise_variance = Parameter(float(noise_variance), transform=positive(), name="noise_variance")

    def class_probabilities(self, Fmu, Fvar):
        """p(y* = k) [N, C] for independent latent marginals N(Fmu, Fvar) (noise added here)."""
        return argmax_probabilities(Fmu, Fvar + self.noise_variance)

    def _log_prob(self, X, F, Y):
        p = self.class_probabilities(F, tf.zeros_like(F))
        return tf.math.log(_pick(p, Y, self.num_classes))

    def _predict_mean_and_var(self, X, Fmu, Fvar):
        p = self.class_probabilities(Fmu, Fvar)
        return p, p - tf.square(p)

    def _predict_log_density(self, X, Fmu, Fvar, Y):
        p = _pick(self.class_probabilities(Fmu, Fvar), Y, self.num_classes)
        return tf.math.log(tf.maximum(p, np.finfo(np.float64).tiny))

    def _variational_expectations(self, X, Fmu, Fvar, Y):
        raise NotImplementedError(
            "MultiClassStep is the likelihood of multi-class EP (gpflow_ep.models.SEPMGPC); for SVGP use "
            "gpflow.likelihoods.MultiClass or Softmax"
        )

    def _conditional_mean(self, X, F):
        return self.class_probabilities(F, tf.zeros_like(F))

    def _conditional_variance(self, X, F):
        p = self._conditional_mean(X, F)
        return p - tf.square(p)


def _pick(p, Y, num_classes: int):
    """p[n, Y_n] for integer labels Y [N, 1] (checked: integers in [0, ``num_classes``))."""
    return tf.gather(p, class_labels_to_index(Y, num_classes), axis=1, batch_dims=1)


class DifferenceFactor(SiteFactor):
    """
    The factors Θ(f̃^y - f̃^k) of P points, C - 1 = ``factors_per_point`` each, as 2P(C - 1) sites:
    the first half on f^y, the second on f^k, site s paired with site s + P(C - 1), point by point
    (module docstring). ``extra_var`` [2P(C - 1), 1] (FITC variances) adds to each site's cavity
    variance; the sites of a point are updated together or not at all (:meth:`joint_validity`).
    Power EP, relaxation and one-site-at-a-time schedules are not defined here.
    """

    def __init__(self, noise_variance, extra_var=None, factors_per_point: int = 1):
        self.noise_variance, self.extra_var = noise_variance, extra_var
        self.factors_per_point = int(factors_per_point)

    @staticmethod
    def _halves(t):
        half = tf.shape(t)[0] // 2
        return t[:half], t[half:]

    def tilted(self, cavity_mean, cavity_var, power: float = 1.0) -> TiltedMoments:
        if power != 1.0:
            raise ValueError("power: multi-class EP factors are defined for power = 1 (EP) only")
        var = cavity_var if self.extra_var is None else cavity_var + self.extra_var
        (m_y, m_k), (v_y, v_k) = self._halves(cavity_mean), self._halves(var)
        noise = tf.cast(tf.convert_to_tensor(self.noise_variance), var.dtype)
        log_z, dlog_z, d2log_z = probit_log_z(m_y - m_k, v_y + v_k + 2.0 * noise)
        return TiltedMoments(
            tf.concat([log_z, tf.zeros_like(log_z)], axis=0),  # the factor's log Z, counted once
            tf.concat([dlog_z, -dlog_z], axis=0),
            tf.concat([d2log_z, d2log_z], axis=0),
        )

    def joint_validity(self, valid):
        """Valid where every site of the point is: [2P(C - 1), 1]."""
        per_point = tf.reshape(valid, [2, -1, self.factors_per_point])
        point = tf.reduce_all(per_point, axis=[0, 2], keepdims=True)
        return tf.reshape(tf.broadcast_to(point, tf.shape(per_point)), tf.shape(valid))

    def site(self, index):
        raise ValueError("schedule: the sites of a multi-class factor are updated in pairs; use schedule='parallel'")
