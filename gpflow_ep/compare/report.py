r"""
What a comparison prints and writes: a Markdown table (:func:`format_table`), a JSON file of the
rows (:func:`write_json`), both at once (:func:`write_results`), and a PNG (:func:`plot_results`):
for two-dimensional inputs each model's predictions over the input plane side by side (p(y = 1)
with its ½ contour, the predicted class, or the predictive mean, with the training points);
otherwise a reliability diagram (classification) or predicted-against-observed test targets
(regression and counts), beside test NLPD against training time. Figures name each model by its class and
likelihood (:func:`.catalogue.model_label`, e.g. "SVGP (RobustMax)").

* The reliability diagram puts the test points in 10 bins of the predicted probability of the
  predicted class and plots each bin's mean prediction against its observed accuracy; a marker's
  area is proportional to its bin's count, and a panel below draws the counts (a histogram per
  model, the line at :data:`MIN_BIN_COUNT`). A bin of fewer than :data:`MIN_BIN_COUNT` points (whose
  accuracy is a fraction of one or two points) is drawn hollow and left out of the line.
* The NLPD panel draws each model's test NLPD with a bar of ± 2 standard errors of that mean over
  the test points (``test_nlpd_se``), both in the legend, and the axis spans these bars (not below
  0 for classification and counts, whose NLPD, of a probability mass, is non-negative): a
  difference much smaller than the bars is not one the test set can resolve, and the axis does not
  zoom until it looks like one. The models share the test points, so the bars are conservative for a
  difference between two models (a paired comparison's error is smaller).
"""

import json
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Union

import numpy as np

from .catalogue import model_label

__all__ = ["columns", "format_table", "write_json", "write_results", "plot_results", "MIN_BIN_COUNT", "LEGEND"]

PathLike = Union[str, Path]

#: a reliability bin with fewer test points is drawn hollow, outside the line (module docstring)
MIN_BIN_COUNT = 5


def columns(task: str):
    """(key, header) of the table's columns for ``task``."""
    metric = ("test_rmse", "test RMSE") if task in ("regression", "counts") else ("test_error", "test error")
    return (
        ("model", "model"),
        metric,
        ("test_nlpd", "test NLPD"),
        ("train_time_s", "train time [s]"),
        ("objective", "objective"),
        ("objective_kind", "objective is"),
        ("iterations", "L-BFGS iterations"),
        ("converged", "converged"),
        ("ep_converged", "EP runs converged"),
        ("kernel", "learned kernel"),
    )


#: what the table's objective and EP columns mean, written under it
LEGEND = (
    'objective: the model\'s own objective (its kind under "objective is"), without the hyper-prior; L-BFGS-B '
    "minimises −(objective + log p(θ)), p(θ) the hyper-priors, and the progress bar shows the objective at each "
    "iterate (its last line: the number in this table).",
    "EP runs converged: of the model's full EP runs, one inside each evaluation of the training loss and a last "
    'one at the learned hyper-parameters, how many converged ("all N": every one); – for a model without EP.',
)


def _ep_runs(row: dict) -> str:
    """The EP column's cell: "all N" when every full EP run converged, else "K of N" (``row["ep_diagnostics"]``)."""
    runs = row["ep_diagnostics"]["runs"]
    failed = row["ep_diagnostics"]["runs_not_converged"]
    return f"all {runs}" if failed == 0 else f"{runs - failed} of {runs}"


def _cell(key: str, row: dict) -> str:
    value = row.get(key)
    if value is None:
        return "–"
    if key == "ep_converged":
        return _ep_runs(row)
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
    """A Markdown table of ``rows``, one line per model, and the :data:`LEGEND` under it."""
    cols = columns(rows[0]["task"] if rows else "binary")
    lines = ["| " + " | ".join(title for _, title in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_cell(key, row) for key, _ in cols) + " |")
    return "\n".join(lines + [""] + [f"- {item}" for item in LEGEND])


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


def _reliability(ax, counts_ax, models, labels, td):
    X, Y = td.split.X_test, td.split.Y_test
    edges = np.linspace(0, 1, 11)
    scale = 200.0 / len(X)  # marker area (points²) per test point: a bin of all points has area 200
    for model, label in zip(models, labels):
        mean = np.asarray(model.predict_y(X)[0])
        if td.task == "binary":
            confidence = np.where(mean[:, 0] > 0.5, mean[:, 0], 1 - mean[:, 0])
            correct = (mean[:, 0] > 0.5) == (Y[:, 0] > 0.5)
        else:
            confidence, correct = mean.max(1), mean.argmax(1) == Y[:, 0].astype(int)
        which = np.clip(np.digitize(confidence, edges) - 1, 0, 9)
        counts = np.bincount(which, minlength=10)
        used = np.flatnonzero(counts)
        x = np.array([confidence[which == b].mean() for b in used])
        y = np.array([correct[which == b].mean() for b in used])
        n = counts[used]
        enough = n >= MIN_BIN_COUNT
        (line,) = ax.plot(x[enough], y[enough], "-", linewidth=1, label=label)
        colour = line.get_color()
        ax.scatter(x[enough], y[enough], s=np.maximum(n[enough] * scale, 6), color=colour, alpha=0.6, zorder=3)
        ax.scatter(x[~enough], y[~enough], s=12, facecolors="none", edgecolors=colour, zorder=3)
        counts_ax.stairs(counts, edges, color=colour, linewidth=1.2)
    ax.plot([0, 1], [0, 1], "k:", linewidth=1)
    low = 0.45 if td.task == "binary" else 0.0
    ax.set(ylabel="observed accuracy", xlim=(low, 1.02), ylim=(-0.02, 1.05))
    ax.set_title(f"reliability (test; marker area ∝ points per bin, hollow: < {MIN_BIN_COUNT})", fontsize=8)
    ax.tick_params(labelbottom=False)
    ax.legend(fontsize=7, loc="lower right")  # below the diagonal: over-confident bins, usually empty
    counts_ax.axhline(MIN_BIN_COUNT, color="k", linestyle=":", linewidth=0.8)
    counts_ax.set(
        xlabel="predicted probability of the predicted class",
        ylabel="points",
        xlim=(low, 1.02),
        yscale="symlog",
        ylim=(0, len(X) * 1.5),
    )
    counts_ax.yaxis.label.set_fontsize(8)


def _observed(ax, models, labels, td):
    X, Y = td.split.X_test, td.split.Y_test
    for model, label in zip(models, labels):
        mean = np.asarray(model.predict_y(X)[0])[:, 0] * td.y_scale + td.y_mean
        ax.scatter(Y[:, 0] * td.y_scale + td.y_mean, mean, s=6, label=label, alpha=0.6)
    lo, hi = ax.get_xlim()
    ax.plot([lo, hi], [lo, hi], "k:", linewidth=1)
    ax.set(xlabel="observed test target", ylabel="predictive mean", title="test predictions")
    ax.legend(fontsize=7)


def _nlpd_against_time(ax, rows, labels):
    """Test NLPD ± 2 s.e. against training time, the axis spanning the bars (module docstring)."""
    times = np.array([row["train_time_s"] for row in rows])
    nlpd = np.array([row["test_nlpd"] for row in rows])
    bar = 2.0 * np.array([row.get("test_nlpd_se", 0.0) for row in rows])
    for t, value, half, label in zip(times, nlpd, bar, labels):  # a legend, not labels that collide
        ax.errorbar(t, value, yerr=half, fmt="o", markersize=5, capsize=3, label=f"{label}: {value:.3f} ± {half:.3f}")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)  # below: never on a bar
    low, high = float(np.min(nlpd - bar)), float(np.max(nlpd + bar))
    margin = 0.15 * max(high - low, 1e-3 * max(1.0, float(np.max(np.abs(nlpd)))))
    floor = 0.0 if rows[0]["task"] != "regression" else -np.inf  # a probability (mass) is at most 1
    ax.set_ylim(max(low - margin, floor), high + margin)
    wide = times.max() > 10 * times.min()  # a log axis only where it spreads the points
    ax.set(
        xscale="log" if wide else "linear",
        xlabel="training time [s]" + (" (log scale)" if wide else ""),
        ylabel="test NLPD (nats per point)",
        title="test NLPD ± 2 s.e. against training time",
    )
    ax.title.set_fontsize(8)
    if wide:  # plain numbers on the log axis
        from matplotlib.ticker import NullFormatter, ScalarFormatter

        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_xlim(0, times.max() * 1.1)


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
    labels = [model_label(r["task"], r["model"]) for r in rows]
    metric = "test_rmse" if td.task in ("regression", "counts") else "test_error"
    if td.split.X_train.shape[1] == 2:
        fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.2), squeeze=False)
        for ax, model, row, label in zip(axes[0], models, rows, labels):
            title = f"{label}: {metric.split('_')[1]} {row[metric]:.3f}, NLPD {row['test_nlpd']:.3f}"
            _plane(ax, model, td.task, td.split.X_train, td.split.Y_train, title)
    else:
        fig = plt.figure(figsize=(9.0, 4.2))
        grid = fig.add_gridspec(2, 2, height_ratios=(3, 1))
        if td.task in ("regression", "counts"):
            _observed(fig.add_subplot(grid[:, 0]), models, labels, td)
        else:
            main = fig.add_subplot(grid[0, 0])
            _reliability(main, fig.add_subplot(grid[1, 0], sharex=main), models, labels, td)
        _nlpd_against_time(fig.add_subplot(grid[:, 1]), rows, labels)
    fig.suptitle(f"{td.split.name} ({td.task}, {td.split.X_train.shape[0]} training points)", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
