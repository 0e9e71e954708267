r"""
``gpflow-ep compare``: EP against GPflow's variational classifiers on one train/test split.

Every model is trained on the same data with the same kernel family (a squared-exponential kernel
with one lengthscale per input dimension) and the exact probit likelihood
:class:`gpflow_ep.likelihoods.Probit`, with scipy's L-BFGS on the model's training loss:

* ``EPGPC``: :class:`gpflow_ep.models.EPGPC` (nested mode: EP re-converged at every loss
  evaluation); the model-fit column is the EP evidence log Z_EP;
* ``VGP``: ``gpflow.models.VGP``; the model-fit column is the ELBO;
* ``SVGP``: ``gpflow.models.SVGP`` with ``num_inducing`` inducing inputs placed by k-means,
  trained full batch; the model-fit column is the ELBO;
* ``EPGPC-hinge`` and ``SVGP-hinge`` (asked for by name, not in the default set): the same models
  with the Bayesian SVM's :class:`gpflow_ep.likelihoods.BinaryHinge` pseudo-likelihood instead of the
  probit; their evidence and ELBO are of a pseudo-likelihood (comparable only with each other) and
  their p(y = 1 | x*) is the vote probability P(f* > 0), so their NLPD is that of the vote.

Each model gives one row (a ``dict``) of test error, mean test NLPD, training time, its evidence or
bound, and the optimiser's iteration count. :func:`format_table` renders rows as Markdown and
:func:`write_results` writes them as JSON and Markdown.
"""

import json
import math
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import gpflow
import numpy as np
import tensorflow as tf
from sklearn.cluster import KMeans

from .datasets import breast_cancer_split, load_benchmark
from .likelihoods import BinaryHinge, Probit
from .models import EPGPC

MODELS = ("EPGPC", "VGP", "SVGP", "EPGPC-hinge", "SVGP-hinge")
DEFAULT_MODELS = ("EPGPC", "VGP", "SVGP")

#: Columns of a result row, in table order: (key, Markdown header).
COLUMNS = (
    ("model", "model"),
    ("test_error", "test error"),
    ("test_nlpd", "test NLPD"),
    ("train_time_s", "train time [s]"),
    ("objective", "log Z_EP / ELBO"),
    ("objective_kind", "objective"),
    ("iterations", "iterations"),
    ("ep_converged", "EP converged"),
)

PathLike = Union[str, Path]


# -------------------------------------------------------------------------------- inputs


def check_models(models: Union[str, Sequence[str]]) -> List[str]:
    """
    Normalise ``models`` (a sequence or a comma-separated string) to a list of known model names.

    :raises ValueError: naming ``models`` when it is empty or holds an unknown name.
    """
    names = [m.strip() for m in models.split(",")] if isinstance(models, str) else list(models)
    names = [m for m in names if m]
    if not names:
        raise ValueError(f"models must name at least one of {list(MODELS)}")
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        raise ValueError(f"models must be among {list(MODELS)}; got unknown {unknown}")
    if len(set(names)) != len(names):
        raise ValueError(f"models must not repeat a name; got {names}")
    return names


def _check_int(value, name: str, minimum: int) -> int:
    """``value`` must be an integer ≥ ``minimum``; the ValueError names ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got {value!r}")
    return int(value)


def load_split(dataset: Optional[str] = None, split: int = 0, data_dir: Optional[PathLike] = None):
    """
    The data of a comparison: scikit-learn's bundled breast cancer (:func:`breast_cancer_split`
    with ``seed=split``) when ``dataset`` is ``None``, otherwise split ``split`` of the binary
    benchmark ``dataset`` read from ``data_dir``.

    :raises ValueError: naming ``split`` or ``data_dir`` when they are invalid, or from the loader
        for an unknown dataset or an out-of-range split.
    """
    _check_int(split, "split", 0)
    if dataset is None:
        return breast_cancer_split(seed=split)
    return load_benchmark(dataset, split, data_dir, kind="binary")


# -------------------------------------------------------------------------------- models


def make_kernel(input_dim: int):
    """SE-ARD kernel with variance 1 and every lengthscale √D (the norm of a standardised input)."""
    return gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=np.full(input_dim, math.sqrt(input_dim)))


def inducing_inputs(X: np.ndarray, num_inducing: int, seed: int = 0) -> np.ndarray:
    """
    ``min(num_inducing, N)`` inducing inputs: k-means centres of X (``random_state=seed``), or X
    itself when ``num_inducing ≥ N``.
    """
    num = min(int(num_inducing), X.shape[0])
    if num == X.shape[0]:
        return X.copy()
    kmeans = KMeans(n_clusters=num, random_state=seed, n_init=10).fit(X)
    return kmeans.cluster_centers_.astype(np.float64)


def build_model(name: str, data, num_inducing: int = 50, seed: int = 0):
    """
    A fresh, untrained model ``name`` on ``data = (X, Y)`` with the probit likelihood.

    :return: ``(model, loss)``, with ``loss`` the closure that scipy minimises.
    """
    X, Y = data
    kernel = make_kernel(X.shape[1])
    likelihood = BinaryHinge() if name.endswith("-hinge") else Probit()
    if name in ("EPGPC", "EPGPC-hinge"):
        model = EPGPC(data, kernel, likelihood)
        return model, model.training_loss
    if name == "VGP":
        model = gpflow.models.VGP(data, kernel, likelihood)
        return model, model.training_loss
    if name in ("SVGP", "SVGP-hinge"):
        Z = inducing_inputs(X, num_inducing, seed)
        model = gpflow.models.SVGP(kernel, likelihood, Z, num_data=X.shape[0])
        return model, model.training_loss_closure(data)
    raise ValueError(f"model must be one of {list(MODELS)}; got {name!r}")


def objective(name: str, model, data) -> float:
    """log Z_EP for EPGPC, the ELBO for VGP and SVGP, at the model's current parameters."""
    if name.startswith("EPGPC"):
        return float(model.log_marginal_likelihood().numpy())
    if name == "VGP":
        return float(model.elbo().numpy())
    return float(model.elbo(data).numpy())


def evaluate(model, X_test: np.ndarray, Y_test: np.ndarray) -> Dict[str, float]:
    """
    Test error (the fraction misclassified when p(y=1 | x*) of ``predict_y`` is thresholded at
    ½) and the mean test negative log predictive density −mean log p(y* | x*).
    """
    p, _ = model.predict_y(X_test)
    error = np.mean((p.numpy() > 0.5).astype(np.float64) != Y_test)
    nlpd = -np.mean(model.predict_log_density((X_test, Y_test)).numpy())
    return {"test_error": float(error), "test_nlpd": float(nlpd)}


def train_one(name: str, split, num_inducing: int = 50, maxiter: int = 1000, seed: int = 0) -> dict:
    """
    Build model ``name`` on ``split``, train it with ``gpflow.optimizers.Scipy`` (L-BFGS-B,
    at most ``maxiter`` iterations) and evaluate it on the test part.

    The training time is the wall-clock time of the ``minimize`` call, so it *includes* the
    tracing and compilation of the loss by ``tf.function`` (a few seconds); it is the time a user
    waits, not a per-iteration cost.

    :return: a result row; see :data:`COLUMNS`.
    """
    data = (split.X_train, split.Y_train)
    model, loss = build_model(name, data, num_inducing, seed)
    start = time.perf_counter()
    result = gpflow.optimizers.Scipy().minimize(loss, model.trainable_variables, options=dict(maxiter=int(maxiter)))
    train_time = time.perf_counter() - start
    converged = None
    if name.startswith("EPGPC"):
        # bring the sites to the EP fixed point of the final hyper-parameters (scipy's last loss
        # evaluation need not be at the point it returns)
        model.run_ep()
        converged = bool(model.ep_diagnostics.converged.numpy())
    row = {
        "model": name,
        **evaluate(model, split.X_test, split.Y_test),
        "train_time_s": float(train_time),
        "objective": objective(name, model, data),
        "objective_kind": ("log Z_EP" if name.startswith("EPGPC") else "ELBO")
        + (" (pseudo)" if name.endswith("-hinge") else ""),
        "iterations": int(result.nit),
        "ep_converged": converged,
        "optimizer_success": bool(result.success),
        "dataset": split.name,
        "split": int(split.split),
        "num_train": int(split.X_train.shape[0]),
        "num_test": int(split.X_test.shape[0]),
    }
    if name.startswith("SVGP"):
        row["num_inducing"] = int(model.inducing_variable.Z.shape[0])
    return row


def run_compare(
    dataset: Optional[str] = None,
    split: int = 0,
    data_dir: Optional[PathLike] = None,
    models: Union[str, Sequence[str]] = DEFAULT_MODELS,
    num_inducing: int = 50,
    maxiter: int = 1000,
    seed: int = 0,
    log_dir: Optional[PathLike] = None,
    plot: Optional[PathLike] = None,
) -> List[dict]:
    """
    Train ``models`` on one split and return one result row per model.

    :param dataset: a binary benchmark of the ``shared/datasets`` layout (e.g. ``"Pima"``), or
        ``None`` for scikit-learn's bundled breast cancer (stratified 70/30 split, seed ``split``).
    :param split: split index (0..19 for the benchmarks).
    :param data_dir: benchmark directory (default ``$GPFLOW_EP_DATA``, then ``../shared/datasets``).
    :param models: names among ``MODELS``, or a comma-separated string of them.
    :param num_inducing: SVGP inducing points (at most the training-set size).
    :param maxiter: L-BFGS iteration cap for every model.
    :param seed: seed of the k-means placement of SVGP's inducing inputs.
    :param log_dir: if given, the final metrics of each model are written as TensorBoard scalars
        to ``log_dir/<model>``.
    :param plot: if given, a PNG bar chart of test error and NLPD per model is saved there.
    :return: rows with keys ``model``, ``test_error``, ``test_nlpd``, ``train_time_s`` (wall-clock
        of ``minimize``, tf.function compilation included), ``objective`` (log Z_EP for EPGPC,
        the ELBO otherwise), ``objective_kind``, ``iterations``, ``ep_converged`` (``None`` for
        non-EP models), plus ``optimizer_success`` and the data description.
    :raises ValueError: for an unknown dataset or model, a bad split or a bad ``maxiter``.
    """
    names = check_models(models)
    _check_int(maxiter, "maxiter", 1)
    _check_int(num_inducing, "num_inducing", 1)
    split_data = load_split(dataset, split, data_dir)
    rows = [train_one(name, split_data, num_inducing, maxiter, seed) for name in names]
    if log_dir is not None:
        write_tensorboard(rows, log_dir)
    if plot is not None:
        plot_results(rows, plot)
    return rows


# -------------------------------------------------------------------------------- output

#: Row entries written as TensorBoard scalars.
SCALARS = ("test_error", "test_nlpd", "train_time_s", "objective", "iterations")


def write_tensorboard(rows: List[dict], log_dir: PathLike) -> None:
    """Write each row's final metrics as TensorBoard scalars (step 0) to ``log_dir/<model>``."""
    for row in rows:
        writer = tf.summary.create_file_writer(str(Path(log_dir) / row["model"]))
        with writer.as_default():
            for key in SCALARS:
                tf.summary.scalar(f"compare/{key}", float(row[key]), step=0)
            if row.get("ep_converged") is not None:
                tf.summary.scalar("compare/ep_converged", float(row["ep_converged"]), step=0)
        writer.close()


def plot_results(rows: List[dict], path: PathLike) -> Optional[Path]:
    """
    Save a bar chart of test error and mean test NLPD per model as a PNG at ``path``.

    :return: the path written, or ``None`` (with a message on stderr) if matplotlib is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("gpflow-ep: matplotlib is not installed; skipping the plot", file=sys.stderr)
        return None
    names = [r["model"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.0))
    for ax, key, label in zip(axes, ("test_error", "test_nlpd"), ("test error", "test NLPD")):
        ax.bar(names, [r[key] for r in rows], color="C0")
        ax.set_title(label)
    fig.suptitle(rows[0].get("dataset", "") if rows else "")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _cell(key: str, value) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key in ("test_error", "test_nlpd"):
        return f"{value:.4f}"
    if key == "objective":
        return f"{value:.3f}"
    if key == "train_time_s":
        return f"{value:.1f}"
    return str(value)


def format_table(rows: List[dict]) -> str:
    """A Markdown table of ``rows``, one line per model, columns as in :data:`COLUMNS`."""
    header = "| " + " | ".join(title for _, title in COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in COLUMNS) + "|"
    lines = [header, rule]
    for row in rows:
        lines.append("| " + " | ".join(_cell(key, row.get(key)) for key, _ in COLUMNS) + " |")
    return "\n".join(lines)


def write_results(rows: List[dict], out_prefix: PathLike):
    """
    Write ``rows`` to ``<out_prefix>.json`` (the full rows) and ``<out_prefix>.md`` (the table).

    :return: the two paths written.
    """
    prefix = Path(out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    json_path = prefix.parent / (prefix.name + ".json")
    md_path = prefix.parent / (prefix.name + ".md")
    json_path.write_text(json.dumps(rows, indent=2) + "\n")
    md_path.write_text(format_table(rows) + "\n")
    return json_path, md_path
