r"""
What a comparison prints and writes: a Markdown table (:func:`format_table`), a JSON file of the
rows (:func:`write_json`), both at once (:func:`write_results`), and a PNG (:func:`plot_results`):
for two-dimensional inputs each model's predictions over the input plane side by side (p(y = 1)
with its ½ contour, the predicted class, or the predictive mean, with the training points);
otherwise a reliability diagram (classification; predicted probability of the predicted class
against its observed frequency, in 10 bins) or predicted-against-observed test targets
(regression), beside test NLPD against training time.
"""

import json
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Union

import numpy as np

__all__ = ["columns", "format_table", "write_json", "write_results", "plot_results"]

PathLike = Union[str, Path]


def columns(task: str):
    """(key, header) of the table's columns for ``task``."""
    metric = ("test_rmse", "test RMSE") if task == "regression" else ("test_error", "test error")
    return (
        ("model", "model"),
        metric,
        ("test_nlpd", "test NLPD"),
        ("train_time_s", "train time [s]"),
        ("objective", "objective"),
        ("objective_kind", "objective is"),
        ("iterations", "L-BFGS iterations"),
        ("converged", "converged"),
        ("ep_converged", "EP converged"),
        ("kernel", "learned kernel"),
    )


def _cell(key: str, value) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key in ("test_error", "test_nlpd", "test_rmse"):
        return f"{value:.4f}"
    if key == "objective":
        return f"{value:.3f}"
    if key == "train_time_s":
        return f"{value:.1f}"
    return str(value)


def format_table(rows: List[dict]) -> str:
    """A Markdown table of ``rows``, one line per model."""
    cols = columns(rows[0]["task"] if rows else "binary")
    lines = ["| " + " | ".join(title for _, title in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_cell(key, row.get(key)) for key, _ in cols) + " |")
    return "\n".join(lines)


def write_json(rows: List[dict], path: PathLike) -> Path:
    """Write ``rows`` (one record per model) as a JSON list to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=2) + "\n")
    return path


def write_results(rows: List[dict], out_prefix: PathLike):
    """Write ``<out_prefix>.json`` (the rows) and ``<out_prefix>.md`` (the table); the two paths."""
    prefix = Path(out_prefix)
    json_path = write_json(rows, prefix.parent / (prefix.name + ".json"))
    md_path = prefix.parent / (prefix.name + ".md")
    md_path.write_text(format_table(rows) + "\n")
    return json_path, md_path


def _plane(ax, model, task, X, Y, title):
    lo, hi = X.min(0) - 0.5, X.max(0) + 0.5
    g0, g1 = np.meshgrid(np.linspace(lo[0], hi[0], 80), np.linspace(lo[1], hi[1], 80))
    grid = np.column_stack([g0.ravel(), g1.ravel()])
    mean = np.asarray(model.predict_y(grid)[0])
    if task == "binary":
        p = mean[:, 0].reshape(g0.shape)
        ax.contourf(g0, g1, p, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.7)
        ax.contour(g0, g1, p, levels=[0.5], colors="k", linewidths=1.5)
    elif task == "multiclass":
        ax.contourf(g0, g1, mean.argmax(1).reshape(g0.shape), cmap="tab10", alpha=0.4, vmin=0, vmax=9)
    else:
        ax.contourf(g0, g1, mean[:, 0].reshape(g0.shape), levels=20, cmap="viridis", alpha=0.8)
    ax.scatter(
        X[:, 0],
        X[:, 1],
        c=Y[:, 0],
        cmap="tab10" if task == "multiclass" else "bwr",
        s=16,
        edgecolors="w",
        linewidths=0.6,
        vmin=0,
        vmax=9 if task == "multiclass" else None,
    )
    ax.set_title(title, fontsize=9)


def _reliability(ax, models, names, td):
    X, Y = td.split.X_test, td.split.Y_test
    edges = np.linspace(0, 1, 11)
    for model, name in zip(models, names):
        mean = np.asarray(model.predict_y(X)[0])
        if td.task == "binary":
            confidence = np.where(mean[:, 0] > 0.5, mean[:, 0], 1 - mean[:, 0])
            correct = (mean[:, 0] > 0.5) == (Y[:, 0] > 0.5)
        else:
            confidence, correct = mean.max(1), mean.argmax(1) == Y[:, 0].astype(int)
        which = np.clip(np.digitize(confidence, edges) - 1, 0, 9)
        used = [b for b in range(10) if np.any(which == b)]
        ax.plot(
            [confidence[which == b].mean() for b in used],
            [correct[which == b].mean() for b in used],
            "o-",
            label=name,
            markersize=3,
        )
    ax.plot([0, 1], [0, 1], "k:", linewidth=1)
    ax.set(
        xlabel="predicted probability of the predicted class",
        ylabel="observed accuracy",
        title="reliability (test)",
        xlim=(0.45 if td.task == "binary" else 0, 1),
        ylim=(0, 1.02),
    )
    ax.legend(fontsize=7)


def _observed(ax, models, names, td):
    X, Y = td.split.X_test, td.split.Y_test
    for model, name in zip(models, names):
        mean = np.asarray(model.predict_y(X)[0])[:, 0] * td.y_scale + td.y_mean
        ax.scatter(Y[:, 0] * td.y_scale + td.y_mean, mean, s=6, label=name, alpha=0.6)
    lo, hi = ax.get_xlim()
    ax.plot([lo, hi], [lo, hi], "k:", linewidth=1)
    ax.set(xlabel="observed test target", ylabel="predictive mean", title="test predictions")
    ax.legend(fontsize=7)


def plot_results(rows: List[dict], models: Sequence, td, path: PathLike) -> Optional[Path]:
    """
    Save the comparison's PNG (module docstring) at ``path``; ``models`` are the trained models of
    ``rows``. Returns the path, or ``None`` (with a message on stderr) if matplotlib is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("gpflow-ep: matplotlib is not installed; skipping the plot", file=sys.stderr)
        return None
    names = [r["model"] for r in rows]
    metric = "test_rmse" if td.task == "regression" else "test_error"
    if td.split.X_train.shape[1] == 2:
        fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.2), squeeze=False)
        for ax, model, row in zip(axes[0], models, rows):
            title = f"{row['model']}: {metric.split('_')[1]} {row[metric]:.3f}, NLPD {row['test_nlpd']:.3f}"
            _plane(ax, model, td.task, td.split.X_train, td.split.Y_train, title)
    else:
        fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8), squeeze=False)
        (_observed if td.task == "regression" else _reliability)(axes[0][0], models, names, td)
        ax = axes[0][1]
        for row in rows:
            ax.scatter(row["train_time_s"], row["test_nlpd"], s=30)
            ax.annotate(
                row["model"],
                (row["train_time_s"], row["test_nlpd"]),
                fontsize=8,
                xytext=(4, 4),
                textcoords="offset points",
            )
        times = [row["train_time_s"] for row in rows]
        wide = max(times) > 10 * min(times)  # a log axis only where it spreads the points
        ax.set(
            xscale="log" if wide else "linear",
            xlabel="training time [s]" + (" (log scale)" if wide else ""),
            ylabel="test NLPD",
            title="NLPD against training time",
        )
        if wide:  # plain numbers on the log axis
            from matplotlib.ticker import NullFormatter, ScalarFormatter

            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
    fig.suptitle(f"{td.split.name} ({td.task}, {td.split.X_train.shape[0]} training points)", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
