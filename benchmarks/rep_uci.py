"""
Part C3 of :mod:`benchmarks.rep`, after Qi & Guo (2012), §6.3 and Fig. 5: test error and NLPD of EP, Power EP
and Relaxed EP (and probit VGP and EP baselines) on the six binary sets of ``shared/datasets``, per fixed split.

    python -m benchmarks.rep_uci [--quick] [--out-dir results/rep] [--rerender]

writes ``<out-dir>/C3.json`` and ``C3.md`` after every round of splits; the protocol is described in
docs/benchmarks/rep.md. The models of a data set are built once and reused across its splits.
"""

import math
import time
from pathlib import Path
from typing import Dict, List, Optional

import gpflow
import numpy as np

from gpflow_ep.datasets import load_benchmark
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC

from .claims import Claim, claim_items, verdicts
from .models import ModelSlot, build_ep_model, evaluate, fixed_noisy_step
from .rep import model_slot, pep_spec, rep_spec
from .report import machine_info, markdown_section, rerender_report, utc_now, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger
from .stats import cell, finite_or_none, markdown_table, mean_se, paired_differences

_log = progress_logger("C3")

DATASETS = ("Pima", "Australian", "Breast", "Crabs", "Iono", "Sonar")
DEFAULT_SPLITS = 10  # the target; with the default budget fewer may run (never fewer than MIN_SPLITS)
MIN_SPLITS = 5
DEFAULT_BUDGET_MIN = 50.0
DEFAULT_EPS = "0.05,0.1"  # 0.1 runs after all 0.05 splits, for as many splits as the budget leaves
#: the EP-family methods as specs of :func:`benchmarks.models.build_ep_model`
EP_SPECS = {"EP": {"family": "EP"}, "PEP(u=0.8)": pep_spec(0.8, "fractional", "PEP(u=0.8)")}
EP_SPECS.update({f"REP(c={c:g})": rep_spec(c) for c in (1.0, 10.0)})
EP_METHODS = tuple(EP_SPECS)
BASELINES = ("EP-probit", "VGP-probit")
REP_METHODS = ("REP(c=1)", "REP(c=10)")
OTHERS = ("EP", "PEP(u=0.8)")
EP_OPTIONS = dict(schedule="parallel", criterion="alpha", tol=1e-3, max_sweeps=100, ep_mode="alternated")
MAXITER = dict(width=50, vgp=200, ep_probit=100)
TIE = 1e-12  # paired differences below this are ties (errors are multiples of 1/num_test)


def _iso_kernel(lengthscale: float, variance_trainable: bool):
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=float(lengthscale))
    gpflow.set_trainable(kernel.variance, variance_trainable)
    return kernel


class DatasetModels:
    """Every model of one dataset (baselines, and per eps the width and EP models), reused across splits."""

    def __init__(self, split):
        X, Y = self.data = split.X_train, split.Y_train
        self.init_lengthscale, self.shape = math.sqrt(X.shape[1]), X.shape
        self.width, self.ep = {}, {}
        ep_probit = EPGPC(self.data, _iso_kernel(self.init_lengthscale, True), Probit(), ep_mode="nested")
        vgp = gpflow.models.VGP(self.data, _iso_kernel(self.init_lengthscale, True), Probit())
        self.baselines = {"EP-probit": ModelSlot(ep_probit, X, Y), "VGP-probit": ModelSlot(vgp, X, Y)}

    def ensure_eps(self, eps: float) -> None:
        """Build the width-selection and EP/PEP/REP models of NoisyStep(eps) (once)."""
        if eps not in self.width:
            kernel, likelihood = _iso_kernel(self.init_lengthscale, False), fixed_noisy_step(eps)
            width = build_ep_model({"family": "EP"}, self.data, kernel, likelihood, {"ep_mode": "nested"})
            self.width[eps] = ModelSlot(width, *self.data)
            self.ep[eps] = {
                name: model_slot(spec, *self.data, eps, _iso_kernel(1.0, False), EP_OPTIONS)
                for name, spec in EP_SPECS.items()
            }


# ---------------------------------------------------------------- one split


def evaluate_split(model, X_test, Y_test) -> Dict:
    """Test error (sign of the predictive mean) and NLPD from the stored sites; EP models also Minka's α predictor."""
    dual = isinstance(model, EPGPC)
    ev = evaluate(model, X_test, Y_test, dual=dual)
    out = {"test_error": ev["error"] if ev["mean_finite"] else None, "test_nlpd": finite_or_none(ev["nlpd"])}
    return dict(out, test_error_alpha=ev["error_dual"]) if dual else out


def run_ep_method(slot: ModelSlot, split, lengthscale: float) -> Dict:
    model = slot.load(split.X_train, split.Y_train, {"kernel.lengthscales": lengthscale})
    start = time.perf_counter()
    run = model.run_ep()
    sweeps = int(run.sweeps.numpy())
    row = {
        "converged": bool(run.converged.numpy()),
        "sweeps": sweeps,
        "final_R": finite_or_none(run.max_change.numpy()),
    }
    row.update(num_skipped=int(run.num_skipped.numpy()), num_rejected=int(run.num_rejected.numpy()))
    row["log_Z_EP"] = finite_or_none(model.log_marginal_likelihood().numpy())
    row["R_history"] = [float(f"{h:.4g}") for h in run.history.numpy()[:sweeps]]
    row.update(evaluate_split(model, split.X_test, split.Y_test))
    row["diverged"] = (not row["converged"]) or row["test_error"] is None
    row["frac_b_positive"] = float(np.mean(model.sites.relaxation.numpy() > 0))
    row["time_s"] = time.perf_counter() - start
    return row


def select_width(slot: ModelSlot, split, init_lengthscale: float, maxiter: int) -> Dict:
    """The lengthscale maximising the EP evidence (nested EP), with the sites at the optimum."""
    model = slot.load(split.X_train, split.Y_train, {"kernel.lengthscales": init_lengthscale})
    start = time.perf_counter()
    res = slot.minimize(model.training_loss, maxiter)
    model.run_ep()
    out = {"lengthscale": float(model.kernel.lengthscales.numpy())}
    out.update(log_Z_EP=finite_or_none(model.log_marginal_likelihood().numpy()), iterations=int(res.nit))
    out.update(success=bool(res.success), message=str(res.message))
    out.update(ep_converged=bool(model.ep_diagnostics.converged.numpy()), time_s=time.perf_counter() - start)
    return out


def run_baseline(name: str, slot: ModelSlot, split, init_lengthscale: float, maxiter: int) -> Dict:
    model = slot.load(split.X_train, split.Y_train, {"kernel.lengthscales": init_lengthscale})
    start = time.perf_counter()
    res = slot.minimize(model.training_loss, maxiter)
    row = {"iterations": int(res.nit), "success": bool(res.success), "variance": float(model.kernel.variance.numpy())}
    row["lengthscale"] = float(model.kernel.lengthscales.numpy())
    if name == "EP-probit":
        row["converged"] = bool(model.run_ep().converged.numpy())  # sites at the returned hyper-parameters
        row.update(diverged=not row["converged"], objective=finite_or_none(model.log_marginal_likelihood().numpy()))
    else:
        row["objective"] = finite_or_none(model.elbo().numpy())
    row.update(evaluate_split(model, split.X_test, split.Y_test))
    row["time_s"] = time.perf_counter() - start
    return row


def run_split(models: DatasetModels, split, eps: float, maxiters, baselines: bool = True) -> List[Dict]:
    """All runs of one dataset split for NoisyStep(eps), plus the probit baselines if asked."""
    base = {"dataset": split.name, "split": int(split.split), "num_train": int(split.X_train.shape[0])}
    models.ensure_eps(eps)
    width = select_width(models.width[eps], split, models.init_lengthscale, maxiters["width"])
    rows = [
        {**base, "method": name, "likelihood": f"NoisyStep({eps})", "eps": eps, "width": width}
        | run_ep_method(models.ep[eps][name], split, width["lengthscale"])
        for name in EP_METHODS
    ]
    for name, maxiter in zip(BASELINES, (maxiters["ep_probit"], maxiters["vgp"])) if baselines else ():
        row = run_baseline(name, models.baselines[name], split, models.init_lengthscale, maxiter)
        rows.append({**base, "method": name, "likelihood": "Probit", "eps": None, **row})
    return rows


def majority_errors(datasets, splits_done: Dict[str, List[int]], data_dir=None) -> Dict[str, Dict]:
    """Test error of predicting the training majority class, per dataset over the splits run."""
    ks = sorted({k for ks in splits_done.values() for k in ks})
    splits = {ds: [load_benchmark(ds, k, data_dir, kind="binary") for k in ks] for ds in datasets}
    return {
        ds: mean_se(float(np.mean(s.Y_test != float(np.mean(s.Y_train) > 0.5))) for s in ss)
        for ds, ss in splits.items()
    }


# ---------------------------------------------------------------- statistics and claims


def verdict(diff: Dict) -> str:
    """Reading of a paired difference REP − other (negative favours REP)."""
    if diff["n"] == 0 or diff["mean"] is None:
        return "no data"
    if diff["wins"] == 0 and diff["losses"] == 0:
        return "identical on every split"
    mean = 0.0 if abs(diff["mean"]) <= TIE else diff["mean"]
    if diff["se"] is None or diff["se"] == 0:
        return "REP lower" if mean < 0 else ("equal means" if mean == 0 else "REP higher")
    half = diff["t95"] * diff["se"]
    if mean + half < 0 or mean - half > 0:
        return f"REP {'lower' if mean < 0 else 'higher'} (significant)"
    return "equal means" if mean == 0 else f"REP {'lower' if mean < 0 else 'higher'} (not significant)"


def failure_kind(row: Dict) -> Optional[str]:
    """
    For a run that missed R < 1e-3: "slow" if R still fell steadily over its last 10 sweeps (e.g. after
    rejected parallel sweeps halved the damping), otherwise "cycling" (R flat or oscillating).
    """
    if not row.get("diverged"):
        return None
    h = [x for x in row.get("R_history", []) if x >= 0][-10:]
    return "slow" if len(h) >= 2 and all(b <= a for a, b in zip(h, h[1:])) and h[-1] < 0.95 * h[0] else "cycling"


def summarise(rows: List[Dict]) -> Dict:
    """Per (likelihood setting, dataset, method) aggregates and the paired REP differences."""
    summary, diffs = {}, {}
    for eps in sorted({r["eps"] for r in rows if r["eps"] is not None}):
        s_key = f"eps={eps}"
        summary[s_key], diffs[s_key] = {}, {}
        for ds in [d for d in DATASETS if any(r["dataset"] == d for r in rows)]:
            ep_splits = {r["split"] for r in rows if r["dataset"] == ds and r["eps"] == eps}
            of = {
                m: [r for r in rows if r["dataset"] == ds and r["method"] == m and r["eps"] in (eps, None)]
                for m in EP_METHODS + BASELINES
            }
            by_method = {}
            for name, sel in ((m, [r for r in rs if r["split"] in ep_splits]) for m, rs in of.items()):
                if not sel:
                    continue
                agg = {"num_splits": len(sel)}
                agg.update({k: mean_se(r.get(k) for r in sel) for k in ("test_error", "test_nlpd", "time_s")})
                if name in EP_METHODS:
                    agg["test_error_alpha"] = mean_se(r.get("test_error_alpha") for r in sel)
                    agg["num_diverged"] = int(sum(r["diverged"] for r in sel))
                    for kind in ("slow", "cycling"):
                        agg[f"num_diverged_{kind}"] = int(sum(failure_kind(r) == kind for r in sel))
                    for key in ("sweeps", "num_skipped", "num_rejected", "frac_b_positive"):
                        agg[key] = mean_se(r[key] for r in sel)
                    agg["lengthscale"] = mean_se(r["width"]["lengthscale"] for r in sel)
                elif name == "EP-probit":
                    agg["num_diverged"] = int(sum(r["diverged"] for r in sel))
                by_method[name] = agg
            summary[s_key][ds] = by_method
            diffs[s_key][ds] = {}
            for rep, other, key in (
                (r, o, k) for r in REP_METHODS for o in OTHERS for k in ("test_error", "test_nlpd")
            ):
                d = paired_differences(
                    *({r["split"]: r.get(key) for r in of[m] if r["eps"] == eps} for m in (rep, other))
                )
                diffs[s_key][ds][f"{rep} - {other} / {key}"] = dict(d, verdict=verdict(d))
    return {"summary": summary, "paired_differences": diffs}


def claims(results: Dict, majority: Optional[Dict] = None) -> List[Dict]:
    """
    The claims of §6.3 and Fig. 5 over the datasets of each eps setting: per REP setting, a significantly
    lower test error than both EP and PEP on every dataset; no divergence; the fewest sweeps. Datasets
    where EP is no better than the majority class are named in the evidence.
    """
    out, majority = [], majority or {}
    for s_key, per_ds in results["paired_differences"].items():
        summ = results["summary"][s_key]
        table = [
            dict(summ[ds][rep], dataset=ds, method=rep, diffs=[d[f"{rep} - {o} / test_error"] for o in OTHERS])
            for ds, d in per_ds.items()
            for rep in REP_METHODS
        ]
        for row in table:
            sweeps = {o: summ[row["dataset"]][o]["sweeps"]["mean"] for o in OTHERS}
            row["fewer_sweeps"] = all(row["sweeps"]["mean"] < s for s in sweeps.values())
            row["sweeps_text"] = ", ".join(f"{m} {s:.1f}" for m, s in sweeps.items())
        chance = [
            ds
            for ds in summ
            if (majority.get(ds) or {}).get("mean") is not None
            and summ[ds]["EP"]["test_error"]["mean"] >= majority[ds]["mean"]
        ]

        def lower(r: Dict) -> str:
            diffs = zip(OTHERS, r["diffs"])
            return f"{r['dataset']} " + ", ".join(f"− {o} {pp(d, signed=True)} pp ({d['verdict']})" for o, d in diffs)

        checks = [
            Claim(
                f"{rep}, {s_key}: test error significantly below EP's and PEP's on every dataset (Fig. 5)",
                lambda r: all(d["verdict"] == "REP lower (significant)" for d in r["diffs"]),
                rows=lambda t, rep=rep: [r for r in t if r["method"] == rep],
                show=lower,
            )
            for rep in REP_METHODS
        ]
        checks += [
            Claim(
                f"REP never diverges, {s_key} (Fig. 5; R < 1e-3 within 100 parallel sweeps)",
                lambda r: r["num_diverged"] == 0,
                show=lambda r: (
                    f"{r['dataset']} {r['method']} {r['num_diverged']}/{r['num_splits']} "
                    f"({r['num_diverged_slow']} slow, {r['num_diverged'] - r['num_diverged_slow']} cycling)"
                ),
            ),
            Claim(
                f"REP needs the fewest sweeps, {s_key}",
                lambda r: r["fewer_sweeps"],
                need="most",
                show=lambda r: f"{r['dataset']} {r['method']} {r['sweeps']['mean']:.1f} ({r['sweeps_text']})",
            ),
        ]
        decided = verdicts(checks, table)
        for c in decided[: len(REP_METHODS)] if chance else ():
            c["evidence"] += (
                f" At or below chance (EP no better than the majority class), so saying nothing: {', '.join(chance)}."
            )
        out += decided
    return out


# ---------------------------------------------------------------- Markdown


def pp(stat: Optional[Dict], digits: int = 2, signed: bool = False) -> str:
    """A proportion (or its difference) in percent (points)."""
    return cell(stat, digits, signed=signed, scale=100.0, missing="–")


def markdown(report: Dict) -> str:
    cfg, res = report["config"], report["results"]
    done = [f"{s_key}: splits 0..{ks[-1]} ({len(ks)} of 20)" for s_key, ks in report["splits_done"].items() if ks]
    stopped = ", ".join(k for k, v in (report.get("stopped_by_budget") or {}).items() if v)
    n, budget = len(cfg["splits"]), cfg.get("budget_min")
    rule = f"target {n}, as many as a {budget:g}-minute budget allowed" if budget else f"{n} requested"
    L = ["# C3 — real data (Qi & Guo 2012, Fig. 5): EP vs Power EP vs Relaxed EP", ""]
    L += [
        f"Command: `{cfg['command']}`.  ",
        f"Started {report['started']}, finished {report.get('finished') or '(running)'}, wall time "
        f"{report['wall_time_s']:.0f} s on {report['machine'].get('cpu_count')} CPU core(s) shared with another job"
        f"{'' if report['complete'] else ' — **INCOMPLETE (partial results)**'}.",
        *([f"{report['resummarised']}  "] if report.get("resummarised") else []),
        "",
        f"Datasets: {', '.join(cfg['datasets'])}. Splits per dataset: {rule}; run: {'; '.join(done) or 'none'}"
        + (f"; stopped by the budget: {stopped}." if stopped else "."),
    ]
    for s_key, per_ds in res["summary"].items():
        L += ["", f"## Results, NoisyStep {s_key}", ""]
        head = ["dataset", "method", "test error [%]", "test NLPD", "diverged", "sweeps", "skipped", "b>0 [%]"]
        rows = [
            [ds, name, pp(agg["test_error"]), cell(agg["test_nlpd"], 3, missing="–")]
            + [f"{agg['num_diverged']}/{agg['num_splits']}" if "num_diverged" in agg else "–"]
            + [cell(agg.get("sweeps"), 1, missing="–"), cell(agg.get("num_skipped"), 1, missing="–")]
            + [pp(agg.get("frac_b_positive"), 1) if name in REP_METHODS else "–"]
            + [cell(agg.get("lengthscale"), 2, missing="–")]
            for ds, by_method in per_ds.items()
            for name, agg in by_method.items()
        ]
        L += markdown_table(head + ["lengthscale"], rows)
        majority = report.get("majority_error") or {}
        if majority:
            L += ["", "Majority-class test error (predict the training majority), for scale: "]
            L[-1] += "; ".join(f"{ds} {pp(m)} %" for ds, m in majority.items()) + "."
        L += ["", f"### Paired differences REP − EP and REP − PEP ({s_key}; negative favours REP)", ""]
        head = ["dataset", "comparison", "Δ test error [%]", "W/T/L", "verdict", "Δ NLPD", "verdict (NLPD)"]
        rows = []
        for ds, ds_diffs in res["paired_differences"][s_key].items():
            for rep, other in ((r, o) for r in REP_METHODS for o in OTHERS):
                de, dn = (ds_diffs[f"{rep} - {other} / {key}"] for key in ("test_error", "test_nlpd"))
                rows.append([ds, f"{rep} − {other}", pp(de, signed=True), f"{de['wins']}/{de['ties']}/{de['losses']}"])
                rows[-1] += [de["verdict"], cell(dn, 4, signed=True, missing="–"), dn["verdict"]]
        L += markdown_table(head, rows)
    return "\n".join(L + markdown_section("Claims", claim_items(report.get("claims", [])), "*") + [""]) + "\n"


# ---------------------------------------------------------------- driver


def build_parser():
    p = benchmark_parser(__spec__.name, __doc__, "results/rep", "Crabs, 1 split, maxiter 5", data_dir=True)
    p.add_argument(
        "--rerender", action="store_true", help="summaries, claims and Markdown again from <out-dir>/C3.json"
    )
    help_ = f"splits per dataset (default: up to {DEFAULT_SPLITS} within --budget-min, at least {MIN_SPLITS})"
    p.add_argument("--splits", type=int, default=None, help=help_)
    help_ = f"wall-time budget in minutes (default {DEFAULT_BUDGET_MIN:g} without --splits, none with it)"
    p.add_argument("--budget-min", type=float, default=None, help=help_)
    p.add_argument("--datasets", default=None, help=f"comma-separated subset of {','.join(DATASETS)}")
    p.add_argument(
        "--eps", default=None, help="comma-separated NoisyStep eps values (default 0.05,0.1; 0.05 with --quick)"
    )
    return p


def reanalyse(report: Dict, data_dir=None) -> Dict:
    """Majority-class errors, summaries and claims from ``report["runs"]`` (also for ``--rerender``)."""
    report["majority_error"] = majority_errors(report["config"]["datasets"], report.get("splits_done") or {}, data_dir)
    report["results"] = summarise(report["runs"])
    report["claims"] = claims(report["results"], report["majority_error"])
    return report


def main(argv: Optional[List[str]] = None, *, shared: bool = False) -> int:
    args, command = parse_command_line(build_parser(), argv, shared=shared, log=_log)
    out_dir = Path(args.out_dir)
    if args.rerender:
        return rerender_report(out_dir / "C3", lambda r: reanalyse(r, args.data_dir), markdown, _log, indent=1)
    datasets = parse_list(args.datasets) if args.datasets else ["Crabs"] if args.quick else list(DATASETS)
    unknown = sorted(set(datasets) - set(DATASETS))
    if unknown:
        raise ValueError(f"datasets must be among {list(DATASETS)}; got {unknown}")
    num_splits = args.splits if args.splits is not None else (1 if args.quick else DEFAULT_SPLITS)
    budget_min = args.budget_min
    if budget_min is None and args.splits is None and not args.quick:
        budget_min = DEFAULT_BUDGET_MIN
    budget_s = None if budget_min is None or budget_min <= 0 else 60.0 * budget_min
    if not 1 <= num_splits <= 20:
        raise ValueError(f"splits must be in 1..20; got {num_splits}")
    eps_text = args.eps if args.eps is not None else ("0.05" if args.quick else DEFAULT_EPS)
    eps_values = parse_list(eps_text, float)
    if not eps_values or not all(0.0 < e < 0.5 for e in eps_values):
        raise ValueError(f"eps values must lie in (0, 0.5); got {eps_text!r}")
    maxiters = {k: 5 for k in MAXITER} if args.quick else dict(MAXITER)
    splits = list(range(num_splits))
    config = dict(command=command, datasets=datasets, splits=splits, eps=eps_values, budget_min=budget_min)
    config.update(min_splits=MIN_SPLITS, quick=bool(args.quick), maxiter=maxiters)
    config.update(ep_options={**EP_OPTIONS, "damping": "default (0.8, parallel)"}, methods=list(EP_METHODS + BASELINES))
    config["kernel"] = "isotropic SquaredExponential, amplitude 1 (EP/PEP/REP) or trained (baselines)"
    report = dict(claim="C3", paper="Qi & Guo (2012), Message passing with relaxed moment matching, Fig. 5")
    report.update(config=config, machine=machine_info(), started=utc_now(), finished=None, complete=False, runs=[])
    report.update(timing={}, splits_done={}, stopped_by_budget={})
    t0, models, done, first_round_s = time.perf_counter(), {}, {}, None
    for phase, eps in enumerate(eps_values):
        s_key, last_round = f"eps={eps}", None
        done[s_key] = []
        for k in splits:
            # a new phase's first round costs about phase 0's first round without the baselines
            projected = last_round if last_round is not None else (first_round_s or 0.0)
            must = phase == 0 and len(done[s_key]) < min(MIN_SPLITS, num_splits)
            if budget_s is not None and not must and time.perf_counter() - t0 + projected > budget_s:
                _log(f"{s_key}: stopping after {len(done[s_key])} splits (projected {projected:.0f}s exceeds budget)")
                report["stopped_by_budget"][s_key] = True
                break
            round_start, baseline_s = time.perf_counter(), 0.0
            for ds in datasets:
                split = load_benchmark(ds, k, args.data_dir, kind="binary")
                if ds not in models or models[ds].shape != split.X_train.shape:
                    models[ds] = DatasetModels(split)
                start = time.perf_counter()
                rows = run_split(models[ds], split, eps, maxiters, baselines=phase == 0)
                elapsed = time.perf_counter() - start
                baseline_s += sum(r["time_s"] for r in rows if r["method"] in BASELINES)
                report["timing"].setdefault(s_key, {}).setdefault(ds, []).append(round(elapsed, 2))
                report["runs"].extend(rows)
                errors = ", ".join(f"{r['method']} {pp(r.get('test_error'), 1)}%" for r in rows)
                _log(f"{s_key} {ds} split {k}: {elapsed:.0f}s; {errors}")
            last_round = time.perf_counter() - round_start
            first_round_s = last_round - baseline_s if first_round_s is None else first_round_s
            done[s_key].append(k)
            report.update(splits_done=done, wall_time_s=time.perf_counter() - t0)
            write_report(out_dir / "C3", reanalyse(report, args.data_dir), markdown(report), indent=1)
    report.update(splits_done=done, wall_time_s=time.perf_counter() - t0, finished=utc_now(), complete=True)
    write_report(out_dir / "C3", reanalyse(report, args.data_dir), markdown(report), indent=1)
    _log(f"done in {report['wall_time_s']:.0f}s; wrote {out_dir / 'C3.json'} and {out_dir / 'C3.md'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
