r"""
SEPMGPC against SVGP with ``MultiClass`` (robust max) and with ``Softmax`` on the nycflights13 flights as
three classes (early, on time, late), and the steps each needs to come within :data:`NLL_TOLERANCE` of the
better final NLL (Villacampa-Calvo & Hernández-Lobato 2017, §5: "EP converges in fewer iterations than VI").
Protocol and results: docs/benchmarks/sepmgpc.md.
Run ``python -m benchmarks.sepmgpc_flights [--quick] [--out-dir results/sepmgpc]``.
"""

from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from . import runner
from .claims import Claim, claim_items, verdicts
from .minibatch import race_on_flights, race_table, write_race
from .report import markdown_header, markdown_section, rerender_report, timed_report

log = runner.progress_logger("sepmgpc_flights")
CLASSES = ("early (d < -15)", "on time (|d| ≤ 15)", "late (d > 15)")
METHODS = ("SEPMGPC", "RobustMax", "Softmax")
#: how close (nats) to the better final test NLL counts as converged
NLL_TOLERANCE = 0.01


def evaluate(model, X, Y, chunk: int = 5000) -> Dict:
    """Test error (argmax of p(y*)) and NLL from ``predict_y``, [N, C] class probabilities."""
    wrong, nll = 0.0, 0.0
    for start in range(0, len(X), chunk):
        p, y = model.predict_y(X[start : start + chunk])[0].numpy(), Y[start : start + chunk, 0]
        wrong += float(np.sum(np.argmax(p, axis=1) != y))
        nll -= float(np.sum(np.log(np.maximum(p[np.arange(len(y)), y], 1e-300))))
    return {"error": wrong / len(X), "nll": nll / len(X)}


def steps_to_reach(curve: List[Dict], target: float) -> Optional[Dict]:
    """The first evaluation of ``curve`` with NLL ≤ ``target``: its step and training time."""
    return next(({"step": p["step"], "time_s": p["time_s"]} for p in curve if p["nll"] <= target), None)


def analyse(report: Dict) -> Dict:
    """The report with ``reach`` (:func:`steps_to_reach` of every curve) and the claims."""
    results = report["results"]
    target = min(r["final"]["nll"] for r in results.values()) + NLL_TOLERANCE
    reach = {m: steps_to_reach(curve, target) for m, curve in report["curves"].items()}
    ep = dict(ep=results["SEPMGPC"], reach_ep=reach["SEPMGPC"], target=target)
    rows = [dict(ep, method=m, vi=results[m], reach_vi=reach[m]) for m in results if m != "SEPMGPC"]
    return dict(report, reach=dict(target_nll=target, **reach), claims=verdicts(CLAIMS, rows))


def _reached(reach: Optional[Dict]) -> str:
    return "never" if reach is None else f"step {reach['step']} ({reach['time_s']:.0f} s)"


def _sooner(row) -> bool:
    ep, vi = row["reach_ep"], row["reach_vi"]
    return ep is not None and (vi is None or ep["step"] < vi["step"])


#: our goal and the paper's claims, over one row per SVGP model (its results and SEPMGPC's)
CLAIMS = (
    Claim(
        "goal: SEPMGPC's epoch time ≤ 1.5× SVGP-RobustMax's",
        lambda r: r["ep"]["epoch_time_s"] <= 1.5 * r["vi"]["epoch_time_s"],
        rows=lambda table: [r for r in table if r["method"] == "RobustMax"],
        show=lambda r: (
            f"Epoch time SEPMGPC / {r['method']} = {r['ep']['epoch_time_s']:.1f} s / "
            f"{r['vi']['epoch_time_s']:.1f} s = {r['ep']['epoch_time_s'] / r['vi']['epoch_time_s']:.2f}"
        ),
    ),
    Claim(
        "SEPMGPC's final test NLL no worse than SVGP's",
        lambda r: r["ep"]["final"]["nll"] <= r["vi"]["final"]["nll"],
        show=lambda r: (
            f"{r['method']}: SEPMGPC {r['ep']['final']['nll']:.4f} vs {r['vi']['final']['nll']:.4f} "
            f"(best {r['vi']['best_nll']:.4f}), final error {r['ep']['final']['error']:.4f} vs "
            f"{r['vi']['final']['error']:.4f}"
        ),
    ),
    Claim(
        "the paper: EP converges in fewer iterations than VI (steps to within "
        f"{NLL_TOLERANCE} nats of the best final NLL)",
        _sooner,
        show=lambda r: (
            f"{r['method']}: SEPMGPC at {_reached(r['reach_ep'])}, {r['method']} at "
            f"{_reached(r['reach_vi'])} (target {r['target']:.4f})"
        ),
    ),
)
COLUMNS = [("steps", "steps"), ("epochs", "epochs"), ("per step (ms)", "step_ms"), ("epoch time (s)", "epoch_s")]
COLUMNS += [("final error", "error"), ("final NLL", "nll"), ("best NLL", "best_nll"), ("skipped updates", "skipped")]


def markdown(report) -> str:
    s, d = report, report["data"]
    rates = ", ".join(f"{c} {r:.3f}" for c, r in zip(CLASSES, d["class_rates"]))
    lines = markdown_header("SEPMGPC vs SVGP on nycflights13, three classes", report)
    lines += [
        f"Data: {d['n_raw']} flights, {d['n_clean']} without missing values; classes of the arrival delay d: "
        f"{rates}; {d['n_test']} random test points, {d['n_train']} training points; inputs "
        f"{', '.join(d['features'])}, standardised.",
        f"Models: `SEPMGPC` + `MultiClassStep(3)` (minibatch EP, ρ = 0.99) vs `SVGP` + `MultiClass(3)` (RobustMax) "
        f"and + `Softmax(3)` (those of {', '.join(s['results'])}), SE-ARD, "
        f"M = {s['M']} inducing inputs (the same random subset; a copy per class for SEPMGPC), batch "
        f"{s['batch_size']}, {s['optimizer']}; {s['time_budget_s']:g} s of training each, interleaved chunks of "
        f"{s['eval_every']} steps with a test evaluation after each (not on the clock). Epoch = "
        f"{s['steps_per_epoch']} steps; epoch time = steps per epoch × median time per step.",
        "",
        "Per step: median over the chunks run while every method was training (side by side).",
        "",
        *race_table(report, COLUMNS, "logistic regression", "Curves: `sepmgpc_flights.png`."),
    ]
    return "\n".join(lines + markdown_section("Claims", claim_items(s["claims"]))) + "\n"


def main(argv=None) -> int:
    quick = "2,000 training and 1,000 test points, M = 10, at most 30 steps per method"
    parser = runner.benchmark_parser("benchmarks.sepmgpc_flights", __doc__, "results/sepmgpc", quick, optimizer=True)
    parser.add_argument("--rerender", action="store_true", help="redo the claims and table of the stored JSON")
    args, command = runner.parse_command_line(parser, argv)
    prefix = Path(args.out_dir) / ("sepmgpc_flights_quick" if args.quick else "sepmgpc_flights")
    if args.rerender:
        return rerender_report(prefix, analyse, markdown, log)
    race = dict(M=10 if args.quick else 100, num_classes=3, floor=1e-300, target="early_on_time_late")
    report = analyse(timed_report(command, lambda: race_on_flights(args, METHODS, evaluate, log, 600.0, 400, **race)))
    return write_race(prefix, report, markdown(report), "3 classes", log)


if __name__ == "__main__":
    raise SystemExit(main())
