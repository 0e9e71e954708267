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
σ² + ψ₀ + tr(BΨ₂) - m² with B = K⁻¹(V + mmᵀ)K⁻¹ - K⁻¹). With v = L⁻¹u and q(v) = N(μ_v, S)
(:class:`~gpflow_ep.dgp.WhitenedMoments`): A = L⁻ᵀμ_v and K⁻¹VK⁻¹ = L⁻ᵀSL⁻¹. For a deterministic input
(the first layer, s = 0) Ψ₂ = kkᵀ and the moments are the whitened SVGP predictive, with a = L⁻¹k,
m = aᵀμ_v and v = k(x, x) - aᵀa + aᵀSa, plus σ_l² (Bui et al. 2016, §5, m_1 and v_1).
The outputs are returned as independent Gaussians: their cross-covariances are dropped
(Bui et al. 2016, §5; App. G describes the full-covariance alternative).

**Structure.** The kernel and the inducing inputs are GPflow's multi-output objects, through GPflow's
``Kuu``/``Kuf`` dispatch (:mod:`gpflow_ep.covariances`): a ``SharedIndependent`` kernel (one kernel for
the layer's D_l GPs, the authors' reference code, github.com/thangbui/deepGP_approxEP) or a
``SeparateIndependent`` one (a kernel per GP, the paper's text, §8.1), with
``SharedIndependentInducingVariables`` (one Z for all, the reference code's ``zu_tied``) or
``SeparateIndependentInducingVariables`` (a Z per GP, its default). The D_l GPs are one batch: every
matrix carries a leading dimension, D_l for the GPs' own q(u), and 1 for K_uu, its Cholesky factor,
K_uf and the Psi statistics when the kernel and the inducing inputs are both shared, which are then
computed once per layer and broadcast against the D_l posteriors.
"""

from typing import NamedTuple, Optional, Sequence, Tuple

import tensorflow as tf
from check_shapes import check_shapes
from gpflow import Module, Parameter
from gpflow.config import default_jitter
from gpflow.inducing_variables import InducingPoints, SharedIndependentInducingVariables
from gpflow.kernels import Kernel, SharedIndependent, SquaredExponential
from gpflow.utilities import positive

from ..covariances import block_Kff, block_Kuf, block_Kuu, multioutput_inducing_variable, multioutput_kernel
from ..ep.whitened import eye_like
from .psi import psi_traces
from .tied_factor import TiedFactor, WhitenedMoments

__all__ = ["AEPLayer", "LayerBlocks", "cholesky"]


class AEPLayer(Module):
    """
    A FITC GP layer with w = ``factor.num_units`` outputs (module docstring).

    :param kernel: GPflow's ``SharedIndependent`` (one ``SquaredExponential`` for the w GPs, the
        reference code's default) or ``SeparateIndependent`` (one per GP, the paper's text); or one plain
        ``SquaredExponential`` (shared) or a sequence of w (separate).
    :param inducing_variable: GPflow's ``SharedIndependentInducingVariables`` (one Z for the w GPs) or
        ``SeparateIndependentInducingVariables`` (one per GP, each with the same M); or one
        ``InducingPoints`` (shared), an [M, Q] array (w trainable copies) or a sequence of w arrays or
        ``InducingPoints`` (separate).
    :param factor: the w GPs' tied factors, one :class:`~gpflow_ep.dgp.TiedFactor` of w units.
    :param noise_variance: σ_l², the layer's output noise (a positive ``Parameter``, shared by its
        outputs); ``None`` for a layer without noise (the output layer, whose noise is the likelihood's).
    :param jitter: added to K_uu (default ``gpflow.config.default_jitter()``, 1e-6 as in the
        authors' reference code).
    """

    def __init__(
        self,
        kernel,
        inducing_variable,
        factor: TiedFactor,
        noise_variance: Optional[float] = None,
        *,
        jitter: Optional[float] = None,
        name=None,
    ):
        super().__init__(name=name)
        if not isinstance(factor, TiedFactor):
            raise ValueError(
                f"factor must be one TiedFactor for the layer's outputs (w units); got {type(factor).__name__}"
            )
        w = factor.num_units
        self.kernel = multioutput_kernel(kernel, w)
        self.inducing_variable = multioutput_inducing_variable(inducing_variable, w)
        self.factor = factor
        for k in self.kernels:
            if not isinstance(k, SquaredExponential):
                raise ValueError(
                    "kernel: DGP-AEP needs SquaredExponential kernels (closed-form Psi statistics); "
                    f"got {type(k).__name__}"
                )
        if self.num_inducing != factor.num_inducing:
            raise ValueError(f"factor: a factor of size {factor.num_inducing} for {self.num_inducing} inducing inputs")
        if noise_variance is None:
            self.noise_variance = None
        else:
            if not noise_variance > 0:
                raise ValueError(f"noise_variance must be positive (or None); got {noise_variance}")
            self.noise_variance = Parameter(noise_variance, transform=positive(), name="noise_variance")
        self.jitter = default_jitter() if jitter is None else float(jitter)

    # ---------------------------------------------------------------- structure

    @property
    def num_outputs(self) -> int:
        """w, the layer's GPs."""
        return self.factor.num_units

    @property
    def num_inducing(self) -> int:
        """M, the inducing inputs of each GP."""
        return int(self.inducing_variables[0].Z.shape[0])

    @property
    def input_dim(self) -> int:
        return int(self.inducing_variables[0].Z.shape[-1])

    @property
    def shares_kernel(self) -> bool:
        """One kernel for the w GPs (``SharedIndependent``)."""
        return isinstance(self.kernel, SharedIndependent)

    @property
    def shares_inducing(self) -> bool:
        """One set of inducing inputs for the w GPs (``SharedIndependentInducingVariables``)."""
        return isinstance(self.inducing_variable, SharedIndependentInducingVariables)

    @property
    def kernels(self) -> Sequence[Kernel]:
        """The kernel of each of the w GPs (the same object w times when shared)."""
        if self.shares_kernel:
            return [self.kernel.kernel] * self.num_outputs
        return list(self.kernel.kernels)

    @property
    def inducing_variables(self) -> Sequence[InducingPoints]:
        """The inducing inputs of each of the w GPs (the same object w times when shared)."""
        if self.shares_inducing:
            return [self.inducing_variable.inducing_variable] * self.num_outputs
        return list(self.inducing_variable.inducing_variable_list)

    def inducing_inputs(self) -> tf.Tensor:
        """Z, [M, Q] when shared, else [w, M, Q]."""
        if self.shares_inducing:
            return tf.convert_to_tensor(self.inducing_variable.inducing_variable.Z)
        return tf.stack([iv.Z for iv in self.inducing_variable.inducing_variable_list])

    # ---------------------------------------------------------------- algebra

    def blocks(self, cavity: bool = True) -> "LayerBlocks":
        """
        chol K_uu ([1, M, M] when shared, else [w, M, M]) and the w GPs' cavity with the energy terms
        (``cavity=True``, a training pass) or their q(v) (``cavity=False``, prediction), once per pass.
        """
        L = cholesky(block_Kuu(self.inducing_variable, self.kernel, jitter=self.jitter))
        if cavity:
            energy, moments = self.factor.energy_and_cavity(L)
            return LayerBlocks(L, moments, energy, True)
        return LayerBlocks(L, self.factor.moments(L, cavity=False), None, False)

    @check_shapes("return: []")
    def energy_terms(self, blocks: Optional["LayerBlocks"] = None) -> tf.Tensor:
        """Σ_d [(1 - N) φ_post + N φ_cav - φ_prior] of the layer's GPs (Bui et al. 2016, App. E, Eq. (18))."""
        blocks = self.blocks() if blocks is None else blocks
        if blocks.energy is None:
            raise ValueError("blocks: the energy terms come with the cavity's blocks (blocks(cavity=True))")
        return blocks.energy

    @check_shapes("mean: [N, Q]", "var: [N, Q]", "return[0]: [N, D]", "return[1]: [N, D]")
    def propagate(
        self, mean, var, *, cavity: bool, deterministic: bool = False, blocks: Optional["LayerBlocks"] = None
    ):
        """
        Mean and variance [N, D_l] of the layer's outputs under the input N(``mean``, diag ``var``)
        and the cavity (``cavity=True``) or the posterior of each u (module docstring). With
        ``deterministic`` the input is a point (``var`` is ignored; the first layer). ``blocks``
        (:meth:`blocks` with the same ``cavity``) may be passed to share them with :meth:`energy_terms`.
        """
        blocks = self.blocks(cavity) if blocks is None else blocks
        if blocks.cavity != cavity:
            raise ValueError(f"blocks: made with cavity={blocks.cavity}, used with cavity={cavity}")
        if deterministic:
            m, v = self._point_input_moments(mean, blocks.L, blocks.moments)
        else:
            m, v = self._gaussian_input_moments(mean, var, blocks.L, blocks.moments)
        if self.noise_variance is not None:
            v = v + self.noise_variance
        return m, v

    def _point_input_moments(self, X, L, q: WhitenedMoments) -> Tuple[tf.Tensor, tf.Tensor]:
        """
        m, v [N, w] at points X, without the layer noise: the whitened SVGP predictive of every GP,
        a = L⁻¹k, m = aᵀμ_v, v = k(x, x) - aᵀa + aᵀS a (S = Cov[v]).
        """
        A = tf.linalg.triangular_solve(L, block_Kuf(self.inducing_variable, self.kernel, X))  # [1 or w, M, N]
        if A.shape[0] == 1:  # one A for the w GPs: 2-D products [w, M] × [M, N] and [wM, M] × [M, N]
            w, M = self.num_outputs, self.num_inducing
            m = tf.matmul(q.mean[..., 0], A[0])  # [w, N]
            SA = tf.reshape(tf.matmul(tf.reshape(q.covariance, [w * M, M]), A[0]), [w, M, -1])
        else:
            m = tf.matmul(q.mean, A, transpose_a=True)[:, 0, :]
            SA = tf.matmul(q.covariance, A)
        v = block_Kff(self.kernel, X) - tf.reduce_sum(tf.square(A), axis=-2) + tf.reduce_sum(A * SA, axis=-2)
        return tf.transpose(m), tf.transpose(tf.maximum(v, 0.0))

    def _gaussian_input_moments(self, mean, var, L, q: WhitenedMoments) -> Tuple[tf.Tensor, tf.Tensor]:
        """m, v [N, w] under Gaussian inputs, without the layer noise (module docstring)."""
        L_inv = tf.linalg.triangular_solve(L, eye_like(L))  # [1 or w, M, M]
        A = tf.matmul(L_inv, q.mean, transpose_a=True)  # K⁻¹m = L⁻ᵀμ_v, [w, M, 1]
        K_inv = tf.matmul(L_inv, L_inv, transpose_a=True)
        GG = tf.matmul(L_inv, tf.matmul(q.covariance, L_inv), transpose_a=True)  # K⁻¹VK⁻¹ = L⁻ᵀSL⁻¹, [w, M, M]
        AA = tf.matmul(A, A, transpose_b=True)
        if L.shape[0] == 1:  # one Ψ₂ for all GPs: one pass over it for K⁻¹ and every GP's two matrices
            w, kernel, Z = self.num_outputs, self.kernels[0], self.inducing_variables[0].Z
            psi = psi_traces(kernel, mean, var, Z, tf.concat([K_inv, GG, AA], axis=0))  # traces [N, 1 + 2w]
            m = tf.matmul(psi.psi1, A[..., 0], transpose_b=True)  # [N, w]
            fitc = psi.psi0[:, None] - psi.traces[:, :1]
            from_q, of_mean = psi.traces[:, 1 : 1 + w], psi.traces[:, 1 + w :] - tf.square(m)
        else:  # a Ψ₂ per GP, each against its own three matrices
            forms = tf.stack([K_inv * tf.ones_like(GG), GG, AA], axis=1)  # [w, 3, M, M]
            psi = psi_traces(self.kernel, mean, var, self.inducing_inputs(), forms)
            traces = tf.transpose(psi.traces, [1, 0, 2])  # [N, w, 3]
            m = tf.transpose(tf.matmul(psi.psi1, A)[..., 0])  # [N, w]
            fitc = tf.transpose(psi.psi0) - traces[..., 0]
            from_q, of_mean = traces[..., 1], traces[..., 2] - tf.square(m)
        v = tf.maximum(fitc, 0.0) + tf.maximum(from_q, 0.0) + tf.maximum(of_mean, 0.0)
        return m, v


@tf.custom_gradient
def cholesky(K):
    """
    L = chol K (``tf.linalg.cholesky``) with the gradient K̄ = ½(X + Xᵀ), X = L⁻ᵀΦ(LᵀL̄)L⁻¹ (Φ: the lower
    triangle with half the diagonal; Murray 2016, "Differentiation of the Cholesky decomposition") by two
    triangular solves, where TensorFlow's forms L⁻¹ and multiplies by it (about 4M³ operations instead of 7M³).
    """
    L = tf.linalg.cholesky(K)

    def grad(L_bar):
        P = tf.linalg.band_part(tf.matmul(L, L_bar, transpose_a=True), -1, 0)
        P = P - 0.5 * tf.linalg.diag(tf.linalg.diag_part(P))
        Y = tf.linalg.triangular_solve(L, P, adjoint=True)  # L⁻ᵀP
        X = tf.linalg.triangular_solve(L, tf.linalg.matrix_transpose(Y), adjoint=True)  # (L⁻ᵀP L⁻¹)ᵀ
        return 0.5 * (X + tf.linalg.matrix_transpose(X))

    return L, grad


class LayerBlocks(NamedTuple):
    """
    A layer's L = chol K_uu ([1, M, M] when shared, else [w, M, M]) and its GPs' cavity (``cavity``) or q(v)
    (v = L⁻¹u), with the energy terms when it is the cavity's.
    """

    L: tf.Tensor
    moments: WhitenedMoments
    energy: Optional[tf.Tensor]
    cavity: bool
