r"""
Site factors: what the engine needs from the terms that EP approximates.

Every EP site approximates one factor t_i(h_i) of a scalar site variable h_i. The engine asks a
factor only for the tilted normaliser of its cavity and its derivatives (and, for relaxed EP, the
expected log-factor under the tilted distribution). :class:`SiteFactor` is that interface; it is
implemented by :class:`LikelihoodFactor` for GPflow likelihood terms p(y_i | f_i), and can be
implemented by factors that are not likelihoods (e.g. the spike-and-slab prior factors, which act
on weights rather than on f).
"""

import abc
from typing import Optional

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.likelihoods import Likelihood

from .tilted import TiltedMoments, tilted_expected_log_likelihood, tilted_moments

__all__ = ["SiteFactor", "LikelihoodFactor", "gaussian_log_normaliser"]

_HALF_LOG_2PI = 0.5 * float(np.log(2.0 * np.pi))


def gaussian_log_normaliser(v1, v2):
    """log ∫ exp(v₁h - ½v₂h²) dh = ½ log 2π - ½ log v₂ + v₁²/(2v₂) (v₂ > 0), elementwise."""
    return _HALF_LOG_2PI - 0.5 * tf.math.log(v2) + 0.5 * tf.square(v1) / v2


class SiteFactor(abc.ABC):
    """N scalar factors t_i(h_i), one per site."""

    @abc.abstractmethod
    def tilted(self, cavity_mean: tf.Tensor, cavity_var: tf.Tensor, power: float = 1.0) -> TiltedMoments:
        """
        log Z_i, ∂log Z_i/∂m and ∂²log Z_i/∂m² of Z_i = ∫ t_i(h)^power N(h; m, v) dh, with
        m = ``cavity_mean`` and v = ``cavity_var`` of shape [..., N, 1] (leading dimensions
        broadcast against the sites).
        """

    def cavity_log_normaliser(self, v1: tf.Tensor, v2: tf.Tensor) -> tf.Tensor:
        """
        log Ẑ_i(v̂) = log ∫ exp(v̂₁h - ½v̂₂h²) t_i(h) dh of the *unnormalised* cavity with natural
        parameters v̂ = (``v1``, ``v2``), v̂₂ > 0: the term of the EP energy
        (Hernández-Lobato & Hernández-Lobato 2011, eq. 9).

        The default is log Z(v̂₁/v̂₂, 1/v̂₂) + log ∫ exp(v̂₁h - ½v̂₂h²) dh, whose two terms grow like
        v̂₁²/(2v̂₂) and cancel where the cavity is wide; a factor with a closed form overrides it.
        """
        var = 1.0 / v2
        return self.tilted(v1 * var, var, 1.0).log_z + gaussian_log_normaliser(v1, v2)

    def joint_validity(self, valid: tf.Tensor) -> tf.Tensor:
        """
        Which sites may be updated, given which ones could be on their own (``valid``, bool, like
        the sites). The default, every site for itself, is right for factors of one site variable; a
        factor of several site variables (a multi-class factor has two) updates its sites together
        or not at all, and so does the evidence count them.
        """
        return valid

    def expected_log_factor(self, cavity_mean: tf.Tensor, cavity_var: tf.Tensor) -> tf.Tensor:
        """E_p̂[log t_i(h)] under p̂ ∝ t_i N(m, v): relaxed EP's T1. Optional (relaxation only)."""
        raise ValueError(f"{type(self).__name__} has no expected log-factor, so it cannot be relaxed")

    @abc.abstractmethod
    def site(self, index) -> "SiteFactor":
        """The factor of the single site ``index`` (a scalar tensor), for sequential schedules."""


class LikelihoodFactor(SiteFactor):
    """
    The likelihood terms p(Y_i | f_i) of a GPflow likelihood at inputs X, with the site variable
    h_i and f_i = h_i + e_i, e_i ~ N(0, ``extra_var``_i) independent (the FITC conditional of SEP:
    the extra variance adds to the cavity's inside the tilted moments; ``None`` for f_i = h_i).
    """

    @check_shapes("Y: [N, 1]", "extra_var: [N, 1]")
    def __init__(self, likelihood: Likelihood, X: Optional[tf.Tensor], Y: tf.Tensor, extra_var=None):
        self.likelihood, self.X, self.Y, self.extra_var = likelihood, X, Y, extra_var

    def _total_var(self, var):
        return var if self.extra_var is None else var + self.extra_var

    def tilted(self, cavity_mean, cavity_var, power=1.0) -> TiltedMoments:
        return tilted_moments(self.likelihood, self.X, self.Y, cavity_mean, self._total_var(cavity_var), power)

    def expected_log_factor(self, cavity_mean, cavity_var):
        return tilted_expected_log_likelihood(self.likelihood, self.X, self.Y, cavity_mean, self._total_var(cavity_var))

    def site(self, index) -> "LikelihoodFactor":
        def one(t):
            return None if t is None else t[index : index + 1]

        return LikelihoodFactor(self.likelihood, one(self.X), one(self.Y), one(self.extra_var))
