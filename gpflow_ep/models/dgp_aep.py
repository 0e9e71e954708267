r"""
DGPAEP: deep Gaussian processes trained with approximate expectation propagation
(Bui, Hernández-Lobato, Li, Hernández-Lobato & Turner, ICML 2016; below "Bui et al. 2016").

A deep GP of L FITC layers (:class:`~gpflow_ep.dgp.AEPLayer`), h_0 = x,
h_l = f_l(h_{l-1}) + ε_l, and a scalar likelihood p(y | h_L) (``gpflow.likelihoods.Gaussian`` for
regression, :class:`~gpflow_ep.likelihoods.Probit` for binary classification). Inference is over the
inducing outputs u only: q(u) ∝ p(u) g(u)^N with one tied factor g per GP (the tying of stochastic EP,
Li, Hernández-Lobato & Turner 2015; Bui et al. 2016, §4.2). The objective is the tied EP energy
(Bui et al. 2016, §4.2 and App. E, Eq. (18))

    F = Σ_{l,d} [(1 - N) φ_post + N φ_cav - φ_prior] + Σ_n log Z_n,
    log Z_n = log ∫ q\(u) p(y_n | u, x_n) du,

estimated on a minibatch B by replacing Σ_n log Z_n with (N/|B|) Σ_{b∈B} log Z_b (unbiased; Bui et
al. 2016, §6). log Z_n is intractable for L ≥ 2; it is approximated by propagating a Gaussian
through the layers under the cavity, each layer's output moments exact under a Gaussian input (Bui
et al. 2016, §5 and App. D, Eqs. (1)–(7); SE-ARD kernel expectations), and the final N(m_L, v_L)
passed to the engine's tilted moments of the likelihood (:func:`~gpflow_ep.ep.tilted_moments`, the
same closed forms as the EP models: log N(y; m_L, v_L + σ²) for a Gaussian, log Φ(y m_L/√(1 + v_L))
for the probit; Bui et al. 2016, App. D, Eq. (14) and App. F).
F is maximised over every parameter jointly by gradient (``training_loss`` = -F̂), with Adam (Bui et al.
2016, §8.1) and minibatches (§6), e.g. with :func:`gpflow_ep.training.fit`. F is an EP
approximation of the log evidence (Bui et al. 2016, §4.1), not a bound: it can exceed the exact
evidence of the FITC model.

Prediction runs the same forward pass with the posterior q(u) instead of the cavity and returns one
moment-matched Gaussian (Bui et al. 2016, §7).

DGPAEP is a ``BayesianModel`` and not an :class:`~gpflow_ep.models.EPModel`: it has no EP state to
run to a fixed point. The tied factors' natural parameters are ordinary trainable parameters,
learned jointly with the hyper-parameters by gradient on F (Bui et al. 2016, §4.2 and §8.1: at a
stationary point of F, q's moments are the average of the tilted moments, tied EP's fixed point),
so there are no sites, no ``run_ep``, no ``ep_state`` and no stored posterior to refresh: the
model is trained and used as GPflux's
``DeepGP`` is, with any GPflow optimiser or :func:`gpflow_ep.training.fit`.
"""

from typing import List, Optional, Sequence, Tuple

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import InputData, MeanAndVariance, RegressionData
from gpflow.config import default_float
from gpflow.likelihoods import Gaussian, Likelihood
from gpflow.models import BayesianModel

from ..dgp import AEPLayer, initial_layers
from ..ep import predictive_moments, tilted_moments
from ..validation import (
    check_data,
    check_layer_inputs,
    check_positive_int,
    check_prediction_inputs,
    check_training_data,
    require_float64,
)
from .ep_base import CheckedExternalDataTrainingLossMixin, not_converted

__all__ = ["DGPAEP"]


class DGPAEP(BayesianModel, CheckedExternalDataTrainingLossMixin):
    """
    A deep GP trained with approximate EP (module docstring); build one with :meth:`from_data`.

    :param layers: the FITC layers, first to last (:class:`~gpflow_ep.dgp.AEPLayer`); the last one
        has a single output.
    :param likelihood: a scalar GPflow likelihood with EP tilted moments (``Gaussian``, ``Probit``,
        ...); a Gaussian likelihood's variance is the observation noise, so the last layer
        normally has no noise of its own.
    :param num_data: N, the number of training points (it scales the data term and sets the cavity).

    The tied factors' natural parameters are trainable ``Parameter``s optimised by gradient with the
    hyper-parameters (Bui et al. 2016, §4.2), a documented exception to the rest of ``gpflow_ep``, where EP sites
    are state updated by moment matching.

    float64 only (GPflow's default): the constructor raises a ``ValueError`` when
    ``gpflow.config.default_float()`` is float32. The energy's two O(N) terms are combined as
    Δ_post + N(Δ_cav - Δ_post) to limit cancellation, but in float32 that difference (the cavity
    keeps (N - 1)/N of the tied factor) and the Cholesky factors of K_uu with the default jitter
    1e-6 lose most of their precision.
    """

    def __init__(self, layers: Sequence[AEPLayer], likelihood: Likelihood, num_data: int):
        require_float64(type(self).__name__)
        super().__init__()
        if len(layers) == 0:
            raise ValueError("layers: a DGP-AEP model needs at least one layer")
        for depth, (below, above) in enumerate(zip(layers[:-1], layers[1:])):
            if above.input_dim != below.num_outputs:
                raise ValueError(
                    f"layers: layer {depth + 1} takes {above.input_dim} inputs "
                    f"but layer {depth} has {below.num_outputs} outputs"
                )
        for depth, layer in enumerate(layers[1:], start=1):  # the first layer meets X in training_loss / fit
            below = f"layers[{depth - 1}]'s output"
            check_layer_inputs(layer, layers[depth - 1].num_outputs, f"layers[{depth}]", below, gaussian_inputs=True)
        if layers[-1].num_outputs != 1:
            raise ValueError(f"layers: the last layer must have one output; got {layers[-1].num_outputs}")
        self.num_data = check_positive_int(num_data, "num_data")
        for layer in layers:
            if layer.factor.num_data != self.num_data:
                raise ValueError(
                    f"layers: a tied factor for {layer.factor.num_data} data points in a model of num_data={num_data}"
                )
        self.layers = list(layers)
        self.likelihood = likelihood

    @classmethod
    def from_data(
        cls,
        X,
        Y,
        widths: Sequence[int],
        num_inducing: int,
        *,
        likelihood: Optional[Likelihood] = None,
        seed: int = 0,
        share_kernel: bool = True,
        tie_inducing: bool = False,
    ) -> "DGPAEP":
        """
        A model initialised as the authors' reference code (:mod:`gpflow_ep.dgp.initialisation`)
        for layer ``widths`` [D, D_1, ..., 1] with ``num_inducing`` inducing inputs per GP. The
        default likelihood is ``Gaussian(variance=0.01)`` (standardise Y first, as the paper does).

        The structure of every layer (GPflow's multi-output kernel and inducing variables,
        :class:`~gpflow_ep.dgp.AEPLayer`): by default one kernel per layer shared by its outputs
        (``SharedIndependent``) and one set of inducing inputs per output
        (``SeparateIndependentInducingVariables``), the authors' reference code's default.
        ``share_kernel=False`` gives each output its own kernel (``SeparateIndependent``, the paper's text,
        §8.1); ``tie_inducing=True`` gives a layer one set of inducing inputs
        (``SharedIndependentInducingVariables``, the reference code's ``zu_tied``). With both shared (the
        structure of GPflux's ``build_constant_input_dim_deep_gp``) each layer factorises one K_uu per
        evaluation for all its outputs.
        """
        likelihood = Gaussian(variance=0.01) if likelihood is None else likelihood
        X, Y = check_data((X, Y), likelihood)
        widths = [check_positive_int(w, "widths") for w in widths]
        if len(widths) < 2 or widths[0] != X.shape[1] or widths[-1] != 1:
            raise ValueError(
                f"widths must be [D={X.shape[1]}, ..., 1] (input dimension first, one output last); got {widths}"
            )
        num_inducing = check_positive_int(num_inducing, "num_inducing")
        layers = initial_layers(
            X, widths, num_inducing, X.shape[0], seed=seed, share_kernel=share_kernel, tie_inducing=tie_inducing
        )
        return cls(layers, likelihood, X.shape[0])

    @property
    def input_dim(self) -> int:
        """The number of input columns (the first layer's)."""
        return self.layers[0].input_dim

    # ---------------------------------------------------------------- data checks

    def validate_training_data(self, data) -> None:
        self._check_data(data)

    def _check_data(self, data) -> Tuple[tf.Tensor, tf.Tensor]:
        if not isinstance(data, (tuple, list)) or len(data) < 2:
            raise ValueError("data must be (X, Y) (a third entry, e.g. fit's site index, is ignored)")
        X, Y = data[0], data[1]
        if tf.executing_eagerly():
            X, Y = check_training_data(self, (X, Y))
        return tf.convert_to_tensor(X, default_float()), tf.cast(Y, default_float())

    def _check_inputs(self, Xnew) -> tf.Tensor:
        return check_prediction_inputs(Xnew, self.layers[0].input_dim)

    # ---------------------------------------------------------------- forward pass

    def propagate(self, X, *, cavity: bool, blocks=None) -> List[Tuple[tf.Tensor, tf.Tensor]]:
        """The moments (mean, var) [N, D_l] of every layer's output under the cavity or the posterior."""
        blocks = [layer.blocks(cavity) for layer in self.layers] if blocks is None else blocks
        mean, var = X, tf.zeros_like(X)
        moments = []
        for depth, (layer, layer_blocks) in enumerate(zip(self.layers, blocks)):
            mean, var = layer.propagate(mean, var, cavity=cavity, deterministic=depth == 0, blocks=layer_blocks)
            moments.append((mean, var))
        return moments

    @check_shapes("return: []")
    def energy_terms(self, blocks=None) -> tf.Tensor:
        """Σ over layers and GPs of (1 - N) φ_post + N φ_cav - φ_prior (Bui et al. 2016, App. E, Eq. (18))."""
        blocks = [layer.blocks() for layer in self.layers] if blocks is None else blocks
        return tf.add_n([layer.energy_terms(b) for layer, b in zip(self.layers, blocks)])

    @check_shapes("X: [N, D]", "Y: [N, 1]", "return: [N]")
    def log_tilted_normalisers(self, X, Y, blocks=None) -> tf.Tensor:
        """log Z_n ≈ log ∫ N(h; m_L, v_L) p(y_n | h) dh, the moments propagated under the cavity."""
        m, v = self.propagate(X, cavity=True, blocks=blocks)[-1]
        return tilted_moments(self.likelihood, X, Y, m, v).log_z[:, 0]

    @not_converted
    @check_shapes("return: []")
    def maximum_log_likelihood_objective(self, data: RegressionData) -> tf.Tensor:  # type: ignore[override]
        """F̂ = energy terms + (N/b) Σ_{i∈B} log Z_i (b = #B) for a minibatch ``data = (X, Y)`` (Bui et al. 2016, §6)."""
        X, Y = self._check_data(data)
        blocks = [layer.blocks(cavity=True) for layer in self.layers]  # chol K_uu, cavity, energy: once
        log_z = self.log_tilted_normalisers(X, Y, blocks)
        scale = tf.cast(self.num_data, log_z.dtype) / tf.cast(tf.shape(X)[0], log_z.dtype)
        return self.energy_terms(blocks) + scale * tf.reduce_sum(log_z)

    # ---------------------------------------------------------------- prediction

    @check_shapes("Xnew: [N, D]", "return[0]: [N, 1]", "return[1]: [N, 1]")
    def predict_f(self, Xnew: InputData, full_cov: bool = False, full_output_cov: bool = False) -> MeanAndVariance:
        """
        The moment-matched Gaussian N(m_L, v_L) of the last layer's output under the posterior
        (Bui et al. 2016, §7; with the last layer's own noise, if it has any). Only marginals: ``full_cov`` is
        not available.
        """
        if full_cov or full_output_cov:
            raise ValueError(
                "full_cov: DGPAEP predicts one moment-matched Gaussian per input; full covariances are not available"
            )
        return self.propagate(self._check_inputs(Xnew), cavity=False)[-1]

    def predict_layers(self, Xnew: InputData) -> List[MeanAndVariance]:
        """Mean and variance [N, D_l] of every layer's output under the posterior, first layer first."""
        return self.propagate(self._check_inputs(Xnew), cavity=False)

    @check_shapes("Xnew: [N, D]", "return[0]: [N, 1]", "return[1]: [N, 1]")
    def predict_y(self, Xnew: InputData, full_cov: bool = False, full_output_cov: bool = False) -> MeanAndVariance:
        """
        The predictive mean and variance of y* at the moment-matched N(m_L, v_L)
        (:func:`~gpflow_ep.ep.predictive_moments`: closed forms or the adaptive quadrature, as the EP models').
        """
        mean, var = self.predict_f(Xnew, full_cov=full_cov, full_output_cov=full_output_cov)
        return predictive_moments(self.likelihood, Xnew, mean, var)

    @check_shapes("return: [N]")
    def predict_log_density(
        self, data: RegressionData, full_cov: bool = False, full_output_cov: bool = False
    ) -> tf.Tensor:
        """
        log p(y* | x*) = log ∫ p(y* | h) N(h; m_L, v_L) dh under the moment-matched predictive, per point:
        the likelihood's tilted normaliser at power 1 (:func:`~gpflow_ep.ep.tilted_moments`, as in training;
        GPflow's 20-point Gauss–Hermite rule does not resolve a likelihood much narrower than v_L).
        """
        X, Y = self._check_data(data)
        mean, var = self.predict_f(X, full_cov=full_cov, full_output_cov=full_output_cov)
        return tilted_moments(self.likelihood, X, Y, mean, var, 1.0).log_z[:, 0]
