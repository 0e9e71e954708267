r"""
C independent latent functions as one GP on class-augmented inputs, for multi-class EP.

An input is x̃ = (x, c): the D input columns and a last column holding a class index c ∈ [0, C).
:class:`ClassIndependent` is the kernel

    k̃((x, c), (x', c')) = δ_{cc'} k_c(x, x'),

so f̃(x, c) = f^c(x) with f^0 … f^{C-1} independent GPs, each with its own GPflow kernel k_c (pass
the same kernel object C times to share its hyper-parameters). :class:`ClassInducingPoints` holds
inducing inputs Z_c for each class (u^c = f^c(Z_c)), stacked as u = (u^0, …, u^{C-1}); its K_uu is
block diagonal, so an EP posterior over u whose sites each act on one class (a direction
υ = K_uu⁻¹k̃(Z, x̃) is zero outside its class's block, exactly) stays factorised over classes:
q(u) = Π_c q(u^c), as in Villacampa-Calvo & Hernández-Lobato (2017).
:class:`~gpflow_ep.models.SEPMGPC` holds its kernels and inducing inputs in these two objects but
computes with their per-class blocks ([C, M, M] rather than the dense [CM, CM] of the stacked form,
which its tests use as the oracle).
"""

from typing import Sequence

import numpy as np
import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow import covariances
from gpflow.base import TensorLike, TensorType
from gpflow.inducing_variables import InducingPoints, InducingVariables
from gpflow.kernels import Kernel

__all__ = ["ClassIndependent", "ClassInducingPoints", "augment_with_class"]


def augment_with_class(X: TensorType, classes: TensorType) -> tf.Tensor:
    """x̃ = (x, c): ``X`` [N, D] with the class indices ``classes`` [N] (or [N, 1]) as a last column."""
    X = tf.convert_to_tensor(X)
    return tf.concat([X, tf.reshape(tf.cast(classes, X.dtype), [-1, 1])], axis=1)


class ClassIndependent(Kernel):
    """
    k̃((x, c), (x', c')) = δ_{cc'} k_c(x, x') on inputs whose last column is the class (module docstring).

    :param kernels: one GPflow kernel per class (the same object repeated shares it).
    """

    def __init__(self, kernels: Sequence[Kernel], name=None):
        super().__init__(name=name)
        kernels = list(kernels)
        if len(kernels) < 2 or not all(isinstance(k, Kernel) for k in kernels):
            raise ValueError(
                f"kernels must be at least two gpflow.kernels.Kernel objects (one per class); got {kernels}"
            )
        self.kernels = kernels

    @property
    def num_classes(self) -> int:
        return len(self.kernels)

    def groups(self):
        """(kernel, classes it serves), each distinct kernel object once."""
        groups = {}
        for c, k in enumerate(self.kernels):
            groups.setdefault(id(k), (k, []))[1].append(c)
        return list(groups.values())

    @staticmethod
    def _split(X):
        return X[..., :-1], tf.cast(tf.round(X[..., -1]), tf.int32)

    def _in(self, classes, members):
        return tf.reduce_any(tf.equal(classes[..., None], tf.constant(members, tf.int32)), axis=-1)

    @inherit_check_shapes
    def K(self, X: TensorType, X2=None) -> tf.Tensor:
        x, c = self._split(X)
        x2, c2 = (x, c) if X2 is None else self._split(X2)
        same = tf.equal(c[:, None], c2[None, :])
        total = tf.zeros(tf.stack([tf.shape(x)[0], tf.shape(x2)[0]]), X.dtype)
        for kernel, members in self.groups():
            both = same & self._in(c, members)[:, None]
            total += tf.where(both, kernel.K(x, x2), tf.zeros_like(total))
        return total

    @inherit_check_shapes
    def K_diag(self, X: TensorType) -> tf.Tensor:
        x, c = self._split(X)
        total = tf.zeros(tf.shape(x)[:1], X.dtype)
        for kernel, members in self.groups():
            total += tf.where(self._in(c, members), kernel.K_diag(x), tf.zeros_like(total))
        return total


class ClassInducingPoints(InducingVariables):
    """
    Inducing inputs Z_c [M_c, D] for each class c (trainable ``InducingPoints``), u = (u^0, …, u^{C-1}).

    :param Z: one [M_c, D] array (or ``InducingPoints``) per class, or one [M, D] array for all.
    :param num_classes: C, when ``Z`` is one array (each class gets its own copy).
    """

    def __init__(self, Z, num_classes: int = None, name=None):
        super().__init__(name=name)
        if num_classes is not None:
            Z = [np.array(Z, copy=True) for _ in range(int(num_classes))]
        self.inducing_points = [z if isinstance(z, InducingPoints) else InducingPoints(z) for z in Z]
        if len(self.inducing_points) < 2:
            raise ValueError("Z: give one array of inducing inputs per class (at least two), or num_classes")

    @property
    def num_classes(self) -> int:
        return len(self.inducing_points)

    @property
    def num_inducing(self):
        return sum(int(ip.Z.shape[0]) for ip in self.inducing_points)

    @property
    def shape(self):
        return (self.num_inducing, self.inducing_points[0].Z.shape[-1] + 1, None)

    @property
    def Z(self) -> tf.Tensor:
        """The class-augmented inducing inputs (Z_c, c), stacked, [Σ M_c, D + 1] (not trainable as such)."""
        return tf.concat(
            [augment_with_class(ip.Z, tf.fill([ip.num_inducing], c)) for c, ip in enumerate(self.inducing_points)],
            axis=0,
        )


@covariances.Kuu.register(ClassInducingPoints, ClassIndependent)
def _kuu_classes(inducing_variable: ClassInducingPoints, kernel: ClassIndependent, *, jitter: float = 0.0):
    """Block diagonal: K_{u^c u^c} = k_c(Z_c, Z_c) (+ jitter), zeros between classes."""
    _check_classes(inducing_variable, kernel)
    blocks = [covariances.Kuu(ip, k, jitter=jitter) for ip, k in zip(inducing_variable.inducing_points, kernel.kernels)]
    return tf.linalg.LinearOperatorBlockDiag([tf.linalg.LinearOperatorFullMatrix(b) for b in blocks]).to_dense()


@covariances.Kuf.register(ClassInducingPoints, ClassIndependent, TensorLike)
def _kuf_classes(inducing_variable: ClassInducingPoints, kernel: ClassIndependent, Xnew: TensorType):
    """Row block c: k_c(Z_c, x) for the inputs of class c, zeros for the others."""
    _check_classes(inducing_variable, kernel)
    x, c = kernel._split(Xnew)
    rows = []
    for cls, (ip, k) in enumerate(zip(inducing_variable.inducing_points, kernel.kernels)):
        block = covariances.Kuf(ip, k, x)
        rows.append(tf.where(tf.equal(c, cls)[None, :], block, tf.zeros_like(block)))
    return tf.concat(rows, axis=0)


def _check_classes(inducing_variable: ClassInducingPoints, kernel: ClassIndependent) -> None:
    if inducing_variable.num_classes != kernel.num_classes:
        raise ValueError(
            f"inducing_variable has {inducing_variable.num_classes} classes but the kernel {kernel.num_classes}"
        )
