"""Kernels: :class:`DeepKernel`, a GPflow kernel on features learned by a ``tf_keras`` network."""

from .class_independent import ClassIndependent, ClassInducingPoints, augment_with_class
from .deep_kernel import DeepKernel, FeatureInducingPoints

__all__ = ["DeepKernel", "FeatureInducingPoints", "ClassIndependent", "ClassInducingPoints", "augment_with_class"]
