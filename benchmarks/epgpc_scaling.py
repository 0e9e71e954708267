r"""
EPGPC's cost against its floor: time to a converged parallel/sequential EP run, per sweep, against one
n×n Cholesky of B = I + AKA, the factorisation's parts and GPflow's VGP step, as n grows (probit, SE-ARD
kernel with fixed hyper-parameters, synthetic 2-D data and Pima). Protocol, columns and results:
docs/benchmarks/epgpc_scaling.md. Run ``python -m benchmarks.epgpc_scaling [--quick] [--out-dir results]``
(``--out PREFIX`` names the two files).
"""

import math
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Optional

import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ep.datasets import load_benchmark, two_dimensional
from gpflow_ep.ep import DEFAULT_DAMPING, GPSiteFactorisation
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC

from .claims import Claim, claim_items, verdicts
from .models import se_ard_kernel
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, check_choices, parse_command_line, parse_list, progress_logger
from .stats import markdown_table

SCHEDULE_ORDER = ("parallel", "sequential")
GOAL_RATIO = 3.0
#: the goal for a converged log Z: time ≤ this × sweeps × floor (floor = Cholesky of B + the solve diag Σ needs)
GOAL_FLOOR_RATIO = 1.15
PIMA_SPLIT = 0
#: --quick: the smoke configuration (options given explicitly still apply)
QUICK = dict(sizes="60", repeats=1, datasets="synthetic")
DEFAULTS = dict(sizes="250,500,1000,2000", repeats=5, datasets="synthetic,Pima")
QUICK_HELP = "--sizes 60 --repeats 1 --datasets synthetic"

log = progress_logger("epgpc_scaling")


def problems(datasets, sizes, data_dir=None):
    """
    The problems ``dict(dataset, n, subset, X, Y)`` and notes on the sizes that are not available: Pima
    sizes below its training split's are its first n rows, and all its points (train+test, standardised
    together) are the largest Pima problem.
    """
    out, notes = [], []
    for name in datasets:
        if name.lower() == "synthetic":
            for n in sizes:
                X, Y = two_dimensional(n, seed=0)
                out.append(dict(dataset="synthetic", n=n, subset="two_dimensional(n, seed=0)", X=X, Y=Y))
            continue
        if name.lower() != "pima":
            raise ValueError(f"--datasets: unknown dataset {name!r}; choose from synthetic, Pima")
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
        std = X.std(0)
        X = (X - X.mean(0)) / np.where(std > 0, std, 1.0)
        Y = np.concatenate([split.Y_train, split.Y_test])
        out.append(dict(dataset="Pima", n=n_all, subset=f"all {n_all} points (train+test, standardised)", X=X, Y=Y))
        missing = [n for n in sizes if n >= n_train and n != n_all]
        if missing:
            notes.append(
                f"Pima has only {n_all} points ({n_train} in a training split): "
                f"n = {', '.join(map(str, missing))} not available; "
                f"Pima uses n < {n_train} from training split {PIMA_SPLIT} and all {n_all} points."
            )
    return out, notes


# ---------------------------------------------------------------- timing


def _ep_once(model, schedule, tol, max_sweeps, log_z=None):
    """
    One EP run from flat sites: (seconds, sweeps, converged, max_change, run, seconds to a converged log Z_EP,
    i.e. the run and then ``log_z()``, the model's compiled evidence, or None without ``log_z``).
    """
    model.sites.reset()
    t0 = time.perf_counter()
    run = model.run_ep(schedule=schedule, tol=tol, max_sweeps=max_sweeps)
    sweeps = int(run.sweeps.numpy())  # forces completion
    seconds = time.perf_counter() - t0
    to_log_z = None
    if log_z is not None:
        float(log_z().numpy())
        to_log_z = time.perf_counter() - t0
    return seconds, sweeps, bool(run.converged.numpy()), float(run.max_change.numpy()), run, to_log_z


def _timed_rounds(round_once: Callable, repeats: int, budget: float):
    """
    ``round_once()`` ``repeats`` times, fewer (with a note) when the first round's time × ``repeats``
    exceeds ``budget`` s: (the rounds' results, note or None).
    """
    t0 = time.perf_counter()
    out = [round_once()]
    one_round, planned, note = time.perf_counter() - t0, repeats, None
    if repeats > 1 and one_round * repeats > budget and max(1, int(budget // one_round)) < repeats:
        planned = max(1, int(budget // one_round))
        note = f"repeats reduced to {planned} (one run took {one_round:.1f} s; budget {budget:.0f} s per configuration)"
    out += [round_once() for _ in range(planned - 1)]
    return out, note


def _summarise_ep(first, records, note=None) -> Dict:
    times, sweeps, run = [r[0] for r in records], [r[1] for r in records], records[-1][4]
    med, med_sweeps = float(np.median(times)), float(np.median(sweeps))
    to_log_z = [r[5] for r in records if r[5] is not None]
    return dict(
        times_to_log_z_s=to_log_z,
        time_to_log_z_s=float(np.median(to_log_z)) if to_log_z else None,
        first_call_s=first,
        times_s=times,
        repeats_used=len(times),
        time_to_converge_s=med,
        sweeps=med_sweeps,
        sweeps_all=sweeps,
        converged=all(r[2] for r in records),
        max_change=max(r[3] for r in records),
        num_skipped=int(run.num_skipped.numpy()),
        num_rejected=int(run.num_rejected.numpy()),
        time_per_sweep_s=med / med_sweeps if med_sweeps > 0 else float("nan"),
        note=note,
    )


class _Probe:
    """A timed operation: :meth:`warm` once (compiles, not kept), then :meth:`once` records one sample in s."""

    def __init__(self, fn: Callable[[], object], per_call: int = 1, before: Optional[Callable] = None):
        self.fn, self.per_call, self.before, self.samples = fn, per_call, before, []

    def once(self):
        if self.before is not None:
            self.before()
        t0 = time.perf_counter()
        self.fn()
        self.samples.append((time.perf_counter() - t0) / self.per_call)
        return self.samples[-1]

    def warm(self):
        self.once()
        return self.samples.pop()


def _amortised_probe(op: Callable, args, target: float = 0.2, max_inner: int = 100) -> _Probe:
    """
    One ``op(*args)`` (a scalar tensor) timed as EP's loop runs it: ``inner`` calls one after the other in a
    ``tf.while_loop`` inside one compiled call (the per-call dispatch amortised), a call lasting ≈ ``target`` s.
    """

    @tf.function
    def looped(inner, *args):
        def body(i, acc):
            return i + 1, acc + op(*args)

        zero = tf.zeros([], args[0].dtype)
        # parallel_iterations=1: otherwise independent iterations overlap and share the cores
        return tf.while_loop(lambda i, acc: i < inner, body, (tf.constant(0), zero), parallel_iterations=1)[1]

    probe = _Probe(lambda: looped(tf.constant(1), *args).numpy())
    probe.warm()  # compile
    inner = int(min(max_inner, max(1, math.ceil(target / max(probe.warm(), 1e-6)))))
    inner_t = tf.constant(inner)
    return _Probe(lambda: looped(inner_t, *args).numpy(), per_call=inner)


def _loss_and_gradient(loss: Callable, variables) -> Callable:
    """A compiled evaluation of ``loss()`` and its gradient in ``variables`` (one training step's work)."""

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            value = loss()
        return value + tf.add_n([tf.reduce_sum(g) for g in tape.gradient(value, variables)])

    return step


def bench_problem(prob, schedules, repeats, budget, tol, max_sweeps, sequential_max_n):
    """
    One (dataset, n): rounds of one parallel EP run and one sample of every floor measurement (so
    that ratios compare timings of the same window), then the sequential schedule on its own.
    """
    X, Y = prob["X"], prob["Y"]
    n, D = X.shape
    model = EPGPC((X, Y), se_ard_kernel(D), Probit())
    log_z = tf.function(model.log_marginal_likelihood)
    first_parallel, *_, run, _ = _ep_once(model, "parallel", tol, max_sweeps, log_z)  # compiles; converged sites
    tau, nu = run.precision, run.natural_mean
    K = model.kernel(model.data[0])
    a = tf.sqrt(tf.maximum(tau[:, 0], 0.0))
    B = tf.eye(n, dtype=K.dtype) + a[:, None] * K * a[None, :]
    K_jit = K + gpflow.config.default_jitter() * tf.eye(n, dtype=K.dtype)
    B_np = B.numpy()
    vgp = gpflow.models.VGP((X, Y), se_ard_kernel(D), Probit())
    vgp_step = _loss_and_gradient(vgp.training_loss, vgp.trainable_variables)
    ep_step = _loss_and_gradient(model.training_loss, model.trainable_variables)  # nested mode, warm sites

    def cholesky(M):
        return tf.reduce_sum(tf.linalg.diag_part(tf.linalg.cholesky(M)))

    def floor_op(B, R):  # a parallel sweep's floor: the Cholesky of B and the solve that diag Σ needs
        L = tf.linalg.cholesky(B)
        return tf.reduce_sum(tf.linalg.diag_part(L)) + tf.reduce_sum(tf.linalg.triangular_solve(L, R))

    def factorise(K, tau, nu):
        q = GPSiteFactorisation(K, tau, nu)
        return tf.reduce_sum(q.mean) + tf.reduce_sum(q.var)

    probes = {
        "cholesky_B_s": _amortised_probe(cholesky, (B,)),
        "floor_s": _amortised_probe(floor_op, (B, a[:, None] * K)),
        "cholesky_K_s": _amortised_probe(cholesky, (K_jit,)),
        "triangular_solve_s": _amortised_probe(
            lambda L, R: tf.reduce_sum(tf.linalg.triangular_solve(L, R)), (tf.linalg.cholesky(B), a[:, None] * K)
        ),
        "factorisation_s": _amortised_probe(factorise, (K, tau, nu)),
        "numpy_cholesky_B_s": _Probe(lambda: np.linalg.cholesky(B_np)),
        "vgp_elbo_grad_s": _Probe(lambda: vgp_step().numpy()),
        "ep_loss_grad_warm_s": _Probe(lambda: ep_step().numpy(), before=lambda: model.sites.assign(tau, nu)),
    }
    first_calls = {k: p.warm() for k, p in probes.items()}
    floor = dict(
        vgp_first_call_s=first_calls["vgp_elbo_grad_s"], ep_loss_grad_warm_sweeps=int(model.ep_diagnostics.sweeps)
    )

    def parallel_round():
        record = _ep_once(model, "parallel", tol, max_sweeps, log_z) if "parallel" in schedules else None
        for p in probes.values():
            p.once()
        return record

    records, note = _timed_rounds(parallel_round, repeats, budget)
    floor.update({k: float(np.median(p.samples)) for k, p in probes.items()})
    floor["floor_samples"] = {k: p.samples for k, p in probes.items()}
    label = dict(dataset=prob["dataset"], n=int(n), D=int(D), subset=prob["subset"])
    rows = [dict(label, schedule="parallel", **_summarise_ep(first_parallel, records, note))] if records[0] else []
    if "sequential" in schedules:
        rows.append(dict(label, schedule="sequential"))
        if sequential_max_n is not None and n > sequential_max_n:
            rows[-1]["skipped"] = f"sequential capped at n ≤ {sequential_max_n} (--sequential-max-n)"
        else:
            first = _ep_once(model, "sequential", tol, max_sweeps)[0]  # compile + run
            records, note = _timed_rounds(lambda: _ep_once(model, "sequential", tol, max_sweeps), repeats, budget)
            rows[-1].update(_summarise_ep(first, records, note))
    for row in rows:
        row.update(floor)
        if "time_per_sweep_s" in row:
            row["sweep_over_cholesky"] = row["time_per_sweep_s"] / floor["cholesky_B_s"]
            row["sweep_over_numpy_cholesky"] = row["time_per_sweep_s"] / floor["numpy_cholesky_B_s"]
            row["goal_met"] = bool(row["sweep_over_cholesky"] <= GOAL_RATIO)
            row["sweep_over_vgp"] = row["time_per_sweep_s"] / floor["vgp_elbo_grad_s"]
            row["converge_over_vgp"] = row["time_to_converge_s"] / floor["vgp_elbo_grad_s"]
            if row["schedule"] == "parallel":
                row["rest_of_sweep_s"] = row["time_per_sweep_s"] - floor["factorisation_s"]
                row["log_z_over_floor"] = row["time_to_log_z_s"] / (row["sweeps"] * floor["floor_s"])
            log(
                f"{prob['dataset']:>9} n={n:<5} {row['schedule']:<10} sweeps={row['sweeps']:<4g} "
                f"converged={row['converged']} t={row['time_to_converge_s']:.4g}s "
                f"t/sweep={row['time_per_sweep_s']:.4g}s (x{row['repeats_used']}) "
                f"ratio={row['sweep_over_cholesky']:.3g}"
            )
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


#: the columns of the two tables: (header, key, formatter)
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
PROFILE_COLUMNS = [
    ("time/sweep (s)", "time_per_sweep_s", _fmt),
    ("factorisation (s)", "factorisation_s", _fmt),
    ("Cholesky of B (s)", "cholesky_B_s", _fmt),
    ("triangular solve (s)", "triangular_solve_s", _fmt),
    ("rest of sweep (s)", "rest_of_sweep_s", _fmt),
    ("Cholesky of K+jitter (s)", "cholesky_K_s", _fmt),
    ("NumPy Cholesky (s)", "numpy_cholesky_B_s", _fmt),
    ("sweep/NumPy Chol", "sweep_over_numpy_cholesky", _ratio),
]
FLOOR_COLUMNS = [
    ("sweeps", "sweeps", _fmt),
    ("time to a converged log Z (s)", "time_to_log_z_s", _fmt),
    ("floor: Cholesky + solve (s)", "floor_s", _fmt),
    ("time / (sweeps × floor)", "log_z_over_floor", _ratio),
]
#: the goal: a parallel sweep within 3× one Cholesky
CLAIMS = [
    Claim(
        f"parallel time/sweep ≤ {GOAL_RATIO:g}× one Cholesky (the goal)",
        holds=lambda r: r["goal_met"],
        rows=lambda table: [r for r in table if r["schedule"] == "parallel" and "sweep_over_cholesky" in r],
        show=lambda r: f"{r['dataset']} n={r['n']} {r['sweep_over_cholesky']:.2f}×",
    ),
    Claim(
        f"parallel time to a converged log Z ≤ {GOAL_FLOOR_RATIO:g}× sweeps × floor (the goal)",
        holds=lambda r: r["log_z_over_floor"] <= GOAL_FLOOR_RATIO,
        rows=lambda table: [r for r in table if r["schedule"] == "parallel" and r.get("log_z_over_floor") is not None],
        show=lambda r: f"{r['dataset']} n={r['n']} {r['log_z_over_floor']:.2f}×",
    ),
]


def markdown(report: Dict) -> str:
    s, results = report["settings"], report["results"]

    def label(r):
        return [r["dataset"], f"{r['n']} (all)" if r["subset"].startswith("all") else r["n"]]

    main = []
    for r in results:
        if "skipped" in r:
            cells = ["–", "–", r["skipped"], "–", _fmt(r["cholesky_B_s"]), "–", "–", _fmt(r["vgp_elbo_grad_s"])]
            main.append(label(r) + [r["schedule"], *cells, "–", "–", _fmt(r["ep_loss_grad_warm_s"]), 0])
        else:
            runs = f"{r['repeats_used']}{'*' if r.get('note') else ''}"
            main.append(label(r) + [r["schedule"]] + [f(r[k]) for _, k, f in MAIN_COLUMNS] + [runs])
    profile = [
        label(r) + [f(r[k]) for _, k, f in PROFILE_COLUMNS]
        for r in results
        if r["schedule"] == "parallel" and "skipped" not in r
    ]
    notes = list(report["notes"])
    notes += [
        f"{r['dataset']} n={r['n']} {r['schedule']}: {r['note']} (marked * in *runs*)."
        for r in results
        if r.get("note")
    ]
    notes += [
        f"Pima n={n}: {subset}."
        for n, subset in sorted({(r["n"], r["subset"]) for r in results if r["dataset"] == "Pima"})
    ]
    lines = markdown_header("EPGPC scaling benchmark", report) + [
        f"EPGPC, exact probit, SE-ARD kernel with fixed hyper-parameters (variance {s['kernel_variance']}, every "
        f"lengthscale √D); EP from flat sites to tol {s['tol']:g} (max {s['max_sweeps']} sweeps), default damping "
        f"(parallel {s['damping']['parallel']}, sequential {s['damping']['sequential']}); medians of up to "
        f"{s['repeats']} runs, compilation excluded. Columns: docs/benchmarks/epgpc_scaling.md.",
        "",
        *markdown_table(["dataset", "n", "schedule", *(h for h, _, _ in MAIN_COLUMNS), "runs"], main),
        "",
        "## Where a parallel sweep's time goes",
        "",
        *markdown_table(["dataset", "n", *(h for h, _, _ in PROFILE_COLUMNS)], profile),
    ]
    floor = [label(r) + [f(r.get(k)) for _, k, f in FLOOR_COLUMNS] for r in results if r.get("log_z_over_floor")]
    if floor:  # reports written before this table have no such rows
        lines += ["", "## Time to a converged log Z against its floor", ""]
        lines += markdown_table(["dataset", "n", *(h for h, _, _ in FLOOR_COLUMNS)], floor)
    lines += markdown_section("Claims", claim_items(verdicts(CLAIMS, results)))
    if notes:
        lines += markdown_section("Notes", notes)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- entry point


def run_benchmark(
    sizes=(250, 500, 1000, 2000),
    repeats=5,
    datasets=("synthetic", "Pima"),
    data_dir=None,
    schedules=SCHEDULE_ORDER,
    tol=1e-6,
    max_sweeps=100,
    budget=180.0,
    sequential_max_n=None,
    command="",
) -> Dict:
    def run():
        probs, notes = problems(datasets, sizes, data_dir)
        results = []
        for prob in probs:
            log(f"{prob['dataset']} n={prob['X'].shape[0]}")
            results.extend(bench_problem(prob, schedules, repeats, budget, tol, max_sweeps, sequential_max_n))
        return {"benchmark": "epgpc_scaling", "notes": notes, "results": results}

    report = timed_report(command, run)
    report["settings"] = dict(
        sizes=list(sizes),
        repeats=repeats,
        datasets=list(datasets),
        schedules=list(schedules),
        tol=tol,
        max_sweeps=max_sweeps,
        damping=dict(DEFAULT_DAMPING),
        likelihood="gpflow_ep.likelihoods.Probit()",
        kernel="gpflow.kernels.SquaredExponential (ARD)",
        kernel_variance=1.0,
        kernel_lengthscales="sqrt(D) in every dimension",
        budget_per_configuration_s=budget,
        sequential_max_n=sequential_max_n,
        goal_sweep_over_cholesky=GOAL_RATIO,
        goal_log_z_over_floor=GOAL_FLOOR_RATIO,
    )
    return report


def main(argv=None) -> int:
    parser = benchmark_parser(__spec__.name, __doc__, "results", QUICK_HELP, data_dir=True)
    parser.add_argument("--sizes", default=None, help=f"training sizes, comma separated (default {DEFAULTS['sizes']})")
    parser.add_argument("--repeats", type=int, default=None, help=f"timed runs, median (default {DEFAULTS['repeats']})")
    parser.add_argument("--out", default=None, help="output prefix (.json and .md); overrides --out-dir")
    parser.add_argument("--datasets", default=None, help=f"synthetic, Pima (default {DEFAULTS['datasets']})")
    parser.add_argument("--schedules", default="parallel,sequential", help="comma separated: parallel, sequential")
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--max-sweeps", type=int, default=100)
    parser.add_argument(
        "--budget", type=float, default=180.0, help="seconds per (dataset, n, schedule) for the repeats"
    )
    parser.add_argument("--sequential-max-n", type=int, default=None, help="skip the sequential schedule above this n")
    args, command = parse_command_line(parser, argv)
    preset = QUICK if args.quick else DEFAULTS
    sizes = parse_list(args.sizes or preset["sizes"], int)
    if not sizes or any(n < 2 for n in sizes):
        parser.error("--sizes must be integers ≥ 2")
    repeats = preset["repeats"] if args.repeats is None else args.repeats
    if repeats < 1:
        parser.error("--repeats must be ≥ 1")
    schedules = parse_list(args.schedules)
    check_choices(parser, "--schedules", schedules, SCHEDULE_ORDER)
    report = run_benchmark(
        sizes=sizes,
        repeats=repeats,
        datasets=parse_list(args.datasets or preset["datasets"]),
        data_dir=args.data_dir,
        schedules=schedules,
        tol=args.tol,
        max_sweeps=args.max_sweeps,
        budget=args.budget,
        sequential_max_n=args.sequential_max_n,
        command=command,
    )
    out = Path(args.out) if args.out is not None else Path(args.out_dir) / "epgpc_scaling"
    json_path, md_path = write_report(out, report, markdown(report))
    print(f"wrote {json_path} and {md_path} (wall time {report['wall_time_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
