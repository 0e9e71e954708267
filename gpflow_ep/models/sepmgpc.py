r"""
SEPMGPC: scalable multi-class EP classification (Villacampa-Calvo & Hernández-Lobato, ICML 2017),
the SEP paper's scalable EP (``seeds/002``) for C classes.

C latent functions f^c, each with its GPflow kernel and inducing inputs Z_c (u^c = f^c(Z_c), FITC
conditionals as in :class:`~gpflow_ep.models.SEPGPC`), and the likelihood
:class:`~gpflow_ep.likelihoods.MultiClassStep`: p(y_i | f_i) = Π_{k≠y_i} Θ(f̃^{y_i}_i - f̃^k_i), latent
noise σ² in f̃. Each of the C - 1 factors of a point is approximated by two scalar Gaussian sites,
one on h^{y_i}_i = υ^{y_i}_iᵀu^{y_i} and one on h^k_i = υ^k_iᵀu^k (:class:`~gpflow_ep.likelihoods.DifferenceFactor`),
so q(u) = Π_c q(u^c) stays factorised over classes as in the paper: 2(C - 1) sites per point, O(NC)
site memory. Factorising q ignores the correlations between the classes' posteriors that the
likelihood creates; the paper reports this costs little accuracy, and the tests compare C = 2 with
:class:`SEPGPC`.

Implementation: the C functions are one GP on class-augmented inputs (x, c) with the block-diagonal
kernel :class:`~gpflow_ep.kernels.ClassIndependent` and inducing variable
:class:`~gpflow_ep.kernels.ClassInducingPoints`; every site acts on one class, so this model *is*
:class:`SEPGPC` — its batch EP, minibatch refresh, surrogate F_M and its gradient, ``fit``,
``tf.distribute``, checkpoints — over the sites (x_i, class) instead of the points, with the paired
factor. It only translates points and labels into sites. The price of that reuse: matrices of size
[CM, CM] where C blocks of [M, M] would do (O(C³M³) per step instead of O(CM³)) and site directions
stored [S, CM] (S = 2N(C - 1)); fine for tens of classes at M ≈ 100, not for hundreds.

The evidence is SEPGPC's EP energy over all sites; its minibatch surrogate and gradient are SEPGPC's
(the scale N/|B| is the same for points and their sites). Prediction: p(y* = k) by Gauss–Hermite
quadrature of the argmax under the independent predictive marginals (``MultiClassStep``).
"""

from typing import Optional, Sequence, Union

import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow.base import InputData, MeanAndVariance
from gpflow.config import default_float
from gpflow.kernels import Kernel

from ..ep import EPSettings
from ..kernels.class_independent import ClassIndependent, ClassInducingPoints, augment_with_class
from ..likelihoods.multiclass_step import DifferenceFactor, MultiClassStep
from ..validation import check_inputs, check_prediction_inputs
from .sepgpc import SEPGPC

__all__ = ["SEPMGPC"]


class SEPMGPC(SEPGPC):
    """
    Scalable multi-class EP (module docstring), a drop-in for ``gpflow.models.SVGP`` with
    ``MultiClass``/``Softmax``: integer labels [N, 1], ``predict_y`` gives class probabilities [N, C].

    :param kernel: one GPflow kernel shared by all classes, or a sequence of C kernels.
    :param likelihood: a :class:`~gpflow_ep.likelihoods.MultiClassStep` (C classes, latent noise σ²).
    :param inducing_variable: an [M, D] array of inducing inputs (each class gets its own trainable
        copy), a sequence of C arrays, or a :class:`~gpflow_ep.kernels.ClassInducingPoints`.
    :param num_data: N, the number of training points (each has 2(C - 1) sites: ``num_sites``).
    :param ep_options: EP options (:class:`~gpflow_ep.ep.EPSettings`); the paired sites need
        ``power=1``, no relaxation and the parallel schedule. Batch EP defaults to ``damping=0.5``:
        parallel updates of the paired sites oscillate at 0.8 when the latent noise is small (iris,
        σ² = 1e-3), and converge slowly even at 0.5 (300 sweeps to a site change of ~1e-3); larger
        σ² converges in ~100 sweeps.
    """

    def __init__(
        self,
        kernel: Union[Kernel, Sequence[Kernel]],
        likelihood: MultiClassStep,
        inducing_variable,
        num_data: int,
        *,
        jitter: Optional[float] = None,
        **ep_options,
    ):
        if not isinstance(likelihood, MultiClassStep):
            raise ValueError(
                f"likelihood must be a gpflow_ep.likelihoods.MultiClassStep; got {type(likelihood).__name__}"
            )
        C = likelihood.num_classes
        kernels = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel] * C
        if len(kernels) != C:
            raise ValueError(f"kernel: give one kernel or {C} (one per class); got {len(kernels)}")
        if not isinstance(inducing_variable, ClassInducingPoints):
            if isinstance(inducing_variable, (list, tuple)):
                inducing_variable = ClassInducingPoints(inducing_variable)
            else:
                inducing_variable = ClassInducingPoints(check_inputs(inducing_variable, "inducing_variable"), C)
        if inducing_variable.num_classes != C:
            raise ValueError(f"inducing_variable has {inducing_variable.num_classes} classes; the likelihood {C}")
        ep_options.setdefault("damping", 0.5)
        super().__init__(
            ClassIndependent(kernels), likelihood, inducing_variable, num_data, jitter=jitter, **ep_options
        )

    @property
    def num_classes(self) -> int:
        return self.likelihood.num_classes

    @property
    def input_dim(self) -> int:
        """D, the columns of X (the inducing inputs carry a class column besides)."""
        return self.inducing_variable.inducing_points[0].Z.shape[-1]

    def _num_sites(self, num_data: int) -> int:
        return 2 * num_data * (self.likelihood.num_classes - 1)

    @staticmethod
    def _check_schedule(settings: EPSettings) -> EPSettings:
        SEPGPC._check_schedule(settings)
        if settings.schedule != "parallel":
            raise ValueError(
                f"schedule: the two sites of a multi-class factor are updated together; use 'parallel', not "
                f"{settings.schedule!r}"
            )
        if settings.power != 1.0:
            raise ValueError(f"power: multi-class EP factors are defined for power = 1; got {settings.power}")
        if settings.relaxation is not None:
            raise ValueError("relaxation: relaxed EP is not defined for the paired multi-class sites")
        return settings

    def _factor(self, X, Y, extra_var=None) -> DifferenceFactor:
        return DifferenceFactor(self.likelihood.noise_variance, extra_var)

    # ---------------------------------------------------------------- points → sites

    def _site_data(self, X, Y, index=None):
        """
        The sites of points (X, Y): first the y-sites (x_i, y_i), then the k-sites (x_i, k), one per
        competitor k ≠ y_i in increasing order, point by point; their indices when ``index`` (of the
        points) is given: point i's r-th factor has sites i(C-1) + r and N(C-1) + i(C-1) + r.
        """
        C1 = self.num_classes - 1
        X = tf.convert_to_tensor(X, default_float())
        y = tf.cast(tf.reshape(Y, [-1]), tf.int32)
        slots = tf.range(C1)
        competitors = slots[None, :] + tf.cast(slots[None, :] >= y[:, None], tf.int32)  # k ≠ y, [B, C-1]
        repeated = tf.repeat(X, C1, axis=0)
        site_X = tf.concat(
            [
                augment_with_class(repeated, tf.repeat(y, C1)),
                augment_with_class(repeated, tf.reshape(competitors, [-1])),
            ],
            axis=0,
        )
        site_Y = tf.ones([tf.shape(site_X)[0], 1], default_float())
        if index is None:
            return site_X, site_Y
        first = tf.reshape(tf.cast(index, tf.int32)[:, None] * C1 + slots[None, :], [-1])
        return site_X, site_Y, tf.concat([first, first + self.num_data * C1], axis=0)

    def reproject_sites(self, data, chunk_size: int = 10000) -> None:
        """SEPGPC's re-projection of every site on the current directions, for data = (X, Y) (all N points)."""
        site_X, _ = self._check_full_data(data)
        self._reproject(site_X.numpy(), chunk_size)

    # ---------------------------------------------------------------- prediction

    @inherit_check_shapes
    def predict_f(self, Xnew: InputData, full_cov: bool = False, full_output_cov: bool = False) -> MeanAndVariance:
        """The C latent marginals q(f^c(x*)) from the stored q(u): means and variances, each [N, C]."""
        if full_cov or full_output_cov:
            raise ValueError("full_cov: SEPMGPC predicts independent marginals per class; no full covariances")
        Xnew = check_prediction_inputs(Xnew, self.input_dim)
        posterior = self.posterior()
        n = tf.shape(Xnew)[0]
        moments = [
            posterior._predict_latent(augment_with_class(Xnew, tf.fill([n], c)), False) for c in range(self.num_classes)
        ]
        return tf.stack([m for m, _ in moments], axis=1), tf.stack([v for _, v in moments], axis=1)
