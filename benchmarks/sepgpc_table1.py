r"""
SEPGPC against GPflow's SVGP on the SEP paper's Table 1 protocol (Hernández-Lobato & Hernández-Lobato
2016, §4.1 and Table 1): FITC-EP (the paper's GFITC), SEP inner (its batch SEP, §2.3), SEP minibatch
(§2.3, Eq. (6)) and SVGP on six binary sets at three inducing-set sizes. Protocol and results:
docs/benchmarks/sepgpc.md. Run ``python -m benchmarks.sepgpc_table1 [--quick] [--out-dir results/sepgpc]``.
"""

import json
import math
import time
from pathlib import Path
from typing import Dict, List

import numpy as np
import tensorflow as tf

from gpflow_ep.optimizers import SignAdaptive
from gpflow_ep.training import make_dataset, make_train_step

from .claims import Claim, claim_items, verdicts
from .data import load_benchmark
from .minibatch import MINIBATCH_NOTE, SEP_DAMPING, SHARED_MACHINE_NOTE, make_optimizer, random_subset, sparse_model
from .models import ModelSlot, evaluate
from .report import markdown_header, markdown_section, timed_report, write_json, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger
from .stats import cell, finite_or_none, markdown_table, mean_se

log = progress_logger("table1")
DATASETS = ("Australian", "Breast", "Crabs", "Iono", "Pima", "Sonar")
FRACTIONS = (0.15, 0.25, 0.50)
METHODS = ("FITC-EP", "SEP inner", "SEP minibatch", "SVGP")
SHORT = {"SEP minibatch": "SEP mb"}
#: the summary numbers averaged over the data sets
AVERAGED = ("nll", "time_median_s")
#: the tolerance of SEPGPC's EP runs (FITC-EP converges EP inside every loss)
SEP_TOL = 1e-6
#: Paper Table 1 (§4.1): test NLL (mean, spread) of GFITC, SEP, SVI at M = 15, 25, 50 %; last row: training seconds
PAPER_TABLE = """
Australian .68 .06 .69 .07 .63 .05   .68 .08 .67 .07 .63 .05   .67 .09 .64 .05 .63 .05
Breast     .10 .05 .11 .05 .10 .05   .11 .06 .11 .05 .10 .05   .11 .05 .11 .05 .10 .05
Crabs      .07 .07 .06 .06 .07 .06   .06 .07 .06 .06 .07 .07   .06 .07 .06 .06 .09 .06
Heart      .43 .12 .40 .13 .39 .11   .42 .12 .41 .12 .40 .11   .42 .13 .41 .11 .40 .10
Iono       .30 .22 .26 .19 .26 .14   .29 .23 .27 .20 .27 .18   .30 .24 .27 .19 .26 .16
Pima       .54 .08 .52 .07 .49 .05   .53 .07 .51 .06 .50 .05   .53 .07 .50 .05 .49 .05
Sonar      .35 .13 .33 .10 .40 .17   .35 .12 .32 .10 .40 .19   .35 .13 .29 .09 .35 .16
seconds    59  4   17  1   40  2     133 6   37  2   65  3     494 29  130 5   195 10
"""
#: (data set, fraction) → ((mean, spread) of GFITC, SEP, SVI) (Iono: Ionosphere)
PAPER_NLL = {
    (name, frac): tuple(zip(numbers[6 * k : 6 * k + 6 : 2], numbers[6 * k + 1 : 6 * k + 6 : 2]))
    for name, *text in map(str.split, PAPER_TABLE.strip().splitlines())
    for numbers in [[float(x) for x in text]]
    for k, frac in enumerate(FRACTIONS)
}
#: fraction → training seconds (mean, spread) of GFITC, SEP and SVI
PAPER_TIME = {frac: PAPER_NLL.pop(("seconds", frac)) for frac in FRACTIONS}


class Table1Slot(ModelSlot):
    """One model per (data set, M, method), reused across splits: data in tf.Variables, reset per split."""

    def __init__(self, method: str, n: int, D: int, M: int, batch_size: int, args):
        Z0 = np.random.default_rng(0).standard_normal((M, D))  # placeholder, replaced per split
        damping = {"minibatch_damping": SEP_DAMPING} if method == "SEP inner" else {}  # refreshes every site
        model = sparse_model(method, D, Z0, n, tol=SEP_TOL, **damping)
        super().__init__(model, np.zeros((n, D)), np.zeros((n, 1)), holds_data=False)
        self.method, self.n, self.batch_size, self.args = method, n, batch_size, args
        if method in ("FITC-EP", "SVGP"):
            self.closure = self.model.training_loss_closure((self.X, self.Y))
        else:
            self.optimizer = make_optimizer(args.optimizer) if method == "SEP minibatch" else SignAdaptive(0.01)
            self.step = make_train_step(self.model, self.optimizer)

    def fit(self, X, Y, Z, seed: int) -> Dict:
        """Reset model and optimiser, load (X, Y) and the inducing inputs Z, and train: seconds and steps."""
        self.load(X, Y, {"inducing_variable.Z": Z})
        if self.method == "SEP minibatch":
            for v in self.optimizer.variables():
                v.assign(tf.zeros_like(v))
        elif self.method == "SEP inner":
            self.optimizer.reset()
        t0 = time.perf_counter()
        if self.method in ("FITC-EP", "SVGP"):  # L-BFGS-B
            steps = int(self.minimize(self.closure, self.args.maxiter).nit)
            seconds = time.perf_counter() - t0
            if self.method == "FITC-EP":  # q(u) at the final hyper-parameters
                self.model.run_ep((self.X, self.Y))
            return dict(seconds=seconds, iterations=steps)
        if self.method == "SEP inner":  # full batch: maxiter × (sweep + step)
            steps, batches = self.args.maxiter, make_dataset((X, Y), self.n, shuffle=False)
        else:
            steps = int(math.ceil(self.args.epochs * max(self.n // self.batch_size, 1)))
            batches = make_dataset((X, Y), self.batch_size, seed=seed, drop_remainder=True)
        batches = iter(batches)
        skipped = sum(int(self.step(next(batches))[1]) for _ in range(steps))
        return dict(seconds=time.perf_counter() - t0, iterations=steps, skipped=skipped)


def summarise(records: List[Dict]) -> Dict:
    """One method's splits: error and NLL mean and s.e. (NaN where none), median training seconds."""
    err, nll = (mean_se([r[k] for r in records], missing=float("nan")) for k in ("error", "nll"))
    seconds = float(np.median([r["seconds"] for r in records])) if records else float("nan")
    return dict(error=err["mean"], error_se=err["se"], nll=nll["mean"], nll_se=nll["se"], time_median_s=seconds)


def run_table1(args, command, datasets, fractions, splits, methods) -> Dict:
    """A row per (data set, fraction): per-split records (``--resume``'s reused) and summaries; checkpointed."""
    previous = json.loads(Path(args.resume).read_text())["rows"] if args.resume else []
    old = {(r["dataset"], r["fraction"], r["M"]): r["per_split"] for r in previous}
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
            row.update(splits=splits, per_split=run_row(row, splits, methods, old.get((name, frac, M), {}), args))
            rows.append(dict(row, summary={m: summarise(row["per_split"][m]) for m in methods}))
            write_json(Path(args.out_dir) / "table1.partial.json", dict(rows=rows, notes=notes, command=command))
    return dict(rows=rows, notes=notes)


def run_row(row, splits, methods, previous: Dict, args) -> Dict:
    """Every method's per-split records of ``row``; a split ``previous`` has for every method is taken from it."""
    per_split, slots = {m: [] for m in methods}, {}
    for k in splits:
        reused = {m: [r for r in previous.get(m, []) if r["split"] == k] for m in methods}
        if all(reused.values()):
            for m in methods:
                per_split[m].append(dict(reused[m][0], reused=True))
            continue
        sp = load_benchmark(row["dataset"], k, data_dir=args.data_dir)
        Z, n = random_subset(sp.X_train, row["M"], seed=1000 + k), len(sp.X_train)
        for m in methods:
            if m not in slots or slots[m].n != n:
                slots[m] = Table1Slot(m, n, row["D"], row["M"], row["batch_size"], args)
            info = slots[m].fit(sp.X_train, sp.Y_train, Z, seed=k)
            scores = evaluate(slots[m].model, sp.X_test, sp.Y_test)
            per_split[m].append(dict(info, error=scores["error"], nll=scores["nlpd"], split=k))
            log(f"{row['dataset']} M={row['M']} split {k} {m}: nll {scores['nlpd']:.3f} {info['seconds']:.1f}s")
    return per_split


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
            need="most",
            show=lambda r, m=m: f"{_label(r)} {_get(r, m, 'nll'):.3f}",
        )
        for m, k, name in (("FITC-EP", 0, "GFITC"), ("SEP inner", 1, "SEP"))
        if m in methods
    ]
    return claims


def table1_markdown(report) -> str:
    """The report's two tables (per data set and fraction; averages per fraction), claims and notes."""
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
    for frac in sorted({r["fraction"] for r in report["rows"]}):
        rs = [r for r in report["rows"] if r["fraction"] == frac]
        nll, seconds = ([finite_or_none(np.mean([r["summary"][m][k] for r in rs])) for m in methods] for k in AVERAGED)
        paper = [np.mean([v[k][0] for (_, f), v in PAPER_NLL.items() if f == frac]) for k in range(3)]
        rows.append(
            [f"{frac:.0%}", len(rs), *(cell(x, 3) for x in nll), " / ".join(f"{x:.3f}" for x in paper)]
            + [cell(x, 3, style="g") for x in seconds]
            + [" / ".join(cell(a, 3, se=b, style="g") for a, b in PAPER_TIME[frac])]
        )
    lines += ["", "## Averages over the datasets run", "", *markdown_table(header, rows)]
    lines += markdown_section("Claim checks (paper §4.1, Table 1)", claim_items(report.get("claims", [])))
    if report.get("notes"):
        lines += markdown_section("Notes", report["notes"])
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    quick = "Crabs, 15 %%, split 0, maxiter 5, 2 epochs"
    parser = benchmark_parser(__spec__.name, __doc__, "results/sepgpc", quick, data_dir=True, optimizer=True)
    parser.add_argument("--splits", default=None, help="splits, e.g. 0,1,2 or a count like 5 (default 3)")
    parser.add_argument("--methods", default=",".join(METHODS), help="methods to run")
    parser.add_argument("--resume", default=None, help="a previous table1(.partial).json: its splits are kept")
    parser.add_argument("--max-m", type=int, default=None, help="skip (dataset, fraction) with M above this")
    parser.add_argument("--rerender", default=None, help="a stored table1 JSON: rewrite its Markdown (claims anew)")
    args, command = parse_command_line(parser, argv)
    if args.rerender:  # the JSON stays as it is
        rep = json.loads(Path(args.rerender).read_text())
        rep["claims"] = verdicts(table1_claims(_methods_in(rep)), rep["rows"])
        Path(args.rerender).with_suffix(".md").write_text(table1_markdown(rep))
        return 0
    count = args.splits or ("1" if args.quick else "3")
    splits = parse_list(count, int) if "," in count else list(range(int(count)))
    datasets, fractions, methods = list(DATASETS), list(FRACTIONS), parse_list(args.methods)
    args.maxiter, args.epochs = 250, 100
    if args.quick:
        datasets, fractions, args.maxiter, args.epochs = ["Crabs"], [0.15], 5, 2
    rep = timed_report(command, lambda: run_table1(args, command, datasets, fractions, splits, methods))
    if args.resume:
        reused = [x.get("reused", False) for r in rep["rows"] for records in r["per_split"].values() for x in records]
        rep["notes"].append(
            f"{sum(reused)} of {len(reused)} per-split results were taken from {args.resume} "
            '(marked "reused" in the JSON).'
        )
    used = sorted({k for r in rep["rows"] for k in r["splits"]})
    rep["settings"] = dict(datasets=datasets, fractions=fractions, splits_used=used, maxiter=args.maxiter)
    rep["settings"].update(epochs=args.epochs, optimizer=args.optimizer, sep_tol=SEP_TOL, max_m=args.max_m)
    rep["notes"].append(MINIBATCH_NOTE)
    rep["claims"] = verdicts(table1_claims(_methods_in(rep)), rep["rows"])
    json_path, md_path = write_report(Path(args.out_dir) / "table1", rep, table1_markdown(rep))
    log(f"wrote {json_path} and {md_path} (wall time {rep['wall_time_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
