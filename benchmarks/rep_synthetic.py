r"""
Part C2 of :mod:`benchmarks.rep`: Qi & Guo (2012), §6.2 and Figs. 2–4. EP, Power EP and Relaxed EP on
2-D synthetic data (``gpflow_ep.datasets.noisy_mixture``) with 10 % / 20 % flipped training labels:
divergence, sweeps, test error and which sites REP relaxes.

    python -m benchmarks.rep_synthetic [--quick] [--out-dir results/rep] [--rerender]

writes ``<out-dir>/C2.json``, ``C2.md`` (after every repetition), ``C2_R_curves.png`` (Fig. 3) and
``C2_boundaries.png`` (Fig. 2); the protocol and the columns are described in docs/benchmarks/rep.md.
"""

import math
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
from gpflow.kernels import SquaredExponential
from scipy.stats import norm

from gpflow_ep.datasets import noisy_mixture

from .claims import Claim, claim_items, verdicts
from .models import ModelSlot, ep_fit, evaluate
from .rep import EP_OPTIONS, EP_SPEC, cached_slot, pep_spec, rep_spec
from .report import machine_info, markdown_section, rerender_report, utc_now, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger
from .stats import cell, finite_or_none, markdown_table, mean_se, paired_differences

_log = progress_logger("C2")

FLIP_RATES = (0.1, 0.2)
U, PAPER_C = 0.8, 10.0
#: the full design (REP with extra_c on the first extra_c_repetitions only: time budget); --quick runs QUICK
FULL = dict(repetitions=10, n_per_class=200, test_points=39_600, c=(1.0, 10.0), extra_c=(0.3, 3.0))
QUICK = dict(repetitions=1, n_per_class=60, test_points=2000, c=(1.0,), extra_c=())
SEPARATION = 3.0
TRAIN_SEED, TEST_SEED = 20120, 40120
CHUNK = 5000
PLOT_REP, PLOT_GRID = 0, 151


def build_parser():
    p = benchmark_parser(
        __spec__.name, __doc__, "results/rep", "1 repetition, 60 points per class, 2,000 test points, c = 1"
    )
    p.add_argument(
        "--rerender", action="store_true", help="summaries, claims and Markdown again from <out-dir>/C2.json"
    )
    p.add_argument("--repetitions", type=int, default=None, help="repetitions per flip rate (default 10)")
    p.add_argument("--test-points", type=int, default=None, help="test points per repetition (default 39600)")
    p.add_argument("--c", default=None, help="comma-separated REP penalties run on every repetition (default 1,10)")
    p.add_argument(
        "--extra-c", default=None, help="comma-separated REP penalties run on fewer repetitions (default 0.3,3)"
    )
    p.add_argument("--extra-c-repetitions", type=int, default=3, help="repetitions for --extra-c (default 3)")
    p.add_argument("--flip-rates", default=None, help="comma-separated flip rates (default 0.1,0.2)")
    p.add_argument("--width", type=float, default=1.0, help="SE lengthscale (default 1)")
    return p


def bayes_error(separation: float = SEPARATION) -> Dict:
    """
    The Bayes error of the clean generator (equal class priors): classify 1 iff |x₁| < t with
    cosh(s t) = exp(s²/2); error = ½·2Φ(−t) + ½(Φ(t − s) − Φ(−t − s)).
    """
    s = separation
    t = math.acosh(math.exp(0.5 * s * s)) / s
    return {"threshold_abs_x1": t, "error": float(norm.cdf(-t) + 0.5 * (norm.cdf(t - s) - norm.cdf(-t - s)))}


def dataset(flip_rate: float, rep: int, n_per_class: int, test_points: int):
    """Training set (noisy labels + clean labels) and clean test set of one repetition."""
    key = int(round(1000 * flip_rate))
    X, Y, clean = noisy_mixture(n_per_class, flip_rate, seed=TRAIN_SEED + 1000 * key + rep, separation=SEPARATION)
    Xt, Yt, _ = noisy_mixture(test_points // 2, 0.0, seed=TEST_SEED + 1000 * key + rep, separation=SEPARATION)
    return X, Y, clean, Xt, Yt


def grid_mean(model, lo, hi, n: int = PLOT_GRID):
    """Posterior mean (sites mode) on an n × n grid over the box [lo, hi] (for Fig. 2)."""
    g1, g2 = np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n)
    G1, G2 = np.meshgrid(g1, g2)
    mu, _ = model.posterior().predict_f(np.stack([G1.ravel(), G2.ravel()], axis=1))
    return g1, g2, mu.numpy().reshape(G1.shape)


def run_one(slot: ModelSlot, data, flip_rate: float, width: float, rep: int) -> Dict:
    """EP from flat sites, then the test error and NLPD with the posterior mean and with Minka's α predictor."""
    X, Y, clean, Xt, Yt = data
    model = slot.load(X, Y, {"likelihood.epsilon": flip_rate, "kernel.lengthscales": width})
    start = time.perf_counter()
    row = {"flip_rate": flip_rate, "eps": flip_rate, "width": width, "rep": rep, "method": slot.spec["name"]}
    row.update({k: v for k, v in slot.spec.items() if k != "name"})
    row.update(ep_fit(model))
    p_start = time.perf_counter()
    ev = evaluate(model, Xt, Yt, dual=True, chunk=CHUNK)
    row["predictions_finite"] = finite = ev["finite"]
    row.update(test_error=finite_or_none(ev["error"]) if finite else None, test_nlpd=finite_or_none(ev["nlpd"]))
    row.update(test_error_alpha=finite_or_none(ev["error_dual"]) if finite else None)
    row.update(test_nlpd_alpha=finite_or_none(ev["nlpd_dual"]), predict_time_s=time.perf_counter() - p_start)
    b = model.sites.relaxation.numpy()[:, 0]
    relaxed, flipped = b > 0, (Y != clean)[:, 0]
    row["diverged"] = (not row["converged"]) or (not row["finite"]) or (not row["predictions_finite"])
    row.update(num_b_positive=int(relaxed.sum()), frac_b_positive=float(relaxed.mean()))
    row["num_flipped_among_relaxed"] = int(np.sum(flipped & relaxed))
    row["flipped_frac_among_relaxed"] = float(np.mean(flipped[relaxed])) if relaxed.any() else None
    row.update(b_max=float(b.max()), time_s=time.perf_counter() - start)
    return row


# ---------------------------------------------------------------- statistics and claims


def summarise(rows: List[Dict], width: float, flip_rates, methods) -> Dict:
    """Per (flip rate, method) aggregates over repetitions at one width."""
    out: Dict[str, Dict] = {}
    for fr in flip_rates:
        out[str(fr)] = {}
        for name in methods:
            rs = [r for r in rows if r["flip_rate"] == fr and r["method"] == name and r["width"] == width]
            if not rs:
                continue
            conv = [r for r in rs if not r["diverged"]]
            relaxed = sum(r["num_b_positive"] for r in rs)
            s = {"runs": len(rs), "divergent": sum(int(r["diverged"]) for r in rs)}
            s["mean_sweeps_converged"] = mean_se([r["sweeps"] for r in conv])
            s["mean_sweeps_all"] = mean_se([r["sweeps"] for r in rs])
            s["mean_skipped"] = mean_se([r["num_skipped"] for r in rs])
            for key in ("test_error", "test_error_alpha"):
                s[key] = mean_se([r[key] for r in rs])
            s["test_error_converged"] = mean_se([r["test_error"] for r in conv])
            for key in ("test_nlpd", "test_nlpd_alpha", "frac_b_positive"):
                s[key] = mean_se([r[key] for r in rs])
            s["relaxed_sites_total"] = relaxed
            flipped = sum(r["num_flipped_among_relaxed"] for r in rs)
            s["flipped_frac_among_relaxed_pooled"] = flipped / relaxed if relaxed else None
            s["fit_time_s"] = mean_se([r["fit_time_s"] for r in rs])
            out[str(fr)][name] = s
    return out


def claims(summary: Dict, rows: List[Dict], width: float, methods: Sequence[str]) -> List[Dict]:
    """
    The claims of Fig. 4 (and one of ours) as checks over the summary rows, one per (flip rate, method),
    of the ``methods`` run on every repetition (the pooled relaxation check also counts the others).
    """
    table = [dict(s, flip_rate=f, method=n) for f, block in summary.items() for n, s in block.items()]
    ep = {r["flip_rate"]: r for r in table if r["method"] == "EP"}
    rep_names = [m for m in methods if m.startswith("REP")]

    def of(prefix: str):
        return lambda t: [r for r in t if r["method"] in methods and r["method"].startswith(prefix)]

    def divergent(r: Dict) -> str:
        return f"{r['flip_rate']} {r['method']} {r['divergent']}/{r['runs']} (EP {ep[r['flip_rate']]['divergent']})"

    def best_per_rate(key) -> List[Dict]:
        """Per flip rate, the best REP setting and the best other method by ``key`` (lower is better)."""
        out = []
        for f in summary:
            rs = [r for r in table if r["flip_rate"] == f and r["method"] in methods]
            reps, others = [r for r in rs if r["method"] in rep_names], [r for r in rs if r["method"] not in rep_names]
            if reps and others:
                out.append(dict(flip_rate=f, rep=min(reps, key=key), other=min(others, key=key)))
        return out

    def error_difference(pair: Dict) -> Dict:
        def by_rep(name):
            keep = [r for r in rows if r["method"] == name and str(r["flip_rate"]) == pair["flip_rate"]]
            return {r["rep"]: r.get("test_error") for r in keep if r["width"] == width}

        return dict(pair, d=paired_differences(by_rep(pair["rep"]["method"]), by_rep(pair["other"]["method"])))

    def pooled(f: str) -> Dict:
        rs = [r for r in table if r["flip_rate"] == f and r["method"].startswith("REP")]
        total = sum(r["relaxed_sites_total"] for r in rs)
        flipped = sum(r["relaxed_sites_total"] * (r["flipped_frac_among_relaxed_pooled"] or 0.0) for r in rs)
        return dict(flip_rate=f, total=total, flipped=flipped / total if total else None)

    def sweeps(r: Dict) -> float:
        return r["mean_sweeps_all"]["mean"]

    def lower(p: Dict) -> bool:
        """The paired difference best REP − best other below zero by more than 2 s.e."""
        return p["d"]["mean"] is not None and p["d"]["se"] is not None and p["d"]["mean"] + 2.0 * p["d"]["se"] < 0.0

    def sweeps_text(p: Dict) -> str:
        return (
            f"{p['flip_rate']}: mean sweeps (all runs, cap 100) {p['rep']['method']} "
            f"{sweeps(p['rep']):.1f}, {p['other']['method']} {sweeps(p['other']):.1f}"
        )

    def error_text(p: Dict) -> str:
        d = p["d"]
        return (
            f"{p['flip_rate']}: {p['rep']['method']} − {p['other']['method']} = {cell(d, 2, signed=True, scale=100.0)}"
            f" pts (wins/ties/losses {d['wins']}/{d['ties']}/{d['losses']})"
        )

    def pooled_text(p: Dict) -> str:
        return (
            f"{p['flip_rate']}, all REP settings pooled: {p['total']} relaxed sites, {100 * p['flipped']:.0f}% flipped"
        )

    ep_never = "but EP did not diverge either" if all(r["divergent"] == 0 for r in ep.values()) else ""
    pairs_by_error = [error_difference(p) for p in best_per_rate(lambda r: r["test_error"]["mean"])]
    checks = [
        Claim("REP never diverges (Fig. 4b)", lambda r: r["divergent"] == 0, of("REP"), show=divergent, note=ep_never),
        Claim(
            "EP diverges more often than PEP, PEP more than REP (Fig. 4b)",
            lambda r: ep[r["flip_rate"]]["divergent"] > r["divergent"] > 0,
            of("PEP"),
            show=divergent,
        ),
        Claim(
            "REP needs the fewest iterations (Fig. 4a)",
            lambda p: sweeps(p["rep"]) < sweeps(p["other"]),
            lambda t: best_per_rate(sweeps),
            show=sweeps_text,
        ),
        Claim(
            "REP has the lowest test error (Fig. 4c)",
            lower,
            lambda t: pairs_by_error,
            show=error_text,
            note="best REP c chosen on the test set, an optimistic oracle",
        ),
        Claim(
            "relaxation (b > 0) targets mislabelled points: flipped fraction among relaxed sites > flip rate [ours]",
            lambda p: p["flipped"] > float(p["flip_rate"]),
            lambda t: [p for p in map(pooled, summary) if p["total"]],
            show=pooled_text,
        ),
    ]
    return verdicts(checks, table)


# ---------------------------------------------------------------- figures


def plot_r_curves(curves: Dict, path: Path) -> None:
    """Fig. 3: R per sweep of each method, one panel per flip rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(6.0 * len(curves), 4.2), squeeze=False)
    for ax, fr in zip(axes[0], sorted(curves)):
        for name, hist in curves[fr].items():
            style = "-" if name == "EP" else ("--" if name.startswith("PEP") else "-.")
            ax.semilogy(np.arange(1, len(hist) + 1), np.maximum(hist, 1e-12), style, label=name, lw=1.3)
        ax.axhline(1e-3, color="k", lw=0.8, ls=":")
        ax.set(
            title=f"{int(round(100 * float(fr)))}% flipped labels (repetition {PLOT_REP})", xlabel="iteration (sweep)"
        )
        ax.set_ylabel(r"$R = \|\alpha_t - \alpha_{t-1}\|_2$")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_boundaries(panels: List[Dict], X, Y, clean, threshold: float, path: Path) -> None:
    """Fig. 2: the decision boundaries of the methods on one training set, with the Bayes-optimal one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(3, len(panels))
    rows = int(math.ceil(len(panels) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 4.4 * rows), squeeze=False)
    pos, flipped = Y[:, 0] > 0.5, (Y != clean)[:, 0]
    for ax, p in zip(axes.ravel(), panels):
        g1, g2, mu = p["grid"]
        ax.contourf(g1, g2, (mu > 0).astype(float), levels=[-0.5, 0.5, 1.5], colors=["#f4d7d7", "#d7e3f4"], alpha=0.8)
        ax.contour(g1, g2, mu, levels=[0.0], colors="k", linewidths=1.2)
        for t in (-threshold, threshold):
            ax.axvline(t, color="g", ls="--", lw=0.9)
        ax.scatter(X[pos, 0], X[pos, 1], s=9, c="tab:blue", marker="o", label="label 1")
        ax.scatter(X[~pos, 0], X[~pos, 1], s=11, c="tab:red", marker="x", label="label 0")
        ax.scatter(X[flipped, 0], X[flipped, 1], s=40, facecolors="none", edgecolors="k", lw=0.8, label="flipped")
        ax.set(xlim=(g1[0], g1[-1]), ylim=(g2[0], g2[-1]))
        ax.set_title(p["title"], fontsize=9)
    for ax in axes.ravel()[len(panels) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.suptitle(
        f"Decision boundaries (black: mean = 0; green dashed: Bayes-optimal |x₁| = {threshold:.2f})", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- Markdown


def markdown(report: Dict) -> str:
    cfg = report["config"]
    L = ["# C2 — synthetic data with flipped labels (Qi & Guo 2012, Figs. 2–4)", ""]
    L += [
        f"Generated by `{cfg['command']}` ({report['finished'] or 'INCOMPLETE: partial results'}; "
        f"{report['timing'].get('total_s', 0):.0f} s): {2 * cfg['n_per_class']} training points, "
        f"{cfg['test_points']} clean test points, {cfg['repetitions']} repetitions per flip rate, SE lengthscale "
        f"{cfg['width']:g}; REP c ∈ {{{', '.join(f'{c:g}' for c in cfg['c'])}}}. Bayes error of the clean problem: "
        f"{100 * report['bayes']['error']:.2f}%.",
    ]
    if cfg.get("reductions"):
        L += ["", "**Reductions:** " + cfg["reductions"]]
    head = ["method", "div", "sweeps (all)", "skipped", "err sites (%)", "err α (%)", "NLPD", "b>0 (%)"]
    for width_key, block in report["summary"].items():
        L += ["", f"## Lengthscale {width_key}", ""]
        for fr, methods in ((fr, m) for fr, m in block.items() if m):
            L += [f"### {int(round(100 * float(fr)))}% flipped labels", ""]
            rows = []
            for name, s in methods.items():
                ff = s["flipped_frac_among_relaxed_pooled"]
                mean = {k: cell(s[k]["mean"], 1, missing="–") for k in ("mean_sweeps_converged", "mean_sweeps_all")}
                rows.append(
                    [name, f"{s['divergent']}/{s['runs']}"]
                    + [f"{mean['mean_sweeps_converged']} ({mean['mean_sweeps_all']})"]
                    + [cell(s["mean_skipped"]["mean"], 1, missing="–")]
                    + [cell(s[k], 2, scale=100.0, missing="–") for k in ("test_error", "test_error_alpha")]
                    + [
                        cell(s["test_nlpd"]["mean"], 3, missing="–"),
                        cell(s["frac_b_positive"], 1, scale=100.0, missing="–"),
                    ]
                    + ["–" if ff is None else f"{100 * ff:.0f}% of {s['relaxed_sites_total']}"]
                    + [cell(s["fit_time_s"]["mean"], 1, missing="–")]
                )
            L += markdown_table(head + ["flipped\\|b>0", "time (s)"], rows) + [""]
    if report.get("figures"):
        L += ["## Figures", ""]
        L += [f"* `C2_R_curves.png` (Fig. 3): R per sweep on repetition {PLOT_REP} at each flip rate."]
        L += [f"* `C2_boundaries.png` (Fig. 2): decision boundaries on repetition {PLOT_REP} at 20%"]
        L[-1] += f" ({report['figures'].get('boundary_panels', '')})."
        L.append("")
    if report.get("claims"):
        L += markdown_section("Claims", claim_items(report["claims"]), "*", blank_before=False) + [""]
    return "\n".join(L)


# ---------------------------------------------------------------- driver


def reanalyse(report: Dict) -> Dict:
    """Summaries and claims again from the stored runs (``--rerender``, after a change of the analysis)."""
    cfg = report["config"]
    report["summary"] = {
        f"{cfg['width']:g}": summarise(report["runs"], cfg["width"], cfg["flip_rates"], cfg["methods"])
    }
    main_methods = [m for m in cfg["methods"] if m not in {f"REP(c={c:g})" for c in cfg.get("extra_c", [])}]
    report["claims"] = claims(report["summary"][f"{cfg['width']:g}"], report["runs"], cfg["width"], main_methods)
    return report


def boundary_figure(report: Dict, grids: Dict, data, out_dir: Path) -> None:
    """Fig. 2 on repetition :data:`PLOT_REP` at the highest flip rate: EP, both PEPs, REP(c=10) and the best REP."""
    cfg, fr = report["config"], max(report["config"]["flip_rates"])
    rep_names = [m for m in cfg["methods"] if m.startswith("REP")]
    runs = [r for r in report["runs"] if r["flip_rate"] == fr and r["width"] == cfg["width"]]
    errs = {n: {r["rep"]: r["test_error"] for r in runs if r["method"] == n} for n in rep_names}
    errs = {n: e for n, e in errs.items() if e}
    common = set.intersection(*map(set, errs.values())) if errs else set()
    means = [(float(np.mean(v)), n) for n, e in errs.items() if (v := [e[k] for k in common if e[k] is not None])]
    best = min(means)[1] if means else None
    wanted = ["EP", f"PEP(u={U:g},full)", f"PEP(u={U:g},fractional)"]
    wanted += [n for n in (f"REP(c={PAPER_C:g})", best) if n and n in grids and n not in wanted]
    shown = {r["method"]: r for r in runs if r["rep"] == PLOT_REP}
    panels = []
    for r in (shown[n] for n in wanted if n in grids):
        state = f"converged in {r['sweeps']}" if r["converged"] else f"NOT converged, after {r['sweeps']}"
        err = 100 * (r["test_error"] or float("nan"))
        title = f"{r['method']}{' (best c)' if r['method'] == best else ''}: {state} sweeps\n"
        panels.append({"grid": grids[r["method"]], "title": title + f"test err {err:.2f}%, b>0: {r['num_b_positive']}"})
    plot_boundaries(panels, *data, report["bayes"]["threshold_abs_x1"], out_dir / "C2_boundaries.png")
    best_text = f"; best c by 20% mean test error: {best}" if best else ""
    report["figures"] = dict(R_curves="C2_R_curves.png", boundaries="C2_boundaries.png")
    report["figures"]["boundary_panels"] = ", ".join(wanted) + best_text


def main(argv: Optional[List[str]] = None, *, shared: bool = False) -> int:
    args, command = parse_command_line(build_parser(), argv, shared=shared, log=_log)
    out_dir = Path(args.out_dir)
    if args.rerender:
        return rerender_report(out_dir / "C2", reanalyse, markdown, _log, indent=1)
    design = dict(QUICK if args.quick else FULL)
    if args.repetitions is not None:
        design["repetitions"] = int(args.repetitions)
    if args.test_points is not None:
        design["test_points"] = int(args.test_points)
    c_values = tuple(parse_list(args.c, float)) if args.c else design["c"]
    extra_c = design["extra_c"] if args.extra_c is None else tuple(parse_list(args.extra_c, float))
    extra_c = tuple(c for c in extra_c if c not in c_values)
    flip_rates = tuple(parse_list(args.flip_rates, float)) if args.flip_rates else FLIP_RATES
    reps, width, extra_reps = design["repetitions"], float(args.width), args.extra_c_repetitions
    specs = [EP_SPEC, pep_spec(U, "full"), pep_spec(U, "fractional")] + [rep_spec(c) for c in c_values]
    extra_specs = [rep_spec(c) for c in extra_c]
    methods = [s["name"] for s in specs[:3]] + [
        s["name"] for s in sorted(specs[3:] + extra_specs, key=lambda s: s["c"])
    ]
    config = dict(command=command, quick=bool(args.quick), flip_rates=list(flip_rates), repetitions=reps)
    config.update(n_per_class=design["n_per_class"], test_points=design["test_points"], separation=SEPARATION)
    config.update(width=width, c=list(c_values), extra_c=list(extra_c), extra_c_repetitions=extra_reps, u=U)
    config.update(methods=methods, kernel="gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=width)")
    config["ep_options"] = EP_OPTIONS
    config["seeds"] = {
        k: f"{s} + 1000*round(1000*flip_rate) + rep" for k, s in (("train", TRAIN_SEED), ("test", TEST_SEED))
    }
    if extra_c and extra_reps < reps:
        config["reductions"] = (
            f"REP with c ∈ {{{', '.join(f'{c:g}' for c in extra_c)}}} ran on the first {extra_reps} repetitions only "
            f"(the other methods on all {reps}); the verdicts use the methods run on every repetition."
        )
    report = dict(claim="C2", paper="Qi & Guo (2012), Message passing with relaxed moment matching, Figs. 2-4")
    report.update(config=config, machine=machine_info(), bayes=bayes_error(), started=utc_now(), finished=None)
    report.update(complete=False, runs=[], summary={}, claims=[], figures={}, timing={})
    t0 = time.perf_counter()
    slots: Dict[str, ModelSlot] = {}
    curves: Dict[str, Dict[str, List[float]]] = {}
    grids, plot_data = {}, None
    for rep in range(reps):
        start = time.perf_counter()
        for fr in flip_rates:
            data = dataset(fr, rep, design["n_per_class"], design["test_points"])
            X, Y, clean = data[:3]
            for spec in specs + (extra_specs if rep < extra_reps else []):
                slot = cached_slot(slots, spec, X, Y, fr, lambda: SquaredExponential(variance=1.0, lengthscales=width))
                row = run_one(slot, data, fr, width, rep)
                report["runs"].append(row)
                if rep == PLOT_REP:
                    curves.setdefault(str(fr), {})[spec["name"]] = row["R_history"]
                    if fr == max(flip_rates):
                        grids[spec["name"]] = grid_mean(slot.model, X.min(axis=0) - 0.5, X.max(axis=0) + 0.5)
                        plot_data = (X, Y, clean)
                _log(
                    f"w={width:g} rep={rep} flip={fr} {spec['name']}: conv={row['converged']} sweeps={row['sweeps']} "
                    f"skipped={row['num_skipped']} err={row['test_error']} b>0={row['num_b_positive']} "
                    f"({row['time_s']:.1f} s)"
                )
        report["timing"].setdefault("per_repetition_s", []).append(
            {"width": width, "rep": rep, "s": time.perf_counter() - start}
        )
        report["summary"] = {f"{width:g}": summarise(report["runs"], width, flip_rates, methods)}
        report["timing"]["total_s"] = time.perf_counter() - t0
        write_report(out_dir / "C2", report, markdown(report), indent=1)

    report["claims"] = claims(report["summary"][f"{width:g}"], report["runs"], width, [s["name"] for s in specs])
    plot_r_curves(curves, out_dir / "C2_R_curves.png")
    if plot_data is not None:
        boundary_figure(report, grids, plot_data, out_dir)
    report.update(complete=True, finished=utc_now())
    report["timing"]["total_s"] = time.perf_counter() - t0
    write_report(out_dir / "C2", report, markdown(report), indent=1)
    _log(f"wrote {out_dir}/C2.json, C2.md and the figures ({report['timing']['total_s']:.0f} s)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
