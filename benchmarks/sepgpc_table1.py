r"""
SEPGPC against GPflow's SVGP on the SEP paper's Table 1 protocol (Hernández-Lobato &
Hernández-Lobato 2016, §4.1 and Table 1).

The six binary sets of ``shared/datasets`` (Australian, Breast, Crabs, Iono, Pima, Sonar; the
paper's Heart is not shipped): SE-ARD kernel, exact probit, M = a fraction (15 %, 25 %, 50 %) of
the dataset size, inducing points initialised at a random subset of the training inputs (the same
for every method), four methods:

- *FITC-EP* (the paper's GFITC, "outer" updates): ``SEPGPC(ep_mode="nested")`` trained by
  ``gpflow.optimizers.Scipy`` (L-BFGS-B, ``maxiter`` 250), EP re-converged inside every loss;
- *SEP inner* (the paper's batch SEP, §2.3 and App. A.6): ``maxiter`` iterations of one damped
  (ρ = 0.5) parallel sweep over all sites + one step of the sign-adaptive rule
  (:class:`~gpflow_ep.optimizers.SignAdaptive`, η₀ = 0.01) — ``fit`` on the full batch;
- *SEP minibatch*: minibatch EP + surrogate-gradient steps (the paper's §2.3, "Training using
  minibatches", Eq. (6)) with batch size
  min(M, 100) for a fixed number of epochs;
- *SVGP*: ``gpflow.models.SVGP`` (whitened, same likelihood) trained by Scipy L-BFGS-B.

Test error and NLL (−mean ``predict_log_density``): mean ± standard error over splits; training
time: median over splits. One model, one compiled loss (Scipy's cache) and one compiled train
step are reused across the splits of a configuration (data held in ``tf.Variable``\ s, parameters
reset per split, :class:`benchmarks.models.ModelSlot`), so compilation is paid on the first split
only; the median hides it.

Run ``python -m benchmarks.sepgpc_table1 [--quick] [--out-dir results/sepgpc]`` from the
repository root; it writes ``<out-dir>/table1.json`` and ``<out-dir>/table1.md``
(``table1.partial.json`` after every row, for ``--resume``).
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ep.datasets import load_benchmark
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import SEPGPC
from gpflow_ep.optimizers import SignAdaptive
from gpflow_ep.training import make_dataset, make_train_step

from .minibatch import (
    MINIBATCH_DAMPING,
    MINIBATCH_NOTE,
    SEP_DAMPING,
    SHARED_MACHINE_NOTE,
    make_optimizer,
    random_subset,
)
from .models import ModelSlot, evaluate, se_ard_kernel
from .report import markdown_header, markdown_section, timed_report, write_json, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger
from .stats import mean_se

TABLE1_DATASETS = ("Australian", "Breast", "Crabs", "Iono", "Pima", "Sonar")
PAPER_NAME = {"Iono": "Ionosphere"}
FRACTIONS = (0.15, 0.25, 0.50)
METHODS = ("FITC-EP", "SEP inner", "SEP minibatch", "SVGP")
LEGACY_METHODS = {"SEP batch": "FITC-EP"}  # the name of FITC-EP in reports written before "SEP inner" existed

#: Paper Table 1 (§4.1): NLL mean ± spread per dataset, fraction, method; last row time (s).
PAPER_TABLE1 = {
    "Australian": {
        0.15: ((0.68, 0.06), (0.69, 0.07), (0.63, 0.05)),
        0.25: ((0.68, 0.08), (0.67, 0.07), (0.63, 0.05)),
        0.50: ((0.67, 0.09), (0.64, 0.05), (0.63, 0.05)),
    },
    "Breast": {
        0.15: ((0.10, 0.05), (0.11, 0.05), (0.10, 0.05)),
        0.25: ((0.11, 0.06), (0.11, 0.05), (0.10, 0.05)),
        0.50: ((0.11, 0.05), (0.11, 0.05), (0.10, 0.05)),
    },
    "Crabs": {
        0.15: ((0.07, 0.07), (0.06, 0.06), (0.07, 0.06)),
        0.25: ((0.06, 0.07), (0.06, 0.06), (0.07, 0.07)),
        0.50: ((0.06, 0.07), (0.06, 0.06), (0.09, 0.06)),
    },
    "Heart": {
        0.15: ((0.43, 0.12), (0.40, 0.13), (0.39, 0.11)),
        0.25: ((0.42, 0.12), (0.41, 0.12), (0.40, 0.11)),
        0.50: ((0.42, 0.13), (0.41, 0.11), (0.40, 0.10)),
    },
    "Ionosphere": {
        0.15: ((0.30, 0.22), (0.26, 0.19), (0.26, 0.14)),
        0.25: ((0.29, 0.23), (0.27, 0.20), (0.27, 0.18)),
        0.50: ((0.30, 0.24), (0.27, 0.19), (0.26, 0.16)),
    },
    "Pima": {
        0.15: ((0.54, 0.08), (0.52, 0.07), (0.49, 0.05)),
        0.25: ((0.53, 0.07), (0.51, 0.06), (0.50, 0.05)),
        0.50: ((0.53, 0.07), (0.50, 0.05), (0.49, 0.05)),
    },
    "Sonar": {
        0.15: ((0.35, 0.13), (0.33, 0.10), (0.40, 0.17)),
        0.25: ((0.35, 0.12), (0.32, 0.10), (0.40, 0.19)),
        0.50: ((0.35, 0.13), (0.29, 0.09), (0.35, 0.16)),
    },
    "time": {
        0.15: ((59, 4), (17, 1), (40, 2)),
        0.25: ((133, 6), (37, 2), (65, 3)),
        0.50: ((494, 29), (130, 5), (195, 10)),
    },
}
PAPER_METHODS = ("GFITC", "SEP", "SVI")

log = progress_logger("table1")

#: what --quick runs (the --help text)
QUICK_HELP = "Crabs, 15 %%, split 0, maxiter 5, 2 epochs"
#: SEPGPC's minibatch damping per method (the full-batch "SEP inner" step refreshes every site, damped as a sweep)
STEP_DAMPING = {"SEP minibatch": MINIBATCH_DAMPING, "SEP inner": SEP_DAMPING}


# ---------------------------------------------------------------- one model per configuration


def _optimizer_variables(opt):
    vs = opt.variables
    return list(vs() if callable(vs) else vs)


class Table1Slot(ModelSlot):
    """One model per (dataset, M, method), reused across splits: data in tf.Variables, reset per split."""

    def __init__(self, method, n, D, M, *, maxiter, epochs, batch_size, optimizer, sep_tol, sep_max_sweeps):
        Z0 = np.random.default_rng(0).standard_normal((M, D))  # placeholder, replaced per split
        if method == "SVGP":
            model = gpflow.models.SVGP(se_ard_kernel(D), Probit(), Z0, num_data=n)
        else:
            steps = {"minibatch_damping": STEP_DAMPING[method]} if method in STEP_DAMPING else {}
            model = SEPGPC(
                se_ard_kernel(D),
                Probit(),
                Z0,
                num_data=n,
                ep_mode="nested",
                tol=sep_tol,
                max_sweeps=sep_max_sweeps,
                damping=SEP_DAMPING,
                **steps,
            )
        super().__init__(model, np.zeros((n, D)), np.zeros((n, 1)), holds_data=False)
        self.method, self.n, self.maxiter, self.epochs, self.batch_size = method, n, maxiter, epochs, batch_size
        if method == "SEP minibatch":
            self.optimizer = make_optimizer(optimizer)
            self.step = make_train_step(self.model, self.optimizer)
        elif method == "SEP inner":
            self.optimizer = SignAdaptive(0.01)
            self.step = make_train_step(self.model, self.optimizer)
        else:
            self.closure = self.model.training_loss_closure((self.X, self.Y))

    def load_split(self, X, Y, Z):
        """Reset model and optimiser, load (X, Y) and the initial inducing inputs Z."""
        self.load(X, Y, {"inducing_variable.Z": Z})
        if self.method == "SEP minibatch":
            for v in _optimizer_variables(self.optimizer):
                v.assign(tf.zeros_like(v))
        elif self.method == "SEP inner":
            self.optimizer.reset()

    def fit(self, X, Y, seed):
        """Train; returns a dict with seconds, iterations/steps, first-iteration seconds."""
        t0 = time.perf_counter()
        if self.method in ("SEP minibatch", "SEP inner"):
            if self.method == "SEP inner":  # full batch, maxiter sweeps + steps
                steps, it = self.maxiter, iter(make_dataset((X, Y), self.n, shuffle=False))
            else:
                steps = int(math.ceil(self.epochs * max(self.n // self.batch_size, 1)))
                it = iter(make_dataset((X, Y), self.batch_size, seed=seed, drop_remainder=True))
            first = None
            skipped = 0
            for k in range(steps):
                loss, sk, _ = self.step(next(it))
                skipped += int(sk)
                if k == 0:
                    float(loss)
                    first = time.perf_counter() - t0
            float(loss)
            return dict(
                seconds=time.perf_counter() - t0, first_s=first, iterations=steps, skipped=skipped, converged=None
            )
        first = []

        def cb(*_):
            if not first:
                first.append(time.perf_counter() - t0)

        res = self.minimize(self.closure, self.maxiter, step_callback=cb)
        seconds = time.perf_counter() - t0
        if self.method == "FITC-EP":  # q(u) at the final hyper-parameters
            self.model.run_ep((self.X, self.Y))
        return dict(
            seconds=seconds,
            first_s=first[0] if first else None,
            iterations=int(res.nit),
            converged=bool(res.success),
            message=str(res.message),
            skipped=None,
        )


# ---------------------------------------------------------------- the protocol


def _mean_se(values):
    """(mean, standard error) with NaN where they do not exist."""
    s = mean_se(values, missing=float("nan"))
    return s["mean"], s["se"]


def run_table1(
    datasets,
    fractions,
    splits,
    maxiter,
    epochs,
    optimizer,
    data_dir=None,
    sep_tol=1e-6,
    sep_max_sweeps=100,
    methods=METHODS,
    budget=None,
    min_splits=3,
    max_m=None,
    previous=None,
    checkpoint=None,
    log=log,
) -> Dict:
    """
    The Table 1 protocol. ``previous``: a earlier report whose per-split records (same dataset,
    fraction, M and all ``methods``) are reused instead of re-run; ``checkpoint(rows)`` is called
    after every (dataset, fraction) row so a long run can be resumed.
    """
    old = {(r["dataset"], r["fraction"], r["M"]): r for r in (previous or {}).get("rows", [])}
    rows, notes = [], []
    t_start = time.perf_counter()
    for name in datasets:
        try:
            s0 = load_benchmark(name, 0, data_dir=data_dir)
        except ValueError as exc:
            notes.append(f"{name} skipped: {exc}")
            continue
        n_total = s0.X_train.shape[0] + s0.X_test.shape[0]
        for frac in fractions:
            M = max(1, int(round(frac * n_total)))
            M = min(M, s0.X_train.shape[0])
            B = min(M, 100)
            if max_m is not None and M > max_m:
                notes.append(f"{name} {frac:.0%} (M={M}) not run: M > --max-m {max_m} (time limit).")
                continue
            row = dict(
                dataset=name,
                fraction=frac,
                M=M,
                n_total=n_total,
                n_train=s0.X_train.shape[0],
                D=s0.X_train.shape[1],
                batch_size=B,
                splits=[],
                per_split={m: [] for m in methods},
            )
            slots = {}
            prev = old.get((name, frac, M))
            for k in splits:
                reused = (
                    {m: [r for r in prev["per_split"].get(m, []) if r["split"] == k] for m in methods} if prev else {}
                )
                if reused and all(reused.values()):
                    for m in methods:
                        row["per_split"][m].append(dict(reused[m][0], reused=True))
                    row["splits"].append(k)
                    continue
                if budget is not None and len(row["splits"]) >= min_splits and time.perf_counter() - t_start > budget:
                    notes.append(f"{name} {frac:.0%}: stopped after {len(row['splits'])} splits (time budget).")
                    break
                sp = load_benchmark(name, k, data_dir=data_dir)
                Z = random_subset(sp.X_train, M, seed=1000 + k)
                for method in methods:
                    n = sp.X_train.shape[0]
                    if method not in slots or slots[method].n != n:
                        slots[method] = Table1Slot(
                            method,
                            n,
                            sp.X_train.shape[1],
                            M,
                            maxiter=maxiter,
                            epochs=epochs,
                            batch_size=B,
                            optimizer=optimizer,
                            sep_tol=sep_tol,
                            sep_max_sweeps=sep_max_sweeps,
                        )
                    slot = slots[method]
                    slot.load_split(sp.X_train, sp.Y_train, Z)
                    info = slot.fit(sp.X_train, sp.Y_train, seed=k)
                    ev = evaluate(slot.model, sp.X_test, sp.Y_test)
                    info.update(error=ev["error"], nll=ev["nlpd"], split=k)
                    row["per_split"][method].append(info)
                    log(
                        f"{name} {frac:.0%} M={M} split {k} {method}: err {info['error']:.3f} "
                        f"nll {info['nll']:.3f} {info['seconds']:.1f}s ({info['iterations']} it)"
                    )
                row["splits"].append(k)
            row["summary"] = {}
            for method in methods:
                recs = row["per_split"][method]
                err, err_se = _mean_se([r["error"] for r in recs])
                nll, nll_se = _mean_se([r["nll"] for r in recs])
                times = [r["seconds"] for r in recs]
                later = times[1:] if len(times) > 1 else times
                row["summary"][method] = dict(
                    error=err,
                    error_se=err_se,
                    nll=nll,
                    nll_se=nll_se,
                    time_median_s=float(np.median(times)) if times else float("nan"),
                    time_median_excl_first_split_s=float(np.median(later)) if later else float("nan"),
                    first_split_s=times[0] if times else float("nan"),
                    iterations_median=float(np.median([r["iterations"] for r in recs])) if recs else float("nan"),
                )
            rows.append(row)
            if checkpoint is not None:
                checkpoint(dict(rows=rows, notes=notes))
    return dict(rows=rows, notes=notes)


def _merge_previous(rep, old, methods_run):
    """Complete ``rep``'s rows with the methods of a previous run (same dataset, fraction, splits)."""
    prev = {(r["dataset"], r["fraction"]): r for r in old["rows"]}
    for r in rep["rows"]:
        o = prev.get((r["dataset"], r["fraction"]))
        if o is None or o["splits"] != r["splits"]:
            rep["notes"].append(f"{r['dataset']} {r['fraction']:.0%}: no matching previous row to reuse.")
            continue
        for m in METHODS:
            if m not in methods_run:
                r["per_split"][m] = o["per_split"][m]
                r["summary"][m] = o["summary"][m]
    rep["reused_from"] = dict(
        command=old.get("command"),
        started=old.get("started"),
        finished=old.get("finished"),
        wall_time_s=old.get("wall_time_s"),
        methods=[m for m in METHODS if m not in methods_run],
    )
    rep["notes"].append(
        f"Methods {', '.join(rep['reused_from']['methods'])} taken from the earlier run `{old.get('command')}` "
        f"(started {old.get('started')}, wall time {old.get('wall_time_s', 0):.0f} s); methods "
        f"{', '.join(methods_run)} run by this command."
    )


def _paper_cells(name, frac):
    paper = PAPER_TABLE1.get(PAPER_NAME.get(name, name), {}).get(frac)
    return paper


SHORT = {"FITC-EP": "FITC-EP", "SEP inner": "SEP inner", "SEP minibatch": "SEP mb", "SVGP": "SVGP"}


def _methods_in(report) -> List[str]:
    return [m for m in METHODS if any(m in r["summary"] for r in report["rows"])]


def table1_markdown(report) -> str:
    s = report["settings"]
    methods = _methods_in(report)
    lines = markdown_header("SEPGPC vs SVGP on the paper's Table 1 protocol (UCI binary)", report, SHARED_MACHINE_NOTE)
    lines += [
        f"Setup: SE-ARD kernel (variance 1, lengthscales √D initially), exact probit "
        "(`gpflow_ep.likelihoods.Probit`, no additive noise term), inputs standardised with training "
        f"statistics, the shared 90/10 splits; splits used: {s['splits_used']}. M = round(fraction × dataset "
        "size) (the paper's §4.1 'total number of instances' read as the dataset size), fractions "
        f"{', '.join(f'{f:.0%}' for f in s['fractions'])}. Inducing points start at a random subset of the "
        "training inputs (seed 1000+split), identical for all methods; Z, kernel variance and lengthscales "
        "are trained.",
        f"*FITC-EP* = the paper's GFITC ('outer' updates): `SEPGPC(ep_mode='nested')` (parallel EP, damping "
        f"0.5, tol {s['sep_tol']:g}) trained by `gpflow.optimizers.Scipy` (L-BFGS-B, maxiter {s['maxiter']}); "
        f"*SEP inner* = the paper's batch SEP: {s['maxiter']} iterations of one damped (ρ = 0.5) parallel sweep "
        "+ one sign-adaptive step (`SignAdaptive(0.01)`, ×1.02 / ×0.5), i.e. `fit` on the full batch; "
        f"*SEP minibatch* = minibatch EP (damping 0.99) + surrogate-gradient steps, batch min(M, 100), "
        f"{s['epochs']} epochs, optimiser {s['optimizer']}; *SVGP* = `gpflow.models.SVGP` (whitened, same "
        f"likelihood, Gauss–Hermite expectations) trained by Scipy L-BFGS-B, maxiter {s['maxiter']}.",
        "Error and NLL: mean ± standard error over splits. Time: median training time over splits "
        "(wall clock, includes compilation on the first split of each configuration only: one model, "
        "one compiled loss and one compiled step are reused across splits). The paper column is the "
        "paper's NLL (± its spread, probably a standard deviation) for GFITC / SEP / SVI.",
        "",
        "| dataset | M (frac) | splits "
        + "".join(f"| {SHORT[m]} err " for m in methods)
        + "".join(f"| {SHORT[m]} NLL " for m in methods)
        + "| paper NLL GFITC / SEP / SVI "
        + "".join(f"| {SHORT[m]} s " for m in methods)
        + "|",
        "|---|---|---" + "|---" * (3 * len(methods) + 1) + "|",
    ]
    for r in report["rows"]:
        sm = r["summary"]

        def g(m, k, sm=sm):
            return sm.get(m, {}).get(k, float("nan"))

        paper = _paper_cells(r["dataset"], r["fraction"])
        ptxt = " / ".join(f"{a:.2f}±{b:.2f}" for a, b in paper) if paper else "–"
        lines.append(
            f"| {r['dataset']} | {r['M']} ({r['fraction']:.0%}) | {len(r['splits'])} "
            + "".join(f"| {_f(g(m, 'error'))}±{_f(g(m, 'error_se'))} " for m in methods)
            + "".join(f"| {_f(g(m, 'nll'))}±{_f(g(m, 'nll_se'))} " for m in methods)
            + f"| {ptxt} "
            + "".join(f"| {_t(g(m, 'time_median_s'))} " for m in methods)
            + "|"
        )
    lines += [
        "",
        "## Averages over the datasets run",
        "",
        "| fraction | datasets "
        + "".join(f"| {SHORT[m]} NLL " for m in methods)
        + "| paper GFITC / SEP / SVI NLL (7 sets) "
        + "".join(f"| {SHORT[m]} s " for m in methods)
        + "| paper GFITC / SEP / SVI s |",
        "|---|---" + "|---" * (2 * len(methods) + 2) + "|",
    ]
    paper_means = {0.15: (0.353, 0.339, 0.334), 0.25: (0.349, 0.336, 0.339), 0.50: (0.349, 0.326, 0.331)}
    for frac in report["settings"]["fractions"]:
        rs = [r for r in report["rows"] if r["fraction"] == frac]
        if not rs:
            continue
        nll = {m: float(np.mean([r["summary"][m]["nll"] for r in rs])) for m in methods}
        tm = {m: float(np.mean([r["summary"][m]["time_median_s"] for r in rs])) for m in methods}
        pm = paper_means.get(frac)
        pt = PAPER_TABLE1["time"].get(frac)
        lines.append(
            f"| {frac:.0%} | {len(rs)} "
            + "".join(f"| {_f(nll[m])} " for m in methods)
            + f"| {' / '.join(f'{x:.3f}' for x in pm) if pm else '–'} "
            + "".join(f"| {_t(tm[m])} " for m in methods)
            + f"| {' / '.join(f'{a:g}±{b:g}' for a, b in pt) if pt else '–'} |"
        )
    lines += markdown_section("Claim checks (paper §4.1, Table 1)", report.get("claims", []))
    if report.get("notes"):
        lines += markdown_section("Notes", report["notes"])
    return "\n".join(lines) + "\n"


def table1_claims(report) -> List[str]:
    out = []
    rows = report["rows"]
    methods = _methods_in(report)
    for m in (x for x in methods if x != "SVGP"):
        within = 0
        for r in rows:
            a, b = r["summary"][m], r["summary"]["SVGP"]
            se = math.hypot(a["nll_se"] or 0, b["nll_se"] or 0)
            within += bool(math.isfinite(se) and abs(a["nll"] - b["nll"]) <= 2 * se)
        ratios = [r["summary"][m]["time_median_s"] / r["summary"]["SVGP"]["time_median_s"] for r in rows]
        out.append(
            f"{m}: NLL within 2 combined standard errors of SVGP's on {within} of {len(rows)} rows; "
            f"training time / SVGP's (L-BFGS-B) median {np.median(ratios):.2f} (range {min(ratios):.2f}–"
            f"{max(ratios):.2f}); faster than SVGP on {sum(x < 1 for x in ratios)} of {len(rows)} rows."
        )
    for m, k, label in (("FITC-EP", 0, "GFITC"), ("SEP inner", 1, "SEP")):
        if m not in methods:
            continue
        inside = 0
        for r in rows:
            paper = _paper_cells(r["dataset"], r["fraction"])
            if paper:
                mean, spread = paper[k]
                inside += abs(r["summary"][m]["nll"] - mean) <= spread
        out.append(f"{m} NLL inside the paper's {label} mean ± spread: {inside} of {len(rows)} rows.")
    out.append("Paper: SEP (inner) 1.5–2.4× faster than SVI, GFITC 3.5–3.8× slower than SEP, all three similar in NLL.")
    return out


def _rename_legacy(report: Dict) -> Dict:
    """Reports written before "SEP inner" existed call FITC-EP "SEP batch"."""
    for r in report.get("rows", []):
        for key in ("per_split", "summary"):
            for old, new in LEGACY_METHODS.items():
                if old in r.get(key, {}):
                    r[key][new] = r[key].pop(old)
    return report


# ---------------------------------------------------------------- Markdown helpers


def _f(x, digits=3):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}f}"


def _t(x):
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


# ---------------------------------------------------------------- entry point


def build_parser() -> argparse.ArgumentParser:
    parser = benchmark_parser(__spec__.name, __doc__, "results/sepgpc", QUICK_HELP, data_dir=True, optimizer=True)
    parser.add_argument("--splits", default=None, help="splits, e.g. 0,1,2 or a count like 5 (default 3)")
    parser.add_argument("--datasets", default=",".join(TABLE1_DATASETS))
    parser.add_argument("--fractions", default="0.15,0.25,0.5")
    parser.add_argument("--maxiter", type=int, default=250, help="L-BFGS-B iterations; SEP inner steps")
    parser.add_argument("--epochs", type=float, default=100, help="SEP minibatch epochs")
    parser.add_argument(
        "--budget",
        "--table1-budget",
        dest="budget",
        type=float,
        default=None,
        help="seconds: stop adding splits (beyond 3) after this much time",
    )
    parser.add_argument("--methods", default=",".join(METHODS), help="methods to run")
    parser.add_argument(
        "--reuse", default=None, help="a previous table1.json; rows of methods not run now are taken from it"
    )
    parser.add_argument(
        "--resume",
        default=None,
        help="a previous table1.json (or table1.partial.json); its per-split results are kept, not re-run",
    )
    parser.add_argument("--max-m", type=int, default=None, help="skip (dataset, fraction) with M above this")
    return parser


def main(argv=None) -> int:
    args, command = parse_command_line(build_parser(), argv)
    out_dir = Path(args.out_dir)
    if args.splits is None:
        splits = [0] if args.quick else [0, 1, 2]
    elif "," in args.splits:
        splits = parse_list(args.splits, int)
    else:
        splits = list(range(int(args.splits)))
    datasets = ["Crabs"] if args.quick else parse_list(args.datasets)
    fractions = [0.15] if args.quick else parse_list(args.fractions, float)
    maxiter = 5 if args.quick else args.maxiter
    epochs = 2 if args.quick else args.epochs
    methods = parse_list(args.methods)
    rep = timed_report(
        command,
        lambda: run_table1(
            datasets,
            fractions,
            splits,
            maxiter,
            epochs,
            args.optimizer,
            data_dir=args.data_dir,
            budget=args.budget,
            max_m=args.max_m,
            methods=methods,
            previous=_rename_legacy(json.loads(Path(args.resume).read_text())) if args.resume else None,
            checkpoint=lambda partial: write_json(out_dir / "table1.partial.json", dict(partial, command=command)),
        ),
    )
    if args.resume:
        reused = sum(bool(x.get("reused")) for r in rep["rows"] for recs in r["per_split"].values() for x in recs)
        total = sum(len(recs) for r in rep["rows"] for recs in r["per_split"].values())
        rep["notes"].append(
            f'{reused} of {total} per-split results were taken from {args.resume} (marked "reused" in the JSON).'
        )
    if args.reuse:
        _merge_previous(rep, _rename_legacy(json.loads(Path(args.reuse).read_text())), methods)
    rep["settings"] = dict(
        datasets=datasets,
        fractions=fractions,
        splits_requested=splits,
        splits_used=sorted({k for r in rep["rows"] for k in r["splits"]}),
        maxiter=maxiter,
        epochs=epochs,
        optimizer=args.optimizer,
        sep_tol=1e-6,
        quick=args.quick,
        max_m=args.max_m,
    )
    rep["notes"].append(MINIBATCH_NOTE)
    rep["claims"] = table1_claims(rep) if rep["rows"] else []
    json_path, md_path = write_report(out_dir / "table1", rep, table1_markdown(rep))
    print(f"wrote {json_path} and {md_path} (wall time {rep['wall_time_s']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
