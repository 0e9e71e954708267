r"""
The tied ("average data") factors of DGP-AEP for the w GPs of one layer (Bui et al. 2016, §4.2).

All N data factors of GP d share one Gaussian g_d(u_d): q(u_d) ∝ p(u_d) g_d(u_d)^N, p(u_d) =
N(0, K_d). In the N-scaled natural parameters of the authors' reference code
(github.com/thangbui/deepGP_approxEP), with T_d = R_d R_dᵀ positive semi-definite (R_d
lower-triangular with a positive diagonal, so T_d is valid by construction) and a vector t_d:

    posterior  P = K⁻¹ + T,     m = P⁻¹t,
    cavity     P\ = K⁻¹ + βT,   m\ = (P\)⁻¹ βt,     β = (N - 1)/N   (q divided by one g).

In the whitened coordinates v = L⁻¹u (L = chol K) q(v) has precision B = I + Λ, Λ = LᵀTL =
GGᵀ with G = LᵀR, and mean B⁻¹η, η = Lᵀt; the cavity has B\ = I + βΛ and mean (B\)⁻¹βη. Both B
have eigenvalues ≥ 1, so their inverses, the covariances S = B⁻¹ (:class:`WhitenedMoments`), are
well conditioned and formed explicitly. With φ = -½ log|P| + ½ tᵀP⁻¹t (Bui et al. 2016, App. E,
Eq. (19)), φ_prior = ½ log|K|, -½log|P| = ½log|K| - ½log|B| and tᵀP⁻¹t = ηᵀB⁻¹η,

    Δ = φ - φ_prior = -½ log|B| + ½ hᵀB⁻¹h     (h = η for q, βη for the cavity),

and a GP's share of the energy (App. E, Eq. (18); the coefficients of φ sum to zero, so the prior
normaliser cancels) is

    (1 - N) φ_post + N φ_cav - φ_prior = Δ_post + N (Δ_cav - Δ_post),

written in the second form, which avoids the cancellation of two O(N) terms.

**Gradient.** :meth:`TiedFactor.energy_and_cavity`, the training pass, has its gradient written out
rather than differentiated through the two Cholesky factorisations: with μ = Sh,

    ∂Δ/∂B = -½(S + μμᵀ),  ∂Δ/∂h = μ,  and for the cavity's outputs μ\ = S\βη, S\ = (B\)⁻¹:
    ∂/∂B\ [⟨μ̄, μ\⟩ + ⟨S̄, S\⟩] = -S\μ̄μ\ᵀ - S\S̄S\,   ∂/∂η ⟨μ̄, μ\⟩ = βS\μ̄,

then Λ̄ = B̄ + βB̄\, Ḡ = (Λ̄ + Λ̄ᵀ)G, R̄ = LḠ, t̄ = Lη̄ and L̄ = RḠᵀ + tη̄ᵀ: O(M³) per GP in products
with the explicit S, about half the work of differentiating the factorisations.

The w GPs of a layer are one batch: R [w, M, M] and t [w, M, 1] are one ``Parameter`` each, and
every matrix below carries the leading dimension w (the layer's L may be one [1, M, M] block
shared by all w GPs, when they share the kernel and the inducing inputs; it broadcasts).

**The factors are trainable parameters**, optimised by gradient together with the
hyper-parameters, as in the paper (Bui et al. 2016, §4.2) — an exception to the rest of the package, where
EP sites are state updated by moment matching, not parameters.
"""

from typing import NamedTuple, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import check_shapes
from gpflow import Module, Parameter
from gpflow.config import default_float

from ..ep.whitened import eye_like
from ..validation import check_positive_int

__all__ = ["TiedFactor", "WhitenedMoments", "random_factor"]


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
    def moments(self, L, cavity: bool) -> "WhitenedMoments":
        """Mean [w, M, 1] and covariance [w, M, M] of q(v) (``cavity=False``) or the cavity q\\(v), v = L⁻¹u."""
        Lambda, eta = self._whitened_natural(tf.convert_to_tensor(L, dtype=default_float()))
        scale = self.removed_fraction if cavity else 1.0
        S = _inverse(eye_like(Lambda) + scale * Lambda)
        return WhitenedMoments(scale * tf.matmul(S, eta), S)

    def _whitened_natural(self, L) -> Tuple[tf.Tensor, tf.Tensor]:
        """Λ = LᵀTL = (LᵀR)(LᵀR)ᵀ and η = Lᵀt, [w, M, M] and [w, M, 1] (L [w or 1, M, M] broadcasts)."""
        LR = tf.matmul(L, self.factor_cholesky, transpose_a=True)
        return tf.matmul(LR, LR, transpose_b=True), tf.matmul(L, self.factor_shift, transpose_a=True)

    @check_shapes("L: [broadcast batch..., M, M]", "return: []")
    def energy_terms(self, L) -> tf.Tensor:
        """Σ_d (1 - N) φ_post + N φ_cav - φ_prior over the w GPs (module docstring), given L = chol K."""
        return self.energy_and_cavity(L)[0]

    @check_shapes("L: [broadcast batch..., M, M]", "return[0]: []")
    def energy_and_cavity(self, L) -> Tuple[tf.Tensor, "WhitenedMoments"]:
        """
        The energy terms (:meth:`energy_terms`) and the cavity's moments (:meth:`moments`), with the gradient
        of the module docstring: what a training pass needs of the factor.
        """
        L = tf.convert_to_tensor(L, dtype=default_float())
        energy, mean, covariance = _energy_and_cavity(
            L, tf.convert_to_tensor(self.factor_cholesky), tf.convert_to_tensor(self.factor_shift),
            self.removed_fraction, self.num_data,
        )
        return energy, WhitenedMoments(mean, covariance)


class WhitenedMoments(NamedTuple):
    """The mean [w, M, 1] and covariance [w, M, M] of the w GPs' q(v) or cavity, v = L⁻¹u."""

    mean: tf.Tensor
    covariance: tf.Tensor


def _inverse(B):
    """B⁻¹ of symmetric positive definite [..., M, M] matrices from their Cholesky factors."""
    return tf.linalg.cholesky_solve(tf.linalg.cholesky(B), eye_like(B))


def _energy_and_cavity(L, R, t, beta: float, num_data: int):
    """Σ_d [Δ_post + N(Δ_cav - Δ_post)], the cavity's mean and covariance, and their gradient (module docstring)."""

    @tf.custom_gradient
    def energy_and_cavity(L, R, t):
        G = tf.matmul(L, R, transpose_a=True)  # [w, M, M]
        eta = tf.matmul(L, t, transpose_a=True)  # [w, M, 1]
        Lambda = tf.matmul(G, G, transpose_b=True)
        eye = eye_like(Lambda)
        chol, chol_c = tf.linalg.cholesky(eye + Lambda), tf.linalg.cholesky(eye + beta * Lambda)
        S_c = tf.linalg.cholesky_solve(chol_c, eye)
        mean_c = beta * tf.matmul(S_c, eta)
        half = tf.linalg.triangular_solve(chol, eta)  # L_B⁻¹η: ηᵀB⁻¹η = ‖L_B⁻¹η‖²
        post = -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol))) + 0.5 * tf.reduce_sum(tf.square(half))
        cav = -tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol_c))) + 0.5 * beta * tf.reduce_sum(eta * mean_c)
        energy = post + float(num_data) * (cav - post)

        def grad(energy_bar, mean_bar, S_bar):
            energy_bar = tf.zeros_like(energy) if energy_bar is None else energy_bar
            c_post, c_cav = (1.0 - num_data) * energy_bar, num_data * energy_bar
            S = tf.linalg.cholesky_solve(chol, eye)
            mean = tf.matmul(S, eta)
            B_bar = -0.5 * c_post * (S + tf.matmul(mean, mean, transpose_b=True))
            B_c_bar = -0.5 * c_cav * (S_c + tf.matmul(mean_c, mean_c, transpose_b=True))
            eta_bar = c_post * mean + beta * c_cav * mean_c
            if mean_bar is not None:
                S_mean_bar = tf.matmul(S_c, mean_bar)
                B_c_bar -= tf.matmul(S_mean_bar, mean_c, transpose_b=True)
                eta_bar += beta * S_mean_bar
            if S_bar is not None:
                B_c_bar -= tf.matmul(S_c, tf.matmul(S_bar, S_c))
            Lambda_bar = B_bar + beta * B_c_bar
            G_bar = tf.matmul(Lambda_bar + tf.linalg.matrix_transpose(Lambda_bar), G)
            R_bar = tf.matmul(L, G_bar)
            t_bar = tf.matmul(L, eta_bar)
            L_bar = tf.matmul(R, G_bar, transpose_b=True) + tf.matmul(t, eta_bar, transpose_b=True)
            if L.shape.rank == 2 or L.shape[0] == 1:  # one L for the w GPs
                L_bar = tf.reduce_sum(L_bar, axis=0, keepdims=L.shape.rank == 3)
            return L_bar, R_bar, t_bar

        return (energy, mean_c, S_c), grad

    return energy_and_cavity(L, R, t)


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
