"""
Part C1 of :mod:`benchmarks.rep`: Qi & Guo (2012), §6.1 and Fig. 1. How close the EP, Power EP and
Relaxed EP posteriors of the weights w are to the exact one (closed form, :func:`exact_posterior_sectors`)
on a replica of the paper's 5-point linear toy and on random 5-point sets [ours].

    python -m benchmarks.rep_toy [--quick] [--out-dir results/rep] [--rerender]

writes ``<out-dir>/C1.json`` and ``C1.md``; the protocol and metrics are described in docs/benchmarks/rep.md.
"""

import math
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
from gpflow.kernels import Linear

from .claims import Claim, claim_items, verdicts
from .models import ModelSlot, ep_fit
from .rep import EP_OPTIONS, EP_SPEC, cached_slot, pep_spec, rep_spec
from .report import machine_info, markdown_section, rerender_report, utc_now, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger
from .stats import cell, markdown_table

_log = progress_logger("C1")

TOY_X = np.array([[-1.0, 1.0], [-2.0, 0.5], [3.0, 0.0], [1.0, 1.5], [1.5, -0.5]])
TOY_Y = np.array([[1.0], [1.0], [1.0], [0.0], [0.0]])
MISLABELLED = (2,)  # the +1 point at (3, 0)
MAIN_EPS = 0.2
RANDOM_SEED = 2012
#: the full design; --quick runs QUICK
FULL = dict(eps=(0.1, 0.2, 0.25), u=(0.2, 0.4, 0.6, 0.8, 0.9), cavities=("full", "fractional"), random=40)
FULL.update(
    c=(0.1, 0.3, 1.0, 2.0, 5.0, 10.0, 20.0, 100.0, 1000.0), ablation_c=(0.3, 1.0, 5.0, 20.0), random_c=(1.0, 5.0, 20.0)
)
QUICK = dict(eps=(0.2,), u=(0.4, 0.8, 0.9), cavities=("full",), c=(1.0, 20.0, 1000.0), ablation_c=(), random=4)
QUICK.update(random_c=(1.0,))
GRID_N, GRID_COARSE_N, GRID_HALF_WIDTH = 2001, 1001, 8.0
#: relative difference below which two errors count as equal: runs stop at R < 1e-3, so two runs
#: with the same fixed point differ by ~1e-4 in E[w], i.e. by up to ~1 % in the errors
TIE = 0.01


def build_parser():
    quick = "eps 0.2, u ∈ {0.4, 0.8, 0.9} (full cavity), c ∈ {1, 20, 1000}, no ablations, 4 random configurations"
    p = benchmark_parser(__spec__.name, __doc__, "results/rep", quick)
    p.add_argument(
        "--rerender", action="store_true", help="summaries, claims and Markdown again from <out-dir>/C1.json"
    )
    p.add_argument("--eps", default=None, help="comma-separated eps values (default 0.1,0.2,0.25)")
    p.add_argument("--u", default=None, help="comma-separated PEP powers (default 0.2,0.4,0.6,0.8,0.9)")
    p.add_argument("--c", default=None, help="comma-separated REP penalties (default 0.1,0.3,1,2,5,10,20,100,1000)")
    p.add_argument("--random-configs", type=int, default=None, help="number of random configurations (default 40)")
    return p


# ---------------------------------------------------------------- exact posterior of w


def log_likelihood(X, Y, eps: float, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """
    Σ_i log p(y_i | wᵀx_i) on arrays of w. Points exactly on a boundary wᵀx_i = 0 (grid lines through
    the origin hit them) get Θ(0) = ½, which removes the O(h) bias of a one-sided choice from grid sums.
    """
    out = np.zeros(np.broadcast(w1, w2).shape)
    for (x1, x2), y in zip(np.asarray(X, float), 2.0 * np.asarray(Y, float).ravel() - 1.0):
        step = 0.5 * (1.0 + np.sign(y * (x1 * w1 + x2 * w2)))
        out += np.log(eps + (1.0 - 2.0 * eps) * step)
    return out


def exact_posterior_grid(X, Y, eps: float, n: int = GRID_N, half_width: float = GRID_HALF_WIDTH):
    """
    Mean, covariance and log evidence of w under N(w; 0, I₂) Π_i p(y_i | wᵀx_i) by an n × n grid on
    [-half_width, half_width]² (the prior mass outside is < 1e-13).
    """
    g = np.linspace(-half_width, half_width, n)
    W1, W2 = np.meshgrid(g, g, indexing="ij")
    log_w = -0.5 * (W1**2 + W2**2) + log_likelihood(X, Y, eps, W1, W2)
    top = log_w.max()
    w = np.exp(log_w - top)
    Z = w.sum()
    mean = np.array([(w * W1).sum(), (w * W2).sum()]) / Z
    d1, d2 = W1 - mean[0], W2 - mean[1]
    c11, c12, c22 = ((w * a * b).sum() / Z for a, b in ((d1, d1), (d1, d2), (d2, d2)))
    log_evidence = math.log(Z) + top + 2.0 * math.log(g[1] - g[0]) - math.log(2.0 * math.pi)
    return mean, np.array([[c11, c12], [c12, c22]]), log_evidence


def exact_posterior_sectors(X, Y, eps: float):
    """
    The same moments in closed form: in polar coordinates w = r(cos θ, sin θ) the likelihood depends on
    θ only and is constant between the angles θ_i ± π/2 of the points' boundaries; ∫ r² e^{-r²/2} dr and
    ∫ r³ e^{-r²/2} dr give the first and second moments of each sector.
    """
    angles = np.arctan2(np.asarray(X, float)[:, 1], np.asarray(X, float)[:, 0])
    cuts = np.sort(np.mod(np.concatenate([angles + np.pi / 2, angles - np.pi / 2]), 2 * np.pi))
    cuts = np.concatenate([cuts, [cuts[0] + 2 * np.pi]])
    Z, first, second = 0.0, np.zeros(2), np.zeros(3)  # second: E[w1²], E[w1 w2], E[w2²] (unnormalised)
    for a, b in zip(cuts[:-1], cuts[1:]):
        if b - a <= 0.0:
            continue
        mid = 0.5 * (a + b)
        lik = math.exp(float(log_likelihood(X, Y, eps, np.array(math.cos(mid)), np.array(math.sin(mid)))))
        Z += lik * (b - a) / (2 * math.pi)
        first += (
            lik
            * math.sqrt(math.pi / 2)
            / (2 * math.pi)
            * np.array([math.sin(b) - math.sin(a), math.cos(a) - math.cos(b)])
        )
        half, quarter = 0.5 * (b - a), 0.25 * (math.sin(2 * b) - math.sin(2 * a))
        second += (
            lik / math.pi * np.array([half + quarter, 0.5 * (math.sin(b) ** 2 - math.sin(a) ** 2), half - quarter])
        )
    mean, s = first / Z, second / Z
    return mean, np.array([[s[0], s[1]], [s[1], s[2]]]) - np.outer(mean, mean), math.log(Z)


def exact_reference(X, Y, eps: float, grid: bool = True) -> Dict:
    """
    The exact moments of w (:func:`exact_posterior_sectors`) and, with ``grid``, their distance to the
    2001² grid's (and the grid's to a 1001² grid's: the grid's own O(h) error).
    """
    mean, cov, log_z = exact_posterior_sectors(X, Y, eps)
    out = {"mean": mean.tolist(), "cov": cov.tolist(), "log_evidence": log_z, "source": "closed form (angular sectors)"}
    if grid:
        mean_g, cov_g, log_z_g = exact_posterior_grid(X, Y, eps)
        mean_c, cov_c, _ = exact_posterior_grid(X, Y, eps, n=GRID_COARSE_N)
        out["grid"] = {"n": GRID_N, "half_width": GRID_HALF_WIDTH, "coarse_n": GRID_COARSE_N}
        out.update(grid_mean=mean_g.tolist(), grid_cov=cov_g.tolist())
        out["grid_max_abs_diff_vs_closed_form"] = {"mean": gap(mean_g, mean), "cov": gap(cov_g, cov)}
        out["grid_max_abs_diff_vs_closed_form"]["log_evidence"] = abs(log_z_g - log_z)
        out["grid_max_abs_diff_vs_coarse_grid"] = {"mean": gap(mean_g, mean_c), "cov": gap(cov_g, cov_c)}
    return out


def gap(a, b) -> float:
    """max |a − b| over the elements."""
    return float(np.max(np.abs(np.subtract(a, b))))


def random_configuration(k: int, seed: int = RANDOM_SEED):
    """Configuration k: two +1 near (-2, 0), the +1 "outlier" near (3, 0), two −1 near (2, 0)."""
    rng = np.random.default_rng([seed, k])
    centres = np.array([[-2.0, 0.0], [-2.0, 0.0], [3.0, 0.0], [2.0, 0.0], [2.0, 0.0]])
    return centres + rng.normal(size=centres.shape), TOY_Y.copy()


# ---------------------------------------------------------------- one run


def errors(mean, cov, ref_mean, ref_cov) -> Dict:
    """mean err = (1/d)Σ(μ̂−μ)², cov err = (1/d²)Σ(V̂−V)², and the plain sums."""
    dm = float(np.sum((np.asarray(mean) - np.asarray(ref_mean)) ** 2))
    dv = float(np.sum((np.asarray(cov) - np.asarray(ref_cov)) ** 2))
    d = np.size(mean)
    return {"mean_err": dm / d, "cov_err": dv / d**2, "mean_err_sum": dm, "cov_err_sum": dv}


def boundary_angle(mean, ref_mean) -> float:
    """Angle (degrees, in [0, 180]) between the boundaries E[w]ᵀx = 0, i.e. between the E[w]."""
    a, b = np.asarray(mean, float), np.asarray(ref_mean, float)
    return math.degrees(math.acos(max(-1.0, min(1.0, float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))))))


def method_specs(u_values, c_values, ablation_c, cavities) -> List[Dict]:
    reps = [rep_spec(c) for c in c_values] + [rep_spec(c, "REP-B") for c in ablation_c]
    reps += [rep_spec(c, "REP-exact") for c in ablation_c]
    return [EP_SPEC] + [pep_spec(u, cav) for cav in cavities for u in u_values] + reps


def weight_posterior(model):
    """(E[w], Cov[w], E[w] from the α predictor) of a linear-kernel model (f(e_k) = w_k)."""
    post = model.posterior()
    mu, cov = post.predict_f(np.eye(2), full_cov=True)
    model.predict_with = "dual"
    try:
        mu_alpha, _ = post.predict_f(np.eye(2))
    finally:
        model.predict_with = "sites"
    return mu.numpy()[:, 0], cov.numpy()[0], mu_alpha.numpy()[:, 0]


def run_one(slot: ModelSlot, X, Y, eps: float, ref: Dict) -> Dict:
    model = slot.load(X, Y, {"likelihood.epsilon": eps})
    row = {"method": slot.spec["name"], "eps": eps, **{k: v for k, v in slot.spec.items() if k != "name"}}
    row.update(ep_fit(model))
    mean, cov, mean_alpha = weight_posterior(model)
    b = model.sites.relaxation.numpy()[:, 0]
    row.update(mean=mean.tolist(), cov=cov.tolist(), mean_alpha=mean_alpha.tolist())
    row.update(errors(mean, cov, ref["mean"], ref["cov"]))
    row["mean_err_alpha"] = errors(mean_alpha, cov, ref["mean"], ref["cov"])["mean_err"]
    row.update(angle_deg=boundary_angle(mean, ref["mean"]), b=b.tolist())
    row["relaxed_points"] = [int(i) for i in np.flatnonzero(b > 0)]
    return row


def run_methods(specs, X, Y, eps: float, ref: Dict, slots: Dict) -> List[Dict]:
    return [run_one(cached_slot(slots, s, X, Y, eps, lambda: Linear(variance=1.0)), X, Y, eps, ref) for s in specs]


# ---------------------------------------------------------------- comparisons and claims


def _less(a: float, b: float) -> bool:
    """a is more than TIE (relative) below b."""
    return a < b * (1.0 - TIE)


def below(a: Dict, b: Dict) -> bool:
    """Both errors of run a more than :data:`TIE` below run b's."""
    return _less(a["mean_err"], b["mean_err"]) and _less(a["cov_err"], b["cov_err"])


def random_summary(rows: List[Dict], methods: Sequence[str]) -> Dict:
    """Per method: in how many configurations its errors are below / equal to / above EP's."""
    by_cfg: Dict[int, Dict[str, Dict]] = {}
    for r in rows:
        by_cfg.setdefault(r["config"], {})[r["method"]] = r
    out = {}
    for name in (m for m in methods if m != "EP"):
        pairs = [(cfg[name], cfg["EP"]) for cfg in by_cfg.values() if name in cfg and "EP" in cfg]
        s = {"n": len(pairs), "converged": sum(int(r["converged"]) for r, _ in pairs)}
        s["ep_converged"] = sum(int(ep["converged"]) for _, ep in pairs)
        for key in ("mean_err", "cov_err"):
            kinds = [
                "better" if _less(r[key], e[key]) else "worse" if _less(e[key], r[key]) else "equal" for r, e in pairs
            ]
            ratios = [math.log10(r[key] / e[key]) for r, e in pairs if r[key] > 0 and e[key] > 0]
            s[key] = {kind: kinds.count(kind) for kind in ("better", "equal", "worse")}
            s[key]["log10_ratio_median"] = float(np.median(ratios)) if ratios else None
        s["both_better"] = sum(below(r, ep) for r, ep in pairs)
        s["both_worse"] = sum(below(ep, r) for r, ep in pairs)
        out[name] = s
    return out


def claims(runs: List[Dict], random: Dict, eps_values: Sequence[float]) -> List[Dict]:
    """The claims of §6.1 and Fig. 1 (and one of ours) as checks over the runs, their evidence the runs' errors."""
    main_eps = MAIN_EPS if MAIN_EPS in eps_values else eps_values[0]
    ep = {r["eps"]: r for r in runs if r["family"] == "EP"}

    def rows(family: str, where=lambda r: True):
        return lambda table: [r for r in table if r["family"] == family and where(r)]

    def errs(r: Dict) -> str:
        ours, eps = (f"{x['mean_err']:.3g}/{x['cov_err']:.3g}" for x in (r, ep[r["eps"]]))
        return f"eps={r['eps']} {r['method']} {ours} (EP {eps})"

    def gaps(r: Dict):
        return gap(r["mean"], ep[r["eps"]]["mean"]), gap(r["cov"], ep[r["eps"]]["cov"])

    def pep08(r: Dict) -> bool:
        return r["family"] == "PEP" and r["eps"] == main_eps and abs(r["u"] - 0.8) < 1e-12

    def closer(r: Dict) -> bool:
        """Boundary closer to the exact one than EP's (REP: also than every PEP(u=0.8)'s)."""
        rivals = [ep[r["eps"]]] + ([p for p in runs if pep08(p)] if r["family"] == "REP" else [])
        return all(r["angle_deg"] < p["angle_deg"] for p in rivals)

    def boundaries(table):
        return [r for r in table if pep08(r) or (r["family"] == "REP" and r["eps"] == main_eps and r["c"] == 20.0)]

    gap_text = "eps={} c={:g}: max|Δμ|={:.1e}, max|ΔV|={:.1e}, b>0 sites {}"
    checks = [
        Claim(
            "REP more accurate than EP for a wide range of c (Fig. 1d-e)",
            lambda r: below(r, ep[r["eps"]]),
            rows("REP", lambda r: r["eps"] == main_eps),
            need="most",
            show=errs,
        ),
        Claim(
            "PEP less accurate than EP for every u (Fig. 1b-c)",
            lambda r: below(ep[r["eps"]], r),
            rows("PEP"),
            show=errs,
        ),
        Claim(
            "REP = EP for large c (Fig. 1d-e)",
            lambda r: max(gaps(r)) <= 1e-10 and not r["relaxed_points"],
            rows("REP", lambda r: r["c"] >= 100),
            show=lambda r: gap_text.format(r["eps"], r["c"], *gaps(r), len(r["relaxed_points"])),
        ),
        Claim(
            "with eps = 0.1 and 0.25, REP consistently more accurate than EP and PEP (§6.1)",
            lambda r: (
                below(r, ep[r["eps"]])
                and all(below(r, p) for p in runs if p["family"] == "PEP" and p["eps"] == r["eps"])
            ),
            rows("REP", lambda r: r["eps"] != MAIN_EPS),
            need="most",
            show=errs,
        ),
        Claim(
            "Fig. 1a boundaries: PEP(0.8) closer than EP, REP(c=20) overlaps the exact one",
            closer,
            boundaries,
            show=lambda r: f"eps={r['eps']} {r['method']} {r['angle_deg']:.3f}° (EP {ep[r['eps']]['angle_deg']:.3f}°)",
        ),
    ]
    summary = [dict(s, method=name) for name, s in (random.get("summary") or {}).items() if name.startswith("REP")]
    text = "REP more accurate than EP beyond the one (unknown) configuration: random 5-point sets"
    random_claim = Claim(
        f"{text}, eps={random.get('eps')} [ours]",
        lambda s: s["both_better"] > s["n"] / 2,
        need="any",
        show=lambda s: (
            f"{s['method']} both errors below EP's in {s['both_better']} of {s['n']}, both above in {s['both_worse']}"
        ),
    )
    return verdicts(checks, runs) + verdicts([random_claim], summary)


# ---------------------------------------------------------------- Markdown


def markdown(report: Dict) -> str:
    cfg, rnd = report["config"], report["random"]
    L = ["# C1 — 5-point linear toy (Qi & Guo 2012, Fig. 1)", ""]
    L += [
        f"Generated by `{cfg['command']}` ({report['finished'] or 'incomplete'}; {report['timing']['total_s']:.0f} s)."
    ]
    L += ["", "## Exact posterior", ""]
    head = ["eps", "E[w]", "Cov[w] (11, 12, 22)", "grid − closed form, max abs (mean / cov)"]
    rows = []
    for eps, ex in report["exact"].items():
        m, V = ex["mean"], ex["cov"]
        rows.append([eps, f"({m[0]:.5f}, {m[1]:.5f})", f"({V[0][0]:.5f}, {V[0][1]:.5f}, {V[1][1]:.5f})"])
        for d in (ex["grid_max_abs_diff_vs_closed_form"], ex["grid_max_abs_diff_vs_coarse_grid"]):
            rows[-1].append(f"{d['mean']:.1e} / {d['cov']:.1e}")
    L += markdown_table(head + ["2001² − 1001² grid, max abs (mean / cov)"], rows)
    head = ["method", "converged", "sweeps", "skipped", "mean err", "cov err", "Δangle (°)", "b>0 sites"]
    for eps in cfg["eps"]:
        L += ["", f"## eps = {eps}", ""]
        L += markdown_table(
            head + ["mean err (α)", "E[w]"],
            [
                [r["method"], "yes" if r["converged"] else "**no**", r["sweeps"], r["num_skipped"]]
                + [cell(r["mean_err"], 3, style="g"), cell(r["cov_err"], 3, style="g"), f"{r['angle_deg']:.3f}"]
                + [", ".join(f"{i}{'*' * (i in MISLABELLED)}" for i in r["relaxed_points"]) or "–"]
                + [cell(r["mean_err_alpha"], 3, style="g"), f"({r['mean'][0]:.4f}, {r['mean'][1]:.4f})"]
                for r in report["runs"]
                if r["eps"] == eps
            ],
        )
    if rnd.get("summary"):
        L += ["", f"## {rnd['num_configs']} random configurations (eps = {rnd['eps']})", ""]
        head = ["method", "converged (EP)"]
        rows = [[name, f"{s['converged']}/{s['n']} ({s['ep_converged']})"] for name, s in rnd["summary"].items()]
        for key in ("mean_err", "cov_err"):
            head += [f"{key.replace('_', ' ')} better / equal / worse", "median log10 ratio"]
            for row, s in zip(rows, rnd["summary"].values()):
                row += [" / ".join(str(s[key][k]) for k in ("better", "equal", "worse"))]
                row += [cell(s[key]["log10_ratio_median"], 2, style="g", missing="–")]
        rows = [row + [s["both_better"], s["both_worse"]] for row, s in zip(rows, rnd["summary"].values())]
        L += markdown_table(head + ["both better", "both worse"], rows)
    return "\n".join(L + markdown_section("Claims", claim_items(report["claims"]), "*") + [""])


# ---------------------------------------------------------------- driver


def reanalyse(report: Dict) -> Dict:
    """Summaries and claims again from the stored runs (``--rerender``, after a change of the analysis)."""
    rnd = report["random"]
    if rnd.get("runs"):
        rnd["summary"] = random_summary(rnd["runs"], rnd["methods"])
    report["claims"] = claims(report["runs"], rnd, list(report["config"]["eps"]))
    return report


def main(argv: Optional[List[str]] = None, *, shared: bool = False) -> int:
    args, command = parse_command_line(build_parser(), argv, shared=shared, log=_log)
    out_dir = Path(args.out_dir)
    if args.rerender:
        return rerender_report(out_dir / "C1", reanalyse, markdown, _log, indent=1)
    t0 = time.perf_counter()
    design = dict(QUICK if args.quick else FULL)
    for key, value in (("eps", args.eps), ("u", args.u), ("c", args.c)):
        if value:
            design[key] = tuple(parse_list(value, float))
    if args.random_configs is not None:
        design["random"] = int(args.random_configs)
    specs = method_specs(design["u"], design["c"], design["ablation_c"], design["cavities"])
    random_specs = [EP_SPEC, *(pep_spec(0.8, cav) for cav in design["cavities"]), *map(rep_spec, design["random_c"])]
    config = dict(command=command, quick=bool(args.quick), X=TOY_X.tolist(), Y=TOY_Y[:, 0].tolist())
    config.update(
        mislabelled=list(MISLABELLED), **{k: list(design[k]) for k in ("eps", "u", "cavities", "c", "ablation_c")}
    )
    config.update(kernel="gpflow.kernels.Linear(variance=1.0)", ep_options=EP_OPTIONS)
    config.update(grid={"n": GRID_N, "coarse_n": GRID_COARSE_N, "half_width": GRID_HALF_WIDTH})
    report = dict(claim="C1", paper="Qi & Guo (2012), Message passing with relaxed moment matching, Fig. 1")
    report.update(config=dict(config, methods=[s["name"] for s in specs]), machine=machine_info(), started=utc_now())
    report.update(finished=None, exact={}, runs=[], random={}, claims=[], timing={})
    slots: Dict[str, ModelSlot] = {}
    for eps in design["eps"]:  # the replica
        start = time.perf_counter()
        ref = report["exact"][str(eps)] = exact_reference(TOY_X, TOY_Y, eps)
        report["runs"] += run_methods(specs, TOY_X, TOY_Y, eps, ref, slots)
        report["timing"][f"eps={eps}_s"] = time.perf_counter() - start
        _log(f"eps={eps}: {len(specs)} methods in {report['timing'][f'eps={eps}_s']:.0f} s")

    start, rnd_rows, configs, rnd_slots = time.perf_counter(), [], [], {}
    for k in range(design["random"]):  # random configurations
        X, Y = random_configuration(k)
        configs.append(X.tolist())
        for row in run_methods(random_specs, X, Y, MAIN_EPS, exact_reference(X, Y, MAIN_EPS, grid=False), rnd_slots):
            row.pop("R_history", None)
            rnd_rows.append({"config": k, **row})
        if (k + 1) % 10 == 0:
            _log(f"random configurations: {k + 1}/{design['random']}")
    names = [s["name"] for s in random_specs]
    report["random"] = dict(eps=MAIN_EPS, num_configs=design["random"], seed=RANDOM_SEED, methods=names)
    report["random"].update(configs=configs, runs=rnd_rows, summary=random_summary(rnd_rows, names) if configs else {})
    report["timing"]["random_s"] = time.perf_counter() - start
    report["claims"] = claims(report["runs"], report["random"], list(design["eps"]))
    report["timing"]["total_s"] = time.perf_counter() - t0
    report["finished"] = utc_now()
    write_report(out_dir / "C1", report, markdown(report), indent=1)
    _log(f"wrote {out_dir / 'C1.json'} and {out_dir / 'C1.md'} ({report['timing']['total_s']:.0f} s)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
