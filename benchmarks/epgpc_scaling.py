r"""
EPGPC's cost against its floor: time to a converged parallel/sequential EP run, per sweep, against one n×n
Cholesky of B = I + AKA, the factorisation's parts and GPflow's VGP step, as n grows (probit, SE-ARD kernel
with fixed hyper-parameters, synthetic 2-D data and Pima).

Protocol, columns and results: docs/benchmarks/epgpc_scaling.md.
"""

import math
import time
from pathlib import Path
from typing import Callable, Dict

import numpy as np
import tensorflow as tf

from gpflow_ep.compare import make_kernel, make_model
from gpflow_ep.datasets import two_dimensional
from gpflow_ep.ep.gp_factorisation import GPSiteFactorisation
from gpflow_ep.ep.settings import DEFAULT_DAMPING
from gpflow_ep.likelihoods import Probit

from .claims import Claim, claim_items, verdicts
from .data import load_benchmark
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, check_choices, parse_command_line, parse_list, progress_logger
from .stats import markdown_table

SCHEDULES = ("parallel", "sequential")
TOL, MAX_SWEEPS, PIMA_SPLIT = 1e-6, 100, 0
#: the goals: a parallel sweep ≤ 3× one Cholesky of B; a converged log Z ≤ 1.15 × sweeps × floor
GOAL_RATIO, GOAL_FLOOR_RATIO = 3.0, 1.15
QUICK = dict(sizes="60", repeats=1, datasets="synthetic")
DEFAULTS = dict(sizes="250,500,1000,2000", repeats=5, datasets="synthetic,Pima")

log = progress_logger("epgpc_scaling")


def problems(datasets, sizes, data_dir=None):
    """The problems ``dict(dataset, n, subset, X, Y)`` (Pima: its first n rows, and all its points) and notes."""
    out, notes = [], []
    for name in datasets:
        if name.lower() == "synthetic":
            for n in sizes:
                X, Y = two_dimensional(n, seed=0)
                out.append(dict(dataset="synthetic", n=n, subset="two_dimensional(n, seed=0)", X=X, Y=Y))
            continue
        try:
            split = load_benchmark("Pima", PIMA_SPLIT, data_dir=data_dir)
        except ValueError as exc:
            notes.append(f"Pima skipped: data not found ({exc}).")
            continue
        n_train, n_all = split.X_train.shape[0], split.X_train.shape[0] + split.X_test.shape[0]
        for n in (n for n in sizes if n < n_train):
            subset = f"first {n} rows of training split {PIMA_SPLIT}"
            out.append(dict(dataset="Pima", n=n, subset=subset, X=split.X_train[:n], Y=split.Y_train[:n]))
        X = np.concatenate([split.X_train, split.X_test])
        X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
        Y = np.concatenate([split.Y_train, split.Y_test])
        out.append(dict(dataset="Pima", n=n_all, subset=f"all {n_all} points (train+test, standardised)", X=X, Y=Y))
        missing = [n for n in sizes if n >= n_train and n != n_all]
        if missing:
            notes.append(
                f"Pima has only {n_all} points ({n_train} in a training split): n = {', '.join(map(str, missing))} "
                f"not available; Pima uses n < {n_train} from training split {PIMA_SPLIT} and all {n_all} points."
            )
    return out, notes


# ---------------------------------------------------------------- timing


def _ep_run(model, schedule: str, log_z: Callable = None) -> Dict:
    """One EP run from flat sites: ``run``, ``seconds``, ``sweeps``, with ``log_z`` the seconds ``to_log_z`` too."""
    model.sites.reset()
    t0 = time.perf_counter()
    run = model.run_ep(schedule=schedule, tol=TOL, max_sweeps=MAX_SWEEPS)
    record = dict(run=run, sweeps=int(run.sweeps.numpy()), to_log_z=None)  # reading sweeps forces completion
    record["seconds"] = time.perf_counter() - t0
    if log_z is not None:
        float(log_z().numpy())
        record["to_log_z"] = time.perf_counter() - t0
    return record


def _timed_rounds(round_once: Callable, repeats: int, budget: float):
    """``round_once()`` ``repeats`` times, fewer (and a note) if the first round × ``repeats`` exceeds ``budget`` s."""
    t0 = time.perf_counter()
    out = [round_once()]
    one_round = time.perf_counter() - t0
    planned = min(repeats, max(1, int(budget // one_round)))
    out += [round_once() for _ in range(planned - 1)]
    note = f"repeats reduced to {planned} (one run took {one_round:.1f} s; budget {budget:.0f} s per configuration)"
    return out, note if planned < repeats else None


def _row(label: Dict, schedule: str, records, note, floor: Dict, samples: Dict) -> Dict:
    """Medians of one schedule's EP runs (time to converge, sweeps, time to log Z) against the floor's (``samples``)."""
    times, sweeps = [r["seconds"] for r in records], float(np.median([r["sweeps"] for r in records]))
    to_log_z = [r["to_log_z"] for r in records if r["to_log_z"] is not None]
    row = dict(
        label, schedule=schedule, times_s=times, repeats_used=len(times), time_to_converge_s=float(np.median(times))
    )
    row.update(
        sweeps=sweeps,
        converged=all(bool(r["run"].converged.numpy()) for r in records),
        time_per_sweep_s=float(np.median(times)) / sweeps,
        time_to_log_z_s=float(np.median(to_log_z)) if to_log_z else None,
        note=note,
        **floor,
        floor_samples=samples,
    )
    row["sweep_over_cholesky"] = row["time_per_sweep_s"] / floor["cholesky_B_s"]
    row["sweep_over_numpy_cholesky"] = row["time_per_sweep_s"] / floor["numpy_cholesky_B_s"]
    row["goal_met"] = bool(row["sweep_over_cholesky"] <= GOAL_RATIO)
    row["sweep_over_vgp"] = row["time_per_sweep_s"] / floor["vgp_elbo_grad_s"]
    row["converge_over_vgp"] = row["time_to_converge_s"] / floor["vgp_elbo_grad_s"]
    if schedule == "parallel":
        row["rest_of_sweep_s"] = row["time_per_sweep_s"] - floor["factorisation_s"]
        row["log_z_over_floor"] = row["time_to_log_z_s"] / (row["sweeps"] * floor["floor_s"])
    log(
        f"{label['dataset']} n={label['n']} {schedule}: {sweeps:g} sweeps, converged {row['converged']}, "
        f"{row['time_per_sweep_s']:.4g} s per sweep, {row['sweep_over_cholesky']:.3g}× one Cholesky"
    )
    return row


def _timer(fn: Callable, per_call: int = 1, before: Callable = lambda: None) -> Callable[[], float]:
    """A function timing one ``fn()`` (after an untimed ``before()``): seconds per ``per_call``."""

    def once() -> float:
        before()
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) / per_call

    return once


def _amortised_timer(op: Callable, args, target: float = 0.2, max_inner: int = 100) -> Callable[[], float]:
    """``op(*args)`` timed as EP's loop runs it: a compiled ``tf.while_loop`` of calls lasting ≈ ``target`` s."""

    @tf.function
    def looped(inner, *args):
        def body(i, acc):
            return i + 1, acc + op(*args)

        zero = tf.zeros([], args[0].dtype)
        # parallel_iterations=1: otherwise independent iterations overlap and share the cores
        return tf.while_loop(lambda i, acc: i < inner, body, (tf.constant(0), zero), parallel_iterations=1)[1]

    once = _timer(lambda: looped(tf.constant(1), *args).numpy())
    once()  # compiles
    inner = int(min(max_inner, max(1, math.ceil(target / max(once(), 1e-6)))))
    inner_t = tf.constant(inner)
    return _timer(lambda: looped(inner_t, *args).numpy(), per_call=inner)


def _loss_and_gradient(loss: Callable, variables) -> Callable:
    """A compiled evaluation of ``loss()`` and its gradient in ``variables`` (one training step's work)."""

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            value = loss()
        return value + tf.add_n([tf.reduce_sum(g) for g in tape.gradient(value, variables)])

    return step


def bench_problem(prob: Dict, schedules, repeats: int, budget: float):
    """One (dataset, n), a row per schedule: parallel EP runs interleaved with the floor's timers, then sequential."""
    X, Y = prob["X"], prob["Y"]
    n, D = X.shape
    model = make_model("epgpc", data=(X, Y), kernel=make_kernel(D))
    log_z = tf.function(model.log_marginal_likelihood)
    run = _ep_run(model, "parallel", log_z)["run"]  # compiles; the converged sites
    tau, nu = run.precision, run.natural_mean
    K = model.kernel(model.data[0])
    a = tf.sqrt(tf.maximum(tau[:, 0], 0.0))
    B, aK = tf.eye(n, dtype=K.dtype) + a[:, None] * K * a[None, :], a[:, None] * K
    B_np = B.numpy()
    vgp = make_model("vgp", data=(X, Y), kernel=make_kernel(D), likelihood=Probit())
    vgp_step = _loss_and_gradient(vgp.training_loss, vgp.trainable_variables)
    ep_step = _loss_and_gradient(model.training_loss, model.trainable_variables)  # nested mode, warm sites

    def cholesky(M):
        return tf.reduce_sum(tf.linalg.diag_part(tf.linalg.cholesky(M)))

    def solve(L, R):
        return tf.reduce_sum(tf.linalg.triangular_solve(L, R))

    def floor_op(B, R):  # a parallel sweep's floor: the Cholesky of B and the solve that diag Σ needs
        L = tf.linalg.cholesky(B)
        return tf.reduce_sum(tf.linalg.diag_part(L)) + solve(L, R)

    def factorise(K, tau, nu):
        q = GPSiteFactorisation(K, tau, nu)
        return tf.reduce_sum(q.mean) + tf.reduce_sum(q.var)

    timers = {
        "cholesky_B_s": _amortised_timer(cholesky, (B,)),
        "floor_s": _amortised_timer(floor_op, (B, aK)),
        "triangular_solve_s": _amortised_timer(solve, (tf.linalg.cholesky(B), aK)),
        "factorisation_s": _amortised_timer(factorise, (K, tau, nu)),
        "numpy_cholesky_B_s": _timer(lambda: np.linalg.cholesky(B_np)),
        "vgp_elbo_grad_s": _timer(lambda: vgp_step().numpy()),
        "ep_loss_grad_warm_s": _timer(lambda: ep_step().numpy(), before=lambda: model.sites.assign(tau, nu)),
    }
    for once in timers.values():
        once()  # compiles; not kept
    samples = {key: [] for key in timers}

    def parallel_round():
        record = _ep_run(model, "parallel", log_z) if "parallel" in schedules else None
        for key, once in timers.items():
            samples[key].append(once())
        return record

    records, note = _timed_rounds(parallel_round, repeats, budget)
    floor = {key: float(np.median(s)) for key, s in samples.items()}
    label = dict(dataset=prob["dataset"], n=int(n), D=int(D), subset=prob["subset"])
    rows = [_row(label, "parallel", records, note, floor, samples)] if records[0] else []
    if "sequential" in schedules:
        _ep_run(model, "sequential")  # compiles
        records, note = _timed_rounds(lambda: _ep_run(model, "sequential"), repeats, budget)
        rows.append(_row(label, "sequential", records, note, floor, samples))
    return rows


# ---------------------------------------------------------------- output


def _fmt(x) -> str:
    """Three significant digits, no decimals from 100 on; "yes"/"no"; integers as they are."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return str(x)
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _ratio(x) -> str:
    """A ratio: two decimals below 10."""
    return f"{x:.2f}" if x is not None and math.isfinite(x) and x < 10 else _fmt(x)


#: the columns of the three tables: (header, key, formatter)
MAIN_COLUMNS = [
    ("sweeps", "sweeps", _fmt),
    ("converged", "converged", _fmt),
    ("time to converge (s, median)", "time_to_converge_s", _fmt),
    ("time/sweep (s)", "time_per_sweep_s", _fmt),
    ("Cholesky (s)", "cholesky_B_s", _fmt),
    ("sweep/Chol", "sweep_over_cholesky", _ratio),
    ("goal ≤3×", "goal_met", _fmt),
    ("VGP ELBO+grad (s)", "vgp_elbo_grad_s", _fmt),
    ("sweep/VGP", "sweep_over_vgp", _ratio),
    ("converge/VGP", "converge_over_vgp", _ratio),
    ("EP step (warm) (s)", "ep_loss_grad_warm_s", _fmt),
]
#: the runs timed, starred when the budget reduced them
RUNS_COLUMN = ("runs", None, lambda r: f"{r['repeats_used']}{'*' if r.get('note') else ''}")
PROFILE_COLUMNS = [
    ("time/sweep (s)", "time_per_sweep_s", _fmt),
    ("factorisation (s)", "factorisation_s", _fmt),
    ("Cholesky of B (s)", "cholesky_B_s", _fmt),
    ("triangular solve (s)", "triangular_solve_s", _fmt),
    ("rest of sweep (s)", "rest_of_sweep_s", _fmt),
    ("NumPy Cholesky (s)", "numpy_cholesky_B_s", _fmt),
    ("sweep/NumPy Chol", "sweep_over_numpy_cholesky", _ratio),
]
FLOOR_COLUMNS = [
    ("sweeps", "sweeps", _fmt),
    ("time to a converged log Z (s)", "time_to_log_z_s", _fmt),
    ("floor: Cholesky + solve (s)", "floor_s", _fmt),
    ("time / (sweeps × floor)", "log_z_over_floor", _ratio),
]
CLAIMS = [
    Claim(
        f"parallel time/sweep ≤ {GOAL_RATIO:g}× one Cholesky (the goal)",
        holds=lambda r: r["goal_met"],
        rows=lambda table: [r for r in table if r["schedule"] == "parallel"],
        show=lambda r: f"{r['dataset']} n={r['n']} {r['sweep_over_cholesky']:.2f}×",
    ),
    Claim(
        f"parallel time to a converged log Z ≤ {GOAL_FLOOR_RATIO:g}× sweeps × floor (the goal)",
        holds=lambda r: r["log_z_over_floor"] <= GOAL_FLOOR_RATIO,
        rows=lambda table: [r for r in table if r["schedule"] == "parallel" and r.get("log_z_over_floor") is not None],
        show=lambda r: f"{r['dataset']} n={r['n']} {r['log_z_over_floor']:.2f}×",
    ),
]


def _table(results, columns, first=()) -> list:
    """A table of ``results``: dataset, n, the ``first`` keys, then ``columns`` (formatters of a row without a key)."""
    rows = [
        [r["dataset"], f"{r['n']} (all)" if r["subset"].startswith("all") else r["n"]]
        + [r[k] for k in first]
        + [f(r.get(k)) if k else f(r) for _, k, f in columns]
        for r in results
    ]
    return markdown_table(["dataset", "n", *first, *(h for h, _, _ in columns)], rows)


def markdown(report: Dict) -> str:
    """The cost table, where a parallel sweep's time goes, the time to log Z against its floor, claims, notes."""
    s, results = report["settings"], report["results"]
    parallel = [r for r in results if r["schedule"] == "parallel"]
    lines = markdown_header("EPGPC scaling benchmark", report) + [
        f"EPGPC, exact probit, SE-ARD kernel with fixed hyper-parameters (variance {s['kernel_variance']}, every "
        f"lengthscale √D); EP from flat sites to tol {s['tol']:g} (max {s['max_sweeps']} sweeps), default damping "
        f"(parallel {s['damping']['parallel']}, sequential {s['damping']['sequential']}); medians of up to "
        f"{s['repeats']} runs, compilation excluded. Columns: docs/benchmarks/epgpc_scaling.md.",
        "",
        *_table(results, [*MAIN_COLUMNS, RUNS_COLUMN], first=("schedule",)),
        "",
        "## Where a parallel sweep's time goes",
        "",
        *_table(parallel, PROFILE_COLUMNS),
    ]
    floor = [r for r in parallel if r.get("log_z_over_floor")]
    if floor:  # reports written before this table have no such rows
        lines += ["", "## Time to a converged log Z against its floor", "", *_table(floor, FLOOR_COLUMNS)]
    lines += markdown_section("Claims", claim_items(verdicts(CLAIMS, results)))
    notes = report["notes"] + [
        f"{r['dataset']} n={r['n']} {r['schedule']}: {r['note']} (marked * in *runs*)."
        for r in results
        if r.get("note")
    ]
    pima = sorted({(r["n"], r["subset"]) for r in results if r["dataset"] == "Pima"})
    notes += [f"Pima n={n}: {subset}." for n, subset in pima]
    if notes:
        lines += markdown_section("Notes", notes)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- entry point


def main(argv=None) -> int:
    quick = " ".join(f"--{k} {v}" for k, v in QUICK.items())
    parser = benchmark_parser("benchmarks.epgpc_scaling", __doc__, "results", quick, data_dir=True)
    parser.add_argument("--sizes", help=f"training sizes, comma separated (default {DEFAULTS['sizes']})")
    parser.add_argument("--repeats", type=int, help=f"timed runs, median (default {DEFAULTS['repeats']})")
    parser.add_argument("--datasets", help=f"synthetic, Pima (default {DEFAULTS['datasets']})")
    parser.add_argument("--schedules", default="parallel,sequential", help="comma separated: parallel, sequential")
    parser.add_argument("--budget", type=float, default=180.0, help="seconds per (dataset, n, schedule) for repeats")
    parser.add_argument("--out", help="output prefix (.json and .md); overrides --out-dir")
    args, command = parse_command_line(parser, argv)
    vars(args).update({k: v for k, v in (QUICK if args.quick else DEFAULTS).items() if getattr(args, k) is None})
    sizes, datasets, schedules = parse_list(args.sizes, int), parse_list(args.datasets), parse_list(args.schedules)
    if not sizes or any(n < 2 for n in sizes) or args.repeats < 1:
        parser.error("--sizes must be integers ≥ 2 and --repeats ≥ 1")
    check_choices(parser, "--schedules", schedules, SCHEDULES)
    check_choices(parser, "--datasets", [name.lower() for name in datasets], ("synthetic", "pima"))

    def run():
        probs, notes = problems(datasets, sizes, args.data_dir)
        results = []
        for prob in probs:
            log(f"{prob['dataset']} n={prob['n']}")
            results += bench_problem(prob, schedules, args.repeats, args.budget)
        return dict(benchmark="epgpc_scaling", notes=notes, results=results)

    report = timed_report(command, run)
    report["settings"] = dict(sizes=sizes, repeats=args.repeats, datasets=datasets, schedules=schedules, tol=TOL)
    report["settings"].update(max_sweeps=MAX_SWEEPS, damping=dict(DEFAULT_DAMPING), kernel_variance=1.0)
    report["settings"].update(budget_per_configuration_s=args.budget)
    out = Path(args.out) if args.out else Path(args.out_dir) / "epgpc_scaling"
    log("wrote {} and {}".format(*write_report(out, report, markdown(report))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
