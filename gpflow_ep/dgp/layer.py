r"""
One FITC layer of a DGP-AEP model and the moment propagation through it (Bui et al. 2016,
§3 and §5).

Layer l has D_l independent GP outputs f_{l,d}, each with inducing inputs Z_{l,d}, inducing
outputs u_{l,d} ~ N(0, K_{l,d}) and a tied factor (:class:`~gpflow_ep.dgp.TiedFactor`); its
output is h_{l,d} = f_{l,d}(h_{l-1}) + ε, ε ~ N(0, σ_l²) (the FITC conditional p(h | u, h_{l-1})
= N(c(h)ᵀu, r(h)), Bui et al. 2016, §3). Under a Gaussian input h_{l-1} ~ N(μ, diag s) and a Gaussian
q(u_{l,d}) = N(m, V) (the cavity during training, the posterior for prediction), the output's
mean and variance are exact (Bui et al. 2016, §5 and App. D, Eqs. (1)–(7)). This corrects §5's
v_{2|h_1}, printed with the first layer's cavity covariance V_1^{\1}: each layer's conditional
variance uses its own q(u_l), as the B of the same section does (and App. D, Eq. (3) reads
E_{q(h_{l-1})}, Eq. (5) defines Ψ₂):

    m = ψ₁ᵀA,   A = K⁻¹m,
    v = σ_l² + [ψ₀ - tr(K⁻¹Ψ₂)] + tr(K⁻¹VK⁻¹Ψ₂) + [AᵀΨ₂A - m²],

assembled term by term, each term non-negative in exact arithmetic and clipped at 0 (the
expected FITC variance, the variance from q(u), the variance of the conditional mean; equal to
σ² + ψ₀ + tr(BΨ₂) - m² with B = K⁻¹(V + mmᵀ)K⁻¹ - K⁻¹). With v = L⁻¹u and q(v) =
N(μ_v, B_v⁻¹) (:class:`~gpflow_ep.ep.whitened.WhitenedGaussian`): A = L⁻ᵀμ_v and K⁻¹VK⁻¹ = GᵀG with
G = L_B⁻¹L⁻¹. For a deterministic input (the first layer, s = 0) Ψ₂ = kkᵀ and the moments are the
whitened SVGP predictive of the engine's ``WhitenedGaussian.predict`` plus σ_l² (Bui et al. 2016, §5, m_1 and v_1).
The outputs are returned as independent Gaussians: their cross-covariances are dropped
(Bui et al. 2016, §5; App. G describes the full-covariance alternative).
"""

from typing import List, NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow import Module, Parameter, covariances
from gpflow.config import default_jitter
from gpflow.inducing_variables import InducingPoints
from gpflow.kernels import SquaredExponential
from gpflow.utilities import positive

from ..ep.whitened import WhitenedGaussian, eye_like
from .psi import psi2_traces, psi_statistics
from .tied_factor import TiedFactor

__all__ = ["AEPLayer"]


class AEPLayer(Module):
    """
    A FITC GP layer with ``len(kernels)`` outputs.

    :param kernels: one ``SquaredExponential`` per output; pass the same object D_l times to share
        the hyper-parameters across the outputs (the reference code), distinct ones to separate them
        (the paper's text).
    :param inducing_variables: one ``InducingPoints`` (or [M, Q] array) per output; the same object
        D_l times ties them.
    :param factors: one :class:`~gpflow_ep.dgp.TiedFactor` per output.
    :param noise_variance: σ_l², the layer's output noise (a positive ``Parameter``); ``None`` for a
        layer without noise (the output layer, whose noise is the likelihood's).
    :param jitter: added to K_uu (default ``gpflow.config.default_jitter()``, 1e-6 as in the
        authors' reference code, github.com/thangbui/deepGP_approxEP).
    """

    def __init__(
        self,
        kernels: Sequence[SquaredExponential],
        inducing_variables: Sequence,
        factors: Sequence[TiedFactor],
        noise_variance: Optional[float] = None,
        *,
        jitter: Optional[float] = None,
        name=None,
    ):
        super().__init__(name=name)
        if not (len(kernels) == len(inducing_variables) == len(factors)) or len(kernels) == 0:
            raise ValueError(
                "kernels, inducing_variables and factors must have one entry per output of the layer; got "
                f"{len(kernels)}, {len(inducing_variables)} and {len(factors)}"
            )
        for k in kernels:
            if not isinstance(k, SquaredExponential):
                raise ValueError(
                    "kernels: DGP-AEP needs SquaredExponential kernels (closed-form Psi statistics); "
                    f"got {type(k).__name__}"
                )
        self.kernels = list(kernels)
        self.inducing_variables = [
            z if isinstance(z, InducingPoints) else InducingPoints(z) for z in inducing_variables
        ]
        for z, f in zip(self.inducing_variables, factors):
            if z.num_inducing != f.factor_shift.shape[0]:
                raise ValueError(
                    f"factors: a factor of size {f.factor_shift.shape[0]} for {z.num_inducing} inducing inputs"
                )
        self.factors = list(factors)
        if noise_variance is None:
            self.noise_variance = None
        else:
            if not noise_variance > 0:
                raise ValueError(f"noise_variance must be positive (or None); got {noise_variance}")
            self.noise_variance = Parameter(noise_variance, transform=positive(), name="noise_variance")
        self.jitter = default_jitter() if jitter is None else float(jitter)

    @property
    def num_outputs(self) -> int:
        return len(self.kernels)

    @property
    def input_dim(self) -> int:
        return int(self.inducing_variables[0].Z.shape[-1])

    def blocks(self) -> List["Block"]:
        """chol K_uu, q(v) and the cavity of every output, computed once for a forward pass."""
        out = []
        for kernel, inducing, factor in zip(self.kernels, self.inducing_variables, self.factors):
            L = tf.linalg.cholesky(covariances.Kuu(inducing, kernel, jitter=self.jitter))
            out.append(Block(L, *factor.posterior_and_cavity(L)))
        return out

    @check_shapes("return: []")
    def energy_terms(self, blocks: Optional[List["Block"]] = None) -> tf.Tensor:
        """Σ_d [(1 - N) φ_post + N φ_cav - φ_prior] of the layer's GPs (Bui et al. 2016, App. E, Eq. (18))."""
        blocks = self.blocks() if blocks is None else blocks
        return tf.add_n([f.energy_terms_of(b.posterior, b.cavity) for f, b in zip(self.factors, blocks)])

    @check_shapes("mean: [N, Q]", "var: [N, Q]", "return[0]: [N, D]", "return[1]: [N, D]")
    def propagate(
        self, mean, var, *, cavity: bool, deterministic: bool = False, blocks: Optional[List["Block"]] = None
    ):
        """
        Mean and variance [N, D_l] of the layer's outputs under the input N(``mean``, diag ``var``)
        and the cavity (``cavity=True``) or the posterior of each u (module docstring). With
        ``deterministic`` the input is a point (``var`` is ignored; the first layer). ``blocks``
        (:meth:`blocks`) may be passed to share them with :meth:`energy_terms`.
        """
        blocks = self.blocks() if blocks is None else blocks
        means: List[tf.Tensor] = []
        variances: List[tf.Tensor] = []
        for kernel, inducing, block in zip(self.kernels, self.inducing_variables, blocks):
            q = block.cavity if cavity else block.posterior
            if deterministic:
                a = tf.linalg.triangular_solve(block.L, covariances.Kuf(inducing, kernel, mean))
                m, v = q.predict(a, kernel(mean, full_cov=False))
                v = tf.maximum(v, 0.0)
            else:
                m, v = _gaussian_input_moments(kernel, mean, var, inducing.Z, block.L, q)
            means.append(m)
            variances.append(v)
        m, v = tf.stack(means, axis=-1), tf.stack(variances, axis=-1)
        if self.noise_variance is not None:
            v = v + self.noise_variance
        return m, v


class Block(NamedTuple):
    """One output's L = chol K_uu and its q(v) and cavity (v = L⁻¹u)."""

    L: tf.Tensor
    posterior: WhitenedGaussian
    cavity: WhitenedGaussian


def _gaussian_input_moments(kernel, mean, var, Z, L, q):
    """m [N], v [N] of one output under a Gaussian input, without the layer noise (module docstring)."""
    psi = psi_statistics(kernel, mean, var, Z)
    L_inv = tf.linalg.triangular_solve(L, eye_like(L))
    A = tf.matmul(L_inv, q.mean, transpose_a=True)  # K⁻¹m = L⁻ᵀμ_v, [M, 1]
    G = q.half_solve(L_inv)  # L_B⁻¹L⁻¹, GᵀG = K⁻¹VK⁻¹
    m = tf.linalg.matvec(psi.psi1, A[:, 0])
    forms = tf.stack(
        [
            tf.matmul(L_inv, L_inv, transpose_a=True),  # K⁻¹
            tf.matmul(G, G, transpose_a=True),
            tf.matmul(A, A, transpose_b=True),
        ]
    )
    traces = psi2_traces(psi.psi2, forms)  # [N, 3]
    fitc = psi.psi0 - traces[:, 0]
    of_mean = traces[:, 2] - tf.square(m)
    v = tf.maximum(fitc, 0.0) + tf.maximum(traces[:, 1], 0.0) + tf.maximum(of_mean, 0.0)
    return m, v


def random_factor(M: int, scale: float, num_data: int, rng: np.random.Generator) -> TiedFactor:
    """A tied factor with R's log-diagonal, off-diagonal and t drawn N(0, scale²) (as the authors' reference code)."""
    R = np.tril(scale * rng.standard_normal((M, M)), -1) + np.diag(np.exp(scale * rng.standard_normal(M)))
    return TiedFactor(R, scale * rng.standard_normal((M, 1)), num_data)
