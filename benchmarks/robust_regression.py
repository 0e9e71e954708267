r"""
Robust GP regression with a Student-t likelihood: EP against GPflow's VGP and SVGP with the same
likelihood and exact GP regression, after Jylänki, Vanhatalo & Vehtari (2011, "Robust Gaussian
process regression with a Student-t likelihood", JMLR 12, arXiv:1106.4431).

Data: Neal's synthetic regression problem with outliers (generated here, see
:func:`neal_data`: x ~ N(0, 1), y = 0.3 + 0.4x + 0.5 sin(2.7x) + 1.1/(1 + x²) plus Gaussian noise of
standard deviation 0.1, or 1.0 with probability 0.05; 100 training and 100 test points drawn anew
for each split, seeded by the split number), Boston housing and concrete (the fixed 90 % / 10 %
splits of ``shared/datasets/regression``). Inputs and targets are standardised with the training
part's mean and standard deviation; the metrics are in the targets' original units.

Methods (one SE-ARD kernel each, variance 1 and lengthscales √D to start; hyper-parameters by
L-BFGS-B, ``gpflow.optimizers.Scipy``, ``--maxiter`` iterations):

* ``EP-t``: ``EPGP`` with ``gpflow.likelihoods.StudentT`` (scale 0.3 and ν = 4 to start, both
  learned, ν ≥ 1), the robust setting of Jylänki et al.: parallel EP with damping
  (:data:`EP_OPTIONS`) and fractional (power) updates, re-run to convergence inside every evidence
  evaluation (``ep_mode="nested"``); after training EP is run once more at the learned
  hyper-parameters and, when the parallel schedule does not converge there, the sites are those of
  the provably convergent double loop (``schedule="convergent"``, α = 1) instead;
* ``VGP-t``: ``gpflow.models.VGP`` with the same likelihood;
* ``SVGP-t``: ``gpflow.models.SVGP`` with the same likelihood, M = min(``--num-inducing``, N)
  inducing inputs (k-means centres of the training inputs, trained), full batch;
* ``GPR``: ``gpflow.models.GPR`` (Gaussian likelihood, exact).

Reported per data set (mean ± s.e. over splits): test mean log predictive density (MLPD, higher
is better), mean absolute error (MAE) and root mean squared error of the predictive mean, training
time; for EP the convergence of its runs. Jylänki et al.'s table is not reproduced here: we could
not obtain the paper's text offline (see the docs page).

Run ``python -m benchmarks.robust_regression [--quick] [--out-dir results/robust_regression]``.
"""

import math
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import gpflow
import numpy as np
from gpflow.utilities import positive

from gpflow_ep.compare.models import inducing_inputs
from gpflow_ep.datasets import load_benchmark
from gpflow_ep.models import EPGP, EPGPC
from gpflow_ep.optimizers import EP

from .models import ModelSlot, ep_fit, se_ard_kernel
from .report import markdown_header
from .runner import (
    add_split_grid_options,
    benchmark_parser,
    check_choices,
    merge_split_reports,
    parse_command_line,
    parse_list,
    progress_logger,
    run_split_grid,
)
from .stats import cell, finite_or_none, mean_se

log = progress_logger("robust_regression")

QUICK_HELP = "neal, 1 split, maxiter 5, M = 10"
DATASETS = ("neal", "bostonHousing", "concrete")
METHODS = ("EP-t", "VGP-t", "SVGP-t", "GPR")
#: Jylänki et al.'s robust EP: parallel updates, damping, fractional updates
EP_OPTIONS = dict(schedule="parallel", damping=0.5, power=0.8, max_sweeps=200, tol=1e-6)
#: the fallback when parallel EP does not converge at the learned hyper-parameters
FALLBACK_OPTIONS = dict(schedule="convergent", power=1.0, max_sweeps=200)
STUDENT_T_SCALE, STUDENT_T_DF, DF_LOWER = 0.3, 4.0, 1.0
NEAL_TRAIN, NEAL_TEST = 100, 100


# ---------------------------------------------------------------- data


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


def load_split(name: str, split: int, data_dir=None, max_train: Optional[int] = None):
    """
    (X, y, X_test, y_test, y_mean, y_sd): standardised inputs and targets and the targets' scale; with
    ``max_train``, at most that many training points, drawn at random (seeded by the split) after the
    standardisation (the test part is complete).
    """
    if name == "neal":
        X, y = neal_data(seed=1000 + split, n=NEAL_TRAIN + NEAL_TEST)
        X, Xt, _, _ = standardise(X[:NEAL_TRAIN], X[NEAL_TRAIN:])
        y, yt = y[:NEAL_TRAIN], y[NEAL_TRAIN:]
    else:
        s = load_benchmark(name, split, data_dir, kind="regression")
        X, Xt, y, yt = s.X_train, s.X_test, s.Y_train, s.Y_test
    y, yt, mean, sd = standardise(y, yt)
    if max_train is not None and len(X) > max_train:
        keep = np.sort(np.random.default_rng(10_000 + split).choice(len(X), size=max_train, replace=False))
        X, y = X[keep], y[keep]
    return X, y, Xt, yt, float(mean[0]), float(sd[0])


# ---------------------------------------------------------------- models


def student_t(scale: float = STUDENT_T_SCALE, df: float = STUDENT_T_DF) -> gpflow.likelihoods.StudentT:
    """GPflow's ``StudentT`` with its degrees of freedom ν a trained parameter (ν ≥ :data:`DF_LOWER`)."""
    likelihood = gpflow.likelihoods.StudentT(scale=scale, df=df)
    likelihood.df = gpflow.Parameter(df, transform=positive(lower=DF_LOWER), name="df")
    return likelihood


def build_model(
    method: str,
    X,
    Y,
    likelihood_factory: Callable,
    M: int,
    ep_options: Dict,
    seed: int = 0,
    kernel_factory: Callable = se_ard_kernel,
):
    """A fresh model of ``method`` ("EP-*", "VGP-*", "SVGP-*" or "GPR") on (X, Y), kernel ``kernel_factory(D)``."""
    kernel = kernel_factory(X.shape[1])
    if method == "GPR":
        return gpflow.models.GPR((X, Y), kernel, noise_variance=0.1)
    family = method.split("-", 1)[0]
    if family == "EP":
        return EPGP((X, Y), kernel, likelihood_factory(), **ep_options)
    if family == "VGP":
        return gpflow.models.VGP((X, Y), kernel, likelihood_factory())
    if family == "SVGP":
        Z = inducing_inputs(X, M, seed=seed)
        return gpflow.models.SVGP(kernel, likelihood_factory(), Z, num_data=X.shape[0])
    raise ValueError(f"method: unknown {method!r}")


class Slots:
    """
    One :class:`benchmarks.models.ModelSlot` per method and training-set shape, so that the compiled
    losses are traced once per data set, not once per split.
    """

    def __init__(
        self, likelihood_factory: Callable, M: int, ep_options: Dict, kernel_factory: Callable = se_ard_kernel
    ):
        self.likelihood_factory, self.M, self.ep_options = likelihood_factory, M, ep_options
        self.kernel_factory = kernel_factory
        self.slots: Dict = {}

    def model(self, method: str, X, Y, seed: int, values: Optional[Dict] = None):
        key = (method, X.shape)
        if key not in self.slots:
            model = build_model(
                method, X, Y, self.likelihood_factory, self.M, self.ep_options, seed, self.kernel_factory
            )
            holds = not isinstance(model, gpflow.models.SVGP)
            self.slots[key] = ModelSlot(model, X, Y, holds_data=holds)
        slot = self.slots[key]
        values = dict(values or {})
        if isinstance(slot.model, gpflow.models.SVGP):
            values["inducing_variable.Z"] = inducing_inputs(X, self.M, seed=seed)
        return slot, slot.load(X, Y, values)


def train(slot, maxiter: int) -> Dict:
    """L-BFGS-B on the slot's model (SVGP on the full batch); the optimiser's outcome and the time."""
    model = slot.model
    loss = (
        model.training_loss_closure((slot.X, slot.Y)) if isinstance(model, gpflow.models.SVGP) else model.training_loss
    )
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
        out.update(
            fallback=True,
            fallback_converged=bool(res.converged),
            fallback_sweeps=int(res.sweeps),
            fallback_time_s=time.perf_counter() - start,
        )
    return out


def predictive_metrics(model, X, Y, y_mean: float = 0.0, y_sd: float = 1.0) -> Dict:
    """
    Mean log predictive density of Y (standardised targets) mapped to the original units
    (log p(y) = log p(y_std) − log sd), and MAE and RMSE of the predictive mean in original units.
    """
    predict_f = model.posterior().predict_f if isinstance(model, EPGPC) else model.predict_f
    mu, var = predict_f(X)
    lpd = model.likelihood.predict_log_density(X, mu, var, Y).numpy()
    mean_y = model.likelihood.predict_mean_and_var(X, mu, var)[0].numpy()
    err = (mean_y - Y) * y_sd
    return dict(
        mlpd=finite_or_none(np.mean(lpd) - math.log(y_sd)),
        mae=finite_or_none(np.mean(np.abs(err))),
        rmse=finite_or_none(np.sqrt(np.mean(err**2))),
    )


def likelihood_values(model) -> Dict:
    lik = model.likelihood
    out = {}
    for name in ("df", "scale", "variance", "sigma"):
        value = getattr(lik, name, None)
        if value is not None and not callable(value):
            out[name] = float(np.asarray(value.numpy() if hasattr(value, "numpy") else value))
    return out


def run_method(slots: Slots, method: str, X, Y, Xt, Yt, y_mean, y_sd, maxiter, seed, values=None) -> Dict:
    """Train ``method``'s model of ``slots`` on (X, Y) (after assigning ``values``, see ``ModelSlot.load``); its metrics."""
    slot, model = slots.model(method, X, Y, seed, values)
    result = train(slot, maxiter)
    if isinstance(model, EPGPC):
        result["ep"] = finish_ep(model)
    result.update(predictive_metrics(model, Xt, Yt, y_mean, y_sd))
    result["likelihood"] = likelihood_values(model)
    return result


# ---------------------------------------------------------------- report


def summarise(runs: List[Dict], methods) -> Dict:
    per_set = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        rows = [r["results"] for r in runs if r["dataset"] == name]
        entry = {}
        for m in methods:
            got = [row[m] for row in rows if m in row]
            entry[m] = {k: mean_se([g.get(k) for g in got]) for k in ("mlpd", "mae", "rmse", "train_time_s")}
            eps = [g["ep"] for g in got if "ep" in g]
            if eps:
                entry[m]["ep_converged"] = sum(e["converged"] for e in eps)
                entry[m]["ep_fallback"] = sum(e["fallback"] for e in eps)
                entry[m]["ep_fallback_converged"] = sum(e.get("fallback_converged", False) for e in eps)
                entry[m]["ep_runs"] = len(eps)
            dfs = [g["likelihood"].get("df") for g in got]
            if any(d is not None for d in dfs):
                entry[m]["df"] = mean_se(dfs)
        per_set[name] = dict(splits=len(rows), methods=entry)
    return dict(per_set=per_set)


def ep_cell(entry: Dict) -> str:
    if "ep_runs" not in entry:
        return "–"
    text = f"{entry['ep_converged']}/{entry['ep_runs']}"
    if entry["ep_fallback"]:
        text += f" (double loop {entry['ep_fallback']}, converged {entry['ep_fallback_converged']})"
    return text


def results_table(report: Dict, columns=(("mlpd", 3), ("mae", 3), ("rmse", 3))) -> List[str]:
    """The per-data-set Markdown table (metrics mean ± s.e. over splits, median-free mean time, EP convergence)."""
    methods = report["config"]["methods"]
    names = {
        "mlpd": "MLPD",
        "mae": "MAE",
        "rmse": "RMSE",
        "test_ll": "test log-lik.",
        "error": "error %",
        "nlpd": "NLPD",
    }
    head = ["data set", "splits", "method", *(names.get(k, k) for k, _ in columns), "ν", "time (s)", "EP converged"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for name, row in report["summary"]["per_set"].items():
        for m in methods:
            e = row["methods"].get(m)
            if e is None:
                continue
            cells = [cell(e.get(k), d) for k, d in columns]
            df = cell(e.get("df"), 2) if "df" in e else "–"
            time_cell = cell(e["train_time_s"], 1)
            lines.append(
                f"| {name} | {row['splits']} | {m} | " + " | ".join(cells) + f" | {df} | {time_cell} | {ep_cell(e)} |"
            )
    return lines


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
        *results_table(report),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser(
        "benchmarks.robust_regression", __doc__, "results/robust_regression", QUICK_HELP, data_dir=True
    )
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)}")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--maxiter", type=int, default=100)
    parser.add_argument("--num-inducing", type=int, default=50)
    parser.add_argument(
        "--max-train", type=int, default=None, help="train on at most this many points of each training split"
    )
    add_split_grid_options(parser)
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    prefix = Path(args.out_dir) / ("robust_regression_quick" if args.quick else "robust_regression")
    if args.merge:
        return merge_split_reports(args.merge, prefix, command, summarise, markdown, log)
    datasets, methods = parse_list(args.datasets), parse_list(args.methods)
    if args.quick:
        datasets, args.splits, args.maxiter, args.num_inducing = ["neal"], 1, 5, 10
    check_choices(parser, "--methods", methods, METHODS)
    check_choices(parser, "--datasets", datasets, DATASETS)
    config = dict(
        datasets=datasets,
        methods=methods,
        splits=args.splits,
        maxiter=args.maxiter,
        num_inducing=args.num_inducing,
        max_train=args.max_train,
        ep_options=EP_OPTIONS,
        fallback_options=FALLBACK_OPTIONS,
        student_t_start=dict(scale=STUDENT_T_SCALE, df=STUDENT_T_DF, df_lower=DF_LOWER),
    )
    slots: Dict[str, Slots] = {}

    def run_split(name: str, split: int) -> Dict:
        X, Y, Xt, Yt, y_mean, y_sd = load_split(name, split, args.data_dir, args.max_train)
        per_set = slots.setdefault(name, Slots(student_t, args.num_inducing, EP_OPTIONS))
        results = {m: run_method(per_set, m, X, Y, Xt, Yt, y_mean, y_sd, args.maxiter, split) for m in methods}
        return dict(dataset=name, split=split, n_train=len(X), n_test=len(Xt), results=results)

    def describe(run) -> str:
        return f"{run['dataset']} split {run['split']}: " + ", ".join(
            f"{m} mlpd {_fmt(v['mlpd'])} mae {_fmt(v['mae'])} {v['train_time_s']:.1f}s"
            for m, v in run["results"].items()
        )

    return run_split_grid(
        datasets,
        args.splits,
        run_split,
        lambda runs: summarise(runs, methods),
        config=config,
        command=command,
        prefix=prefix,
        markdown=markdown,
        log=log,
        describe=describe,
        first_split=args.first_split,
    )


def _fmt(x: Optional[float]) -> str:
    return "nan" if x is None else f"{x:.3f}"


if __name__ == "__main__":
    raise SystemExit(main())
