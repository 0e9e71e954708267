r"""
The compiled training step of sparse EP with tied sites (stochastic EP, Li, Hernández-Lobato & Turner 2015)
against GPflow's SVGP as a GPflow user writes it, side by side in one process, interleaved, medians of rounds
after warm-up (compilation excluded), both on the same plain ``tf.data`` pipeline of ``(X, Y)`` batches
(``from_tensor_slices → repeat → shuffle → batch``) and a plain compiled Adam step:

* SEPGPC with ``sites="tied"`` (the step of the README's swap: the minibatch refresh of the average site, then
  Adam on the loss at the refreshed q) against SVGP with stock ``Bernoulli()`` (probit link);
* SEPMGPC with ``sites="tied"``, one kernel and one set of inducing inputs shared by the classes
  (``SharedIndependent``, ``SharedIndependentInducingVariables``) against SVGP with ``MultiClass`` (robust max)
  on the same kernel and inducing variables;
* for reference, per-point SEPGPC (the SEP paper's scheme) on ``make_dataset``'s ``(X, Y, index)`` batches.

Each step's graph is counted (Cholesky factorisations, triangular solves, products, nodes) to say where the
time goes. Protocol and results: docs/benchmarks/sepgpc_tied.md.
Run ``python -m benchmarks.tied_speed [--quick] [--out-dir results/tied]``.
"""

from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np
import tensorflow as tf

from gpflow_ep.compare import make_kernel, make_model
from gpflow_ep.optimizers import MinibatchEP
from gpflow_ep.training import make_dataset

from .minibatch import TimedSteps, interleaved_rounds, make_optimizer, multiclass_prior, random_subset
from .report import markdown_header, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, progress_logger
from .stats import markdown_table
from .step_speed import data, graph_ops, svgp_step

log = progress_logger("tied_speed")
#: the goals: tied step over the SVGP step's median time
GOALS = {"SEPGPC tied": 1.1, "SEPMGPC tied": 1.2}
QUICK = dict(n=2000, D=8, configs=[(10, 50)], classes=[2, 3], rounds=3, steps=3, warmup=2)
FULL = dict(n=20000, D=8, configs=[(50, 200), (100, 500)], classes=[2, 5, 10], warmup=5)
#: the ops counted in each step's graph
OPS = ("Cholesky", "MatrixTriangularSolve", "MatMul", "BatchMatMulV2", "nodes")


def plain_pipeline(X, Y, batch_size: int, seed: int = 0):
    """The pipeline a GPflow user has for SVGP: (X, Y) rows, repeated, shuffled, cut into whole batches."""
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().shuffle(10_000, seed=seed)
    return ds.batch(batch_size, drop_remainder=True)


def minibatch_ep_step(model, optimizer):
    """The same step for a sparse EP model: MinibatchEP's refresh of the batch, then Adam on the loss after it."""
    variables, minibatch_ep = model.trainable_variables, MinibatchEP()

    @tf.function(autograph=False)
    def step(batch):
        with tf.GradientTape() as tape:
            loss, _ = minibatch_ep.refreshed_loss(model, batch)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return step


def _models(n: int, D: int, M: int, C: int):
    """(name, model, step maker, pipeline kind) of the methods for C classes, and the (method, baseline) pairs."""
    X, Y = data(n, D, C, seed=C)
    Z = random_subset(X, M, seed=1)
    if C == 2:
        tied = make_model("sepgpc", kernel=make_kernel(D), inducing_variable=Z.copy(), num_data=n, sites="tied")
        per_point = make_model("sepgpc", kernel=make_kernel(D), inducing_variable=Z.copy(), num_data=n)
        svgp = make_model("svgp", kernel=make_kernel(D), inducing_variable=Z.copy(), num_data=n)  # Bernoulli()
        methods = [("SEPGPC tied", tied, "plain"), ("SEPGPC per-point", per_point, "index"), ("SVGP Bernoulli", svgp, "plain")]
        pairs = [("SEPGPC tied", "SVGP Bernoulli", GOALS["SEPGPC tied"]), ("SEPGPC per-point", "SVGP Bernoulli", None)]
        return (X, Y), methods, pairs
    kernel, iv = multiclass_prior(D, Z, C, "shared")
    tied = make_model("sepmgpc", kernel=kernel, inducing_variable=iv, num_data=n, num_classes=C, sites="tied")
    kernel, iv = multiclass_prior(D, Z, C, "shared")
    svgp = make_model("svgp", kernel=kernel, inducing_variable=iv, num_data=n, num_classes=C)  # MultiClass(C)
    names = (f"SEPMGPC tied C={C}", f"SVGP RobustMax C={C}")
    return (X, Y), [(names[0], tied, "plain"), (names[1], svgp, "plain")], [(*names, GOALS["SEPMGPC tied"])]


def run_config(config: Dict, M: int, batch_size: int) -> Dict:
    """One (M, batch): each method's median ms per step, each ratio to its baseline, and each step's ops."""
    steppers, pairs, ops = {}, [], {}
    for C in config["classes"]:
        (X, Y), methods, method_pairs = _models(config["n"], config["D"], M, C)
        pairs += method_pairs
        for name, model, pipeline in methods:
            make = svgp_step if name.startswith("SVGP") else minibatch_ep_step
            if pipeline == "plain":
                batches = iter(plain_pipeline(X, Y, batch_size))
            else:
                batches = iter(make_dataset((X, Y), batch_size, seed=0, drop_remainder=True))
            step = make(model, make_optimizer("adam:0.01"))
            steppers[name] = TimedSteps(step, batches)
            ops[name] = graph_ops(step, next(batches))
    for stepper in steppers.values():
        stepper.run(config["warmup"])  # compiles
    times = interleaved_rounds(steppers, config["rounds"], config["steps"], log, label=f"M={M} batch={batch_size} ")
    ratios = {}
    for method, baseline, goal in pairs:
        per_round = times[method] / times[baseline]
        r = dict(median=float(np.median(per_round)), min=float(per_round.min()), max=float(per_round.max()))
        ratios[f"{method} / {baseline}"] = dict(r, goal=goal, met=None if goal is None else bool(r["median"] <= goal))
    per_step_ms = {name: float(1e3 * np.median(t)) for name, t in times.items()}
    return dict(M=M, batch_size=batch_size, per_step_ms=per_step_ms, ratios=ratios, ops=ops)


def markdown(report: Dict) -> str:
    c = report["config"]
    lines = markdown_header("Tied sites: the compiled training step against SVGP", report)
    rows, op_rows = [], []
    for result in report["results"]:
        for pair, r in result["ratios"].items():
            method, baseline = pair.split(" / ")
            goal = "–" if r["goal"] is None else f"≤ {r['goal']}x {'met' if r['met'] else 'not met'}"
            times = [f"{result['per_step_ms'][name]:.2f}" for name in (method, baseline)]
            rows.append([result["M"], result["batch_size"], method, baseline, *times, f"{r['median']:.2f}x",
                         f"{r['min']:.2f}–{r['max']:.2f}", goal])
        for name, counts in result["ops"].items():
            op_rows.append([result["M"], result["batch_size"], name, *(counts[op] for op in OPS)])
    lines += [
        "",
        f"n = {c['n']} points in {c['D']}-D, SE-ARD kernels, Adam 0.01; {c['rounds']} interleaved rounds of "
        f"{c['steps']} steps per method after {c['warmup']} warm-up steps (compilation excluded); medians.",
        "",
        *markdown_table(["M", "batch", "method", "baseline", "ms/step", "baseline ms/step", "ratio (median)", "range",
                         "goal"], rows),
        "",
        "Ops in each compiled step's graph (function bodies included):",
        "",
        *markdown_table(["M", "batch", "method", *OPS], op_rows),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = benchmark_parser("benchmarks.tied_speed", __doc__, "results/tied", "n=2000, (M, batch) = (10, 50), C = 2, 3")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (default 9)")
    parser.add_argument("--steps", type=int, default=30, help="steps per method per round (default 30)")
    args, command = parse_command_line(parser, argv)
    config = QUICK if args.quick else dict(FULL, rounds=args.rounds, steps=args.steps)
    report = timed_report(command, lambda: dict(config=config, results=[run_config(config, M, B) for M, B in config["configs"]]))
    prefix = Path(args.out_dir) / ("tied_speed_quick" if args.quick else "tied_speed")
    log("wrote {} and {}".format(*write_report(prefix, report, markdown(report))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
