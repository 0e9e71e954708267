"""
Part C1 of :mod:`benchmarks.rep`: Qi & Guo (2012), §6.1 and Fig. 1. How close the EP, Power EP and
Relaxed EP posteriors of the weights w are to the exact one (closed form, :func:`exact_posterior_sectors`)
on a replica of the paper's 5-point linear toy and on random 5-point sets [ours].

Writes ``<out-dir>/C1.json`` and ``C1.md``; the protocol and metrics are described in docs/benchmarks/rep.md.
"""

import math
from typing import Dict, List, Sequence

import numpy as np
from gpflow.kernels import Linear

from .claims import Claim, verdicts
from .rep import EP_OPTIONS, EP_SPEC, dash, fit, page, part_parser, pep_spec, rep_spec, run_part, table
from .runner import parse_list, progress_logger
from .stats import cell

log = progress_logger("C1")

TOY_X = np.array([[-1.0, 1.0], [-2.0, 0.5], [3.0, 0.0], [1.0, 1.5], [1.5, -0.5]])
TOY_Y = np.array([[1.0], [1.0], [1.0], [0.0], [0.0]])
MISLABELLED = (2,)  # the +1 point at (3, 0)
MAIN_EPS, RANDOM_SEED = 0.2, 2012
#: the full design; --quick runs QUICK
FULL = dict(eps=(0.1, 0.2, 0.25), u=(0.2, 0.4, 0.6, 0.8, 0.9), cavities=("full", "fractional"), random=40)
FULL.update(
    c=(0.1, 0.3, 1.0, 2.0, 5.0, 10.0, 20.0, 100.0, 1000.0), ablation_c=(0.3, 1.0, 5.0, 20.0), random_c=(1.0, 5.0, 20.0)
)
QUICK = dict(eps=(0.2,), u=(0.4, 0.8, 0.9), cavities=("full",), c=(1.0, 20.0, 1000.0), ablation_c=(), random=4)
QUICK.update(random_c=(1.0,))
#: relative difference below which two errors count as equal: runs stop at R < 1e-3, so two runs
#: with the same fixed point differ by ~1e-4 in E[w], i.e. by up to ~1 % in the errors
TIE = 0.01


def build_parser():
    quick = "eps 0.2, u ∈ {0.4, 0.8, 0.9} (full cavity), c ∈ {1, 20, 1000}, no ablations, 4 random configurations"
    p = part_parser(__spec__.name, __doc__, "C1", quick)
    p.add_argument("--u", default=None, help="comma-separated PEP powers (default 0.2,0.4,0.6,0.8,0.9)")
    p.add_argument("--c", default=None, help="comma-separated REP penalties (default 0.1,0.3,1,2,5,10,20,100,1000)")
    p.add_argument("--random-configs", type=int, default=None, help="number of random configurations (default 40)")
    return p


def log_likelihood(X, Y, eps: float, w1, w2):
    """Σ_i log p(y_i | wᵀx_i) on arrays of w, with Θ(0) = ½ on a boundary wᵀx_i = 0."""
    out = np.zeros(np.broadcast(w1, w2).shape)
    for (x1, x2), y in zip(np.asarray(X, float), 2.0 * np.asarray(Y, float).ravel() - 1.0):
        out += np.log(eps + (1.0 - 2.0 * eps) * (0.5 * (1.0 + np.sign(y * (x1 * w1 + x2 * w2)))))
    return out


def exact_posterior_sectors(X, Y, eps: float):
    """
    Mean, covariance and log evidence of w under N(w; 0, I₂) Π_i p(y_i | wᵀx_i) in closed form. In polar
    coordinates w = r(cos θ, sin θ) the likelihood depends on θ only and is a constant L_k on each sector
    (a_k, b_k) between the angles θ_i ± π/2 of the boundaries, so Z = Σ_k L_k (b_k − a_k)/2π,
    E[w] = Σ_k L_k √(π/2)/2π (sin b − sin a, cos a − cos b)/Z (from ∫ r² e^{-r²/2} dr) and
    E[w wᵀ] = Σ_k L_k/π (h + q, (sin² b − sin² a)/2, h − q)/Z with h = (b − a)/2, q = (sin 2b − sin 2a)/4.
    """
    angles = np.arctan2(np.asarray(X, float)[:, 1], np.asarray(X, float)[:, 0])
    a = np.sort(np.mod(np.concatenate([angles + np.pi / 2, angles - np.pi / 2]), 2 * np.pi))
    b = np.append(a[1:], a[0] + 2 * np.pi)
    lik = np.exp(log_likelihood(X, Y, eps, np.cos(0.5 * (a + b)), np.sin(0.5 * (a + b))))
    Z = np.sum(lik * (b - a)) / (2 * math.pi)
    radial = math.sqrt(math.pi / 2) / (2 * math.pi)
    mean = radial * np.array([lik @ (np.sin(b) - np.sin(a)), lik @ (np.cos(a) - np.cos(b))])
    half, quarter = 0.5 * (b - a), 0.25 * (np.sin(2 * b) - np.sin(2 * a))
    s = np.array([lik @ (half + quarter), lik @ (0.5 * (np.sin(b) ** 2 - np.sin(a) ** 2)), lik @ (half - quarter)])
    mean, s = mean / Z, s / math.pi / Z
    return mean, np.array([[s[0], s[1]], [s[1], s[2]]]) - np.outer(mean, mean), math.log(Z)


def exact_reference(X, Y, eps: float) -> Dict:
    """The exact moments of w (:func:`exact_posterior_sectors`)."""
    mean, cov, log_z = exact_posterior_sectors(X, Y, eps)
    return {"mean": mean.tolist(), "cov": cov.tolist(), "log_evidence": log_z}


def random_configuration(k: int, seed: int = RANDOM_SEED):
    """Configuration k: two +1 near (-2, 0), the +1 "outlier" near (3, 0), two −1 near (2, 0)."""
    rng = np.random.default_rng([seed, k])
    centres = np.array([[-2.0, 0.0], [-2.0, 0.0], [3.0, 0.0], [2.0, 0.0], [2.0, 0.0]])
    return centres + rng.normal(size=centres.shape), TOY_Y.copy()


def errors(mean, cov, ref: Dict) -> Dict:
    """mean err = (1/d)Σ(μ̂−μ)², cov err = (1/d²)Σ(V̂−V)²."""
    d = np.size(mean)
    dm = float(np.sum((np.asarray(mean) - np.asarray(ref["mean"])) ** 2))
    return {"mean_err": dm / d, "cov_err": float(np.sum((np.asarray(cov) - np.asarray(ref["cov"])) ** 2)) / d**2}


def boundary_angle(mean, ref_mean) -> float:
    """Angle (degrees, in [0, 180]) between the boundaries E[w]ᵀx = 0, i.e. between the E[w]."""
    a, b = np.asarray(mean, float), np.asarray(ref_mean, float)
    return math.degrees(math.acos(max(-1.0, min(1.0, float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))))))


def run_methods(specs, X, Y, eps: float, ref: Dict, slots: Dict, **fields) -> List[Dict]:
    """Every spec on (X, Y); E[w] and Cov[w] are f at e₁, e₂ (linear kernel), and E[w] by Minka's α predictor."""
    rows = []
    for spec in specs:
        model, row, b = fit(slots, spec, X, Y, lambda: Linear(variance=1.0), {"likelihood.epsilon": eps}, **fields)
        post = model.posterior()
        mean, cov = (v.numpy() for v in post.predict_f(np.eye(2), full_cov=True))
        mean, cov = mean[:, 0], cov[0]
        model.predict_with = "dual"
        mean_alpha = post.predict_f(np.eye(2))[0].numpy()[:, 0]
        model.predict_with = "sites"
        row.update(
            eps=eps, mean=mean.tolist(), cov=cov.tolist(), mean_alpha=mean_alpha.tolist(), **errors(mean, cov, ref)
        )
        row.update(mean_err_alpha=errors(mean_alpha, cov, ref)["mean_err"], angle_deg=boundary_angle(mean, ref["mean"]))
        rows.append(dict(row, relaxed_points=[int(i) for i in np.flatnonzero(b > 0)]))
    return rows


def less(a: float, b: float) -> bool:
    """a is more than TIE (relative) below b."""
    return a < b * (1.0 - TIE)


def below(a: Dict, b: Dict) -> bool:
    """Both errors of run a more than :data:`TIE` below run b's."""
    return less(a["mean_err"], b["mean_err"]) and less(a["cov_err"], b["cov_err"])


def random_summary(rows: List[Dict], methods: Sequence[str]) -> Dict:
    """Per method: in how many configurations its errors are below / equal to / above EP's."""
    ep, out = {r["config"]: r for r in rows if r["method"] == "EP"}, {}
    for name in (m for m in methods if m != "EP"):
        pairs = [(r, ep[r["config"]]) for r in rows if r["method"] == name and r["config"] in ep]
        s = dict(n=len(pairs), converged=sum(r["converged"] for r, _ in pairs))
        s.update(ep_converged=sum(e["converged"] for _, e in pairs))
        for key in ("mean_err", "cov_err"):
            kinds = [
                "better" if less(r[key], e[key]) else "worse" if less(e[key], r[key]) else "equal" for r, e in pairs
            ]
            ratios = [math.log10(r[key] / e[key]) for r, e in pairs if r[key] > 0 and e[key] > 0]
            s[key] = {kind: kinds.count(kind) for kind in ("better", "equal", "worse")}
            s[key]["log10_ratio_median"] = float(np.median(ratios)) if ratios else None
        s.update(both_better=sum(below(r, e) for r, e in pairs), both_worse=sum(below(e, r) for r, e in pairs))
        out[name] = s
    return out


#: the claims of §6.1 and Fig. 1 (and one of ours), as the paper states them
CLAIMS = dict(
    wide="REP more accurate than EP for a wide range of c (Fig. 1d-e)",
    pep="PEP less accurate than EP for every u (Fig. 1b-c)",
    large_c="REP = EP for large c (Fig. 1d-e)",
    other_eps="with eps = 0.1 and 0.25, REP consistently more accurate than EP and PEP (§6.1)",
    boundaries="Fig. 1a boundaries: PEP(0.8) closer than EP, REP(c=20) overlaps the exact one",
    random="REP more accurate than EP beyond the one (unknown) configuration: random 5-point sets, eps={} [ours]",
)


def claims(runs: List[Dict], random: Dict, eps_values: Sequence[float]) -> List[Dict]:
    """:data:`CLAIMS` as checks over the runs, their evidence the runs' errors."""
    main_eps = MAIN_EPS if MAIN_EPS in eps_values else eps_values[0]
    ep = {r["eps"]: r for r in runs if r["family"] == "EP"}
    pep08 = [r for r in runs if r["family"] == "PEP" and r["eps"] == main_eps and abs(r["u"] - 0.8) < 1e-12]

    def of(family: str, where=lambda r: True):
        return lambda table: [r for r in table if r["family"] == family and where(r)]

    def gaps(r: Dict) -> List[float]:
        """max |Δ| of E[w] and of Cov[w] from EP's."""
        return [float(np.max(np.abs(np.subtract(r[k], ep[r["eps"]][k])))) for k in ("mean", "cov")]

    def closer(r: Dict) -> bool:
        """Boundary closer to the exact one than EP's (REP: also than every PEP(u=0.8)'s)."""
        rivals = [ep[r["eps"]]] + (pep08 if r["family"] == "REP" else [])
        return all(r["angle_deg"] < p["angle_deg"] for p in rivals)

    def beats_all(r: Dict) -> bool:
        peps = [p for p in runs if p["family"] == "PEP" and p["eps"] == r["eps"]]
        return below(r, ep[r["eps"]]) and all(below(r, p) for p in peps)

    def errs(r: Dict) -> str:
        ours, eps = (f"{x['mean_err']:.3g}/{x['cov_err']:.3g}" for x in (r, ep[r["eps"]]))
        return f"eps={r['eps']} {r['method']} {ours} (EP {eps})"

    def angles(r: Dict) -> str:
        return f"eps={r['eps']} {r['method']} {r['angle_deg']:.3f}° (EP {ep[r['eps']]['angle_deg']:.3f}°)"

    def same(r: Dict) -> str:
        (dm, dv), relaxed = gaps(r), len(r["relaxed_points"])
        return f"eps={r['eps']} c={r['c']:g}: max|Δμ|={dm:.1e}, max|ΔV|={dv:.1e}, b>0 sites {relaxed}"

    def counts(s: Dict) -> str:
        return (
            f"{s['method']} both errors below EP's in {s['both_better']} of {s['n']}, both above in {s['both_worse']}"
        )

    more_accurate = lambda r: below(r, ep[r["eps"]])
    same_as_ep = lambda r: max(gaps(r)) <= 1e-10 and not r["relaxed_points"]
    rep20 = of("REP", lambda r: r["eps"] == main_eps and r["c"] == 20.0)
    checks = [
        Claim(CLAIMS["wide"], more_accurate, of("REP", lambda r: r["eps"] == main_eps), "most", errs),
        Claim(CLAIMS["pep"], lambda r: below(ep[r["eps"]], r), of("PEP"), show=errs),
        Claim(CLAIMS["large_c"], same_as_ep, of("REP", lambda r: r["c"] >= 100), show=same),
        Claim(CLAIMS["other_eps"], beats_all, of("REP", lambda r: r["eps"] != MAIN_EPS), "most", errs),
        Claim(CLAIMS["boundaries"], closer, lambda t: pep08 + rep20(t), show=angles),
    ]
    summary = [dict(s, method=name) for name, s in (random.get("summary") or {}).items() if name.startswith("REP")]
    most_better = lambda s: s["both_better"] > s["n"] / 2
    random_claim = Claim(CLAIMS["random"].format(random.get("eps")), most_better, need="any", show=counts)
    return verdicts(checks, runs) + verdicts([random_claim], summary)


def markdown(report: Dict) -> str:
    cfg, rnd = report["config"], report["random"]
    exact = [dict(ex, eps=eps) for eps, ex in report["exact"].items()]
    columns = [("eps", lambda ex: ex["eps"]), ("E[w]", lambda ex: "({:.5f}, {:.5f})".format(*ex["mean"]))]
    columns += [("Cov[w] (11, 12, 22)", lambda ex: "({:.5f}, {:.5f}, {:.5f})".format(*ex["cov"][0], ex["cov"][1][1]))]
    L = ["", "## Exact posterior", ""] + table(columns, exact)
    columns = [
        ("method", lambda r: r["method"]),
        ("converged", lambda r: "yes" if r["converged"] else "**no**"),
        ("sweeps", lambda r: r["sweeps"]),
        ("skipped", lambda r: r["num_skipped"]),
        ("mean err", lambda r: cell(r["mean_err"], 3, style="g")),
        ("cov err", lambda r: cell(r["cov_err"], 3, style="g")),
        ("Δangle (°)", lambda r: f"{r['angle_deg']:.3f}"),
        ("b>0 sites", lambda r: ", ".join(f"{i}{'*' * (i in MISLABELLED)}" for i in r["relaxed_points"]) or "–"),
        ("mean err (α)", lambda r: cell(r["mean_err_alpha"], 3, style="g")),
        ("E[w]", lambda r: "({:.4f}, {:.4f})".format(*r["mean"])),
    ]
    for eps in cfg["eps"]:
        L += ["", f"## eps = {eps}", ""] + table(columns, [r for r in report["runs"] if r["eps"] == eps])
    if rnd.get("summary"):
        columns = [("method", lambda s: s["method"])]
        columns += [("converged (EP)", lambda s: f"{s['converged']}/{s['n']} ({s['ep_converged']})")]
        for k in ("mean_err", "cov_err"):
            outcomes = lambda s, k=k: " / ".join(str(s[k][kind]) for kind in ("better", "equal", "worse"))
            median = lambda s, k=k: dash(s[k]["log10_ratio_median"], 2, style="g")
            columns += [(f"{k.replace('_', ' ')} better / equal / worse", outcomes), ("median log10 ratio", median)]
        columns += [("both better", lambda s: s["both_better"]), ("both worse", lambda s: s["both_worse"])]
        L += ["", f"## {rnd['num_configs']} random configurations (eps = {rnd['eps']})", ""]
        L += table(columns, [dict(s, method=name) for name, s in rnd["summary"].items()])
    return page("C1 — 5-point linear toy (Qi & Guo 2012, Fig. 1)", report, ".", L)


def reanalyse(report: Dict, args=None) -> Dict:
    """Summaries and claims again from the stored runs (``--rerender``, after a change of the analysis)."""
    rnd = report["random"]
    if rnd.get("runs"):
        rnd["summary"] = random_summary(rnd["runs"], rnd["methods"])
    report["claims"] = claims(report["runs"], rnd, list(report["config"]["eps"]))
    return report


def run(args, report: Dict, save) -> None:
    """The replica at every eps, then the random configurations at eps = 0.2."""
    design = dict(QUICK if args.quick else FULL)
    design.update({k: tuple(parse_list(getattr(args, k), float)) for k in ("u", "c") if getattr(args, k)})
    design["random"] = design["random"] if args.random_configs is None else args.random_configs
    reps = [rep_spec(c) for c in design["c"]]
    reps += [rep_spec(c, family) for family in ("REP-B", "REP-exact") for c in design["ablation_c"]]
    specs = [EP_SPEC] + [pep_spec(u, cav) for cav in design["cavities"] for u in design["u"]] + reps
    random_specs = [EP_SPEC, *(pep_spec(0.8, cav) for cav in design["cavities"]), *map(rep_spec, design["random_c"])]
    report["config"].update({k: list(design[k]) for k in ("eps", "u", "cavities", "c", "ablation_c")})
    report["config"].update(methods=[s["name"] for s in specs], ep_options=EP_OPTIONS)
    report.update(exact={}, runs=[], claims=[])
    slots, random_slots, random_rows = {}, {}, []
    for eps in design["eps"]:
        ref = report["exact"][str(eps)] = exact_reference(TOY_X, TOY_Y, eps)
        report["runs"] += run_methods(specs, TOY_X, TOY_Y, eps, ref, slots)
        log(f"eps={eps}: {len(specs)} methods")
    for k in range(design["random"]):
        X, Y = random_configuration(k)
        ref = exact_reference(X, Y, MAIN_EPS)
        random_rows += run_methods(random_specs, X, Y, MAIN_EPS, ref, random_slots, config=k)
    report["random"] = dict(eps=MAIN_EPS, num_configs=design["random"], seed=RANDOM_SEED, runs=random_rows)
    report["random"]["methods"] = [s["name"] for s in random_specs]
    reanalyse(report)


def main(argv=None, *, shared: bool = False) -> int:
    return run_part("C1", build_parser(), argv, shared, log, run, reanalyse, markdown)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
