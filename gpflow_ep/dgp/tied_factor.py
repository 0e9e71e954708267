r"""
The tied ("average data") factors of DGP-AEP for the w GPs of one layer (Bui et al. 2016, §4.2).

All N data factors of GP d share one Gaussian g_d(u_d): q(u_d) ∝ p(u_d) g_d(u_d)^N, p(u_d) =
N(0, K_d). In the N-scaled natural parameters of the authors' reference code
(github.com/thangbui/deepGP_approxEP), with T_d = R_d R_dᵀ positive semi-definite (R_d
lower-triangular with a positive diagonal, so T_d is valid by construction) and a vector t_d:

    posterior  P = K⁻¹ + T,     m = P⁻¹t,
    cavity     P\ = K⁻¹ + βT,   m\ = (P\)⁻¹ βt,     β = (N - 1)/N   (q divided by one g).

In the whitened coordinates v = L⁻¹u (L = chol K) these are the engine's
:class:`~gpflow_ep.ep.WhitenedGaussian` with Λ = LᵀTL and η = Lᵀt (β-scaled for the cavity),
and its ``log_normaliser_ratio`` is φ(q) - φ(prior) of Bui et al. 2016, App. E, Eq. (19): with
φ = -½ log|P| + ½ tᵀP⁻¹t, φ_prior = ½ log|K|, -½log|P| = ½log|K| - ½log|I + LᵀTL| and
tᵀP⁻¹t = ‖L_B⁻¹Lᵀt‖². A GP's share of the energy (App. E, Eq. (18); the coefficients of φ sum to
zero, so the prior normaliser cancels) is

    (1 - N) φ_post + N φ_cav - φ_prior = Δ_post + N (Δ_cav - Δ_post),    Δ = φ - φ_prior,

written in the second form, which avoids the cancellation of two O(N) terms.

The w GPs of a layer are one batch: R [w, M, M] and t [w, M, 1] are one ``Parameter`` each, and
every matrix below carries the leading dimension w (the layer's L may be one [1, M, M] block
shared by all w GPs, when they share the kernel and the inducing inputs; it broadcasts).

**The factors are trainable parameters**, optimised by gradient together with the
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

from ..ep import WhitenedGaussian
from ..validation import check_positive_int

__all__ = ["TiedFactor", "random_factor"]


def _cholesky_transform():
    return tfp.bijectors.FillScaleTriL(diag_bijector=tfp.bijectors.Exp(), diag_shift=None)


class TiedFactor(Module):
    """
    g(u)^N of a layer's w GPs with M inducing outputs each: T_d = R_d R_dᵀ (``factor_cholesky`` R,
    [w, M, M]) and t_d (``factor_shift``, [w, M, 1]), for ``num_data`` = N data points. An [M, M]
    R and an [M, 1] t are one GP (w = 1).
    """

    def __init__(self, factor_cholesky, factor_shift, num_data: int, name=None):
        super().__init__(name=name)
        R = np.asarray(factor_cholesky, dtype=default_float())
        t = np.asarray(factor_shift, dtype=default_float())
        if R.ndim == 2:
            R, t = R[None], t[None]
        if R.ndim != 3 or R.shape[-1] != R.shape[-2]:
            raise ValueError(
                f"factor_cholesky must be [w, M, M] (or [M, M]) lower-triangular matrices; got shape {R.shape}"
            )
        if R.shape[-1] == 0 or R.shape[0] == 0:
            raise ValueError(
                "factor_cholesky is empty: a tied factor needs at least one inducing point (a GP layer whose Z "
                "has no rows keeps its prior and learns nothing from the data)"
            )
        if not np.all(np.diagonal(R, axis1=-2, axis2=-1) > 0):
            raise ValueError("factor_cholesky must be lower-triangular matrices with a positive diagonal")
        if t.shape != R.shape[:-1] + (1,):
            expected = "[" + ", ".join(str(d) for d in R.shape[:-1]) + ", 1]"
            raise ValueError(f"factor_shift must have shape {expected}; got {np.asarray(factor_shift).shape}")
        self.num_data = check_positive_int(num_data, "num_data")
        self.factor_cholesky = Parameter(np.tril(R), transform=_cholesky_transform(), name="factor_cholesky")
        self.factor_shift = Parameter(t, name="factor_shift")

    @property
    def num_units(self) -> int:
        """w, the number of GPs (outputs of the layer) the factor is tied for."""
        return int(self.factor_cholesky.shape[0])

    @property
    def num_inducing(self) -> int:
        """M, the inducing outputs of each GP."""
        return int(self.factor_cholesky.shape[-1])

    @property
    def removed_fraction(self) -> float:
        """β = (N - 1)/N: the cavity keeps N - 1 of the N copies of g."""
        return (self.num_data - 1.0) / self.num_data

    @check_shapes("L: [broadcast batch..., M, M]")
    def whitened(self, L, cavity: bool) -> WhitenedGaussian:
        """q(v) (``cavity=False``) or the cavity q\\(v) (``cavity=True``) of every GP, v = L⁻¹u, [w, M, M]."""
        return self.posterior_and_cavity(L)[int(cavity)]

    @check_shapes("L: [broadcast batch..., M, M]")
    def posterior_and_cavity(self, L) -> Tuple[WhitenedGaussian, WhitenedGaussian]:
        """q(v) and q\\(v) from one Λ = LᵀTL (the cavity's natural parameters are β times the posterior's)."""
        Lambda, eta = self._whitened_natural(L)
        beta = self.removed_fraction
        return WhitenedGaussian(Lambda, eta), WhitenedGaussian(beta * Lambda, beta * eta)

    def _whitened_natural(self, L) -> Tuple[tf.Tensor, tf.Tensor]:
        """Λ = LᵀTL = (LᵀR)(LᵀR)ᵀ and η = Lᵀt, [w, M, M] and [w, M, 1] (L [w or 1, M, M] broadcasts)."""
        LR = tf.matmul(L, self.factor_cholesky, transpose_a=True)
        return tf.matmul(LR, LR, transpose_b=True), tf.matmul(L, self.factor_shift, transpose_a=True)

    @check_shapes("L: [broadcast batch..., M, M]", "return: []")
    def energy_terms(self, L) -> tf.Tensor:
        """Σ_d (1 - N) φ_post + N φ_cav - φ_prior over the w GPs (module docstring), given L = chol K."""
        return self.energy_terms_of(*self.posterior_and_cavity(L))

    def energy_terms_of(self, posterior: WhitenedGaussian, cavity: WhitenedGaussian) -> tf.Tensor:
        """The same from the GPs' q(v) and cavity (:meth:`posterior_and_cavity`), already factorised."""
        post, cav = posterior.log_normaliser_ratio, cavity.log_normaliser_ratio  # each summed over the w GPs
        return post + tf.cast(self.num_data, post.dtype) * (cav - post)


def random_factor(num_units: int, M: int, scale: float, num_data: int, rng: np.random.Generator) -> TiedFactor:
    """
    Tied factors of ``num_units`` GPs with R's log-diagonal, off-diagonal and t drawn N(0, scale²) (as the
    authors' reference code), one GP after the other.
    """
    Rs, ts = [], []
    for _ in range(num_units):
        Rs.append(np.tril(scale * rng.standard_normal((M, M)), -1) + np.diag(np.exp(scale * rng.standard_normal(M))))
        ts.append(scale * rng.standard_normal((M, 1)))
    return TiedFactor(np.stack(Rs), np.stack(ts), num_data)
