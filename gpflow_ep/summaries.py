"""
Short ``repr`` of result objects (:class:`~gpflow_ep.ep.EPRun`, :class:`~gpflow_ep.optimizers.EPResult`,
...): scalars as their values, arrays as their dtype and shape, so that ``print(model.run_ep())``
is one line however many sites the model has. The arrays stay available as the objects' attributes.
"""

from typing import Iterable, Optional

import numpy as np
import tensorflow as tf

__all__ = ["describe", "summary_repr"]


def describe(value) -> str:
    """
    A scalar (Python, NumPy or an eager tensor) as its value (floats to 4 significant digits), an
    array or tensor as ``<dtype [shape]>`` (``<symbolic dtype [shape]>`` inside a ``tf.function``),
    a tuple or list of arrays element by element, a NamedTuple by its own ``repr``.
    """
    if isinstance(value, (tf.Tensor, tf.Variable)):
        if tf.is_symbolic_tensor(value):
            return f"<symbolic {value.dtype.name} {value.shape.as_list() if value.shape.rank is not None else '?'}>"
        value = value.numpy()
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a result NamedTuple: its own (short) repr
        return repr(value)
    if isinstance(value, (tuple, list)) and any(np.ndim(v) > 0 or tf.is_tensor(v) for v in value):
        return "(" + ", ".join(describe(v) for v in value) + ")"
    if value is None or isinstance(value, str):
        return repr(value)
    array = np.asarray(value)
    if array.ndim > 0 or array.dtype == object:
        return f"<{array.dtype} {list(array.shape)}>"
    item = array.item()
    return f"{item:.4g}" if isinstance(item, float) else repr(item)


def summary_repr(obj, names: Optional[Iterable[str]] = None) -> str:
    """
    ``Type(name=value, ...)`` over ``names`` (default: a NamedTuple's fields), scalars first, then
    the arrays as dtype and shape (:func:`describe`).
    """
    names = list(obj._fields if names is None else names)
    described = [(name, describe(getattr(obj, name))) for name in names]
    scalars = [f"{name}={text}" for name, text in described if not text.startswith(("<", "("))]
    arrays = [f"{name}={text}" for name, text in described if text.startswith(("<", "("))]
    return f"{type(obj).__name__}({', '.join(scalars + arrays)})"
