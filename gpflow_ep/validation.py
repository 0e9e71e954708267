"""Eager validation of user input: every error a user can cause is a ValueError naming it."""

from typing import Optional, Tuple, Type

import numpy as np
import tensorflow as tf
from gpflow.config import default_float
from gpflow.inducing_variables import InducingVariables, MultioutputInducingVariables
from gpflow.kernels import ArcCosine, Combination, Kernel, Linear, MultioutputKernel, Periodic, Stationary
from gpflow.likelihoods import Bernoulli, Likelihood, MultiClass, Softmax

from .ep.checks import check_choice, check_positive_int, check_range  # noqa: F401  (re-exported for the models)
from .kernels.deep_kernel import DeepKernel, FeatureInducingPoints

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


def _held_data_dim(model) -> Optional[int]:
    """The columns of the training inputs a model holds (``VGP``, ``EPGPC``), or None."""
    data = getattr(model, "data", None)
    if isinstance(data, (tuple, list)) and len(data) == 2 and getattr(data[0], "shape", None) is not None:
        return data[0].shape[-1]
    return None


def model_input_dim(model) -> Optional[int]:
    """
    The number of input columns a model takes, or None when it cannot be read: a model's own
    ``input_dim``, the columns of the data it holds (``VGP``, ``EPGPC``), of its inducing inputs Z
    (``SVGP``, ``SEPGPC``; not for a kernel on learned features), or of its first layer (``DGPAEP``).
    """
    dim = getattr(model, "input_dim", None)
    if isinstance(dim, (int, np.integer)):
        return int(dim)
    if _held_data_dim(model) is not None:
        return _held_data_dim(model)
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
    P = ``num_latent_gps`` otherwise). The model's kernel and inducing inputs are checked against X
    (:func:`check_model_inputs`): on the first batch, a kernel or Z that does not fit X is named.

    :return: (X, Y) as arrays (Y keeps an integer dtype when it has one).
    :raises ValueError: naming ``name`` and what was found.
    """
    likelihood = getattr(model, "likelihood", None)
    outputs = getattr(model, "num_latent_gps", None)
    X, Y = _check_xy(
        data,
        name,
        likelihood,
        arities=(2, 3),
        input_dim=_held_data_dim(model),  # new X against the data the model holds: X is the odd one out
        num_classes=num_label_classes(model, likelihood)
        if likelihood is not None and takes_class_labels(likelihood)
        else None,
        outputs=outputs if isinstance(outputs, int) else None,
    )
    check_model_inputs(model, X.shape[1], f"{name}[0] (X)")  # else Z and the kernel against X, naming them
    _check_columns(X, model_input_dim(model), f"{name}[0] (X)")
    return X, Y


def _check_columns(X: np.ndarray, input_dim: Optional[int], name: str) -> None:
    if input_dim is not None and X.shape[1] != input_dim:
        raise ValueError(f"{name} must have {input_dim} columns (the model's input dimension); got shape {X.shape}")


def _check_xy(data, name, likelihood, *, arities, input_dim=None, num_classes=None, outputs=None):
    """The checks of :func:`check_data` and :func:`check_training_data`; ``None`` skips a check."""
    if not isinstance(data, (tuple, list)) or len(data) not in arities:
        raise ValueError(f"{name} must be a tuple (X, Y) of arrays; got {type(data).__name__}")
    X = check_inputs(data[0], f"{name}[0] (X)")
    Y = _as_array(data[1])
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty: X has no rows")
    _check_columns(X, input_dim, f"{name}[0] (X)")
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


# ---------------------------------------------------------------- kernels and inducing inputs against X
#
# A kernel's active_dims pick columns of its input and its ARD parameters (lengthscales, ...) have one
# entry per picked column; inducing inputs Z have the columns of X. GPflow accepts any of them at
# construction and fails inside a kernel evaluation; these checks name the argument instead.

#: the per-column (ARD) parameter of each kind of GPflow kernel; a scalar or one-entry value is shared
_ARD_PARAMETERS = (
    (Stationary, "lengthscales"),
    (Linear, "variance"),
    (ArcCosine, "weight_variances"),
    (Periodic, "period"),
)


def check_kernel_inputs(kernel: Kernel, input_dim: int, name: str = "kernel", source: str = "X") -> None:
    """
    Check that ``kernel`` can be evaluated on inputs of ``input_dim`` columns (those of ``source``):
    its ``active_dims`` (a slice or a list) lie within them, and every ARD parameter (``lengthscales``,
    a ``Linear`` kernel's ``variance``, ``weight_variances``, a ``Periodic`` ``period``) is a scalar,
    has one entry, or one entry per column the kernel picks. Sums, products and change-points are
    checked kernel by kernel; a multi-output kernel's latent kernels against the same columns; a
    :class:`~gpflow_ep.kernels.DeepKernel`'s base kernel against the network's features when their
    number is known (a built ``tf_keras`` model), else not at all. Other kernels: ``active_dims`` only.

    :raises ValueError: naming the (sub-)kernel, e.g. "kernel: lengthscales has 3 entries but X has
        2 columns", "kernel.kernels[1]: active_dims [5] out of range for X with 2 columns".
    """
    if isinstance(kernel, MultioutputKernel):  # each function's kernel sees the same x
        children = kernel.latent_kernels
        shared = len({id(k) for k in children}) == 1
        for i, k in _distinct(children):
            _check_kernel(k, input_dim, name if shared else f"{name}.kernels[{i}]", source)
        return
    _check_kernel(kernel, input_dim, name, source)


def _check_kernel(kernel: Kernel, dim: int, name: str, source: str) -> None:
    columns, picked = _active_columns(kernel, dim, name, source)
    sees = f"{source} has {dim} columns"
    if picked is not None:
        sees = f"its active_dims {picked} pick {columns} of the {dim} columns of {source}"
    for kind, attribute in _ARD_PARAMETERS:
        shape = tuple(getattr(kernel, attribute).shape) if isinstance(kernel, kind) else ()
        if len(shape) == 1 and shape[0] not in (1, columns):
            raise ValueError(f"{name}: {attribute} has {shape[0]} entries but {sees}")
    within = source if picked is None else f"the input {name} picks"
    if isinstance(kernel, DeepKernel):  # its base kernel sees the network's features, not X's columns
        features = _feature_dim(kernel.network)
        if features is not None:
            check_kernel_inputs(kernel.base_kernel, features, f"{name}.base_kernel", "the network's output")
    elif isinstance(kernel, Periodic):  # the base kernel shares the Periodic kernel's active_dims
        _check_kernel(kernel.base_kernel, dim, f"{name}.base_kernel", source)
    elif isinstance(kernel, Combination):  # sums, products, change-points: each kernel on the same input
        for i, k in enumerate(kernel.kernels):
            check_kernel_inputs(k, columns, f"{name}.kernels[{i}]", within)


def _active_columns(kernel: Kernel, dim: int, name: str, source: str):
    """(the number of columns ``kernel`` picks from ``dim``, its active_dims for a message or None for all)."""
    dims = kernel.active_dims
    if isinstance(dims, slice):
        if dims == slice(None):
            return dim, None
        bounds = [b for b in (dims.start, dims.stop) if b is not None]
        picked = range(dim)[dims]
        if len(picked) == 0 or any(b > dim or b < -dim for b in bounds):
            raise ValueError(f"{name}: active_dims {dims} out of range for {source} with {dim} columns")
        return len(picked), dims
    dims = np.asarray(dims).reshape(-1)
    if np.any(dims < 0) or np.any(dims >= dim):
        raise ValueError(f"{name}: active_dims {dims.tolist()} out of range for {source} with {dim} columns")
    return dims.size, dims.tolist()


def _active_dims_text(dims) -> str:
    return str(dims) if isinstance(dims, slice) else str(np.asarray(dims).reshape(-1).tolist())


def _feature_dim(network) -> Optional[int]:
    """F of a network's [N, F] output when it is known before a call (a built ``tf_keras`` model), else None."""
    try:
        shape = network.output_shape
    except (AttributeError, RuntimeError, ValueError):  # not a keras model, or not built yet
        return None
    return shape[-1] if isinstance(shape, tuple) and len(shape) == 2 and isinstance(shape[-1], int) else None


def _distinct(items):
    """(index, item) of each distinct object, first occurrence (kernels and Z shared between outputs)."""
    seen = set()
    for i, item in enumerate(items):
        if id(item) not in seen:
            seen.add(id(item))
            yield i, item


def _inducing_inputs(inducing_variable, name: str, kernel=None):
    """(name, shape of Z, columns Z must have or None for X's) of every set of inducing inputs."""
    if isinstance(inducing_variable, MultioutputInducingVariables):
        members = list(_distinct(inducing_variable.inducing_variables))
        parts = [
            part
            for i, iv in members
            for part in _inducing_inputs(iv, name if len(members) == 1 else f"{name}.inducing_variables[{i}]", kernel)
        ]
        same = len({p[1:] for p in parts}) == 1 and len(parts) == len(members)
        return [(name, *parts[0][1:])] if same else parts  # one shape for all (e.g. one array copied per output)
    Z = getattr(inducing_variable, "Z", None)
    if Z is None or len(Z.shape) != 2:
        return []
    if isinstance(inducing_variable, FeatureInducingPoints):  # in a DeepKernel's feature space
        features = _feature_dim(kernel.network) if isinstance(kernel, DeepKernel) else None
        return [(name, tuple(Z.shape), features)] if features is not None else []
    return [(name, tuple(Z.shape), None)]


def check_inducing_variable(inducing_variable, name: str = "inducing_variable"):
    """
    Check inducing inputs when a sparse model is built: an array must be a finite [M, D] array, and
    there must be at least one inducing point (with none, q(f) is the prior whatever the data: a
    classifier would train to a constant 0.5 without a word).

    :return: ``inducing_variable`` (an array as float64).
    :raises ValueError: naming ``name``.
    """
    if isinstance(inducing_variable, InducingVariables):
        shapes = [(part, shape) for part, shape, _ in _inducing_inputs(inducing_variable, name)]
    else:
        inducing_variable = check_inputs(inducing_variable, f"{name} (Z)")
        shapes = [(name, inducing_variable.shape)]
    for part, shape in shapes:
        if shape[0] == 0:
            raise ValueError(
                f"{part}: Z (inducing points) has no rows (shape {shape}); a sparse model needs at least one "
                "inducing point: with none, q(f) is the prior and the model learns nothing from the data"
            )
    return inducing_variable


def check_inducing_inputs(
    inducing_variable, input_dim: int, name: str = "inducing_variable", source: str = "X", kernel=None
) -> None:
    """
    Check that inducing inputs have ``input_dim`` columns, those of ``source`` (and at least one
    row): GPflow's ``InducingPoints`` Z, each member of GPflow's multi-output inducing variables; a
    :class:`~gpflow_ep.kernels.FeatureInducingPoints` against ``kernel``'s network features when
    their number is known.

    :raises ValueError: e.g. "inducing_variable: Z (inducing points) has 3 columns but X has 2".
    """
    check_inducing_variable(inducing_variable, name)
    for part, shape, columns in _inducing_inputs(inducing_variable, name, kernel):
        target, what = (input_dim, source) if columns is None else (columns, "the kernel network's output")
        if shape[1] != target:
            raise ValueError(f"{part}: Z (inducing points) has {shape[1]} columns but {what} has {target}")


def check_layer_inputs(layer, input_dim: int, name: str, source: str, *, gaussian_inputs: bool = False) -> None:
    """
    Check a deep-GP layer (``kernels`` and ``inducing_variables``, one per output) against its inputs
    of ``input_dim`` columns: the data's for the first layer, the width of the layer below for the
    others. A layer fed Gaussian inputs (``gaussian_inputs``: every layer after the first) computes
    kernel expectations over all of its input's columns, so its kernels must not pick columns.

    :raises ValueError: naming ``name`` and the output, e.g. "layers[1].kernels[0]: ...".
    """
    for d, inducing in _distinct(layer.inducing_variables):
        check_inducing_inputs(inducing, input_dim, f"{name}.inducing_variables[{d}]", source)
    for d, kernel in _distinct(layer.kernels):
        if gaussian_inputs and not (isinstance(kernel.active_dims, slice) and kernel.active_dims == slice(None)):
            raise ValueError(
                f"{name}.kernels[{d}]: active_dims {_active_dims_text(kernel.active_dims)} are not supported after "
                "the first layer (its Gaussian-input moments use every column of the layer below); leave them unset"
            )
        check_kernel_inputs(kernel, input_dim, f"{name}.kernels[{d}]", source)


def check_model_inputs(model, input_dim: int, source: str = "X") -> None:
    """
    Check a model's kernel and inducing inputs against training inputs of ``input_dim`` columns,
    named ``source`` (any GPflow model with ``kernel``/``inducing_variable``, and a deep GP's first
    layer, ``layers[0]``); :func:`check_training_data` calls it, so ``fit`` and every model's
    training loss check it on the first batch. Inducing inputs are checked first, so that X with
    other columns than a model's Z is reported as such, not as a kernel error.

    :raises ValueError: naming the argument (``kernel``, ``inducing_variable``, ``layers[0]...``).
    """
    layers = getattr(model, "layers", None)
    if isinstance(layers, (list, tuple)) and layers and hasattr(layers[0], "inducing_variables"):
        check_layer_inputs(layers[0], input_dim, "layers[0]", source)
        return
    kernel = getattr(model, "kernel", None)
    inducing = getattr(model, "inducing_variable", None)
    if isinstance(inducing, InducingVariables):
        check_inducing_inputs(inducing, input_dim, "inducing_variable", source, kernel)
    if isinstance(kernel, Kernel):
        check_kernel_inputs(kernel, input_dim, "kernel", source)


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
    of nearly equal precisions (1 - τσ² in every cavity variance σ²/(1 - τσ²)) and the hinge moments subtract
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
