"""``python -m benchmarks.robust_regression``: its data, metrics and ``--quick`` run (Neal's data, one split)."""

import json
import math

import gpflow
import numpy as np
import pytest
from scipy.stats import norm

from benchmarks.robust_regression import METHODS, main, neal_data, neal_function, predictive_metrics, student_t


def test_neal_data_has_the_stated_noise_and_outlier_rate():
    x, y = neal_data(seed=0, n=20_000)
    residual = (y - neal_function(x))[:, 0]
    outliers = np.abs(residual) > 0.5  # 5 sd of the inlier noise: an inlier lands there with probability 6e-7
    # a binomial count of 20 000 draws at 5 %, less the outliers within ±0.5 (P(|N(0, 1)| < 0.5) = 0.38)
    expected = 20_000 * 0.05 * 2 * norm.sf(0.5)
    assert abs(outliers.sum() - expected) < 5 * math.sqrt(expected)
    # within |r| < 0.3 (3 inlier sd): inliers truncated at 3 sd and outliers (sd 1) truncated at 0.3
    inside = residual[np.abs(residual) < 0.3]
    w_in, w_out = 0.95 * (1 - 2 * norm.sf(3)), 0.05 * (1 - 2 * norm.sf(0.3))
    v_in = 0.01 * (1 - 2 * 3 * norm.pdf(3) / (1 - 2 * norm.sf(3)))
    v_out = 1 - 2 * 0.3 * norm.pdf(0.3) / (1 - 2 * norm.sf(0.3))
    expected_var = (w_in * v_in + w_out * v_out) / (w_in + w_out)
    # the sample variance of ~19 000 points has a relative s.e. of about √(2/n) (kurtosis aside): 1 %
    assert abs(np.var(inside) / expected_var - 1) < 0.06
    assert abs(np.mean(x)) < 0.05 and abs(np.std(x) - 1.0) < 0.02


def test_student_t_degrees_of_freedom_are_trained_and_bounded():
    likelihood = student_t(df=4.0)
    assert likelihood.df in likelihood.trainable_parameters
    assert float(likelihood.df.numpy()) == pytest.approx(4.0, rel=1e-12)
    likelihood.df.unconstrained_variable.assign(-50.0)
    assert float(likelihood.df.numpy()) >= 1.0


def test_predictive_metrics_of_gpr_match_the_gaussian_predictive_density():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(30, 2)), rng.normal(size=(30, 1))
    Xt, Yt = rng.normal(size=(10, 2)), rng.normal(size=(10, 1))
    model = gpflow.models.GPR((X, Y), gpflow.kernels.SquaredExponential(), noise_variance=0.3)
    y_mean, y_sd = 5.0, 2.5
    got = predictive_metrics(model, Xt, Yt, y_mean, y_sd)
    # independent reference: y* ~ N(μ, σ² + noise) in standardised units, mapped to y = y_mean + y_sd · y_std
    mu, var = (t.numpy() for t in model.predict_f(Xt))
    sd = np.sqrt(var + 0.3)
    y_orig = y_mean + y_sd * Yt
    expected_mlpd = np.mean(norm.logpdf(y_orig, loc=y_mean + y_sd * mu, scale=y_sd * sd))
    assert got["mlpd"] == pytest.approx(expected_mlpd, rel=1e-10)
    assert got["mae"] == pytest.approx(np.mean(np.abs(y_sd * (mu - Yt))), rel=1e-10)
    assert got["rmse"] == pytest.approx(np.sqrt(np.mean((y_sd * (mu - Yt)) ** 2)), rel=1e-10)


def test_robust_regression_quick_writes_finite_results(tmp_path):
    assert main(["--quick", "--out-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "robust_regression_quick.json").read_text())
    assert report["config"]["datasets"] == ["neal"] and report["config"]["splits"] == 1
    (run,) = report["runs"]
    assert run["n_train"] == 100 and run["n_test"] == 100
    assert sorted(run["results"]) == sorted(METHODS)
    for method, r in run["results"].items():
        for key in ("mlpd", "mae", "rmse", "train_time_s"):
            assert r[key] is not None and math.isfinite(r[key]), (method, key)
        assert r["mae"] > 0 and r["rmse"] >= r["mae"]
    ep = run["results"]["EP-t"]["ep"]
    assert ep["finite"] and ep["sweeps"] >= 1
    assert run["results"]["EP-t"]["likelihood"]["df"] >= 1.0
    md = (tmp_path / "robust_regression_quick.md").read_text()
    for method in METHODS:
        assert f"| neal | 1 | {method} |" in md
    assert "nan" not in md.lower()


def test_summary_table_has_a_row_per_data_set_and_method():
    """Mean ± s.e. over splits of every metric, ν only for the Student-t models, EP's convergence only for EP."""
    from benchmarks.robust_regression import COMPARISON

    def run(split):
        ep = dict(converged=True, fallback=False)
        student = dict(mlpd=0.1 * split, mae=0.2, rmse=0.3, train_time_s=1.0, likelihood=dict(df=2.0 + split), ep=ep)
        gpr = dict(mlpd=-0.1, mae=0.4, rmse=0.5, train_time_s=2.0, likelihood=dict(variance=0.1))
        return dict(dataset="neal", split=split, results={"EP-t": student, "GPR": gpr})

    methods = ["EP-t", "GPR"]
    report = dict(config=dict(methods=methods), summary=COMPARISON.summarise([run(0), run(1)], methods))
    head, _, ep_row, gpr_row = COMPARISON.table(report)
    assert head == "| data set | splits | method | MLPD | MAE | RMSE | ν | time (s) | EP converged |"
    # MLPD 0.0 and 0.1: mean 0.05, s.e. sd/√2 = 0.05; ν 2 and 3: mean 2.5, s.e. 0.5
    assert (
        ep_row == "| neal | 2 | EP-t | 0.050 ± 0.050 | 0.200 ± 0.000 | 0.300 ± 0.000 | 2.50 ± 0.50 | 1.0 ± 0.0 | 2/2 |"
    )
    assert gpr_row == "| neal | 2 | GPR | -0.100 ± 0.000 | 0.400 ± 0.000 | 0.500 ± 0.000 | – | 2.0 ± 0.0 | – |"
