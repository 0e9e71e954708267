"""Eager validation of user input: every error a user can cause is a ValueError naming it."""

from typing import Optional, Tuple, Type

import numpy as np
import tensorflow as tf
from gpflow.config import default_float
from gpflow.likelihoods import Bernoulli, Likelihood, MultiClass, Softmax

_BINARY_LIKELIHOODS = {Bernoulli}


def register_binary_likelihood(cls: Type[Likelihood]) -> Type[Likelihood]:
    """Class decorator: the likelihood takes GPflow binary labels, ``Y`` in {0, 1} (checked by :func:`check_data`)."""
    _BINARY_LIKELIHOODS.add(cls)
    return cls


def takes_binary_labels(likelihood: Likelihood) -> bool:
    return isinstance(likelihood, tuple(_BINARY_LIKELIHOODS))


def check_binary_labels(Y, name: str = "Y") -> np.ndarray:
    """Validate binary labels eagerly and return them as a float array of shape [N, 1].

    :raises ValueError: naming ``name`` when the labels are not a [N, 1] array of 0s and 1s.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[1] != 1:
        raise ValueError(f"{name} must have shape [N, 1] with values in {{0, 1}}; got shape {Y.shape}")
    if not np.issubdtype(Y.dtype, np.number) and Y.dtype != bool:
        raise ValueError(f"{name} must be numeric with values in {{0, 1}}; got dtype {Y.dtype}")
    Yf = Y.astype(np.float64)
    if not np.all(np.isfinite(Yf)):
        raise ValueError(f"{name} contains NaN or Inf")
    bad = np.setdiff1d(np.unique(Yf), [0.0, 1.0])
    if bad.size:
        hint = " (labels in {-1, +1}? map them with (Y + 1) / 2)" if -1.0 in bad else ""
        raise ValueError(f"{name} must contain only 0 and 1; found {bad[:5].tolist()}{hint}")
    return Yf


def check_class_labels(Y, num_classes: int, name: str = "Y") -> np.ndarray:
    """Validate multi-class labels eagerly (GPflow's ``MultiClass`` layout): integers in [0, C), [N, 1].

    :raises ValueError: naming ``name`` when the labels have another shape or value.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[1] != 1:
        raise ValueError(f"{name} must have shape [N, 1] with integer class labels; got shape {Y.shape}")
    if not np.issubdtype(Y.dtype, np.number):
        raise ValueError(f"{name} must hold integer class labels; got dtype {Y.dtype}")
    Yf = Y.astype(np.float64)
    bad = ~np.isfinite(Yf) | (Yf != np.round(Yf)) | (Yf < 0) | (Yf >= num_classes)
    if np.any(bad):
        raise ValueError(
            f"{name} must hold integer class labels in [0, {num_classes}); found {np.unique(Yf[bad])[:5].tolist()}"
        )
    return Yf


def check_inputs(X, name: str = "X") -> np.ndarray:
    """X must be a finite [N, D] array."""
    X = np.asarray(X, dtype=np.float64) if not hasattr(X, "numpy") else np.asarray(X.numpy(), dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must have shape [N, D]; got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or Inf")
    return X


def check_data(data, likelihood, name: str = "data") -> Tuple[np.ndarray, np.ndarray]:
    """
    Validate ``data = (X, Y)`` for ``likelihood`` before a model exists (a model's constructor):
    :func:`check_training_data`'s checks with Y of one column, returned as float64.
    """
    X, Y = _check_xy(
        data, name, likelihood, arities=(2,), num_classes=getattr(likelihood, "num_classes", None), outputs=1
    )
    return X, Y.astype(np.float64)


def check_range(value, name: str, low: float, high: float, *, low_open=True, high_open=False) -> float:
    value = float(value)
    below = value <= low if low_open else value < low
    above = value >= high if high_open else value > high
    if not np.isfinite(value) or below or above:
        lo, hi = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lo}{low}, {high}{hi}; got {value}")
    return value


def check_choice(value, name: str, choices) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return value


def check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


# ---------------------------------------------------------------- the API boundary of any model

_MULTICLASS_LIKELIHOODS = {MultiClass, Softmax}


def register_multiclass_likelihood(cls: Type[Likelihood]) -> Type[Likelihood]:
    """Class decorator: the likelihood takes integer class labels in [0, C), ``Y`` of shape [N, 1]."""
    _MULTICLASS_LIKELIHOODS.add(cls)
    return cls


def takes_class_labels(likelihood: Likelihood) -> bool:
    return isinstance(likelihood, tuple(_MULTICLASS_LIKELIHOODS))


def _as_array(value) -> np.ndarray:
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def model_input_dim(model) -> Optional[int]:
    """
    The number of input columns a model takes, or None when it cannot be read: a model's own
    ``input_dim``, the columns of the data it holds (``VGP``, ``EPGPC``), of its inducing inputs Z
    (``SVGP``, ``SEPGPC``; not for a kernel on learned features), or of its first layer (``DGPAEP``).
    """
    dim = getattr(model, "input_dim", None)
    if isinstance(dim, (int, np.integer)):
        return int(dim)
    data = getattr(model, "data", None)
    if isinstance(data, (tuple, list)) and len(data) == 2 and getattr(data[0], "shape", None) is not None:
        return data[0].shape[-1]
    kernel = getattr(model, "kernel", None)
    if kernel is not None and hasattr(kernel, "network"):  # inducing inputs may live in feature space
        shape = getattr(kernel.network, "input_shape", None)
        return shape[-1] if isinstance(shape, tuple) and len(shape) == 2 else None
    inducing = getattr(model, "inducing_variable", None)
    inducing = getattr(inducing, "inducing_variable", inducing)  # Shared/SeparateIndependent wrappers
    Z = getattr(inducing, "Z", None)
    return Z.shape[-1] if Z is not None and len(Z.shape) == 2 else None


def num_label_classes(model, likelihood) -> int:
    """C for a multi-class likelihood: its ``num_classes``, else the model's number of latent GPs (``Softmax``)."""
    return int(getattr(likelihood, "num_classes", None) or model.num_latent_gps)


def check_training_data(model, data, name: str = "data") -> Tuple[np.ndarray, np.ndarray]:
    """
    Validate training data ``(X, Y)`` (or a minibatch ``(X, Y, index)``) for ``model`` eagerly (any
    model: GPflow's or this package's): X a finite [N, D] array with the model's D columns, at least
    one row; Y with N rows, finite, and labels of the kind the likelihood takes ({0, 1} [N, 1] for a
    binary likelihood, integer classes in [0, C) [N, 1] for a multi-class one, [N, P] with
    P = ``num_latent_gps`` otherwise).

    :return: (X, Y) as arrays (Y keeps an integer dtype when it has one).
    :raises ValueError: naming ``name`` and what was found.
    """
    likelihood = getattr(model, "likelihood", None)
    outputs = getattr(model, "num_latent_gps", None)
    return _check_xy(
        data,
        name,
        likelihood,
        arities=(2, 3),
        input_dim=model_input_dim(model),
        num_classes=num_label_classes(model, likelihood)
        if likelihood is not None and takes_class_labels(likelihood)
        else None,
        outputs=outputs if isinstance(outputs, int) else None,
    )


def _check_xy(data, name, likelihood, *, arities, input_dim=None, num_classes=None, outputs=None):
    """The checks of :func:`check_data` and :func:`check_training_data`; ``None`` skips a check."""
    if not isinstance(data, (tuple, list)) or len(data) not in arities:
        raise ValueError(f"{name} must be a tuple (X, Y) of arrays; got {type(data).__name__}")
    X = check_inputs(data[0], f"{name}[0] (X)")
    Y = _as_array(data[1])
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty: X has no rows")
    if input_dim is not None and X.shape[1] != input_dim:
        raise ValueError(
            f"{name}[0] (X) must have {input_dim} columns (the model's input dimension); got shape {X.shape}"
        )
    binary = likelihood is not None and takes_binary_labels(likelihood)
    classes = likelihood is not None and takes_class_labels(likelihood)
    if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
        n, P = X.shape[0], "1" if binary or classes else ("P" if outputs is None else str(outputs))
        raise ValueError(
            f"{name}[1] (Y) must have shape [{n}, {P}] ([N, {P}]: one row per row of X, which has {n} rows); "
            f"got shape {Y.shape}"
        )
    if binary:
        check_binary_labels(Y, f"{name}[1] (Y)")
    elif classes:
        check_class_labels(Y, np.inf if num_classes is None else num_classes, f"{name}[1] (Y)")
    else:
        if not np.issubdtype(Y.dtype, np.number):
            raise ValueError(f"{name}[1] (Y) must be numeric; got dtype {Y.dtype}")
        if not np.all(np.isfinite(Y)):
            raise ValueError(f"{name}[1] (Y) contains NaN or Inf")
        if outputs is not None and Y.shape[1] != outputs:
            raise ValueError(f"{name}[1] (Y) must have shape [N, {outputs}] ({outputs} output(s)); got shape {Y.shape}")
    return X, Y


def check_prediction_inputs(Xnew, input_dim: Optional[int], name: str = "Xnew"):
    """
    Validate test inputs at a ``predict_*`` entry point, eagerly or while a compiled prediction is
    traced: rank 2 and ``input_dim`` columns (a ``ValueError`` in both cases, at trace time in a
    ``tf.function``); finite values (a ``ValueError`` eagerly; inside a compiled function, where
    values are not known until it runs, an ``InvalidArgumentError`` saying "Xnew contains NaN or Inf").

    :return: ``Xnew`` as a tensor of GPflow's default float.
    """
    if tf.executing_eagerly() or not tf.is_tensor(Xnew):
        Xnew = check_inputs(Xnew, name)
        shape = Xnew.shape
    else:
        shape = tuple(Xnew.shape.as_list()) if Xnew.shape.rank is not None else None
        if shape is None or len(shape) != 2:
            raise ValueError(f"{name} must have shape [N, D]; got shape {shape}")
    if input_dim is not None and shape[1] is not None and shape[1] != input_dim:
        got = tuple(shape)
        raise ValueError(f"{name} must have {input_dim} columns (the model's input dimension); got shape {got}")
    Xnew = tf.convert_to_tensor(Xnew, default_float())
    if not tf.executing_eagerly():
        Xnew = tf.debugging.assert_all_finite(Xnew, f"{name} contains NaN or Inf")
    return Xnew


def require_float64(what: str) -> None:
    """
    Refuse to build ``what`` unless GPflow's default float is float64. EP divides by differences
    of nearly equal precisions (1 - τσ² in every cavity, spec §2.1) and the hinge moments subtract
    log-normalisers of similar size; in float32 (7 digits) these lose most of their precision, and
    the package is tested in float64 only, so float32 is refused rather than silently inaccurate.

    :raises ValueError: naming ``gpflow.config.default_float()`` and the fix.
    """
    if default_float() != np.float64:
        raise ValueError(
            f"{what} needs float64, but gpflow.config.default_float() is {np.dtype(default_float()).name}: "
            "EP's cavity and moment computations lose most of their precision in float32. Call "
            "gpflow.config.set_default_float(np.float64) (a tf_keras network inside a DeepKernel may "
            "still run in float32)."
        )
