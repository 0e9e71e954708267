r"""
Part C2 of :mod:`benchmarks.rep`: Qi & Guo (2012), §6.2 and Figs. 2–4. EP, Power EP and Relaxed EP on
2-D synthetic data (``gpflow_ep.datasets.noisy_mixture``) with 10 % / 20 % flipped training labels:
divergence, sweeps, test error and which sites REP relaxes.

Writes ``<out-dir>/C2.json``, ``C2.md`` (after every repetition), ``C2_R_curves.png`` (Fig. 3) and
``C2_boundaries.png`` (Fig. 2); the protocol and the columns are described in docs/benchmarks/rep.md.
"""

import math
from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np
from gpflow.kernels import SquaredExponential
from scipy.stats import norm

from gpflow_ep.datasets import noisy_mixture

from .claims import Claim, verdicts
from .rep import EP_OPTIONS, EP_SPEC, fit, page, part_parser, pct, pep_spec, rep_spec, run_part, table, test_scores
from .runner import parse_list, progress_logger
from .stats import cell, mean_se, paired_differences

log = progress_logger("C2")

U, WIDTH = 0.8, 1.0
#: the full design (REP with extra_c on the first EXTRA_C_REPETITIONS only: time budget); --quick runs QUICK
FULL = dict(
    flip_rates=(0.1, 0.2), repetitions=10, n_per_class=200, test_points=39_600, c=(1.0, 10.0), extra_c=(0.3, 3.0)
)
QUICK = dict(FULL, repetitions=1, n_per_class=60, test_points=2000, c=(1.0,), extra_c=())
SEPARATION, TRAIN_SEED, TEST_SEED, CHUNK = 3.0, 20120, 40120, 5000
EXTRA_C_REPETITIONS, PLOT_REP, PLOT_GRID = 3, 0, 151
#: per (flip rate, method): the mean ± s.e. over repetitions of these run fields
MEANS = dict(mean_sweeps_all="sweeps", mean_skipped="num_skipped", test_error="test_error", test_nlpd="test_nlpd")
MEANS.update(test_error_alpha="test_error_alpha", frac_b_positive="frac_b_positive", fit_time_s="fit_time_s")


def build_parser():
    p = part_parser(__spec__.name, __doc__, "C2", "1 repetition, 60 points per class, 2,000 test points, c = 1")
    p.add_argument("--repetitions", type=int, default=None, help="repetitions per flip rate (default 10)")
    p.add_argument("--test-points", type=int, default=None, help="test points per repetition (default 39600)")
    p.add_argument("--c", default=None, help="comma-separated REP penalties run on every repetition (default 1,10)")
    p.add_argument("--extra-c", default=None, help="comma-separated REP penalties run on 3 repetitions (default 0.3,3)")
    p.add_argument("--flip-rates", default=None, help="comma-separated flip rates (default 0.1,0.2)")
    return p


def bayes_error(s: float = SEPARATION) -> Dict:
    """
    The Bayes error of the clean generator (equal class priors): classify 1 iff |x₁| < t with
    cosh(s t) = exp(s²/2); error = ½·2Φ(−t) + ½(Φ(t − s) − Φ(−t − s)).
    """
    t = math.acosh(math.exp(0.5 * s * s)) / s
    return {"threshold_abs_x1": t, "error": float(norm.cdf(-t) + 0.5 * (norm.cdf(t - s) - norm.cdf(-t - s)))}


def dataset(flip_rate: float, rep: int, n_per_class: int, test_points: int):
    """Training set (noisy labels + clean labels) and clean test set of one repetition."""
    key = int(round(1000 * flip_rate))
    X, Y, clean = noisy_mixture(n_per_class, flip_rate, seed=TRAIN_SEED + 1000 * key + rep, separation=SEPARATION)
    Xt, Yt, _ = noisy_mixture(test_points // 2, 0.0, seed=TEST_SEED + 1000 * key + rep, separation=SEPARATION)
    return X, Y, clean, Xt, Yt


def run_one(slots: Dict, spec: Dict, data, flip_rate: float, rep: int):
    """EP from flat sites, then the test metrics and which sites REP relaxed; the model and its row."""
    X, Y, clean, Xt, Yt = data
    kernel, values = SquaredExponential, {"likelihood.epsilon": flip_rate, "kernel.lengthscales": WIDTH}
    model, row, b = fit(slots, spec, X, Y, kernel, values, flip_rate=flip_rate, eps=flip_rate, width=WIDTH, rep=rep)
    row.update(test_scores(model, Xt, Yt, chunk=CHUNK))
    row["diverged"] = not (row["converged"] and row["finite"] and row["predictions_finite"])
    row["num_flipped_among_relaxed"] = int(np.sum((Y != clean)[:, 0] & (b > 0)))
    return model, row


def summarise(rows: List[Dict], flip_rates, methods) -> Dict:
    """Per (flip rate, method) aggregates over repetitions."""
    out: Dict[str, Dict] = {}
    for fr, name in ((fr, name) for fr in flip_rates for name in methods):
        rs = [r for r in rows if r["flip_rate"] == fr and r["method"] == name]
        if rs:
            relaxed, flipped = (sum(r[k] for r in rs) for k in ("num_b_positive", "num_flipped_among_relaxed"))
            s = dict(runs=len(rs), divergent=sum(r["diverged"] for r in rs), relaxed_sites_total=relaxed)
            s["mean_sweeps_converged"] = mean_se(r["sweeps"] for r in rs if not r["diverged"])
            s["flipped_frac_among_relaxed_pooled"] = flipped / relaxed if relaxed else None
            out.setdefault(str(fr), {})[name] = dict(s, **{k: mean_se(r[f] for r in rs) for k, f in MEANS.items()})
    return out


#: the claims of Fig. 4 (and one of ours), as the paper states them
CLAIMS = dict(
    never="REP never diverges (Fig. 4b)",
    order="EP diverges more often than PEP, PEP more than REP (Fig. 4b)",
    sweeps="REP needs the fewest iterations (Fig. 4a)",
    error="REP has the lowest test error (Fig. 4c)",
    relaxed="relaxation (b > 0) targets mislabelled points: flipped fraction among relaxed sites > flip rate [ours]",
)


def claims(summary: Dict, rows: List[Dict], methods: Sequence[str]) -> List[Dict]:
    """:data:`CLAIMS` over the summary rows of the ``methods`` run on every repetition (the pooled check: all REP)."""
    table = [dict(s, flip_rate=f, method=n) for f, block in summary.items() for n, s in block.items()]
    ep = {r["flip_rate"]: r for r in table if r["method"] == "EP"}
    sweeps = lambda r: r["mean_sweeps_all"]["mean"]

    def of(prefix: str):
        return lambda t: [r for r in t if r["method"] in methods and r["method"].startswith(prefix)]

    def best_per_rate(key) -> List[Dict]:
        """Per flip rate, the best REP setting and the best other method by ``key`` (lower is better)."""
        out = []
        for f in summary:
            rs = [r for r in table if r["flip_rate"] == f and r["method"] in methods]
            reps, others = ([r for r in rs if r["method"].startswith("REP") is rep] for rep in (True, False))
            out += [dict(flip_rate=f, rep=min(reps, key=key), other=min(others, key=key))] if reps and others else []
        return out

    def error_difference(pair: Dict) -> Dict:
        """The paired difference of the test errors over the repetitions of the pair's flip rate."""
        rs = [r for r in rows if str(r["flip_rate"]) == pair["flip_rate"]]
        by_rep = [
            {r["rep"]: r.get("test_error") for r in rs if r["method"] == pair[p]["method"]} for p in ("rep", "other")
        ]
        return dict(pair, d=paired_differences(*by_rep))

    def pooled(f: str) -> Dict:
        rs = [r for r in table if r["flip_rate"] == f and r["method"].startswith("REP")]
        total = sum(r["relaxed_sites_total"] for r in rs)
        flipped = sum(r["relaxed_sites_total"] * (r["flipped_frac_among_relaxed_pooled"] or 0.0) for r in rs)
        return dict(flip_rate=f, total=total, flipped=flipped / total if total else None)

    def lower(p: Dict) -> bool:
        """The paired difference best REP − best other below zero by more than 2 s.e."""
        return p["d"]["mean"] is not None and p["d"]["se"] is not None and p["d"]["mean"] + 2.0 * p["d"]["se"] < 0.0

    def divergent(r: Dict) -> str:
        return f"{r['flip_rate']} {r['method']} {r['divergent']}/{r['runs']} (EP {ep[r['flip_rate']]['divergent']})"

    def sweeps_text(p: Dict) -> str:
        text = ", ".join(f"{p[k]['method']} {sweeps(p[k]):.1f}" for k in ("rep", "other"))
        return f"{p['flip_rate']}: mean sweeps (all runs, cap 100) {text}"

    def error_text(p: Dict) -> str:
        d, names = p["d"], f"{p['rep']['method']} − {p['other']['method']}"
        counts = f"wins/ties/losses {d['wins']}/{d['ties']}/{d['losses']}"
        return f"{p['flip_rate']}: {names} = {cell(d, 2, signed=True, scale=100.0)} pts ({counts})"

    def pooled_text(p: Dict) -> str:
        return (
            f"{p['flip_rate']}, all REP settings pooled: {p['total']} relaxed sites, {100 * p['flipped']:.0f}% flipped"
        )

    ep_never = "but EP did not diverge either" if all(r["divergent"] == 0 for r in ep.values()) else ""
    by_error = [error_difference(p) for p in best_per_rate(lambda r: r["test_error"]["mean"])]
    oracle = "best REP c chosen on the test set, an optimistic oracle"
    ordered = lambda r: ep[r["flip_rate"]]["divergent"] > r["divergent"] > 0
    fewer = lambda p: sweeps(p["rep"]) < sweeps(p["other"])
    targets = lambda p: p["flipped"] > float(p["flip_rate"])
    checks = [
        Claim(CLAIMS["never"], lambda r: r["divergent"] == 0, of("REP"), show=divergent, note=ep_never),
        Claim(CLAIMS["order"], ordered, of("PEP"), show=divergent),
        Claim(CLAIMS["sweeps"], fewer, lambda t: best_per_rate(sweeps), show=sweeps_text),
        Claim(CLAIMS["error"], lower, lambda t: by_error, show=error_text, note=oracle),
        Claim(CLAIMS["relaxed"], targets, lambda t: [p for p in map(pooled, summary) if p["total"]], show=pooled_text),
    ]
    return verdicts(checks, table)


def grid_mean(model, X, n: int = PLOT_GRID):
    """The posterior mean on an n × n grid over the training inputs' box, widened by 0.5 (for Fig. 2)."""
    g1, g2 = (np.linspace(lo - 0.5, hi + 0.5, n) for lo, hi in zip(X.min(axis=0), X.max(axis=0)))
    G1, G2 = np.meshgrid(g1, g2)
    mu, _ = model.posterior().predict_f(np.stack([G1.ravel(), G2.ravel()], axis=1))
    return g1, g2, mu.numpy().reshape(G1.shape)


def figures(report: Dict, grids: Dict, out_dir: Path) -> None:
    """Fig. 3, R per sweep on repetition :data:`PLOT_REP` per flip rate, and Fig. 2, its boundaries at the highest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg, shown = report["config"], [r for r in report["runs"] if r["rep"] == PLOT_REP]
    rates = sorted({str(r["flip_rate"]) for r in shown})
    fig, axes = plt.subplots(1, len(rates), figsize=(6.0 * len(rates), 4.2), squeeze=False)
    for ax, fr in zip(axes[0], rates):
        for r in (r for r in shown if str(r["flip_rate"]) == fr):
            style = "-" if r["method"] == "EP" else ("--" if r["method"].startswith("PEP") else "-.")
            hist = r["R_history"]
            ax.semilogy(np.arange(1, len(hist) + 1), np.maximum(hist, 1e-12), style, label=r["method"], lw=1.3)
        ax.axhline(1e-3, color="k", lw=0.8, ls=":")
        title = f"{int(round(100 * float(fr)))}% flipped labels (repetition {PLOT_REP})"
        ax.set(title=title, xlabel="iteration (sweep)", ylabel=r"$R = \|\alpha_t - \alpha_{t-1}\|_2$")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "C2_R_curves.png", dpi=110)
    plt.close(fig)

    fr, threshold = max(cfg["flip_rates"]), report["bayes"]["threshold_abs_x1"]
    X, Y, clean, _, _ = dataset(fr, PLOT_REP, cfg["n_per_class"], cfg["test_points"])
    shown = [r for r in shown if r["flip_rate"] == fr]
    cols, rows = min(3, len(shown)), int(math.ceil(len(shown) / 3))
    fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 4.4 * rows), squeeze=False)
    pos, flipped = Y[:, 0] > 0.5, (Y != clean)[:, 0]
    for ax, r in zip(axes.ravel(), shown):
        g1, g2, mu = grids[r["method"]]
        ax.contourf(g1, g2, (mu > 0).astype(float), levels=[-0.5, 0.5, 1.5], colors=["#f4d7d7", "#d7e3f4"], alpha=0.8)
        ax.contour(g1, g2, mu, levels=[0.0], colors="k", linewidths=1.2)
        for t in (-threshold, threshold):
            ax.axvline(t, color="g", ls="--", lw=0.9)
        ax.scatter(X[pos, 0], X[pos, 1], s=9, c="tab:blue", marker="o", label="label 1")
        ax.scatter(X[~pos, 0], X[~pos, 1], s=11, c="tab:red", marker="x", label="label 0")
        ax.scatter(X[flipped, 0], X[flipped, 1], s=40, facecolors="none", edgecolors="k", lw=0.8, label="flipped")
        state = f"converged in {r['sweeps']}" if r["converged"] else f"NOT converged, after {r['sweeps']}"
        errors = f"test err {100 * (r['test_error'] or np.nan):.2f}%, b>0: {r['num_b_positive']}"
        ax.set_title(f"{r['method']}: {state} sweeps\n{errors}", fontsize=9)
    for ax in axes.ravel()[len(shown) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    bayes = f"green dashed: Bayes-optimal |x₁| = {threshold:.2f}"
    fig.suptitle(f"Decision boundaries (black: mean = 0; {bayes})", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "C2_boundaries.png", dpi=110)
    plt.close(fig)
    report["figures"] = dict(R_curves="C2_R_curves.png", boundaries="C2_boundaries.png")


def mean(s: Dict, key: str) -> str:
    """The mean of ``s[key]`` (a :func:`~benchmarks.stats.mean_se`) to one decimal."""
    return cell(s[key]["mean"], 1, missing="–")


def flipped(s: Dict) -> str:
    """The pooled fraction of flipped labels among the relaxed sites, and their number."""
    frac = s["flipped_frac_among_relaxed_pooled"]
    return "–" if frac is None else f"{100 * frac:.0f}% of {s['relaxed_sites_total']}"


def markdown(report: Dict) -> str:
    cfg = report["config"]
    details = (
        f": {2 * cfg['n_per_class']} training points, {cfg['test_points']} clean test points, {cfg['repetitions']} "
        f"repetitions per flip rate, SE lengthscale {cfg['width']:g}; "
        f"REP c ∈ {{{', '.join(f'{c:g}' for c in cfg['c'])}}}. "
        f"Bayes error of the clean problem: {100 * report['bayes']['error']:.2f}%."
    )
    L = ["", "**Reductions:** " + cfg["reductions"]] if cfg.get("reductions") else []
    columns = [
        ("method", lambda s: s["method"]),
        ("div", lambda s: f"{s['divergent']}/{s['runs']}"),
        ("sweeps (all)", lambda s: f"{mean(s, 'mean_sweeps_converged')} ({mean(s, 'mean_sweeps_all')})"),
        ("skipped", lambda s: mean(s, "mean_skipped")),
        ("err sites (%)", lambda s: pct(s["test_error"])),
        ("err α (%)", lambda s: pct(s["test_error_alpha"])),
        ("NLPD", lambda s: cell(s["test_nlpd"]["mean"], 3, missing="–")),
        ("b>0 (%)", lambda s: pct(s["frac_b_positive"], 1)),
        ("flipped\\|b>0", flipped),
        ("time (s)", lambda s: mean(s, "fit_time_s")),
    ]
    for fr, methods in report["summary"].items():
        L += ["", f"## {int(round(100 * float(fr)))}% flipped labels", ""]
        L += table(columns, [dict(s, method=name) for name, s in methods.items()])
    if report.get("figures"):
        L += ["", "## Figures", "", f"* `C2_R_curves.png` (Fig. 3): R per sweep on repetition {PLOT_REP}."]
        L += [f"* `C2_boundaries.png` (Fig. 2): decision boundaries on repetition {PLOT_REP} at 20%."]
    return page("C2 — synthetic data with flipped labels (Qi & Guo 2012, Figs. 2–4)", report, details, L)


def reanalyse(report: Dict, args=None) -> Dict:
    """Summaries and claims again from the stored runs (``--rerender``, after a change of the analysis)."""
    cfg = report["config"]
    report["summary"] = summarise(report["runs"], cfg["flip_rates"], cfg["methods"])
    main_methods = [m for m in cfg["methods"] if m not in {f"REP(c={c:g})" for c in cfg.get("extra_c", [])}]
    report["claims"] = claims(report["summary"], report["runs"], main_methods)
    return report


def run(args, report: Dict, save) -> None:
    """The methods on every repetition and flip rate (the report written after each repetition), then the figures."""
    design = dict(QUICK if args.quick else FULL)
    design.update({k: getattr(args, k) for k in ("repetitions", "test_points") if getattr(args, k) is not None})
    design.update({k: tuple(parse_list(getattr(args, k), float)) for k in ("c", "flip_rates") if getattr(args, k)})
    extra_c = design["extra_c"] if args.extra_c is None else parse_list(args.extra_c, float)
    design["extra_c"] = tuple(c for c in extra_c if c not in design["c"])
    specs = [EP_SPEC, pep_spec(U, "full"), pep_spec(U, "fractional")] + [rep_spec(c) for c in design["c"]]
    extra_specs, reps, flip_rates = (
        [rep_spec(c) for c in design["extra_c"]],
        design["repetitions"],
        design["flip_rates"],
    )
    methods = [s["name"] for s in specs[:3] + sorted(specs[3:] + extra_specs, key=lambda s: s["c"])]
    report["config"].update({k: list(v) if isinstance(v, tuple) else v for k, v in design.items()}, width=WIDTH)
    report["config"].update(extra_c_repetitions=EXTRA_C_REPETITIONS, methods=methods, ep_options=EP_OPTIONS)
    if extra_specs and EXTRA_C_REPETITIONS < reps:
        report["config"]["reductions"] = (
            f"REP with c ∈ {{{', '.join(f'{c:g}' for c in design['extra_c'])}}} ran on the first {EXTRA_C_REPETITIONS} "
            f"repetitions only (the other methods on all {reps}); the verdicts use the methods run on every repetition."
        )
    report.update(bayes=bayes_error(), runs=[], summary={}, claims=[], figures={})
    slots, grids = {}, {}
    for rep in range(reps):
        for fr in flip_rates:
            data = dataset(fr, rep, design["n_per_class"], design["test_points"])
            for spec in specs + (extra_specs if rep < EXTRA_C_REPETITIONS else []):
                model, row = run_one(slots, spec, data, fr, rep)
                report["runs"].append(row)
                if rep == PLOT_REP and fr == max(flip_rates):
                    grids[spec["name"]] = grid_mean(model, data[0])
                log(f"rep={rep} flip={fr} {spec['name']}: {row['sweeps']} sweeps, test error {row['test_error']}")
        report["summary"] = summarise(report["runs"], flip_rates, methods)
        save()
    reanalyse(report)
    figures(report, grids, Path(args.out_dir))


def main(argv=None, *, shared: bool = False) -> int:
    return run_part("C2", build_parser(), argv, shared, log, run, reanalyse, markdown)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
