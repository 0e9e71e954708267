r"""
The compiled minibatch training step of SEPGPC and SEPMGPC (``fit``'s: the minibatch site refresh of
Hernández-Lobato & Hernández-Lobato 2016, Sec. 2.3, then one Adam step) against GPflow's SVGP as a GPflow
user writes it (stock ``gpflow.likelihoods.Bernoulli()``, probit link; ``MultiClass``/RobustMax), interleaved in one process on synthetic 8-D data, against :data:`GOALS`.
Multi-class models are compared twice, both sides with the same GPflow multi-output prior: one
``SharedIndependent`` SE-ARD kernel with inducing inputs shared by the classes
(``SharedIndependentInducingVariables``) and with a copy per class (``SeparateIndependentInducingVariables``).
Protocol and results: docs/benchmarks/step_speed.md.
"""

from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ep.compare import make_kernel, sparse_classifier
from gpflow_ep.training import make_dataset, make_train_step

from .minibatch import TimedSteps, interleaved_rounds, make_optimizer, random_subset, sparse_model
from .report import markdown_header, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, progress_logger
from .stats import markdown_table

log = progress_logger("step_speed")
GOALS = {"SEPGPC": 1.1, "SEPMGPC": 1.5}
#: the multi-class comparisons: inducing inputs shared by the classes, and a copy per class
INDUCING = ("shared", "separate")
QUICK = dict(n=2000, D=8, configs=[(10, 50)], classes=[2, 3], rounds=3, steps=3, warmup=2)
FULL = dict(n=20000, D=8, configs=[(50, 200), (100, 500)], classes=[2, 5, 10], warmup=5)


def data(n: int, D: int, num_classes: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Standard normal inputs and labels: {0, 1} [n, 1] floats (C = 2) or integer classes [n, 1]."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    if num_classes == 2:
        return X, (X[:, :1] + 0.5 * rng.standard_normal((n, 1)) > 0).astype(np.float64)
    W = rng.standard_normal((D, num_classes))
    scores = X @ W + 0.5 * rng.standard_normal((n, num_classes))
    return X, np.argmax(scores, axis=1)[:, None].astype(np.int64)


def _svgp_step(model, optimizer):
    """
    A plain compiled Adam step on SVGP's ELBO (what a GPflow user writes: ``optimizer.minimize`` of the
    training loss, inside ``tf.function``), returning the loss it differentiated (computed once).
    """
    variables = model.trainable_variables

    @tf.function(autograph=False)
    def step(batch):
        with tf.GradientTape() as tape:
            loss = model.training_loss(batch[:2])
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return step


def _steppers(n: int, D: int, M: int, batch_size: int, classes: Sequence[int]):
    """Timed steps of each SEP model and its SVGP on the same data and Z, and the (SEP, SVGP, goal) pairs."""
    steppers, pairs = {}, []
    for C in classes:
        X, Y = data(n, D, C, seed=C)
        Z = random_subset(X, M, seed=1)
        if C == 2:  # SEPGPC with its default EP settings; SVGP as a GPflow user writes it (stock Bernoulli, probit)
            sep = sparse_classifier("sepgpc", make_kernel(D), Z.copy(), n)
            svgp = gpflow.models.SVGP(make_kernel(D), gpflow.likelihoods.Bernoulli(), Z.copy(), num_data=n)
            compared = [("SEPGPC", "SVGP", GOALS["SEPGPC"], sep, svgp)]
        else:
            compared = [
                (f"SEPMGPC {z} Z C={C}", f"SVGP RobustMax {z} Z C={C}", GOALS["SEPMGPC"])
                + tuple(sparse_model(m, D, Z, n, C, inducing=z) for m in ("SEPMGPC", "RobustMax"))
                for z in INDUCING
            ]
        for sep_name, svgp_name, goal, sep, svgp in compared:
            pairs.append((sep_name, svgp_name, goal))
            for name, model, make in ((sep_name, sep, make_train_step), (svgp_name, svgp, _svgp_step)):
                batches = iter(make_dataset((X, Y), batch_size, seed=0, drop_remainder=True))  # the same pipeline
                steppers[name] = TimedSteps(make(model, make_optimizer("adam:0.01")), batches)
    return steppers, pairs


def run_config(config: Dict, M: int, batch_size: int) -> Dict:
    """One (M, batch): every method's median ms per step and each SEP / SVGP ratio (median and range over rounds)."""
    steppers, pairs = _steppers(config["n"], config["D"], M, batch_size, config["classes"])
    for stepper in steppers.values():
        stepper.run(config["warmup"])  # compiles
    times = interleaved_rounds(steppers, config["rounds"], config["steps"], log, label=f"M={M} batch={batch_size} ")
    ratios = {}
    for sep, svgp, goal in pairs:
        per_round = times[sep] / times[svgp]
        r = dict(median=float(np.median(per_round)), min=float(per_round.min()), max=float(per_round.max()), goal=goal)
        ratios[f"{sep} / {svgp}"] = dict(r, met=bool(r["median"] <= goal))
    per_step_ms = {name: float(1e3 * np.median(t)) for name, t in times.items()}
    return dict(M=M, batch_size=batch_size, per_step_ms=per_step_ms, ratios=ratios)


def markdown(report: Dict) -> str:
    """The table of SEP / SVGP step ratios, a row per (M, batch) and SEP model."""
    c = report["config"]
    rows = []
    for result in report["results"]:
        for pair, r in result["ratios"].items():
            times = [f"{result['per_step_ms'][name]:.2f}" for name in pair.split(" / ")]
            goal = f"≤ {r['goal']}x {'met' if r['met'] else 'not met'}"
            rows.append([result["M"], result["batch_size"], pair.split(" / ")[0], *times, f"{r['median']:.2f}x"])
            rows[-1] += [f"{r['min']:.2f}–{r['max']:.2f}", goal]
    head = ["M", "batch", "SEP method", "SEP ms/step", "SVGP ms/step", "ratio (median of rounds)", "range", "goal"]
    lines = markdown_header("Compiled training step: sparse EP against SVGP", report) + [
        "",
        f"n = {c['n']} points in {c['D']}-D, SE-ARD kernels, Adam 0.01; {c['rounds']} interleaved rounds of "
        f"{c['steps']} steps per method after {c['warmup']} warm-up steps (compilation excluded); medians.",
        "",
        *markdown_table(head, rows),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    quick = "n=2000, (M, batch) = (10, 50), C = 3, 3 rounds of 3 steps"
    parser = benchmark_parser("benchmarks.step_speed", __doc__, "results/step_speed", quick)
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--steps", type=int, default=10, help="steps per method per round (default 10)")
    args, command = parse_command_line(parser, argv)
    config = QUICK if args.quick else dict(FULL, rounds=args.rounds, steps=args.steps)
    configs = config["configs"]
    report = timed_report(command, lambda: dict(config=config, results=[run_config(config, M, B) for M, B in configs]))
    prefix = Path(args.out_dir) / ("step_speed_quick" if args.quick else "step_speed")
    log("wrote {} and {}".format(*write_report(prefix, report, markdown(report))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
