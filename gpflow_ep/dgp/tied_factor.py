r"""
The tied ("average data") factor of DGP-AEP for one GP of one layer (Bui et al. 2016, §4.2).

All N data factors share one Gaussian g(u): q(u) ∝ p(u) g(u)^N, p(u) = N(0, K). In the
N-scaled natural parameters of the authors' reference code (github.com/thangbui/deepGP_approxEP), with T = R Rᵀ positive
semi-definite (R lower-triangular with a positive diagonal, so T is valid by construction) and
a vector t:

    posterior  P = K⁻¹ + T,     m = P⁻¹t,
    cavity     P\ = K⁻¹ + βT,   m\ = (P\)⁻¹ βt,     β = (N - 1)/N   (q divided by one g).

In the whitened coordinates v = L⁻¹u (L = chol K) these are the engine's
:class:`~gpflow_ep.ep.whitened.WhitenedGaussian` with Λ = LᵀTL and η = Lᵀt (β-scaled for the cavity),
and its ``log_normaliser_ratio`` is φ(q) - φ(prior) of Bui et al. 2016, App. E, Eq. (19): with
φ = -½ log|P| + ½ tᵀP⁻¹t, φ_prior = ½ log|K|, -½log|P| = ½log|K| - ½log|I + LᵀTL| and
tᵀP⁻¹t = ‖L_B⁻¹Lᵀt‖². The block's share of the energy (App. E, Eq. (18); the coefficients of φ sum to
zero, so the prior normaliser cancels) is

    (1 - N) φ_post + N φ_cav - φ_prior = Δ_post + N (Δ_cav - Δ_post),    Δ = φ - φ_prior,

written in the second form, which avoids the cancellation of two O(N) terms.

**The factor is a trainable parameter**, optimised by gradient together with the
hyper-parameters, as in the paper (Bui et al. 2016, §4.2) — an exception to the rest of the package, where
EP sites are state updated by moment matching, not parameters.
"""

from typing import Tuple

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import check_shapes
from gpflow import Module, Parameter
from gpflow.config import default_float

from ..ep.whitened import WhitenedGaussian
from ..validation import check_positive_int

__all__ = ["TiedFactor"]


def _cholesky_transform():
    return tfp.bijectors.FillScaleTriL(diag_bijector=tfp.bijectors.Exp(), diag_shift=None)


class TiedFactor(Module):
    """
    g(u)^N of one GP with M inducing outputs: T = R Rᵀ (``factor_cholesky`` R, [M, M]) and
    t (``factor_shift``, [M, 1]), for ``num_data`` = N data points.
    """

    def __init__(self, factor_cholesky, factor_shift, num_data: int, name=None):
        super().__init__(name=name)
        R = np.asarray(factor_cholesky, dtype=default_float())
        t = np.asarray(factor_shift, dtype=default_float())
        if R.ndim != 2 or R.shape[0] != R.shape[1] or not np.all(np.diag(R) > 0):
            raise ValueError("factor_cholesky must be a square lower-triangular matrix with a positive diagonal")
        if R.shape[0] == 0:
            raise ValueError(
                "factor_cholesky is empty: a tied factor needs at least one inducing point (a GP layer whose Z "
                "has no rows keeps its prior and learns nothing from the data)"
            )
        if t.shape != (R.shape[0], 1):
            raise ValueError(f"factor_shift must have shape [{R.shape[0]}, 1]; got {t.shape}")
        self.num_data = check_positive_int(num_data, "num_data")
        self.factor_cholesky = Parameter(np.tril(R), transform=_cholesky_transform(), name="factor_cholesky")
        self.factor_shift = Parameter(t, name="factor_shift")

    @property
    def removed_fraction(self) -> float:
        """β = (N - 1)/N: the cavity keeps N - 1 of the N copies of g."""
        return (self.num_data - 1.0) / self.num_data

    @check_shapes("L: [M, M]")
    def whitened(self, L, cavity: bool) -> WhitenedGaussian:
        """q(v) (``cavity=False``) or the cavity q\\(v) (``cavity=True``), v = L⁻¹u."""
        Lambda, eta = self._whitened_natural(L)
        scale = self.removed_fraction if cavity else 1.0
        return WhitenedGaussian(scale * Lambda, scale * eta)

    @check_shapes("L: [M, M]")
    def posterior_and_cavity(self, L) -> Tuple[WhitenedGaussian, WhitenedGaussian]:
        """q(v) and q\\(v) from one Λ = LᵀTL (the cavity's natural parameters are β times the posterior's)."""
        Lambda, eta = self._whitened_natural(L)
        beta = self.removed_fraction
        return WhitenedGaussian(Lambda, eta), WhitenedGaussian(beta * Lambda, beta * eta)

    def _whitened_natural(self, L) -> Tuple[tf.Tensor, tf.Tensor]:
        """Λ = LᵀTL = (LᵀR)(LᵀR)ᵀ and η = Lᵀt."""
        LR = tf.matmul(L, self.factor_cholesky, transpose_a=True)
        return tf.matmul(LR, LR, transpose_b=True), tf.matmul(L, self.factor_shift, transpose_a=True)

    @check_shapes("L: [M, M]", "return: []")
    def energy_terms(self, L) -> tf.Tensor:
        """(1 - N) φ_post + N φ_cav - φ_prior (module docstring), given L = chol K."""
        return self.energy_terms_of(*self.posterior_and_cavity(L))

    def energy_terms_of(self, posterior: WhitenedGaussian, cavity: WhitenedGaussian) -> tf.Tensor:
        """The same from this factor's q(v) and cavity (:meth:`whitened`), already factorised."""
        post, cav = posterior.log_normaliser_ratio, cavity.log_normaliser_ratio
        return post + tf.cast(self.num_data, post.dtype) * (cav - post)
