"""
Part C3 of :mod:`benchmarks.rep`, after Qi & Guo (2012), §6.3 and Fig. 5: test error and NLPD of EP, Power EP
and Relaxed EP (and probit VGP and EP baselines) on the six binary sets of ``shared/datasets``, per fixed split.

Writes ``<out-dir>/C3.json`` and ``C3.md`` after every round of splits; the protocol is described in
docs/benchmarks/rep.md. The models of a data set are built once and reused across its splits.
"""

import math
from functools import partial
from typing import Callable, Dict, List, Optional

import gpflow
import numpy as np

from gpflow_ep.compare import make_model
from gpflow_ep.likelihoods import Probit

from .claims import Claim, verdicts
from .data import load_benchmark
from .models import fixed_noisy_step
from .rep import EP_SPEC, cached, dash, fit, page, part_parser, pct, pep_spec, rep_spec, run_part, table, test_scores
from .runner import parse_list, progress_logger
from .stats import mean_se, paired_differences

log = progress_logger("C3")

DATASETS = ("Pima", "Australian", "Breast", "Crabs", "Iono", "Sonar")
SPLITS = 10
EP_SPECS = [EP_SPEC, pep_spec(0.8, "fractional", "PEP(u=0.8)"), rep_spec(1.0), rep_spec(10.0)]
EP_METHODS = tuple(s["name"] for s in EP_SPECS)
BASELINES = ("EP-probit", "VGP-probit")
REP_METHODS, OTHERS = EP_METHODS[2:], EP_METHODS[:2]
EP_OPTIONS = dict(schedule="parallel", criterion="alpha", tol=1e-3, max_sweeps=100, ep_mode="alternated")
MAXITER = {"width": 50, "EP-probit": 100, "VGP-probit": 200}
TIE = 1e-12  # paired differences below this are ties (errors are multiples of 1/num_test)


def build_parser():
    p = part_parser(__spec__.name, __doc__, "C3", "Crabs, 1 split, maxiter 5", data_dir=True)
    p.add_argument("--eps", default="0.05", help="comma-separated NoisyStep eps values (default 0.05)")
    return p


def iso_kernel(variance_trainable: bool = False):
    """The isotropic SE kernel, variance 1 (trained only by the baselines)."""
    kernel = gpflow.kernels.SquaredExponential(variance=1.0)
    gpflow.set_trainable(kernel.variance, variance_trainable)
    return kernel


def baseline(name: str, X, Y):
    """A probit baseline on (X, Y) with the kernel's variance trained: EP (nested updates) or GPflow's VGP."""
    if name == "EP-probit":
        return make_model("epgpc", data=(X, Y), kernel=iso_kernel(True), ep_mode="nested")
    return make_model("vgp", data=(X, Y), kernel=iso_kernel(True), likelihood=Probit())


def trained(slots: Dict, key, split, build: Callable, maxiter: int):
    """The model of ``build()`` in slot ``key`` trained by Scipy on the training set from lengthscale √d; the result."""
    X, Y = split.X_train, split.Y_train
    model = cached(slots, key, X, Y, build).load(X, Y, {"kernel.lengthscales": math.sqrt(X.shape[1])})
    return model, slots[key].minimize(model.training_loss, maxiter)


def run_split(slots: Dict, split, eps: float, maxiters, baselines: bool = True) -> List[Dict]:
    """All runs of a split for NoisyStep(eps): EP, PEP and REP at the EP-evidence lengthscale, the probit baselines."""
    X, Y, Xt, Yt = split.X_train, split.Y_train, split.X_test, split.Y_test
    base = dict(dataset=split.name, split=int(split.split), num_train=int(X.shape[0]))
    nested = lambda: make_model("epgpc", data=(X, Y), kernel=iso_kernel(), likelihood=fixed_noisy_step(eps), ep_mode="nested")
    model, res = trained(slots, (split.name, "width", eps), split, nested, maxiters["width"])
    width = dict(
        lengthscale=float(model.kernel.lengthscales.numpy()), iterations=int(res.nit), success=bool(res.success)
    )
    rows, values = [], {"likelihood.epsilon": eps, "kernel.lengthscales": width["lengthscale"]}
    for spec in EP_SPECS:
        fields = dict(base, likelihood=f"NoisyStep({eps})", eps=eps, width=width)
        model, row, _ = fit(
            slots.setdefault((split.name, eps), {}), spec, X, Y, iso_kernel, values, EP_OPTIONS, **fields
        )
        row.update(test_scores(model, Xt, Yt))
        rows.append(dict(row, diverged=not row["converged"] or row["test_error"] is None))
    for name in BASELINES if baselines else ():
        model, res = trained(slots, (split.name, name), split, partial(baseline, name, X, Y), maxiters[name])
        row = dict(base, method=name, likelihood="Probit", eps=None, iterations=int(res.nit), success=bool(res.success))
        row.update(variance=float(model.kernel.variance.numpy()), lengthscale=float(model.kernel.lengthscales.numpy()))
        if name == "EP-probit":  # the sites at the returned hyper-parameters
            row["converged"] = bool(model.run_ep().converged.numpy())
            row["diverged"] = not row["converged"]
        rows.append(dict(row, **test_scores(model, Xt, Yt)))
    return rows


def majority_errors(datasets, splits_done: Dict[str, List[int]], data_dir=None) -> Dict[str, Dict]:
    """Test error of predicting the training majority class, per dataset over the splits run."""
    ks = sorted({k for ks in splits_done.values() for k in ks})
    splits = {ds: [load_benchmark(ds, k, data_dir, kind="binary") for k in ks] for ds in datasets}
    return {
        ds: mean_se(float(np.mean(s.Y_test != float(np.mean(s.Y_train) > 0.5))) for s in ss)
        for ds, ss in splits.items()
    }


def verdict(diff: Dict) -> str:
    """Reading of a paired difference REP − other (negative favours REP); significant: its 95 % CI excludes 0."""
    if diff["n"] == 0 or diff["mean"] is None:
        return "no data"
    if diff["wins"] == 0 and diff["losses"] == 0:
        return "identical on every split"
    mean = 0.0 if abs(diff["mean"]) <= TIE else diff["mean"]
    if mean == 0:
        return "equal means"
    side = f"REP {'lower' if mean < 0 else 'higher'}"
    if not diff["se"]:
        return side
    return side + (" (significant)" if abs(mean) > diff["t95"] * diff["se"] else " (not significant)")


def failure_kind(row: Dict) -> Optional[str]:
    """
    For a run that missed R < 1e-3: "slow" if R still fell steadily over its last 10 sweeps (e.g. after
    rejected parallel sweeps halved the damping), otherwise "cycling" (R flat or oscillating).
    """
    if not row.get("diverged"):
        return None
    h = [x for x in row.get("R_history", []) if x >= 0][-10:]
    return "slow" if len(h) >= 2 and all(b <= a for a, b in zip(h, h[1:])) and h[-1] < 0.95 * h[0] else "cycling"


def paired(a: List[Dict], b: List[Dict], key: str) -> Dict:
    """The paired difference a − b of ``key`` over the splits (:func:`paired_differences`) and its :func:`verdict`."""
    d = paired_differences(*({r["split"]: r.get(key) for r in runs} for runs in (a, b)))
    return dict(d, verdict=verdict(d))


def aggregate(name: str, runs: List[Dict]) -> Dict:
    """Test error and NLPD of one method's runs (mean ± s.e.), its divergences and, for the EP family, its EP runs."""
    agg = dict(num_splits=len(runs), **{k: mean_se(r.get(k) for r in runs) for k in ("test_error", "test_nlpd")})
    if name != "VGP-probit":
        agg["num_diverged"] = int(sum(r["diverged"] for r in runs))
    if name in EP_METHODS:
        agg["num_diverged_slow"] = int(sum(failure_kind(r) == "slow" for r in runs))
        for key in ("test_error_alpha", "sweeps", "num_skipped", "frac_b_positive"):
            agg[key] = mean_se(r[key] for r in runs)
        agg["lengthscale"] = mean_se(r["width"]["lengthscale"] for r in runs)
    return agg


def summarise(rows: List[Dict]) -> Dict:
    """Per (likelihood setting, dataset, method) aggregates over the splits run with it, and paired REP differences."""
    summary, diffs = {}, {}
    for eps in sorted({r["eps"] for r in rows if r["eps"] is not None}):
        s_key = f"eps={eps}"
        summary[s_key], diffs[s_key] = {}, {}
        for ds in [d for d in DATASETS if any(r["dataset"] == d for r in rows)]:
            splits = {r["split"] for r in rows if r["dataset"] == ds and r["eps"] == eps}
            runs = [r for r in rows if r["dataset"] == ds and r["eps"] in (eps, None) and r["split"] in splits]
            of = {m: [r for r in runs if r["method"] == m] for m in EP_METHODS + BASELINES}
            summary[s_key][ds] = {m: aggregate(m, method_runs) for m, method_runs in of.items() if method_runs}
            diffs[s_key][ds] = {
                f"{a} − {b}": {key: paired(of[a], of[b], key) for key in ("test_error", "test_nlpd")}
                for a in REP_METHODS
                for b in OTHERS
            }
    return {"summary": summary, "paired_differences": diffs}


def claims(results: Dict, majority: Optional[Dict] = None) -> List[Dict]:
    """The claims of §6.3 and Fig. 5 per eps; the datasets where EP is no better than the majority class are named."""

    def lower(r: Dict) -> str:
        diffs = zip(OTHERS, r["diffs"])
        return f"{r['dataset']} " + ", ".join(f"− {o} {pct(d, signed=True)} pp ({d['verdict']})" for o, d in diffs)

    def diverged(r: Dict) -> str:
        slow = r["num_diverged_slow"]
        text = f"{r['num_diverged']}/{r['num_splits']} ({slow} slow, {r['num_diverged'] - slow} cycling)"
        return f"{r['dataset']} {r['method']} {text}"

    def sweeps(r: Dict) -> str:
        others = ", ".join(f"{m} {s:.1f}" for m, s in r["rivals"].items())
        return f"{r['dataset']} {r['method']} {r['sweeps']['mean']:.1f} ({others})"

    significant = lambda r: all(d["verdict"] == "REP lower (significant)" for d in r["diffs"])
    fewer = lambda r: all(r["sweeps"]["mean"] < s for s in r["rivals"].values())
    out, majority = [], majority or {}
    for s_key, per_ds in results["paired_differences"].items():
        summ = results["summary"][s_key]
        table = [
            dict(summ[ds][rep], dataset=ds, method=rep, diffs=[d[f"{rep} − {o}"]["test_error"] for o in OTHERS])
            for ds, d in per_ds.items()
            for rep in REP_METHODS
        ]
        for row in table:
            row["rivals"] = {o: summ[row["dataset"]][o]["sweeps"]["mean"] for o in OTHERS}
        below = f", {s_key}: test error significantly below EP's and PEP's on every dataset (Fig. 5)"
        checks = [
            Claim(rep + below, significant, lambda t, rep=rep: [r for r in t if r["method"] == rep], show=lower)
            for rep in REP_METHODS
        ]
        never = f"REP never diverges, {s_key} (Fig. 5; R < 1e-3 within 100 parallel sweeps)"
        checks += [Claim(never, lambda r: r["num_diverged"] == 0, show=diverged)]
        checks += [Claim(f"REP needs the fewest sweeps, {s_key}", fewer, need="most", show=sweeps)]
        decided = verdicts(checks, table)
        chance = [ds for ds in summ if (majority.get(ds) or {}).get("mean") is not None]
        chance = [ds for ds in chance if summ[ds]["EP"]["test_error"]["mean"] >= majority[ds]["mean"]]
        for c in decided[: len(REP_METHODS)] if chance else ():
            c["evidence"] += (
                f" At or below chance (EP no better than the majority class), so saying nothing: {', '.join(chance)}."
            )
        out += decided
    return out


def markdown(report: Dict) -> str:
    cfg, res, majority = report["config"], report["results"], report.get("majority_error") or {}
    done = "; ".join(f"{s}: splits 0..{ks[-1]} ({len(ks)} of 20)" for s, ks in report["splits_done"].items() if ks)
    L = [f"{report['resummarised']}  "] if report.get("resummarised") else []
    L += ["", f"Datasets: {', '.join(cfg['datasets'])}; {len(cfg['splits'])} splits requested; run: {done or 'none'}."]
    columns = [
        ("dataset", lambda a: a["dataset"]),
        ("method", lambda a: a["method"]),
        ("test error [%]", lambda a: pct(a["test_error"])),
        ("test NLPD", lambda a: dash(a["test_nlpd"], 3)),
        ("diverged", lambda a: f"{a['num_diverged']}/{a['num_splits']}" if "num_diverged" in a else "–"),
        ("sweeps", lambda a: dash(a.get("sweeps"), 1)),
        ("skipped", lambda a: dash(a.get("num_skipped"), 1)),
        ("b>0 [%]", lambda a: pct(a.get("frac_b_positive"), 1) if a["method"] in REP_METHODS else "–"),
        ("lengthscale", lambda a: dash(a.get("lengthscale"), 2)),
    ]
    diff_columns = [
        ("dataset", lambda d: d["dataset"]),
        ("comparison", lambda d: d["comparison"]),
        ("Δ test error [%]", lambda d: pct(d["test_error"], signed=True)),
        ("W/T/L", lambda d: "{wins}/{ties}/{losses}".format(**d["test_error"])),
        ("verdict", lambda d: d["test_error"]["verdict"]),
        ("Δ NLPD", lambda d: dash(d["test_nlpd"], 4, signed=True)),
        ("verdict (NLPD)", lambda d: d["test_nlpd"]["verdict"]),
    ]
    scale = "; ".join(f"{ds} {pct(m)} %" for ds, m in majority.items())
    for s_key, per_ds in res["summary"].items():
        rows = [dict(a, dataset=ds, method=m) for ds, by_method in per_ds.items() for m, a in by_method.items()]
        L += ["", f"## Results, NoisyStep {s_key}", ""] + table(columns, rows)
        if majority:
            L += ["", f"Majority-class test error (predict the training majority), for scale: {scale}."]
        L += ["", f"### Paired differences REP − EP and REP − PEP ({s_key}; negative favours REP)", ""]
        diffs = res["paired_differences"][s_key]
        L += table(
            diff_columns, [dict(d, dataset=ds, comparison=c) for ds, per in diffs.items() for c, d in per.items()]
        )
    return page("C3 — real data (Qi & Guo 2012, Fig. 5): EP vs Power EP vs Relaxed EP", report, ".", L)


def reanalyse(report: Dict, args) -> Dict:
    """Majority-class errors, summaries and claims from ``report["runs"]`` (also for ``--rerender``)."""
    done = report.get("splits_done") or {}
    report["majority_error"] = majority_errors(report["config"]["datasets"], done, args.data_dir)
    report["results"] = summarise(report["runs"])
    report["claims"] = claims(report["results"], report["majority_error"])
    return report


def run(args, report: Dict, save) -> None:
    """Every split of every data set at each eps (the baselines with the first); the report after each split."""
    datasets, eps_values = ["Crabs"] if args.quick else list(DATASETS), parse_list(args.eps, float)
    if not eps_values or not all(0.0 < e < 0.5 for e in eps_values):
        raise ValueError(f"eps values must lie in (0, 0.5); got {args.eps!r}")
    maxiters, splits = ({k: 5 for k in MAXITER}, [0]) if args.quick else (dict(MAXITER), list(range(SPLITS)))
    report["config"].update(
        datasets=datasets, splits=splits, eps=eps_values, maxiter=maxiters, methods=list(EP_METHODS + BASELINES)
    )
    report.update(runs=[], splits_done={}, claims=[])
    slots = {}
    for phase, eps in enumerate(eps_values):
        report["splits_done"][f"eps={eps}"] = []
        for k in splits:
            for ds in datasets:
                rows = run_split(slots, load_benchmark(ds, k, args.data_dir, kind="binary"), eps, maxiters, phase == 0)
                report["runs"] += rows
                log(
                    f"eps={eps} {ds} split {k}: "
                    + ", ".join(f"{r['method']} {pct(r.get('test_error'), 1)}%" for r in rows)
                )
            report["splits_done"][f"eps={eps}"].append(k)
            reanalyse(report, args)
            save()


def main(argv: Optional[List[str]] = None, *, shared: bool = False) -> int:
    return run_part("C3", build_parser(), argv, shared, log, run, reanalyse, markdown)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
