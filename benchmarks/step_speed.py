r"""
Speed against the GPflow code a user would otherwise run, side by side in one process, interleaved, medians of
rounds after warm-up (compilation excluded), against :data:`GOALS`:

* the compiled minibatch training step of SEPGPC and SEPMGPC (``fit``'s: the minibatch site refresh of
  Hernández-Lobato & Hernández-Lobato 2016, Sec. 2.3, then one Adam step) against GPflow's SVGP as a GPflow
  user writes it (stock ``gpflow.likelihoods.Bernoulli()``, probit link; ``MultiClass``/RobustMax; ``Softmax``),
  on synthetic 8-D data and the same data pipeline; multi-class models are compared with inducing inputs shared
  by the classes (``SharedIndependentInducingVariables``) and with a copy per class, the same on both sides;
* this package's ``Probit`` in that SVGP against stock ``Bernoulli()`` (the same mathematics);
* ``fit``'s epoch of SEPGPC on 200,000 points in 5-D against a compiled SVGP loop over GPflow's own
  ``tf.data`` pipeline (shuffle, batch) and over ``fit``'s;
* the first compiled call of a fresh model's training loss (tracing and graph set-up), each in a fresh process;
* DGPAEP's minibatch step against GPflux's DeepGP with two layers, M = 100, hidden widths 2 (the paper's), 4 and 8
  and batches of 50 and 500: with one kernel and one set of inducing inputs per layer against GPflux's default
  (``build_constant_input_dim_deep_gp``), and with a kernel and inducing inputs per GP against the same GPflux
  model built with a kernel and inducing inputs per GP; with the heavy ops and FLOPs of each graph.

Protocol and results: docs/benchmarks/step_speed.md.
"""

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ep.compare import make_kernel, make_model
from gpflow_ep.likelihoods import Probit
from gpflow_ep.training import fit, make_dataset, make_train_step

from .minibatch import TimedSteps, interleaved_rounds, make_optimizer, random_subset, sparse_model
from .report import markdown_header, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, progress_logger
from .stats import markdown_table

log = progress_logger("step_speed")
GOALS = {"SEPGPC": 1.1, "SEPMGPC": 1.5, "Probit": 1.05, "fit epoch": 1.1, "first call": 1.5, "DGPAEP": 2.0}
#: the multi-class comparisons: inducing inputs shared by the classes, and a copy per class
INDUCING = ("shared", "separate")
QUICK = dict(
    n=2000, D=8, configs=[(10, 50)], classes=[2, 3], rounds=3, steps=3, warmup=2,
    epoch=dict(n=3000, D=5, M=10, batch=500, rounds=2), first_call=dict(n=100, repeats=1),
    dgp=dict(n=300, D=4, M=10, widths=[4], batches=[50], rounds=2, steps=3, warmup=2),
)
FULL = dict(
    n=20000, D=8, configs=[(50, 200), (100, 500)], classes=[2, 5, 10], warmup=5,
    epoch=dict(n=200000, D=5, M=100, batch=500, rounds=5), first_call=dict(n=1000, repeats=3),
    dgp=dict(n=20000, D=8, M=100, widths=[2, 4, 8], batches=[50, 500], rounds=7, steps=10, warmup=5),
)


def data(n: int, D: int, num_classes: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Standard normal inputs and labels: {0, 1} [n, 1] floats (C = 2) or integer classes [n, 1]."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    if num_classes == 2:
        return X, (X[:, :1] + 0.5 * rng.standard_normal((n, 1)) > 0).astype(np.float64)
    W = rng.standard_normal((D, num_classes))
    scores = X @ W + 0.5 * rng.standard_normal((n, num_classes))
    return X, np.argmax(scores, axis=1)[:, None].astype(np.int64)


def svgp_step(model, optimizer):
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
            sep = make_model("sepgpc", kernel=make_kernel(D), inducing_variable=Z.copy(), num_data=n)
            svgp = make_model("svgp", kernel=make_kernel(D), inducing_variable=Z.copy(), num_data=n)  # Bernoulli()
            probit = make_model("svgp", kernel=make_kernel(D), likelihood=Probit(), inducing_variable=Z.copy(), num_data=n)
            compared = [
                ("SEPGPC", "SVGP Bernoulli", GOALS["SEPGPC"], sep, svgp),
                ("SVGP Probit", "SVGP Bernoulli", GOALS["Probit"], probit, svgp),
            ]
        else:
            compared = [
                (f"SEPMGPC {z} Z C={C}", f"SVGP {svgp} {z} Z C={C}", GOALS["SEPMGPC"])
                + tuple(sparse_model(m, D, Z, n, C, inducing=z) for m in ("SEPMGPC", svgp))
                for z in INDUCING
                for svgp in ("RobustMax", "Softmax")
                if svgp == "RobustMax" or z == "shared"
            ]
        for sep_name, svgp_name, goal, sep, svgp in compared:
            pairs.append((sep_name, svgp_name, goal))
            for name, model in ((sep_name, sep), (svgp_name, svgp)):
                if name in steppers:  # one baseline for two comparisons
                    continue
                make = svgp_step if isinstance(model, gpflow.models.SVGP) else make_train_step
                batches = iter(make_dataset((X, Y), batch_size, seed=0, drop_remainder=True))  # the same pipeline
                steppers[name] = TimedSteps(make(model, make_optimizer("adam:0.01")), batches)
    return steppers, pairs


def run_config(config: Dict, M: int, batch_size: int) -> Dict:
    """One (M, batch): every method's median ms per step and each SEP / SVGP ratio (median and range over rounds)."""
    steppers, pairs = _steppers(config["n"], config["D"], M, batch_size, config["classes"])
    for stepper in steppers.values():
        stepper.run(config["warmup"])  # compiles
    times = interleaved_rounds(steppers, config["rounds"], config["steps"], log, label=f"M={M} batch={batch_size} ")
    ratios = {f"{sep} / {svgp}": _ratio(times[sep] / times[svgp], goal) for sep, svgp, goal in pairs}
    per_step_ms = {name: float(1e3 * np.median(t)) for name, t in times.items()}
    return dict(M=M, batch_size=batch_size, per_step_ms=per_step_ms, ratios=ratios)


def epoch_times(cfg: Dict) -> Dict:
    """
    Seconds per epoch, interleaved rounds: ``fit`` of SEPGPC (one epoch per call, its step compiled once) and
    a compiled SVGP loop (stock ``Bernoulli()``) over GPflow's own pipeline (``from_tensor_slices((X, Y))``,
    ``repeat``, ``shuffle(n)``, ``batch``, as in GPflow's SVGP notebook) and over ``fit``'s (``make_dataset``).
    """
    n, D, M, batch = cfg["n"], cfg["D"], cfg["M"], cfg["batch"]
    X, Y = data(n, D, 2, seed=7)
    Z = random_subset(X, M, seed=1)
    steps = n // batch
    sep = make_model("sepgpc", kernel=make_kernel(D), inducing_variable=Z.copy(), num_data=n)
    sep_step = make_train_step(sep, make_optimizer("adam:0.01"))
    svgps = [make_model("svgp", kernel=make_kernel(D), inducing_variable=Z.copy(), num_data=n) for _ in range(2)]
    gpflow_batches = iter(tf.data.Dataset.from_tensor_slices((X, Y)).repeat().shuffle(n).batch(batch))
    fit_batches = iter(make_dataset((X, Y), batch))

    def svgp_loop(model):
        step = svgp_step(model, make_optimizer("adam:0.01"))
        return lambda batches, k: [step(next(batches)) for _ in range(k)][-1]

    loops = [svgp_loop(m) for m in svgps]
    methods = {
        "SEPGPC fit": lambda k: fit(sep, (X, Y), batch_size=batch, iterations=k, train_step=sep_step, progress=False),
        "SVGP loop, GPflow's pipeline": lambda k: loops[0](gpflow_batches, k),
        "SVGP loop, fit's pipeline": lambda k: loops[1](fit_batches, k),
    }
    for run in methods.values():
        run(3)  # compiles
    seconds: Dict[str, list] = {name: [] for name in methods}
    for r in range(cfg["rounds"]):
        for name in methods if r % 2 == 0 else list(methods)[::-1]:
            t0 = time.perf_counter()
            methods[name](steps)
            seconds[name].append(time.perf_counter() - t0)
        log(f"epoch round {r + 1}/{cfg['rounds']}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in seconds.items()))
    times = {name: np.asarray(v) for name, v in seconds.items()}
    ratios = {
        f"SEPGPC fit / {base}": _ratio(times["SEPGPC fit"] / times[base], GOALS["fit epoch"])
        for base in list(methods)[1:]
    }
    return dict(config=cfg, steps=steps, seconds={k: float(np.median(v)) for k, v in times.items()}, ratios=ratios)


def _ratio(per_round: np.ndarray, goal: float) -> Dict:
    r = dict(median=float(np.median(per_round)), min=float(per_round.min()), max=float(per_round.max()), goal=goal)
    return dict(r, met=bool(r["median"] <= goal))


#: a fresh process: the first compiled call of a model's training loss (as GPflow's ``training_loss_closure``
#: compiles it), a second call, then a second model of the same kind built and called (seconds, JSON)
FIRST_CALL_WORKER = r"""
import json, sys, time
t0 = time.perf_counter()
import gpflow, numpy as np, tensorflow as tf
import gpflow_ep
kind, n = sys.argv[1], int(sys.argv[2])
imported = time.perf_counter() - t0
from gpflow_ep.compare import make_model  # the benchmarks' model factory (not part of the import time)
rng = np.random.default_rng(0)
X = rng.standard_normal((n, 2))
Y = (X[:, :1] + 0.3 * rng.standard_normal((n, 1)) > 0).astype(float)

def build():  # EPGPC with Probit(), GPflow's VGP with Bernoulli()
    return make_model("epgpc" if kind == "EPGPC" else "vgp", data=(X, Y), kernel=gpflow.kernels.SquaredExponential())

def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t

loss = build().training_loss_closure()
first, second = timed(loss), timed(loss)
model = build()
other = model.training_loss_closure()
traced = timed(other.get_concrete_function)  # Python tracing of the second model's loss
executed = timed(other)  # its first execution: graph set-up and, for EPGPC, the EP run from flat sites
for variable in model.ep_state.variables if kind == "EPGPC" else ():
    variable.assign(tf.zeros_like(variable))  # a fresh model's EP state: the first call's work without compilation
cold = timed(other)
print(json.dumps(dict(
    imported=imported, first=first, second=second, second_model_first=traced + executed,
    second_model_trace=traced, second_model_execution=executed, from_flat_sites=cold,
)))
"""


def first_calls(cfg: Dict) -> Dict:
    """Per model (EPGPC with ``Probit``, GPflow's VGP with ``Bernoulli()``): first-call seconds in fresh processes."""
    runs: Dict[str, list] = {"EPGPC": [], "VGP": []}
    for r in range(cfg["repeats"]):
        for kind in runs if r % 2 == 0 else list(runs)[::-1]:
            out = subprocess.run(
                [sys.executable, "-c", FIRST_CALL_WORKER, kind, str(cfg["n"])],
                capture_output=True, text=True, check=True,
            )
            runs[kind].append(json.loads(out.stdout.strip().splitlines()[-1]))
            log(f"first call {kind} ({r + 1}/{cfg['repeats']}): {runs[kind][-1]}")
    medians = {k: {q: float(np.median([run[q] for run in v])) for q in v[0]} for k, v in runs.items()}
    goal = GOALS["first call"]
    met = {q: bool(medians["EPGPC"][q] <= goal) for q in ("first", "second_model_first")}
    return dict(config=cfg, runs=runs, medians=medians, goal=goal, met=met)


#: the heavy ops counted in a compiled step's graph (function bodies included)
HEAVY_OPS = ("Cholesky", "MatrixTriangularSolve", "MatMul", "BatchMatMulV2", "Exp")


def graph_ops(step, batch) -> Dict[str, float]:
    """
    Counts of :data:`HEAVY_OPS` and of all nodes in the graph of a compiled ``step`` on ``batch`` (function bodies
    included), and the step's dense linear algebra in MFLOP from the static shapes of its main graph: products
    2mkn, triangular solves M²K, Cholesky factorisations M³/3 (per batch element), and the exponentials. The
    bodies of loops (``loops``, e.g. ``tf.map_fn``) are not in the FLOP count, which is then a lower bound.
    """
    concrete = step.get_concrete_function(batch)
    graph = concrete.graph.as_graph_def()
    nodes = [node.op for node in graph.node] + [node.op for f in graph.library.function for node in f.node_def]
    counts: Dict[str, float] = {**{op: nodes.count(op) for op in HEAVY_OPS}, "nodes": len(nodes)}
    counts["loops"] = sum(nodes.count(op) for op in ("While", "StatelessWhile"))  # bodies not in the FLOP count
    flops = {"products": 0.0, "solves": 0.0, "cholesky": 0.0, "exp": 0.0}
    for op in concrete.graph.get_operations():
        shapes = [t.shape.as_list() for t in op.inputs]
        if any(None in shape for shape in shapes[:2]):
            continue
        if op.type in ("MatMul", "BatchMatMulV2"):
            a, b = shapes[0], shapes[1]
            transpose_a = op.get_attr("transpose_a" if op.type == "MatMul" else "adj_x")
            transpose_b = op.get_attr("transpose_b" if op.type == "MatMul" else "adj_y")
            m, k = (a[-1], a[-2]) if transpose_a else (a[-2], a[-1])
            n = b[-2] if transpose_b else b[-1]
            batch_size = np.prod(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])), dtype=float)
            flops["products"] += 2.0 * batch_size * m * k * n
        elif op.type == "MatrixTriangularSolve":
            matrix, rhs = shapes[0], shapes[1]
            batch_size = np.prod(np.broadcast_shapes(tuple(matrix[:-2]), tuple(rhs[:-2])), dtype=float)
            flops["solves"] += batch_size * matrix[-1] ** 2 * rhs[-1]
        elif op.type == "Cholesky":
            flops["cholesky"] += np.prod(shapes[0][:-2], dtype=float) * shapes[0][-1] ** 3 / 3.0
        elif op.type == "Exp":
            flops["exp"] += np.prod(shapes[0], dtype=float)
    counts.update({f"MFLOP {k}" if k != "exp" else "exp (millions)": v / 1e6 for k, v in flops.items()})
    counts["MFLOP"] = sum(counts[f"MFLOP {k}"] for k in ("products", "solves", "cholesky"))
    return counts


#: DGPAEP's structures (``DGPAEP.from_data``'s options) and GPflux's sharing in the model it is compared with
DGP_STRUCTURES = {
    "shared": dict(share_kernel=True, tie_inducing=True),  # GPflux's default: build_constant_input_dim_deep_gp
    "separate": dict(share_kernel=False, tie_inducing=False),  # a kernel and inducing inputs per GP on both sides
}


def gpflux_default_deep_gp(X, width: int, M: int, share: bool):
    """
    GPflux's DeepGP with two layers [width, 1] and ``build_constant_input_dim_deep_gp``'s settings
    (``Config(num_inducing=M, inner_layer_qsqrt_factor=1e-5, likelihood_noise_variance=1e-2)``, GPflux's documented
    values: k-means inducing inputs, SE lengthscales 2, kernel variance 1e-6 in the hidden layer and 1 in the last):
    that builder itself for one kernel and one Z per layer at width D, else the same construction with the hidden
    width ``width`` (:func:`benchmarks.dgp_uci.gpflux_deep_gp`) and, unless ``share``, a kernel and Z per output.
    """
    from gpflux.architectures import Config, build_constant_input_dim_deep_gp
    from scipy.cluster.vq import kmeans2

    from .dgp_uci import gpflux_deep_gp

    D = X.shape[1]
    if share and width == D:
        return build_constant_input_dim_deep_gp(X, 2, Config(num_inducing=M, inner_layer_qsqrt_factor=1e-5,
                                                             likelihood_noise_variance=1e-2))
    Z, _ = kmeans2(X, M, minit="points", seed=np.random.default_rng(0))
    return gpflux_deep_gp(X, [width, 1], Z, [[2.0] * D, [2.0] * width], [1e-6, 1.0], share=share)


def dgp_times(cfg: Dict) -> Dict:
    """
    DGPAEP's compiled training step (``make_train_step``, Adam 0.01) against GPflux's DeepGP (a plain compiled Adam
    step on its ELBO) with layer widths [D, w, 1] on synthetic data (y = sin(x₁) + noise), the same ``make_dataset``
    pipeline, for each structure of :data:`DGP_STRUCTURES`, width and batch size; per batch size all pairs
    interleaved.
    """
    from gpflow_ep.models import DGPAEP

    from .dgp_uci import gpflux_step

    rng = np.random.default_rng(0)
    X = rng.standard_normal((cfg["n"], cfg["D"]))
    Y = np.sin(X[:, :1]) + 0.1 * rng.standard_normal((cfg["n"], 1))
    rows = []
    for batch_size in cfg["batches"]:
        steppers, pairs = {}, []
        for structure, options in DGP_STRUCTURES.items():
            for w in cfg["widths"]:
                ours, theirs = f"DGP-AEP {structure} w={w}", f"GPflux {structure} w={w}"
                model = DGPAEP.from_data(X, Y, [cfg["D"], w, 1], cfg["M"], **options)
                flux = gpflux_default_deep_gp(X, w, cfg["M"], share=structure == "shared")
                for name, step in ((ours, make_train_step(model, make_optimizer("adam:0.01"))),
                                   (theirs, gpflux_step(flux, make_optimizer("adam:0.01")))):
                    batches = iter(make_dataset((X, Y), batch_size, seed=0, drop_remainder=True))
                    steppers[name] = TimedSteps(step, batches)
                pairs.append((structure, w, ours, theirs))
        for stepper in steppers.values():
            stepper.run(cfg["warmup"])  # compiles
        times = interleaved_rounds(steppers, cfg["rounds"], cfg["steps"], log, label=f"DGP batch={batch_size} ")
        for structure, w, ours, theirs in pairs:
            batch = next(steppers[ours].batches)
            rows.append(
                dict(
                    structure=structure,
                    width=w,
                    batch_size=batch_size,
                    ms=[float(1e3 * np.median(times[name])) for name in (ours, theirs)],
                    ratio=_ratio(times[ours] / times[theirs], GOALS["DGPAEP"]),
                    ops=[graph_ops(steppers[name].step, batch) for name in (ours, theirs)],
                )
            )
            log(f"DGP {structure} w={w} batch={batch_size}: {rows[-1]['ms']} ms, "
                f"ratio {rows[-1]['ratio']['median']:.2f}")
    return dict(config=cfg, rows=rows)


def markdown(report: Dict) -> str:
    """The tables: step ratios per (M, batch) and method; fit's epoch; the first compiled call."""
    c = report["config"]
    lines = markdown_header("Speed against stock GPflow: training steps, fit's epoch, first call", report)
    if report.get("results"):
        rows = []
        for result in report["results"]:
            for pair, r in result["ratios"].items():
                times = [f"{result['per_step_ms'][name]:.2f}" for name in pair.split(" / ")]
                rows.append([result["M"], result["batch_size"], *pair.split(" / "), *times, *_ratio_cells(r)])
        head = ["M", "batch", "method", "baseline", "ms/step", "baseline ms/step", "ratio (median of rounds)"]
        lines += [
            "",
            "## Compiled training step",
            "",
            f"n = {c['n']} points in {c['D']}-D, SE-ARD kernels, Adam 0.01, the same `make_dataset` pipeline for "
            f"both; {c['rounds']} interleaved rounds of {c['steps']} steps per method after {c['warmup']} warm-up "
            "steps (compilation excluded); medians.",
            "",
            *markdown_table(head + ["range", "goal"], rows),
        ]
    if report.get("epoch"):
        e = report["epoch"]
        rows = [[k, f"{v:.2f}"] for k, v in e["seconds"].items()]
        rows = [row + (_ratio_cells(e["ratios"][f"SEPGPC fit / {row[0]}"]) if row[0] != "SEPGPC fit" else ["", "", ""])
                for row in rows]
        ec = e["config"]
        lines += [
            "",
            "## An epoch",
            "",
            f"n = {ec['n']} points in {ec['D']}-D, M = {ec['M']}, batch {ec['batch']} ({e['steps']} steps), "
            f"{ec['rounds']} interleaved rounds of one epoch each after a compiling call; medians.",
            "",
            *markdown_table(["method", "s/epoch", "SEPGPC fit / this (median)", "range", "goal"], rows),
        ]
    if report.get("first_call"):
        f = report["first_call"]
        quantities = [("imported", "import gpflow, gpflow_ep"), ("first", "first compiled call"),
                      ("second", "second call"), ("second_model_first", "a second model's first call"),
                      ("second_model_trace", "… of which Python tracing"),
                      ("second_model_execution", "… of which its first execution"),
                      ("from_flat_sites", "the first call's work again, compiled (EP from flat sites)")]
        rows = [[label] + [f"{f['medians'][k][q]:.2f}" for k in f["medians"]] for q, label in quantities]
        met = ", ".join(f"{q.replace('_', ' ')} {'met' if ok else 'not met'}" for q, ok in f["met"].items())
        lines += [
            "",
            "## First compiled call of a fresh model's training loss",
            "",
            f"n = {f['config']['n']}, SE kernel, a fresh process per run ({f['config']['repeats']} runs per model, "
            f"interleaved), `model.training_loss_closure()`; seconds, medians. "
            f"Goal for EPGPC: ≤ {f['goal']} s ({met}).",
            "",
            *markdown_table(["seconds"] + list(f["medians"]), rows),
        ]
    if report.get("dgp"):
        lines += dgp_markdown(report["dgp"])
    return "\n".join(lines) + "\n"


#: the op columns of the DGP table: (heading, keys of :func:`graph_ops` summed, format)
DGP_OP_COLUMNS = (
    ("Cholesky ops", ("Cholesky",), "{:.0f}"),
    ("triangular solves", ("MatrixTriangularSolve",), "{:.0f}"),
    ("products", ("MatMul", "BatchMatMulV2"), "{:.0f}"),
    ("graph nodes", ("nodes",), "{:.0f}"),
    ("MFLOP (products / solves / Cholesky)", ("MFLOP",), "{:.0f}"),
    ("exp (millions)", ("exp (millions)",), "{:.2f}"),
)


def dgp_markdown(d: Dict) -> list:
    """The DGP tables: per structure and batch size, each width's times, ratio and the two graphs' costs."""
    dc, lines = d["config"], []
    head = ["structure", "batch", "hidden width", "DGP-AEP ms/step", "GPflux ms/step", "ratio (median)", "range"]
    head += ["goal"] + [f"{title} (DGP-AEP / GPflux)" for title, _, _ in DGP_OP_COLUMNS]
    rows = []
    for r in d["rows"]:
        costs = []
        for _, keys, fmt in DGP_OP_COLUMNS:
            values = [sum(ops[k] for k in keys) for ops in r["ops"]]
            cell = " / ".join(fmt.format(v) for v in values)
            if keys == ("MFLOP",):
                cell = " / ".join(fmt.format(ops["MFLOP"]) + ("†" if ops.get("loops") else "") for ops in r["ops"])
                cell += " (" + " / ".join(
                    "+".join(f"{ops[f'MFLOP {k}']:.0f}" for k in ("products", "solves", "cholesky")) for ops in r["ops"]
                ) + ")"
            costs.append(cell)
        rows.append([r["structure"], r["batch_size"], r["width"], *(f"{t:.2f}" for t in r["ms"])]
                    + _ratio_cells(r["ratio"]) + costs)
    lines += [
        "",
        "## DGPAEP against GPflux's DeepGP",
        "",
        f"Two layers [w, 1], M = {dc['M']}, n = {dc['n']} synthetic points in {dc['D']}-D, Adam 0.01 on the same "
        f"`make_dataset` pipeline; per batch size every pair interleaved, {dc['rounds']} rounds of {dc['steps']} steps "
        f"after {dc['warmup']} warm-up steps (compilation excluded); medians. Structure \"shared\": DGPAEP with one "
        "kernel and one set of inducing inputs per layer against GPflux's default DeepGP "
        "(`build_constant_input_dim_deep_gp`'s construction, M as above); \"separate\": a kernel and inducing inputs "
        "per GP on both sides. The cost columns are static counts of each compiled step's graph; † marks a step with "
        "loops (GPflow's conditional with a kernel per GP maps over the GPs with `tf.map_fn`) whose bodies the FLOP "
        "count leaves out, so that it is a lower bound.",
        "",
        *markdown_table(head, rows),
    ]
    return lines


def _ratio_cells(r: Dict) -> list:
    verdict = "met" if r["met"] else "not met"
    return [f"{r['median']:.2f}x", f"{r['min']:.2f}–{r['max']:.2f}", f"≤ {r['goal']}x {verdict}"]


PARTS = ("steps", "epoch", "first-call", "dgp")


def run(config: Dict, parts: Sequence[str]) -> Dict:
    report: Dict = dict(config=config)
    if "steps" in parts:
        report["results"] = [run_config(config, M, B) for M, B in config["configs"]]
    if "epoch" in parts:
        report["epoch"] = epoch_times(config["epoch"])
    if "first-call" in parts:
        report["first_call"] = first_calls(config["first_call"])
    if "dgp" in parts:
        report["dgp"] = dgp_times(config["dgp"])
    return report


def main(argv: Optional[Sequence[str]] = None) -> int:
    quick = (
        "n=2000, (M, batch) = (10, 50), C = 3, 3 rounds of 3 steps; a 3000-point epoch; first calls at n=100; DGP M=10"
    )
    parser = benchmark_parser("benchmarks.step_speed", __doc__, "results/step_speed", quick)
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--steps", type=int, default=10, help="steps per method per round (default 10)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {', '.join(PARTS)}")
    args, command = parse_command_line(parser, argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown {unknown}; choose from {list(PARTS)}")
    config = QUICK if args.quick else dict(FULL, rounds=args.rounds, steps=args.steps)
    report = timed_report(command, lambda: run(config, parts))
    name = "step_speed" + ("" if set(parts) == set(PARTS) else "_" + "_".join(p.replace("-", "_") for p in parts))
    prefix = Path(args.out_dir) / (name + "_quick" if args.quick else name)
    log("wrote {} and {}".format(*write_report(prefix, report, markdown(report))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
