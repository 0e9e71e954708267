"""
Smoke test of part C1, the toy of Qi & Guo (2012), §6.1, ``python -m benchmarks.rep_toy``, plus the
toy's closed-form exact posterior (against importance sampling, the paper's oracle) and REP(c = 1000) ≡ EP.

The run is shrunk below ``--quick`` (u = 0.8, c = 1000, one random configuration) because every EP
run re-traces the compiled loop (about 1–4 s each), which dominates the cost of this tiny problem.
"""

import json
import math

import numpy as np
import pytest

from benchmarks import rep_toy


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def importance_sampling(X, Y, eps: float, num_samples: int, seed: int):
    """
    Self-normalised importance sampling of the moments of w with the prior N(0, I₂) as proposal (the
    paper's oracle), with the delta-method standard errors of the mean and covariance.
    """
    W = np.random.default_rng(seed).normal(size=(num_samples, 2))
    lw = rep_toy.log_likelihood(X, Y, eps, W[:, 0], W[:, 1])
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean = w @ W
    D = W - mean
    g = D[:, :, None] * D[:, None, :]
    cov = np.einsum("n,nij->ij", w, g)
    se_cov = np.sqrt(np.einsum("n,nij->ij", w**2, (g - cov) ** 2))
    evidence = np.exp(lw)  # Z = E_prior[p(y | w)]: the plain Monte-Carlo mean, its standard error
    out = {"mean": mean, "cov": cov, "se_mean": np.sqrt((w**2) @ (D**2)), "se_cov": se_cov}
    return dict(out, Z=evidence.mean(), se_Z=evidence.std(ddof=1) / math.sqrt(num_samples))


@pytest.mark.parametrize("config, eps", [(None, 0.2), (3, 0.1), (3, 0.25)])
def test_closed_form_posterior_agrees_with_importance_sampling(config, eps):
    """The sector formula (the C1 reference) vs importance sampling (prior proposal, 200k samples), on the
    replica and on a random configuration."""
    X, Y = (rep_toy.TOY_X, rep_toy.TOY_Y) if config is None else rep_toy.random_configuration(config)
    mean, cov, log_z = rep_toy.exact_posterior_sectors(X, Y, eps)
    s = importance_sampling(X, Y, eps, num_samples=200_000, seed=0)
    assert np.all(np.abs(s["mean"] - mean) < 5 * s["se_mean"])
    assert np.all(np.abs(s["cov"] - cov) < 5 * s["se_cov"])
    assert abs(s["Z"] - math.exp(log_z)) < 5 * s["se_Z"]


def test_rep_toy_quick(tmp_path):
    argv = ["--out-dir", str(tmp_path), "--quick", "--u", "0.8", "--c", "1000", "--random-configs", "1"]
    assert rep_toy.main(argv) == 0
    report = json.loads((tmp_path / "C1.json").read_text())
    md = (tmp_path / "C1.md").read_text()
    assert "## Claims" in md and "| EP |" in md
    assert report["config"]["command"].startswith("python -m benchmarks.rep_toy --out-dir")
    assert report["runs"] and report["random"]["runs"] and report["claims"]
    assert set(report["random"]["summary"]) == {"PEP(u=0.8,full)", "REP(c=1)"}
    for row in report["runs"] + report["random"]["runs"]:
        for key in ("mean_err", "cov_err", "angle_deg", "mean_err_alpha"):
            assert _finite(row[key]), (row["method"], key)
        assert all(_finite(v) for v in row["mean"])
    by_name = {r["method"]: r for r in report["runs"] if r["eps"] == 0.2}
    ep, rep = by_name["EP"], by_name["REP(c=1000)"]
    np.testing.assert_allclose(rep["mean"], ep["mean"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(rep["cov"], ep["cov"], rtol=0, atol=1e-10)
    assert rep["relaxed_points"] == []
    # the α predictor differs from the posterior mean (it is a separate prediction mode)
    assert ep["mean_alpha"] != ep["mean"]

    # --rerender recomputes claims and Markdown from the stored runs
    (tmp_path / "C1.md").unlink()
    assert rep_toy.main(["--out-dir", str(tmp_path), "--rerender"]) == 0
    assert (tmp_path / "C1.md").read_text() == md
