r"""
Robust GP regression: EP with GPflow's ``StudentT`` likelihood against VGP, SVGP and GPR (after Jylänki,
Vanhatalo & Vehtari 2011) on Neal's data with outliers, Boston housing and concrete; and the likelihood
comparison (:class:`Comparison`) that ``benchmarks.counts_ordinal`` and ``benchmarks.logistic_uci`` also run.
Protocol and results: docs/benchmarks/robust_regression.md.
"""

import math
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.utilities import positive

from gpflow_ep.compare import inducing_inputs, make_kernel, make_model
from gpflow_ep.ep import predictive_moments, tilted_moments
from gpflow_ep.models import EPGP
from gpflow_ep.optimizers import EP

from . import runner
from .data import load_benchmark
from .models import ModelSlot, ep_fit
from .report import markdown_header
from .stats import cell, finite_or_none, markdown_table, mean_se

#: Jylänki et al.'s robust EP: parallel updates, damping, fractional updates
EP_OPTIONS = dict(schedule="parallel", damping=0.5, power=0.8, max_sweeps=200, tol=1e-6)
#: the fallback when parallel EP does not converge at the learned hyper-parameters: the engine's double loop
#: for the same power, without PC-EP's box (a Student-t fixed point can have negative site precisions)
FALLBACK_OPTIONS = dict(schedule="double_loop", power=EP_OPTIONS["power"], max_sweeps=200)
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


def student_t(scale: float = STUDENT_T_SCALE, df: float = STUDENT_T_DF) -> gpflow.likelihoods.StudentT:
    """GPflow's ``StudentT`` with its degrees of freedom ν a trained parameter (ν ≥ :data:`DF_LOWER`)."""
    likelihood = gpflow.likelihoods.StudentT(scale=scale, df=df)
    likelihood.df = gpflow.Parameter(df, transform=positive(lower=DF_LOWER), name="df")
    return likelihood


def predictive_metrics(model, X, Y, y_mean: float = 0.0, y_sd: float = 1.0) -> Dict:
    """
    MLPD of Y (standardised) in the original units (log p(y) = log p(y_std) − log sd), MAE and RMSE there.

    Every method predicts a Gaussian q(f*) = N(μ, σ²), scored by the same rule: log p(y*) = log ∫ p(y* | f)
    q(f) df is the likelihood's tilted normaliser at power 1 (``gpflow_ep.ep.tilted_moments``: closed forms or
    the adaptive quadrature, 1e-8 relative) and the predictive mean E[y*] is ``gpflow_ep.ep.predictive_moments``'
    (GPflow's ``likelihood.predict_log_density`` and ``predict_mean_and_var`` are a 20-point Gauss–Hermite rule,
    which does not resolve a likelihood much narrower than q). ``mlpd_gauss_hermite`` is GPflow's rule on the
    same predictive, kept in the reports to compare with tables made with it.
    """
    predict_f = model.posterior().predict_f if isinstance(model, EPGP) else model.predict_f
    mu, var = predict_f(X)
    X, Y = tf.convert_to_tensor(X, mu.dtype), tf.convert_to_tensor(Y, mu.dtype)
    lpd = tilted_moments(model.likelihood, X, Y, mu, var, 1.0).log_z.numpy()[:, 0]
    gauss_hermite = model.likelihood.predict_log_density(X, mu, var, Y).numpy()
    err = (predictive_moments(model.likelihood, X, mu, var)[0].numpy() - Y.numpy()) * y_sd
    return dict(
        mlpd=finite_or_none(np.mean(lpd) - math.log(y_sd)),
        mlpd_gauss_hermite=finite_or_none(np.mean(gauss_hermite) - math.log(y_sd)),
        mae=finite_or_none(np.mean(np.abs(err))),
        rmse=finite_or_none(np.sqrt(np.mean(err**2))),
    )


def likelihood_values(model) -> Dict:
    """The likelihood's scalar parameters among ν, scale, variance and σ."""
    values = {n: getattr(model.likelihood, n, None) for n in ("df", "scale", "variance", "sigma")}
    return {n: float(np.asarray(v.numpy())) for n, v in values.items() if v is not None and not callable(v)}


# ---------------------------------------------------------------- the likelihood comparisons


class Task(NamedTuple):
    """One split of a comparison: training and test data, the likelihood and how to score a model."""

    X: np.ndarray
    Y: np.ndarray
    X_test: np.ndarray
    Y_test: np.ndarray
    likelihood: Callable[[], gpflow.likelihoods.Likelihood]
    metrics: Callable[[gpflow.models.GPModel], Dict]
    values: Dict = {}  # assigned to the model before training (dotted attribute paths, see ``ModelSlot.load``)


def build(method: str, task: Task, kernel, M: int, ep_options: Dict, seed: int) -> ModelSlot:
    """A :class:`ModelSlot` of a fresh model of ``method`` ("EP…", "VGP…", "SVGP…" or "GPR") on the task's data."""
    family, data = method.split("-", 1)[0], (task.X, task.Y)
    if family == "GPR":
        return ModelSlot(make_model("gpr", data=data, kernel=kernel, noise_variance=0.1), *data)
    if family == "EP":
        return ModelSlot(make_model("epgp", data=data, kernel=kernel, likelihood=task.likelihood(), **ep_options), *data)
    if family == "VGP":
        return ModelSlot(make_model("vgp", data=data, kernel=kernel, likelihood=task.likelihood()), *data)
    Z = inducing_inputs(task.X, M, seed=seed)
    svgp = make_model("svgp", kernel=kernel, likelihood=task.likelihood(), inducing_variable=Z, num_data=len(task.X))
    return ModelSlot(svgp, *data, holds_data=False)


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
    return dict(outcome, train_time_s=time.perf_counter() - start, final_loss=finite_or_none(loss().numpy()))


def finish_ep(model) -> Dict:
    """EP at the learned hyper-parameters; when it does not converge, the double loop (:data:`FALLBACK_OPTIONS`)."""
    out = dict(ep_fit(model), fallback=False)
    del out["R_history"]
    if not out["converged"]:
        start = time.perf_counter()
        res = EP(warn=False, **FALLBACK_OPTIONS).minimize(model)
        out.update(fallback=True, fallback_converged=bool(res.converged), fallback_sweeps=int(res.sweeps))
        out["fallback_time_s"] = time.perf_counter() - start
    return out


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


@dataclass
class Comparison:
    """
    One likelihood comparison: how to load a split (``load(args, name, split)``), what it averages over splits
    (``keys``, plus ``extra(results)``), its table's ``columns`` (header, function of a summary entry) and
    ``caption`` (of the config); with ``data_kind``, ``--datasets`` may name any set of that kind.
    """

    stem: str
    title: str
    datasets: Sequence[str]
    methods: Sequence[str]
    quick: Dict
    load: Callable[..., Task]
    keys: Sequence[str]
    extra: Callable[[List[Dict]], Dict]
    columns: Sequence[Tuple[str, Callable[[Dict], str]]]
    caption: Callable[[Dict], str]
    config: Dict = field(default_factory=dict)
    kernel: Callable = make_kernel
    data_kind: Optional[str] = None
    ep_options: Dict = field(default_factory=lambda: dict(schedule="parallel", damping=0.5, max_sweeps=200, tol=1e-6))

    def summarise(self, runs: List[Dict], methods) -> Dict:
        """Per data set and method: mean ± s.e. over splits of ``keys``, EP's convergence counts, ``extra``."""
        per_set = {}
        for name in dict.fromkeys(r["dataset"] for r in runs):
            rows = [r["results"] for r in runs if r["dataset"] == name]
            entry = {}
            for m in methods:
                got = [row[m] for row in rows if m in row]
                entry[m] = {k: mean_se([g.get(k) for g in got]) for k in self.keys}
                eps = [g["ep"] for g in got if "ep" in g]
                if eps:
                    entry[m].update(ep_converged=sum(e["converged"] for e in eps), ep_runs=len(eps))
                    entry[m]["ep_fallback"] = sum(e["fallback"] for e in eps)
                    entry[m]["ep_fallback_converged"] = sum(e.get("fallback_converged", False) for e in eps)
                entry[m].update(self.extra(got))
            per_set[name] = dict(splits=len(rows), methods=entry)
        return dict(per_set=per_set)

    def table(self, report: Dict) -> List[str]:
        """One Markdown row per data set and method of the summary: data set, splits, method and ``columns``."""
        rows = [
            [name, row["splits"], m, *(column(row["methods"][m]) for _, column in self.columns)]
            for name, row in report["summary"]["per_set"].items()
            for m in report["config"]["methods"]
            if m in row["methods"]
        ]
        return markdown_table(["data set", "splits", "method", *(name for name, _ in self.columns)], rows)

    def markdown(self, report: Dict) -> str:
        lines = markdown_header(self.title, report) + [self.caption(report["config"]), "", *self.table(report)]
        return "\n".join(lines) + "\n"

    def main(self, doc: str, argv=None, shared: bool = False, options: Sequence[Tuple[str, Dict]] = ()) -> int:
        """Every method trained (:func:`train`; EP then :func:`finish_ep`) and scored on every split, or ``--merge``."""
        log = runner.progress_logger(self.stem)
        quick = ", ".join(f"{k} {v}" for k, v in self.quick.items())
        parser = runner.benchmark_parser(f"benchmarks.{self.stem}", doc, f"results/{self.stem}", quick, data_dir=True)
        parser.add_argument("--datasets", default=",".join(self.datasets))
        parser.add_argument("--methods", default=",".join(self.methods), help=f"among {', '.join(self.methods)}")
        parser.add_argument("--splits", type=int, default=5)
        parser.add_argument("--maxiter", type=int, default=100)
        parser.add_argument("--num-inducing", type=int, default=50)
        for name, kwargs in options:
            parser.add_argument(name, **kwargs)
        runner.add_split_grid_options(parser)
        args, command = runner.parse_command_line(parser, argv, shared=shared, log=log)
        if args.quick:
            vars(args).update(self.quick)
        prefix = Path(args.out_dir) / (f"{self.stem}_quick" if args.quick else self.stem)
        if args.merge:
            return runner.merge_split_reports(args.merge, prefix, command, self.summarise, self.markdown, log)
        datasets, methods = runner.parse_list(args.datasets), runner.parse_list(args.methods)
        runner.check_choices(parser, "--methods", methods, self.methods)
        if self.data_kind:  # any set of that kind in the data directory
            runner.check_datasets(parser, datasets, self.data_kind, args.data_dir)
        else:
            runner.check_choices(parser, "--datasets", datasets, self.datasets)
        settings = {k: getattr(args, k) for k in ("splits", "maxiter", "num_inducing", "max_train") if hasattr(args, k)}
        config = dict(datasets=datasets, methods=methods, **settings, ep_options=self.ep_options, **self.config)
        slots: Dict[Tuple, ModelSlot] = {}  # one per data set, method and shape: compiled once, not once per split

        def run_split(name: str, split: int) -> Dict:
            task, results = self.load(args, name, split), {}
            for m in methods:
                key = (name, m, task.X.shape)
                if key not in slots:
                    kernel = self.kernel(task.X.shape[1])
                    slots[key] = build(m, task, kernel, args.num_inducing, self.ep_options, split)
                values = dict(task.values)
                if isinstance(slots[key].model, gpflow.models.SVGP):
                    values["inducing_variable.Z"] = inducing_inputs(task.X, args.num_inducing, seed=split)
                model = slots[key].load(task.X, task.Y, values)
                results[m] = train(slots[key], args.maxiter)
                if isinstance(model, EPGP):
                    results[m]["ep"] = finish_ep(model)
                results[m].update(task.metrics(model))
            log(f"{name} split {split}: " + ", ".join(f"{m} {v['train_time_s']:.1f} s" for m, v in results.items()))
            return dict(dataset=name, split=split, n_train=len(task.X), n_test=len(task.X_test), results=results)

        grid = dict(config=config, command=command, prefix=prefix, markdown=self.markdown, log=log)
        summarise = partial(self.summarise, methods=methods)
        return runner.run_split_grid(datasets, args.splits, run_split, summarise, first_split=args.first_split, **grid)


# ---------------------------------------------------------------- this benchmark


def load(args, name: str, split: int) -> Task:
    """Standardised inputs and targets of a split; the metrics in the targets' original units."""
    if name == "neal":
        X, y = neal_data(seed=1000 + split, n=NEAL_TRAIN + NEAL_TEST)
        X, Xt, _, _ = standardise(X[:NEAL_TRAIN], X[NEAL_TRAIN:])
        y, yt = y[:NEAL_TRAIN], y[NEAL_TRAIN:]
    else:
        s = load_benchmark(name, split, args.data_dir, kind="regression")
        X, Xt, y, yt = s.X_train, s.X_test, s.Y_train, s.Y_test
    y, yt, _, sd = standardise(y, yt)
    X, y = subsample(X, y, args.max_train, split)

    def metrics(model) -> Dict:
        return dict(predictive_metrics(model, Xt, yt, y_sd=float(sd[0])), likelihood=likelihood_values(model))

    return Task(X, y, Xt, yt, student_t, metrics)


def degrees_of_freedom(got: List[Dict]) -> Dict:
    """ν, mean ± s.e. over splits, for the Student-t models."""
    dfs = [g["likelihood"].get("df") for g in got]
    return dict(df=mean_se(dfs)) if any(d is not None for d in dfs) else {}


def caption(c: Dict) -> str:
    return (
        f"SE-ARD kernel; L-BFGS-B, maxiter {c['maxiter']}; SVGP M = {c['num_inducing']}; training points: "
        f"{'all' if c.get('max_train') is None else 'at most ' + str(c['max_train'])}; EP options {c['ep_options']}, "
        f"fallback {c['fallback_options']}. MLPD: mean log predictive density of the test targets in their original "
        "units, log ∫ p(y*|f) q(f*) df under each method's Gaussian predictive q by the package's accurate "
        "quadrature (higher is better); MAE, RMSE of the predictive mean (original units); time: hyper-parameter "
        "training (compilation included on the first split of each data set). Mean ± s.e. over splits."
    )


COMPARISON = Comparison(
    stem="robust_regression",
    title="Robust GP regression with a Student-t likelihood",
    datasets=("neal", "bostonHousing", "concrete"),
    methods=("EP-t", "VGP-t", "SVGP-t", "GPR"),
    quick=dict(datasets="neal", splits=1, maxiter=5, num_inducing=10),
    load=load,
    keys=("mlpd", "mae", "rmse", "train_time_s"),
    extra=degrees_of_freedom,
    columns=(
        ("MLPD", stat("mlpd", 3)),
        ("MAE", stat("mae", 3)),
        ("RMSE", stat("rmse", 3)),
        ("ν", stat("df", 2)),
        ("time (s)", stat("train_time_s", 1)),
        ("EP converged", ep_cell),
    ),
    caption=caption,
    config=dict(
        fallback_options=FALLBACK_OPTIONS,
        student_t_start=dict(scale=STUDENT_T_SCALE, df=STUDENT_T_DF, df_lower=DF_LOWER),
    ),
    ep_options=EP_OPTIONS,
)
METHODS = COMPARISON.methods


def main(argv=None, shared: bool = False) -> int:
    max_train = dict(type=int, help="train on at most this many points of each training split")
    return COMPARISON.main(__doc__, argv, shared, options=[("--max-train", max_train)])


if __name__ == "__main__":
    raise SystemExit(main())
