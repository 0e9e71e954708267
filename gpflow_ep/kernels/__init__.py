"""Kernels: :class:`DeepKernel`, a GPflow kernel on features learned by a ``tf_keras`` network."""

from .deep_kernel import DeepKernel, FeatureInducingPoints

__all__ = ["DeepKernel", "FeatureInducingPoints"]
