r"""
SEPGPC against GPflow's SVGP on the SEP paper's Table 1 protocol (Hernández-Lobato & Hernández-Lobato
2016, §4.1 and Table 1): FITC-EP (the paper's GFITC), SEP inner (its batch SEP, §2.3), SEP minibatch
(§2.3, Eq. (6)) and SVGP on six binary sets at three inducing-set sizes. Protocol and results:
docs/benchmarks/sepgpc.md. Run ``python -m benchmarks.sepgpc_table1 [--quick] [--out-dir results/sepgpc]``
(``table1.json``, ``table1.md``; ``table1.partial.json`` after every row, for ``--resume``).
"""

import json
import math
import time
from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ep.compare import make_kernel as se_ard_kernel
from gpflow_ep.datasets import load_benchmark
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import SEPGPC
from gpflow_ep.optimizers import SignAdaptive
from gpflow_ep.training import make_dataset, make_train_step

from .claims import Claim, claim_items, verdicts
from .minibatch import (
    MINIBATCH_DAMPING,
    MINIBATCH_NOTE,
    SEP_DAMPING,
    SHARED_MACHINE_NOTE,
    make_optimizer,
    random_subset,
)
from .models import ModelSlot, evaluate
from .report import markdown_header, markdown_section, timed_report, write_json, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger
from .stats import cell, finite_or_none, markdown_table, mean_se

log = progress_logger("table1")
QUICK_HELP = "Crabs, 15 %%, split 0, maxiter 5, 2 epochs"
DATASETS = ("Australian", "Breast", "Crabs", "Iono", "Pima", "Sonar")
FRACTIONS = (0.15, 0.25, 0.50)
METHODS = ("FITC-EP", "SEP inner", "SEP minibatch", "SVGP")
SHORT = {"SEP minibatch": "SEP mb"}
#: SEPGPC's EP settings (FITC-EP converges EP to ``tol`` inside every loss)
SEP_OPTIONS = dict(ep_mode="nested", tol=1e-6, max_sweeps=100, damping=SEP_DAMPING)
#: SEPGPC's minibatch damping per method (the full-batch "SEP inner" step refreshes every site, damped as a sweep)
STEP_DAMPING = {"SEP minibatch": MINIBATCH_DAMPING, "SEP inner": SEP_DAMPING}

#: Paper Table 1 (§4.1): test NLL mean and spread of GFITC, SEP and SVI at M = 15 %, 25 % and 50 % (Iono: Ionosphere)
PAPER_TABLE = """
Australian .68 .06 .69 .07 .63 .05   .68 .08 .67 .07 .63 .05   .67 .09 .64 .05 .63 .05
Breast     .10 .05 .11 .05 .10 .05   .11 .06 .11 .05 .10 .05   .11 .05 .11 .05 .10 .05
Crabs      .07 .07 .06 .06 .07 .06   .06 .07 .06 .06 .07 .07   .06 .07 .06 .06 .09 .06
Heart      .43 .12 .40 .13 .39 .11   .42 .12 .41 .12 .40 .11   .42 .13 .41 .11 .40 .10
Iono       .30 .22 .26 .19 .26 .14   .29 .23 .27 .20 .27 .18   .30 .24 .27 .19 .26 .16
Pima       .54 .08 .52 .07 .49 .05   .53 .07 .51 .06 .50 .05   .53 .07 .50 .05 .49 .05
Sonar      .35 .13 .33 .10 .40 .17   .35 .12 .32 .10 .40 .19   .35 .13 .29 .09 .35 .16
"""
#: (data set, fraction) → ((mean, spread) of GFITC, SEP, SVI)
PAPER_NLL = {
    (name, frac): tuple(zip(numbers[6 * k : 6 * k + 6 : 2], numbers[6 * k + 1 : 6 * k + 6 : 2]))
    for name, *text in map(str.split, PAPER_TABLE.strip().splitlines())
    for numbers in [[float(x) for x in text]]
    for k, frac in enumerate(FRACTIONS)
}
#: Paper Table 1, last row: training time in seconds (mean, spread) of GFITC, SEP and SVI per fraction
PAPER_TIME = {
    0.15: ((59, 4), (17, 1), (40, 2)),
    0.25: ((133, 6), (37, 2), (65, 3)),
    0.50: ((494, 29), (130, 5), (195, 10)),
}


class Table1Slot(ModelSlot):
    """One model per (data set, M, method), reused across splits: data in tf.Variables, reset per split."""

    def __init__(self, method, n, D, M, *, maxiter, epochs, batch_size, optimizer):
        Z0 = np.random.default_rng(0).standard_normal((M, D))  # placeholder, replaced per split
        if method == "SVGP":
            model = gpflow.models.SVGP(se_ard_kernel(D), Probit(), Z0, num_data=n)
        else:
            steps = {"minibatch_damping": STEP_DAMPING[method]} if method in STEP_DAMPING else {}
            model = SEPGPC(se_ard_kernel(D), Probit(), Z0, num_data=n, **SEP_OPTIONS, **steps)
        super().__init__(model, np.zeros((n, D)), np.zeros((n, 1)), holds_data=False)
        self.method, self.n, self.maxiter, self.epochs, self.batch_size = method, n, maxiter, epochs, batch_size
        if method == "FITC-EP" or method == "SVGP":
            self.closure = self.model.training_loss_closure((self.X, self.Y))
        else:
            self.optimizer = make_optimizer(optimizer) if method == "SEP minibatch" else SignAdaptive(0.01)
            self.step = make_train_step(self.model, self.optimizer)

    def load_split(self, X, Y, Z):
        """Reset model and optimiser, load (X, Y) and the initial inducing inputs Z."""
        self.load(X, Y, {"inducing_variable.Z": Z})
        if self.method == "SEP minibatch":
            variables = self.optimizer.variables
            for v in variables() if callable(variables) else variables:
                v.assign(tf.zeros_like(v))
        elif self.method == "SEP inner":
            self.optimizer.reset()

    def fit(self, X, Y, seed) -> Dict:
        """Train; the seconds, iterations (steps) and the seconds to the end of the first."""
        t0, first = time.perf_counter(), []
        if self.method in ("FITC-EP", "SVGP"):
            res = self.minimize(
                self.closure, self.maxiter, step_callback=lambda *_: first or first.append(_since(t0))
            )  # 1st
            seconds = _since(t0)
            if self.method == "FITC-EP":  # q(u) at the final hyper-parameters
                self.model.run_ep((self.X, self.Y))
            out = dict(seconds=seconds, first_s=first[0] if first else None, iterations=int(res.nit))
            return dict(out, converged=bool(res.success), message=str(res.message), skipped=None)
        if self.method == "SEP inner":  # full batch: maxiter sweeps + steps
            steps, batches = self.maxiter, iter(make_dataset((X, Y), self.n, shuffle=False))
        else:
            steps = int(math.ceil(self.epochs * max(self.n // self.batch_size, 1)))
            batches = iter(make_dataset((X, Y), self.batch_size, seed=seed, drop_remainder=True))
        skipped = 0
        for k in range(steps):
            loss, sk, _ = self.step(next(batches))
            skipped += int(sk)
            if k == 0:
                float(loss)  # waits for the step's result
                first.append(_since(t0))
        float(loss)
        return dict(seconds=_since(t0), first_s=first[0], iterations=steps, skipped=skipped, converged=None)


def _since(t0: float) -> float:
    return time.perf_counter() - t0


def summarise(records: List[Dict]) -> Dict:
    """One method's splits: error and NLL mean and s.e. (NaN where none), training time medians."""
    err, nll = (mean_se([r[k] for r in records], missing=float("nan")) for k in ("error", "nll"))
    times, nan = [r["seconds"] for r in records], float("nan")
    median = lambda x: float(np.median(x)) if len(x) else nan  # noqa: E731
    out = dict(error=err["mean"], error_se=err["se"], nll=nll["mean"], nll_se=nll["se"], time_median_s=median(times))
    out.update(time_median_excl_first_split_s=median(times[1:] or times), first_split_s=times[0] if times else nan)
    return dict(out, iterations_median=median([r["iterations"] for r in records]))


def run_table1(args, datasets, fractions, splits, methods, previous=None, checkpoint=None) -> Dict:
    """
    The Table 1 protocol: a row per (data set, fraction) with every method's per-split records and
    :func:`summarise`. ``previous``: an earlier report whose per-split records (same data set,
    fraction, M, every method) are reused instead of re-run; ``checkpoint({rows, notes})`` is called
    after every row, so that a long run can be resumed.
    """
    old = {(r["dataset"], r["fraction"], r["M"]): r for r in (previous or {}).get("rows", [])}
    rows, notes = [], []
    for name in datasets:
        try:
            s0 = load_benchmark(name, 0, data_dir=args.data_dir)
        except ValueError as exc:
            notes.append(f"{name} skipped: {exc}")
            continue
        (n_train, D), n_total = s0.X_train.shape, len(s0.X_train) + len(s0.X_test)
        for frac in fractions:
            M = min(max(1, int(round(frac * n_total))), n_train)
            if args.max_m is not None and M > args.max_m:
                notes.append(f"{name} {frac:.0%} (M={M}) not run: M > --max-m {args.max_m} (time limit).")
                continue
            row = dict(dataset=name, fraction=frac, M=M, n_total=n_total, n_train=n_train, D=D, batch_size=min(M, 100))
            row.update(splits=[], per_split={m: [] for m in methods})
            _run_row(row, splits, methods, old.get((name, frac, M)), args)
            row["summary"] = {m: summarise(row["per_split"][m]) for m in methods}
            rows.append(row)
            checkpoint(dict(rows=rows, notes=notes))
    return dict(rows=rows, notes=notes)


def _run_row(row, splits, methods, previous, args) -> None:
    """Fill ``row``'s per-split records, split by split, from ``previous`` (a row) where it has them all."""
    slots, settings = {}, dict(maxiter=args.maxiter, epochs=args.epochs, optimizer=args.optimizer)
    for k in splits:
        reused = {m: [r for r in previous["per_split"].get(m, []) if r["split"] == k] for m in methods if previous}
        if reused and all(reused.values()):
            for m in methods:
                row["per_split"][m].append(dict(reused[m][0], reused=True))
            row["splits"].append(k)
            continue
        sp = load_benchmark(row["dataset"], k, data_dir=args.data_dir)
        Z, n = random_subset(sp.X_train, row["M"], seed=1000 + k), len(sp.X_train)
        for method in methods:
            if method not in slots or slots[method].n != n:
                slots[method] = Table1Slot(method, n, row["D"], row["M"], batch_size=row["batch_size"], **settings)
            slot = slots[method]
            slot.load_split(sp.X_train, sp.Y_train, Z)
            info = slot.fit(sp.X_train, sp.Y_train, seed=k)
            scores = evaluate(slot.model, sp.X_test, sp.Y_test)
            info.update(error=scores["error"], nll=scores["nlpd"], split=k)
            row["per_split"][method].append(info)
            log(
                f"{row['dataset']} {row['fraction']:.0%} M={row['M']} split {k} {method}: err {info['error']:.3f} "
                f"nll {info['nll']:.3f} {info['seconds']:.1f}s ({info['iterations']} it)"
            )
        row["splits"].append(k)


# ---------------------------------------------------------------- tables and claims


def _label(row) -> str:
    return f"{row['dataset']} {row['fraction']:.0%}"


def _get(row, method, key):
    """A summary number of ``row``, ``None`` where the method did not run or the number does not exist (NaN)."""
    return finite_or_none(row["summary"].get(method, {}).get(key))


def _methods_in(report) -> List[str]:
    """The methods of the report's rows, in the order of :data:`METHODS` (an older report's others first)."""
    names = dict.fromkeys(m for r in report["rows"] for m in r["summary"])
    return sorted(names, key=lambda m: METHODS.index(m) if m in METHODS else -1)


def _within_2se(r, m) -> bool:
    """``m``'s NLL within two combined standard errors of SVGP's on row ``r``."""
    se = math.hypot(_get(r, m, "nll_se") or 0.0, _get(r, "SVGP", "nll_se") or 0.0)
    return _get(r, m, "nll_se") is not None and abs(_get(r, m, "nll") - _get(r, "SVGP", "nll")) <= 2 * se


def _ratio(r, a, b) -> float:
    return _get(r, a, "time_median_s") / _get(r, b, "time_median_s")


def _in_paper_spread(r, m, k) -> bool:
    mean, spread = PAPER_NLL[r["dataset"], r["fraction"]][k]
    return abs(_get(r, m, "nll") - mean) <= spread


def table1_claims(methods) -> List[Claim]:
    """The paper's claims (§4.1: similar NLL, SEP faster than SVI, GFITC slower; our NLLs within its spread)."""
    claims = [
        Claim(
            f"{m}'s NLL within two combined standard errors of SVGP's (paper: the three methods similar)",
            holds=lambda r, m=m: _within_2se(r, m),
            need="most",
            show=lambda r, m=m: f"{_label(r)} {_get(r, m, 'nll'):.3f} vs {_get(r, 'SVGP', 'nll'):.3f}",
        )
        for m in methods
        if m != "SVGP" and "SVGP" in methods
    ]
    claims += [
        Claim(
            text,
            lambda r, a=a, b=b: _ratio(r, a, b) < 1,
            need="most",
            show=lambda r, a=a, b=b: f"{_label(r)} {_ratio(r, a, b):.2f}×",
        )
        for a, b, text in (
            ("SEP inner", "SVGP", "SEP inner trains faster than SVGP (paper: SEP 1.5–2.4× faster than SVI)"),
            ("SEP inner", "FITC-EP", "SEP inner trains faster than FITC-EP (paper: GFITC 3.5–3.8× slower than SEP)"),
            ("SEP minibatch", "SVGP", "SEP minibatch trains faster than SVGP [ours]"),
        )
        if a in methods and b in methods
    ]
    claims += [
        Claim(
            f"{m}'s NLL inside the paper's {name} mean ± spread",
            holds=lambda r, m=m, k=k: _in_paper_spread(r, m, k),
            rows=lambda table: [r for r in table if (r["dataset"], r["fraction"]) in PAPER_NLL],
            need="most",
            show=lambda r, m=m: f"{_label(r)} {_get(r, m, 'nll'):.3f}",
        )
        for m, k, name in (("FITC-EP", 0, "GFITC"), ("SEP inner", 1, "SEP"))
        if m in methods
    ]
    return claims


def table1_markdown(report) -> str:
    s, methods = report["settings"], _methods_in(report)
    short = [SHORT.get(m, m) for m in methods]
    title = "SEPGPC vs SVGP on the paper's Table 1 protocol (UCI binary)"
    lines = markdown_header(title, report, SHARED_MACHINE_NOTE) + [
        f"Protocol and methods: docs/benchmarks/sepgpc.md. Splits {s['splits_used']}, fractions "
        f"{', '.join(f'{f:.0%}' for f in s['fractions'])}, maxiter {s['maxiter']} (L-BFGS-B; SEP inner steps), "
        f"SEP minibatch {s['epochs']} epochs with {s['optimizer']}, FITC-EP tol {s['sep_tol']:g}. Error and NLL: "
        "mean ± standard error over splits; times: median training seconds over splits (compilation on the first "
        "split only); paper: its NLL mean ± spread for GFITC / SEP / SVI.",
        "",
    ]
    header = ["dataset", "M (frac)", "splits", *(f"{m} {k}" for k in ("err", "NLL") for m in short)]
    rows = [
        [r["dataset"], f"{r['M']} ({r['fraction']:.0%})", len(r["splits"])]
        + [cell(_get(r, m, key), 3, se=_get(r, m, f"{key}_se")) for key in ("error", "nll") for m in methods]
        + [" / ".join(cell(a, 2, se=b) for a, b in PAPER_NLL.get((r["dataset"], r["fraction"]), ())) or "—"]
        + [cell(_get(r, m, "time_median_s"), 3, style="g") for m in methods]
        for r in report["rows"]
    ]
    lines += markdown_table(header + ["paper NLL GFITC / SEP / SVI", *(f"{m} s" for m in short)], rows)
    header = ["fraction", "datasets", *(f"{m} NLL" for m in short), "paper GFITC / SEP / SVI NLL (7 sets)"]
    header += [*(f"{m} s" for m in short), "paper GFITC / SEP / SVI s"]
    rows = []
    for frac in (f for f in s["fractions"] if any(r["fraction"] == f for r in report["rows"])):
        rs = [r for r in report["rows"] if r["fraction"] == frac]
        paper = [
            np.mean([v[k][0] for (_, f), v in PAPER_NLL.items() if f == frac]) for k in range(3 * (frac in PAPER_TIME))
        ]
        rows.append(
            [f"{frac:.0%}", len(rs)]
            + [cell(float(np.mean([r["summary"][m]["nll"] for r in rs])), 3) for m in methods]
            + [" / ".join(f"{x:.3f}" for x in paper) or "—"]
            + [
                cell(finite_or_none(np.mean([r["summary"][m]["time_median_s"] for r in rs])), 3, style="g")
                for m in methods
            ]
            + [" / ".join(cell(a, 3, se=b, style="g") for a, b in PAPER_TIME.get(frac, ())) or "—"]
        )
    lines += ["", "## Averages over the datasets run", "", *markdown_table(header, rows)]
    lines += markdown_section("Claim checks (paper §4.1, Table 1)", claim_items(report.get("claims", [])))
    if report.get("notes"):
        lines += markdown_section("Notes", report["notes"])
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- entry point


def build_parser():
    parser = benchmark_parser(__spec__.name, __doc__, "results/sepgpc", QUICK_HELP, data_dir=True, optimizer=True)
    parser.add_argument("--splits", default=None, help="splits, e.g. 0,1,2 or a count like 5 (default 3)")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--fractions", default="0.15,0.25,0.5")
    parser.add_argument("--maxiter", type=int, default=250, help="L-BFGS-B iterations; SEP inner steps")
    parser.add_argument("--epochs", type=float, default=100, help="SEP minibatch epochs")
    parser.add_argument("--methods", default=",".join(METHODS), help="methods to run")
    parser.add_argument(
        "--resume", default=None, help="a previous table1(.partial).json: its per-split results are kept"
    )
    parser.add_argument("--max-m", type=int, default=None, help="skip (dataset, fraction) with M above this")
    parser.add_argument(
        "--rerender", default=None, help="a stored table1 JSON: rewrite its Markdown (claims decided anew)"
    )
    return parser


def main(argv=None) -> int:
    args, command = parse_command_line(build_parser(), argv)
    if args.rerender:  # the JSON stays as it is
        rep = json.loads(Path(args.rerender).read_text())
        rep["claims"] = verdicts(table1_claims(_methods_in(rep)), rep["rows"])
        Path(args.rerender).with_suffix(".md").write_text(table1_markdown(rep))
        log(f"re-rendered {Path(args.rerender).with_suffix('.md')}")
        return 0
    out_dir = Path(args.out_dir)
    if args.splits is None:
        splits = [0] if args.quick else [0, 1, 2]
    else:
        splits = parse_list(args.splits, int) if "," in args.splits else list(range(int(args.splits)))
    datasets, fractions = parse_list(args.datasets), parse_list(args.fractions, float)
    if args.quick:
        datasets, fractions, args.maxiter, args.epochs = ["Crabs"], [0.15], 5, 2
    previous = json.loads(Path(args.resume).read_text()) if args.resume else None

    def checkpoint(partial):
        write_json(out_dir / "table1.partial.json", dict(partial, command=command))

    methods = parse_list(args.methods)
    rep = timed_report(command, lambda: run_table1(args, datasets, fractions, splits, methods, previous, checkpoint))
    if args.resume:
        records = [x for r in rep["rows"] for recs in r["per_split"].values() for x in recs]
        reused = sum(bool(x.get("reused")) for x in records)
        rep["notes"].append(
            f'{reused} of {len(records)} per-split results were taken from {args.resume} (marked "reused" in the JSON).'
        )
    used = sorted({k for r in rep["rows"] for k in r["splits"]})
    rep["settings"] = dict(datasets=datasets, fractions=fractions, splits_requested=splits, splits_used=used)
    rep["settings"].update(maxiter=args.maxiter, epochs=args.epochs, optimizer=args.optimizer)
    rep["settings"].update(sep_tol=SEP_OPTIONS["tol"], quick=args.quick, max_m=args.max_m)
    rep["notes"].append(MINIBATCH_NOTE)
    rep["claims"] = verdicts(table1_claims(_methods_in(rep)), rep["rows"])
    json_path, md_path = write_report(out_dir / "table1", rep, table1_markdown(rep))
    log(f"wrote {json_path} and {md_path} (wall time {rep['wall_time_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
