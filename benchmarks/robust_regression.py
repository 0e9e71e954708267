r"""
Robust GP regression: EP with GPflow's ``StudentT`` likelihood against VGP, SVGP and GPR (after Jylänki,
Vanhatalo & Vehtari 2011) on Neal's data with outliers, Boston housing and concrete. Also the machinery
the likelihood comparisons ``benchmarks.counts_ordinal`` and ``benchmarks.logistic_uci`` share
(:func:`compare_on_splits`). Protocol and results: docs/benchmarks/robust_regression.md.
"""

import argparse
import math
import time
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import gpflow
import numpy as np
from gpflow.utilities import positive

from gpflow_ep.compare.models import inducing_inputs
from gpflow_ep.datasets import load_benchmark
from gpflow_ep.models import EPGP, EPGPC
from gpflow_ep.optimizers import EP

from . import runner
from .models import ModelSlot, ep_fit, se_ard_kernel
from .report import markdown_header
from .stats import cell, finite_or_none, markdown_table, mean_se

log = runner.progress_logger("robust_regression")

QUICK_HELP = "neal, 1 split, maxiter 5, M = 10"
DATASETS = ("neal", "bostonHousing", "concrete")
METHODS = ("EP-t", "VGP-t", "SVGP-t", "GPR")
#: Jylänki et al.'s robust EP: parallel updates, damping, fractional updates
EP_OPTIONS = dict(schedule="parallel", damping=0.5, power=0.8, max_sweeps=200, tol=1e-6)
#: the fallback when parallel EP does not converge at the learned hyper-parameters
FALLBACK_OPTIONS = dict(schedule="convergent", power=1.0, max_sweeps=200)
STUDENT_T_SCALE, STUDENT_T_DF, DF_LOWER = 0.3, 4.0, 1.0
NEAL_TRAIN, NEAL_TEST = 100, 100


def neal_function(x: np.ndarray) -> np.ndarray:
    """Neal's regression function 0.3 + 0.4x + 0.5 sin(2.7x) + 1.1/(1 + x²)."""
    return 0.3 + 0.4 * x + 0.5 * np.sin(2.7 * x) + 1.1 / (1.0 + x**2)


def neal_data(seed: int, n: int, outlier_rate: float = 0.05):
    """n inputs x ~ N(0, 1) [n, 1] and targets [n, 1] with noise sd 0.1, or 1.0 with probability ``outlier_rate``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 1))
    sd = np.where(rng.uniform(size=(n, 1)) < outlier_rate, 1.0, 0.1)
    return x, neal_function(x) + sd * rng.normal(size=(n, 1))


def standardise(train: np.ndarray, test: np.ndarray):
    """(train, test) standardised by the training part's mean and standard deviation, and those two."""
    mean, sd = train.mean(axis=0), train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (train - mean) / sd, (test - mean) / sd, mean, sd


def subsample(X, Y, max_train: Optional[int], split: int):
    """At most ``max_train`` rows of (X, Y), drawn at random (seeded by the split), in their order."""
    if max_train is None or len(X) <= max_train:
        return X, Y
    keep = np.sort(np.random.default_rng(10_000 + split).choice(len(X), size=max_train, replace=False))
    return X[keep], Y[keep]


def load_split(name: str, split: int, data_dir=None, max_train: Optional[int] = None):
    """
    (X, y, X_test, y_test, y_mean, y_sd): standardised inputs and targets and the targets' scale; with
    ``max_train``, at most that many training points, drawn after the standardisation.
    """
    if name == "neal":
        X, y = neal_data(seed=1000 + split, n=NEAL_TRAIN + NEAL_TEST)
        X, Xt, _, _ = standardise(X[:NEAL_TRAIN], X[NEAL_TRAIN:])
        y, yt = y[:NEAL_TRAIN], y[NEAL_TRAIN:]
    else:
        s = load_benchmark(name, split, data_dir, kind="regression")
        X, Xt, y, yt = s.X_train, s.X_test, s.Y_train, s.Y_test
    y, yt, mean, sd = standardise(y, yt)
    X, y = subsample(X, y, max_train, split)
    return X, y, Xt, yt, float(mean[0]), float(sd[0])


def student_t(scale: float = STUDENT_T_SCALE, df: float = STUDENT_T_DF) -> gpflow.likelihoods.StudentT:
    """GPflow's ``StudentT`` with its degrees of freedom ν a trained parameter (ν ≥ :data:`DF_LOWER`)."""
    likelihood = gpflow.likelihoods.StudentT(scale=scale, df=df)
    likelihood.df = gpflow.Parameter(df, transform=positive(lower=DF_LOWER), name="df")
    return likelihood


# ---------------------------------------------------------------- the likelihood comparisons' machinery


class Task(NamedTuple):
    """One split of a comparison: training and test data, the likelihood and how to score a model."""

    X: np.ndarray
    Y: np.ndarray
    X_test: np.ndarray
    Y_test: np.ndarray
    likelihood: Callable[[], gpflow.likelihoods.Likelihood]
    metrics: Callable[[gpflow.models.GPModel], Dict]
    values: Dict = {}  # assigned to the model before training (dotted attribute paths, see ``ModelSlot.load``)


class Slots:
    """
    One :class:`benchmarks.models.ModelSlot` per method ("EP…", "VGP…", "SVGP…" or "GPR") and
    training-set shape, so that the compiled losses are traced once per data set, not once per split.
    """

    def __init__(self, likelihood: Callable, M: int, ep_options: Dict, kernel: Callable = se_ard_kernel):
        self.likelihood, self.M, self.ep_options, self.kernel = likelihood, M, ep_options, kernel
        self.slots: Dict = {}

    def build(self, method: str, X, Y, seed: int):
        """A fresh model of ``method`` on (X, Y)."""
        kernel, family = self.kernel(X.shape[1]), method.split("-", 1)[0]
        if family == "GPR":
            return gpflow.models.GPR((X, Y), kernel, noise_variance=0.1)
        if family == "EP":
            return EPGP((X, Y), kernel, self.likelihood(), **self.ep_options)
        if family == "VGP":
            return gpflow.models.VGP((X, Y), kernel, self.likelihood())
        if family == "SVGP":
            return gpflow.models.SVGP(kernel, self.likelihood(), inducing_inputs(X, self.M, seed=seed), num_data=len(X))
        raise ValueError(f"method: unknown {method!r}")

    def model(self, method: str, X, Y, seed: int, values: Optional[Dict] = None) -> Tuple[ModelSlot, object]:
        """The slot of ``method`` for X's shape and its model, reset and loaded with (X, Y) and ``values``."""
        key = (method, X.shape)
        if key not in self.slots:
            model = self.build(method, X, Y, seed)
            self.slots[key] = ModelSlot(model, X, Y, holds_data=not isinstance(model, gpflow.models.SVGP))
        slot, values = self.slots[key], dict(values or {})
        if isinstance(slot.model, gpflow.models.SVGP):
            values["inducing_variable.Z"] = inducing_inputs(X, self.M, seed=seed)
        return slot, slot.load(X, Y, values)


def train(slot: ModelSlot, maxiter: int) -> Dict:
    """L-BFGS-B on the slot's model (SVGP on the full batch); the optimiser's outcome and the time."""
    model = slot.model
    svgp = isinstance(model, gpflow.models.SVGP)
    loss = model.training_loss_closure((slot.X, slot.Y)) if svgp else model.training_loss
    start = time.perf_counter()
    try:
        res = slot.minimize(loss, maxiter)
        outcome = dict(nit=int(res.nit), success=bool(res.success), message=str(res.message)[:120])
    except Exception as error:  # a failed optimisation is reported, not hidden
        outcome = dict(nit=None, success=False, message=f"{type(error).__name__}: {str(error)[:200]}")
    outcome["train_time_s"] = time.perf_counter() - start
    outcome["final_loss"] = finite_or_none(loss().numpy())
    return outcome


def finish_ep(model) -> Dict:
    """
    EP at the learned hyper-parameters (parallel, the model's settings); when it does not converge,
    the convergent double loop (:data:`FALLBACK_OPTIONS`) from the same sites.
    """
    out = ep_fit(model)
    out.pop("R_history", None)
    out["fallback"] = False
    if not out["converged"]:
        start = time.perf_counter()
        res = EP(warn=False, **FALLBACK_OPTIONS).minimize(model)
        out.update(fallback=True, fallback_converged=bool(res.converged), fallback_sweeps=int(res.sweeps))
        out["fallback_time_s"] = time.perf_counter() - start
    return out


def predictive_metrics(model, X, Y, y_mean: float = 0.0, y_sd: float = 1.0) -> Dict:
    """
    Mean log predictive density of Y (standardised targets) mapped to the original units
    (log p(y) = log p(y_std) − log sd), and MAE and RMSE of the predictive mean in original units.
    """
    predict_f = model.posterior().predict_f if isinstance(model, EPGPC) else model.predict_f
    mu, var = predict_f(X)
    lpd = model.likelihood.predict_log_density(X, mu, var, Y).numpy()
    err = (model.likelihood.predict_mean_and_var(X, mu, var)[0].numpy() - Y) * y_sd
    return dict(
        mlpd=finite_or_none(np.mean(lpd) - math.log(y_sd)),
        mae=finite_or_none(np.mean(np.abs(err))),
        rmse=finite_or_none(np.sqrt(np.mean(err**2))),
    )


def likelihood_values(model) -> Dict:
    """The likelihood's scalar parameters among ν, scale, variance and σ."""
    names = ("df", "scale", "variance", "sigma")
    values = {n: getattr(model.likelihood, n, None) for n in names}
    return {n: float(np.asarray(v.numpy())) for n, v in values.items() if v is not None and not callable(v)}


def comparison_parser(module: str, doc: str, quick: str, datasets, methods) -> argparse.ArgumentParser:
    """The options of a likelihood comparison over data sets × splits (``--datasets`` … ``--merge``)."""
    parser = runner.benchmark_parser(f"benchmarks.{module}", doc, f"results/{module}", quick, data_dir=True)
    parser.add_argument("--datasets", default=",".join(datasets))
    parser.add_argument("--methods", default=",".join(methods), help=f"among {', '.join(methods)}")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--maxiter", type=int, default=100)
    parser.add_argument("--num-inducing", type=int, default=50)
    runner.add_split_grid_options(parser)
    return parser


def compare_on_splits(
    args: argparse.Namespace,
    command: str,
    stem: str,
    load: Callable[[str, int], Task],
    summarise: Callable[[List[Dict], Sequence[str]], Dict],
    markdown: Callable[[Dict], str],
    log: Callable[[str], None],
    config: Dict,
    ep_options: Dict,
    kernel: Callable = se_ard_kernel,
) -> int:
    """
    Every method of ``args.methods`` trained by :func:`train` on every split of ``load`` (EP then run
    once more by :func:`finish_ep`) and scored by the task's metrics, through
    ``runner.run_split_grid`` (or ``--merge``); ``config`` adds to the report's settings.
    """
    prefix = Path(args.out_dir) / (f"{stem}_quick" if args.quick else stem)
    if args.merge:
        return runner.merge_split_reports(args.merge, prefix, command, summarise, markdown, log)
    datasets, methods = runner.parse_list(args.datasets), runner.parse_list(args.methods)
    settings = ("splits", "maxiter", "num_inducing")
    config = dict(datasets=datasets, methods=methods, **{k: getattr(args, k) for k in settings}, **config)
    slots: Dict[str, Slots] = {}

    def run_split(name: str, split: int) -> Dict:
        task = load(name, split)
        per_set = slots.setdefault(name, Slots(task.likelihood, args.num_inducing, ep_options, kernel))
        results = {}
        for m in methods:
            slot, model = per_set.model(m, task.X, task.Y, split, task.values)
            results[m] = train(slot, args.maxiter)
            if isinstance(model, EPGPC):
                results[m]["ep"] = finish_ep(model)
            results[m].update(task.metrics(model))
        return dict(dataset=name, split=split, n_train=len(task.X), n_test=len(task.X_test), results=results)

    def describe(run) -> str:
        times = ", ".join(f"{m} {v['train_time_s']:.1f} s" for m, v in run["results"].items())
        return f"{run['dataset']} split {run['split']}: {times}"

    grid = dict(config=config, command=command, prefix=prefix, markdown=markdown, log=log, describe=describe)
    return runner.run_split_grid(
        datasets, args.splits, run_split, lambda runs: summarise(runs, methods), first_split=args.first_split, **grid
    )


def summarise_methods(runs: List[Dict], methods, keys, extra: Callable[[List[Dict]], Dict] = lambda got: {}) -> Dict:
    """
    Per data set and method: :func:`mean_se` over splits of each of ``keys``, EP's convergence counts
    (final runs converged, double-loop fallbacks, fallbacks converged) and ``extra(results)``.
    """
    per_set = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        rows = [r["results"] for r in runs if r["dataset"] == name]
        entry = {}
        for m in methods:
            got = [row[m] for row in rows if m in row]
            entry[m] = {k: mean_se([g.get(k) for g in got]) for k in keys}
            eps = [g["ep"] for g in got if "ep" in g]
            if eps:
                entry[m].update(
                    ep_converged=sum(e["converged"] for e in eps), ep_fallback=sum(e["fallback"] for e in eps)
                )
                entry[m].update(
                    ep_fallback_converged=sum(e.get("fallback_converged", False) for e in eps), ep_runs=len(eps)
                )
            entry[m].update(extra(got))
        per_set[name] = dict(splits=len(rows), methods=entry)
    return dict(per_set=per_set)


def ep_cell(entry: Dict) -> str:
    """EP's final runs converged / runs, and the double-loop fallbacks if any ("–" for other methods)."""
    if "ep_runs" not in entry:
        return "–"
    text = f"{entry['ep_converged']}/{entry['ep_runs']}"
    if entry["ep_fallback"]:
        text += f" (double loop {entry['ep_fallback']}, converged {entry['ep_fallback_converged']})"
    return text


def stat(key: str, digits: int, scale: float = 1.0) -> Callable[[Dict], str]:
    """The table column of ``key``'s mean ± s.e. (``"–"`` where a method has none)."""
    return lambda e: cell(e[key], digits, scale=scale) if key in e else "–"


def methods_table(report: Dict, columns: Sequence[Tuple[str, Callable[[Dict], str]]]) -> List[str]:
    """One Markdown row per data set and method of the summary: data set, splits, method and ``columns``."""
    rows = [
        [name, row["splits"], m, *(column(row["methods"][m]) for _, column in columns)]
        for name, row in report["summary"]["per_set"].items()
        for m in report["config"]["methods"]
        if m in row["methods"]
    ]
    return markdown_table(["data set", "splits", "method", *(name for name, _ in columns)], rows)


# ---------------------------------------------------------------- this benchmark

COLUMNS = (
    ("MLPD", stat("mlpd", 3)),
    ("MAE", stat("mae", 3)),
    ("RMSE", stat("rmse", 3)),
    ("ν", stat("df", 2)),
    ("time (s)", stat("train_time_s", 1)),
    ("EP converged", ep_cell),
)


def summarise(runs: List[Dict], methods) -> Dict:
    def df(got):
        dfs = [g["likelihood"].get("df") for g in got]
        return dict(df=mean_se(dfs)) if any(d is not None for d in dfs) else {}

    return summarise_methods(runs, methods, ("mlpd", "mae", "rmse", "train_time_s"), df)


def markdown(report: Dict) -> str:
    c = report["config"]
    lines = markdown_header("Robust GP regression with a Student-t likelihood", report)
    lines += [
        f"SE-ARD kernel; L-BFGS-B, maxiter {c['maxiter']}; SVGP M = {c['num_inducing']}; "
        f"training points: {'all' if c.get('max_train') is None else 'at most ' + str(c['max_train'])}; EP options {c['ep_options']}, "
        f"fallback {c['fallback_options']}. MLPD: mean log predictive density of the test targets in their original "
        "units (higher is better); MAE, RMSE of the predictive mean (original units); time: hyper-parameter "
        "training (compilation included on the first split of each data set). Mean ± s.e. over splits.",
        "",
        *methods_table(report, COLUMNS),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = comparison_parser("robust_regression", __doc__, QUICK_HELP, DATASETS, METHODS)
    parser.add_argument("--max-train", type=int, help="train on at most this many points of each training split")
    args, command = runner.parse_command_line(parser, argv, shared=shared, log=log)
    if args.quick:
        args.datasets, args.splits, args.maxiter, args.num_inducing = "neal", 1, 5, 10
    if not args.merge:
        runner.check_choices(parser, "--methods", runner.parse_list(args.methods), METHODS)
        runner.check_choices(parser, "--datasets", runner.parse_list(args.datasets), DATASETS)

    def load(name: str, split: int) -> Task:
        X, Y, Xt, Yt, _, y_sd = load_split(name, split, args.data_dir, args.max_train)

        def metrics(model) -> Dict:
            return dict(predictive_metrics(model, Xt, Yt, y_sd=y_sd), likelihood=likelihood_values(model))

        return Task(X, Y, Xt, Yt, student_t, metrics)

    start = dict(scale=STUDENT_T_SCALE, df=STUDENT_T_DF, df_lower=DF_LOWER)
    config = dict(
        max_train=args.max_train, ep_options=EP_OPTIONS, fallback_options=FALLBACK_OPTIONS, student_t_start=start
    )
    return compare_on_splits(args, command, "robust_regression", load, summarise, markdown, log, config, EP_OPTIONS)


if __name__ == "__main__":
    raise SystemExit(main())
