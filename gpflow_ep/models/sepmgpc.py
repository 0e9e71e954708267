r"""
SEPMGPC: scalable multi-class EP classification (Villacampa-Calvo & Hernández-Lobato, ICML 2017),
the scalable EP of Hernández-Lobato & Hernández-Lobato (AISTATS 2016) for C classes.

C latent functions f^c, each with its GPflow kernel and inducing inputs Z_c (u^c = f^c(Z_c), FITC
conditionals as in :class:`~gpflow_ep.models.SEPGPC`), and the likelihood
:class:`~gpflow_ep.likelihoods.MultiClassStep`: p(y_i | f_i) = Π_{k≠y_i} Θ(f̃^{y_i}_i - f̃^k_i), latent
noise σ² in f̃. Each of the C - 1 factors of a point is approximated by two scalar Gaussian sites,
one on h^{y_i}_i = υ^{y_i}_iᵀu^{y_i} and one on h^k_i = υ^k_iᵀu^k (:class:`~gpflow_ep.likelihoods.DifferenceFactor`),
so q(u) = Π_c q(u^c) stays factorised over classes as in the paper: 2(C - 1) sites per point, O(NC)
site memory. Factorising q ignores the correlations between the classes' posteriors that the
likelihood creates; the paper reports this costs little accuracy, and the tests compare C = 2 with
:class:`SEPGPC`.

Implementation: this model *is* :class:`~gpflow_ep.models.SEPGP` (SEPGPC's implementation) — its
batch EP, minibatch refresh, surrogate F_M and its gradient, ``fit``, ``tf.distribute``, checkpoints
— with C blocks u = (u^0, …, u^{C-1}) and several sites per point. The sites of a point act on C
(class, point) *pairs*: its C - 1 y-sites share the pair (y_i, i) (one direction υ^{y_i}_i), each
k-site has the pair (k, i). SEPGPC's algebra sums the sites' natural parameters on their pairs and
works per class (:class:`~gpflow_ep.ep.whitened.SitePairs`), so a step on a minibatch of b points costs O(C
m² b) like an SVGP with C latent functions, and the stored directions are one per pair, [C n, M]. A
point's 2(C - 1) sites are updated together or not at all (so the sites of a pair always share its
direction).

Kernels and inducing inputs are GPflow's multi-output objects, through GPflow's ``Kuu``/``Kuf``
dispatch as in GPflow's multi-class SVGP (:mod:`gpflow_ep.covariances`): a ``SharedIndependent`` or
``SeparateIndependent`` kernel with ``SharedIndependentInducingVariables`` or
``SeparateIndependentInducingVariables``. With a shared kernel and shared inducing inputs the
classes have one prior block: K_uu is factorised once and L⁻¹K_uf computed once per step, and
only q(u^c) is per class.

The evidence is SEPGPC's EP energy over all sites; its minibatch surrogate and gradient are SEPGPC's
(the scale N/b is the same for points and their sites). Prediction: p(y* = k) by Gauss–Hermite
quadrature of the argmax under the independent predictive marginals (``MultiClassStep``).
"""

from typing import Sequence, Union

import tensorflow as tf
from gpflow.config import default_float
from gpflow.kernels import Kernel

from ..covariances import multioutput_inducing_variable, multioutput_kernel
from ..ep import EPSettings, get_schedule
from ..ep.whitened import SitePairs
from ..likelihoods.labels import class_labels_to_index
from ..likelihoods.multiclass_step import DifferenceFactor, MultiClassStep
from .sepgp import SEPGP
from .sparse_sites import SiteBatch

__all__ = ["SEPMGPC"]


class SEPMGPC(SEPGP):
    """
    Scalable multi-class EP (module docstring), a drop-in for ``gpflow.models.SVGP`` with
    ``MultiClass``/``Softmax``: integer labels [N, 1], ``predict_y`` gives class probabilities [N, C].

    :param kernel: GPflow's ``SharedIndependent`` (one kernel, shared hyper-parameters) or
        ``SeparateIndependent`` (C kernels) with output_dim C; or, equivalently, one plain GPflow
        kernel (shared by all classes) or a sequence of C kernels.
    :param likelihood: a :class:`~gpflow_ep.likelihoods.MultiClassStep` (C classes, latent noise σ²).
    :param inducing_variable: GPflow's ``SharedIndependentInducingVariables`` (one set of inducing
        inputs for all classes: with a ``SharedIndependent`` kernel, one K_uu per step) or
        ``SeparateIndependentInducingVariables`` (C sets, each with the same M); or an [M, D] array
        (each class gets its own trainable copy, as ``SeparateIndependentInducingVariables``), a
        sequence of C [M, D] arrays, or one ``InducingPoints`` (shared by all classes).
    :param num_data: N, the number of training points (each has 2(C - 1) sites: ``num_sites``).
    :param ep_options: EP options (:class:`~gpflow_ep.ep.EPSettings`); the paired sites need
        ``power=1``, no relaxation and the parallel schedule. Batch EP defaults to ``damping=0.5``:
        parallel updates of the paired sites can oscillate at 0.8 when the latent noise σ² is small
        (each factor is then nearly a step in f), and converge slowly there even at 0.5.
        The same damping bounds a minibatch refresh of most sites
        (``fit`` with ``batch_size`` near N): it uses min(``minibatch_damping``, ``damping``·N/b) for a batch of b
        points (:func:`~gpflow_ep.models.sparse_sites.refresh_damping`), so full-batch training converges
        instead of alternating.
    """

    def __init__(
        self,
        kernel: Union[Kernel, Sequence[Kernel]],
        likelihood: MultiClassStep,
        inducing_variable,
        num_data: int,
        **ep_options,
    ):
        if not isinstance(likelihood, MultiClassStep):
            raise ValueError(
                f"likelihood must be a gpflow_ep.likelihoods.MultiClassStep; got {type(likelihood).__name__}"
            )
        C = likelihood.num_classes
        kernel = multioutput_kernel(kernel, C, per="class")
        inducing_variable = multioutput_inducing_variable(inducing_variable, C, per="class")
        ep_options.setdefault("damping", 0.5)
        super().__init__(kernel, likelihood, inducing_variable, num_data, **ep_options)

    def _check_likelihood(self, likelihood) -> None:
        """Checked in ``__init__``: a :class:`~gpflow_ep.likelihoods.MultiClassStep` (its paired sites)."""

    @property
    def num_classes(self) -> int:
        return self.likelihood.num_classes

    @property
    def num_blocks(self) -> int:
        """C: one block of u per class."""
        return self.likelihood.num_classes

    @property
    def input_dim(self) -> int:
        """D, the columns of X (those of the inducing inputs)."""
        return int(self.inducing_variable.inducing_variables[0].Z.shape[-1])

    def _num_sites(self, num_data: int) -> int:
        return 2 * num_data * (self.likelihood.num_classes - 1)

    @classmethod
    def _check_schedule(cls, settings: EPSettings) -> EPSettings:
        super()._check_schedule(settings)
        if get_schedule(settings.schedule).one_site_at_a_time:
            raise ValueError(
                f"schedule: the two sites of a multi-class factor are updated together; {settings.schedule!r} "
                "updates one site at a time: use 'parallel'"
            )
        if settings.power != 1.0:
            raise ValueError(f"power: multi-class EP factors are defined for power = 1; got {settings.power}")
        if settings.relaxation is not None:
            raise ValueError("relaxation: relaxed EP is not defined for the paired multi-class sites")
        return settings

    def _factor(self, X, Y, extra_var=None) -> DifferenceFactor:
        return DifferenceFactor(self.likelihood.noise_variance, extra_var, self.num_classes - 1)

    # ---------------------------------------------------------------- per-class blocks

    def _block_mean(self, X):
        """The prior mean of every class's f at X, [C, P] (one mean function shared by the classes)."""
        return tf.tile(tf.transpose(self.mean_function(X)), [self.num_classes, 1])

    # ---------------------------------------------------------------- points → sites

    def _site_data(self, X, Y, index=None) -> SiteBatch:
        """
        The sites of points (X, Y): first the y-sites, then the k-sites, one per competitor k ≠ y_i
        in increasing order, point by point; the y-sites of point j act on the pair (y_j, j), its
        k-sites on (k, j) (pair row k·P + j). With the points' ``index``: point i's r-th factor has
        sites i(C-1) + r and N(C-1) + i(C-1) + r, and the pair (c, i) row c·N + i of the directions.
        """
        C, C1 = self.num_classes, self.num_classes - 1
        X = tf.convert_to_tensor(X, default_float())
        y = class_labels_to_index(Y, C)  # checked inside a compiled graph too
        P = tf.shape(y)[0]
        slots = tf.range(C1)
        competitors = slots[None, :] + tf.cast(slots[None, :] >= y[:, None], tf.int32)  # k ≠ y, [P, C-1]
        point = tf.repeat(tf.range(P), C1)
        site_pair = tf.concat([tf.repeat(y, C1) * P + point, tf.reshape(competitors, [-1]) * P + point], axis=0)
        pairs = SitePairs(site_pair, C * P)
        site_Y = tf.ones([2 * P * C1, 1], default_float())
        if index is None:
            return SiteBatch(X, site_Y, pairs)
        index = tf.cast(index, tf.int32)
        first = tf.reshape(index[:, None] * C1 + slots[None, :], [-1])
        pair_rows = tf.reshape(tf.range(C)[:, None] * self.num_data + index[None, :], [-1])
        return SiteBatch(X, site_Y, pairs, tf.concat([first, first + self.num_data * C1], axis=0), pair_rows)

