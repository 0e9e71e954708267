r"""
Helpers shared by the benchmarks and paper reproductions of this folder: one copy each of

* time and machine: :func:`utc_now`, :func:`load_average`, :func:`machine_info`,
  :func:`timed_report` (a report with its command, timestamps, wall time and machine);
* command lines: :func:`benchmark_parser` (``--out-dir``, ``--quick``, ...), :func:`parse_list`,
  :func:`parse_command_line` (options and the command for the reports), :func:`run_parts` (a
  runner of several benchmarks sharing one command line), :func:`progress_logger`;
* statistics: :func:`finite_or_none`, :func:`mean_se`, :func:`paired_differences`;
* models: :func:`se_ard_kernel`, :func:`fixed_noisy_step`, :func:`build_ep_model` (EP, power EP
  or relaxed EP from a method spec), :func:`ep_fit`, :class:`ModelSlot` (one model reused across
  data sets of one shape), :func:`evaluate` (test error and NLPD);
* sparse models trained on minibatches (the SEP benchmarks): :func:`random_subset`,
  :func:`make_optimizer`, :class:`MinibatchRunner`;
* outputs: :func:`json_default`, :func:`write_json`, :func:`write_report` (JSON + Markdown),
  :func:`rerender_report` (``--rerender``), :func:`markdown_header`, :func:`markdown_section` and
  :func:`claim_items`.
"""

import argparse
import datetime as _dt
import importlib
import json
import math
import os
import platform
import shlex
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from scipy.stats import t as student_t

from gpflow_ep.compare import make_kernel as se_ard_kernel
from gpflow_ep.datasets import available_benchmarks
from gpflow_ep.likelihoods import NoisyStep, Probit
from gpflow_ep.models import EPGPC, SEPGPC, PowerEP, RelaxedEP
from gpflow_ep.optimizers import EP
from gpflow_ep.training import make_dataset, make_train_step, paper_adadelta

__all__ = [
    "utc_now",
    "load_average",
    "machine_info",
    "timed_report",
    "RunClock",
    "benchmark_parser",
    "parse_list",
    "parse_command_line",
    "run_parts",
    "progress_logger",
    "finite_or_none",
    "mean_se",
    "paired_differences",
    "se_ard_kernel",
    "fixed_noisy_step",
    "build_ep_model",
    "ep_fit",
    "ModelSlot",
    "evaluate",
    "SEP_DAMPING",
    "MINIBATCH_DAMPING",
    "MINIBATCH_NOTE",
    "SHARED_MACHINE_NOTE",
    "random_subset",
    "make_optimizer",
    "MinibatchRunner",
    "run_split_grid",
    "add_split_grid_options",
    "merge_split_reports",
    "race",
    "logistic_regression_baseline",
    "plot_race",
    "TimedSteps",
    "json_default",
    "write_json",
    "write_report",
    "rerender_report",
    "markdown_header",
    "markdown_section",
    "claim_items",
]

# ---------------------------------------------------------------- time and machine


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (for the outputs' headers)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def load_average() -> Optional[List[float]]:
    """1/5/15-minute load averages (other processes on the machine skew timings)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        return None


def _cpu_model() -> Optional[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_info() -> Dict:
    """Python, platform, CPU, thread settings and the versions of TensorFlow, GPflow and NumPy."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        affinity = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "tensorflow": tf.__version__,
        "gpflow": gpflow.__version__,
        "numpy": np.__version__,
        "tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "tf_inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
        "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
    }


def timed_report(command: str, run: Callable[[], Dict]) -> Dict:
    """
    ``run()``'s report plus ``command``, ``started``, ``finished``, ``wall_time_s`` and ``machine``
    (with the load averages at start and end).
    """
    clock = RunClock()
    return clock.stamp(run(), command)


class RunClock:
    """
    Started with a run: :meth:`stamp` gives a report (partial or final) the command, the run's
    start, the time now as its finish, the wall time since the start and the machine.
    """

    def __init__(self):
        self.started, self.t0, self.load_start = utc_now(), time.perf_counter(), load_average()

    def stamp(self, body: Dict, command: str) -> Dict:
        return dict(
            body,
            command=command,
            started=self.started,
            finished=utc_now(),
            wall_time_s=time.perf_counter() - self.t0,
            machine=dict(machine_info(), load_average_start=self.load_start, load_average_end=load_average()),
        )


def run_split_grid(
    datasets: Sequence[str],
    splits: int,
    run_split: Callable[[str, int], Dict],
    summarise: Callable[[List[Dict]], Dict],
    *,
    config: Dict,
    command: str,
    prefix: Path,
    markdown: Callable[[Dict], str],
    log: Callable[[str], None],
    describe: Optional[Callable[[Dict], str]] = None,
    first_split: int = 0,
) -> int:
    """
    ``run_split(name, split)`` for every data set and each of its splits ``first_split`` …
    ``first_split + splits - 1``; after each split the report so far is written (a stopped run
    leaves its finished splits behind, timed from the start of the run), at the end the whole one,
    as ``{config, runs, summary: summarise(runs)}`` with :func:`timed_report`'s fields.
    ``describe(run)``, if given, is logged after each split. Runs over different data sets or
    splits are joined by :func:`merge_split_reports`. Returns 0.
    """

    def body(runs: List[Dict]) -> Dict:
        return dict(config=dict(config, first_split=first_split), runs=runs, summary=summarise(runs))

    clock, runs = RunClock(), []
    for name in datasets:
        for split in range(first_split, first_split + splits):
            runs.append(run_split(name, split))
            if describe is not None:
                log(describe(runs[-1]))
            partial = clock.stamp(body(runs), command)
            write_report(prefix, partial, markdown(partial))
    report = clock.stamp(body(runs), command)
    json_path, md_path = write_report(prefix, report, markdown(report))
    log(f"wrote {json_path} and {md_path}")
    return 0


#: the settings of a split-grid report that may differ between the reports :func:`merge_split_reports` joins
GRID_KEYS = ("datasets", "splits", "first_split", "large_splits", "splits_per_dataset")


def add_split_grid_options(parser: argparse.ArgumentParser) -> None:
    """``--first-split`` and ``--merge`` for a benchmark over data sets × fixed splits."""
    parser.add_argument(
        "--first-split", type=int, default=0, help="index of the first split to run (to add splits to an earlier run)"
    )
    parser.add_argument(
        "--merge",
        default=None,
        help="comma-separated JSON reports of runs with the same settings over different data sets or splits: "
        "write their union (by data set and split) and exit",
    )


def merge_split_reports(
    paths: Union[str, Sequence[str]],
    prefix: Union[Path, Callable[[Dict], Path]],
    command: str,
    summarise: Callable[[List[Dict], Sequence[str]], Dict],
    markdown: Callable[[Dict], str],
    log: Callable[[str], None],
) -> int:
    """
    One report from several runs of a split-grid benchmark with the same settings (all but
    :data:`GRID_KEYS`), over different data sets or different splits: the union of their runs by
    (data set, split), the first report's where two hold the same, summarised again
    (``summarise(runs, methods)``); ``splits`` becomes the most splits any data set has, and
    ``splits_per_dataset`` says how many each has. The merged ``command`` lists each report's
    command with the splits kept from it (a stopped run lists data sets it never reached). Every
    run keeps the CPU it ran on (``cpu_model``, from its report's ``machine`` unless it has one) and
    ``cpu_models`` counts the runs per CPU: timings from different machines must not be pooled.
    ``paths`` may be ``--merge``'s comma-separated text; ``prefix`` a function of the merged settings
    (when the file name depends on them). Returns 0.
    """
    if isinstance(paths, str):
        paths = parse_list(paths)
    reports = [json.loads(Path(p).read_text()) for p in paths]
    settings = [{k: v for k, v in r["config"].items() if k not in GRID_KEYS} for r in reports]
    if any(s != settings[0] for s in settings):
        raise ValueError(f"--merge: the reports have different settings: {settings}")
    runs, seen, commands = [], set(), []
    for r in reports:
        kept = [run for run in r["runs"] if (run["dataset"], run["split"]) not in seen]
        seen.update((run["dataset"], run["split"]) for run in kept)
        for run in kept:
            run.setdefault("cpu_model", r["machine"]["cpu_model"])
        runs += kept
        commands.append(f"{r['command']} [kept: {_split_ranges(kept) or 'nothing'}]")
    datasets = list(dict.fromkeys(run["dataset"] for run in runs))
    runs.sort(key=lambda run: (datasets.index(run["dataset"]), run["split"]))
    counts = [sum(run["dataset"] == name for run in runs) for name in datasets]
    config = dict(reports[0]["config"], datasets=datasets, splits=max(counts), first_split=0)
    config["splits_per_dataset"] = dict(zip(datasets, counts))
    merged = dict(
        config=config,
        runs=runs,
        summary=summarise(runs, config["methods"]),
        command=" + ".join(commands) + f" (merged by `{command}`)",
        started=min(r["started"] for r in reports),
        finished=max(r["finished"] or r["started"] for r in reports),
        wall_time_s=sum(r["wall_time_s"] for r in reports),
        machine=reports[0]["machine"],
        cpu_models=dict(Counter(run["cpu_model"] for run in runs)),
    )
    json_path, md_path = write_report(prefix(config) if callable(prefix) else prefix, merged, markdown(merged))
    log(f"wrote {json_path} and {md_path}")
    return 0


# ---------------------------------------------------------------- command lines and progress


def _split_ranges(runs: Sequence[Dict]) -> str:
    """``"wine 3–19; iris 3–8, 10"``: the splits of each data set among ``runs`` (the runs a report gave a merge)."""
    parts = []
    for name in dict.fromkeys(run["dataset"] for run in runs):
        splits = sorted(run["split"] for run in runs if run["dataset"] == name)
        ranges, start = [], splits[0]
        for previous, split in zip(splits, splits[1:] + [None]):
            if split != previous + 1:
                ranges.append(f"{start}" if start == previous else f"{start}–{previous}")
                start = split
        parts.append(f"{name} {', '.join(ranges)}")
    return "; ".join(parts)


def benchmark_parser(
    module: str, doc: str, default_out_dir: str, quick: str, *, data_dir: bool = False, optimizer: bool = False
) -> argparse.ArgumentParser:
    """
    The argument parser of ``python -m <module>``, described by the first paragraph of ``doc`` (the
    module's docstring), with the options every benchmark has: ``--out-dir`` (default
    ``default_out_dir``) and ``--quick`` (``quick`` says what it runs); with ``data_dir``,
    ``--data-dir`` (the ``shared/datasets`` layout); with ``optimizer``, ``--optimizer`` (default
    ``adam:0.01``, see :func:`make_optimizer`).
    """
    description = " ".join(doc.strip().split("\n\n")[0].split())
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument("--out-dir", default=default_out_dir, help=f"output directory (default {default_out_dir})")
    parser.add_argument("--quick", action="store_true", help=f"smoke configuration: {quick}")
    if data_dir:
        parser.add_argument(
            "--data-dir", default=None, help="benchmark data directory (default: $GPFLOW_EP_DATA, ../shared/datasets)"
        )
    if optimizer:
        parser.add_argument("--optimizer", default="adam:0.01", help="minibatch optimiser: adam[:lr] or adadelta")
    return parser


def check_choices(parser: argparse.ArgumentParser, option: str, values: Sequence, allowed: Sequence) -> None:
    """A usage error (``parser.error``) naming ``option`` unless every one of ``values`` is in ``allowed``."""
    unknown = sorted(set(values) - set(allowed))
    if unknown:
        parser.error(f"{option}: unknown {unknown}; choose among {list(allowed)}")


def check_datasets(parser: argparse.ArgumentParser, datasets: Sequence[str], kind: str, data_dir) -> None:
    """
    A usage error unless every one of ``datasets`` is a ``kind`` benchmark set found in ``data_dir``
    (also when there is no data directory: it names ``--data-dir``).
    """
    try:
        found = available_benchmarks(kind, data_dir)
    except ValueError as error:
        parser.error(f"--data-dir: {error}")
    missing = sorted(set(datasets) - set(found))
    if missing:
        parser.error(f"--datasets: not found {missing}")


def parse_list(text: str, kind: Callable = str) -> List:
    """``"a, b,c"`` → ``[kind("a"), kind("b"), kind("c")]`` (empty items dropped)."""
    return [kind(t.strip()) for t in text.split(",") if t.strip()]


def parse_command_line(
    parser: argparse.ArgumentParser,
    argv: Optional[Sequence[str]],
    *,
    shared: bool = False,
    log: Optional[Callable[[str], None]] = None,
) -> Tuple[argparse.Namespace, str]:
    """
    A benchmark's options from ``argv`` (default ``sys.argv[1:]``) and the command that ran it,
    ``"<parser.prog> <argv>"``, for the reports. Every benchmark computes in float64 (GPflow's
    default float is set to it) and TensorFlow's Python logger is set to errors only.
    With ``shared`` (``argv`` is the command line of a runner of several benchmarks,
    :func:`run_parts`), the options of the other benchmarks are logged and ignored.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if shared:
        args, ignored = parser.parse_known_args(argv)
        if ignored and log is not None:
            log(f"ignoring options meant for other parts: {ignored}")
    else:
        args = parser.parse_args(argv)
    gpflow.config.set_default_float(np.float64)
    tf.get_logger().setLevel("ERROR")
    return args, f"{parser.prog} {shlex.join(argv)}".strip()


def progress_logger(name: str) -> Callable[[str], None]:
    """A function printing ``[name HH:MM:SS] message`` to stderr."""

    def log(message: str) -> None:
        print(f"[{name} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    return log


def run_parts(
    module: str,
    description: str,
    parts: Mapping[str, str],
    default_out_dir: str,
    argv: Optional[Sequence[str]] = None,
) -> int:
    """
    Run several benchmarks in turn: ``--parts`` (names among ``parts``, which maps a name to a
    module with ``main(argv, shared=True) -> int``) and ``--out-dir``; every other option is passed
    to every part, which ignores those that are not its own.

    :return: 0, or the first non-zero status of a part.
    """
    parser = argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=description,
        epilog="Other options are passed to every part; see python -m <part module> --help.",
    )
    parser.add_argument("--parts", default=",".join(parts), help=f"comma separated (default {','.join(parts)})")
    parser.add_argument("--out-dir", default=default_out_dir, help=f"output directory (default {default_out_dir})")
    args, rest = parser.parse_known_args(argv)
    names = parse_list(args.parts)
    unknown = sorted(set(names) - set(parts))
    if unknown or not names:
        parser.error(f"--parts must be among {list(parts)}; got {names}")
    for name in names:
        status = importlib.import_module(parts[name]).main(["--out-dir", args.out_dir, *rest], shared=True)
        if status:
            return int(status)
    return 0


# ---------------------------------------------------------------- statistics


def finite_or_none(x) -> Optional[float]:
    """``float(x)`` when finite, else ``None`` (JSON has no NaN)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def mean_se(values: Iterable, missing=None) -> Dict:
    """
    Mean, standard error (ddof 1) and count of the finite values (``None`` and NaN are dropped);
    ``missing`` stands for a mean or standard error that does not exist (no value; one value).
    """
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        return {"mean": missing, "se": missing, "n": 0}
    se = float(np.std(x, ddof=1) / math.sqrt(x.size)) if x.size > 1 else missing
    return {"mean": float(np.mean(x)), "se": se, "n": int(x.size)}


def format_mean_se(
    stat: Optional[Mapping], digits: int = 2, signed: bool = False, scale: float = 1.0, missing: str = "—"
) -> str:
    """
    A :func:`mean_se` result as "mean ± se" (``missing`` without values, no "± " with one value);
    ``signed`` writes the mean's sign always, as for a difference ("+0.12 ± 0.03"); mean and s.e. are
    multiplied by ``scale`` (100 for percentages).
    """
    if not stat or stat.get("mean") is None:
        return missing
    se = "" if stat.get("se") is None else f" ± {stat['se'] * scale:.{digits}f}"
    return f"{stat['mean'] * scale:{'+' if signed else ''}.{digits}f}{se}"


def paired_differences(a: Mapping, b: Mapping, tie: float = 1e-12) -> Dict:
    """
    a − b over the keys both have (splits, repetitions), skipping ``None``: :func:`mean_se` of the
    differences, the wins (a lower by more than ``tie``), ties and losses of a, and ``t95``, the
    97.5 % Student-t quantile for a 95 % interval of the mean (``None`` below two pairs).
    """
    diffs = [a[k] - b[k] for k in a if k in b and a[k] is not None and b[k] is not None]
    stats = mean_se(diffs)
    d = np.array(diffs)
    stats.update(
        {
            "wins": int(np.sum(d < -tie)),
            "ties": int(np.sum(np.abs(d) <= tie)),
            "losses": int(np.sum(d > tie)),
            "t95": float(student_t.ppf(0.975, len(diffs) - 1)) if len(diffs) > 1 else None,
        }
    )
    return stats


# ---------------------------------------------------------------- models


def fixed_noisy_step(eps: float) -> NoisyStep:
    """``NoisyStep(eps)`` with eps not trained."""
    likelihood = NoisyStep(eps)
    gpflow.set_trainable(likelihood.epsilon, False)
    return likelihood


def build_ep_model(spec: Mapping, data, kernel, likelihood, options: Mapping):
    """
    A fresh EP-family model of a method spec on ``data``: ``spec["family"]`` is "EP" (``EPGPC``),
    "PEP" (``PowerEP`` with ``spec["u"]`` and ``spec["cavity"]``) or a relaxed-EP family
    (``RelaxedEP`` with ``spec["c"]``, ``spec["message_update"]``, ``spec["objective"]``);
    ``options`` are the EP settings (schedule, criterion, tol, ...).
    """
    if spec["family"] == "EP":
        return EPGPC(data, kernel, likelihood, **options)
    if spec["family"] == "PEP":
        return PowerEP(data, kernel, likelihood, power=spec["u"], cavity=spec["cavity"], **options)
    return RelaxedEP(
        data,
        kernel,
        likelihood,
        penalty=spec["c"],
        message_update=spec["message_update"],
        objective=spec["objective"],
        **options,
    )


def ep_fit(model) -> Dict:
    """Run EP from the model's current sites (``gpflow_ep.optimizers.EP``); the outcome as plain numbers."""
    start = time.perf_counter()
    res = EP(warn=False).minimize(model)
    elapsed = time.perf_counter() - start
    tau, nu = (v.numpy() for v in model.sites.read())
    return {
        "converged": bool(res.converged),
        "sweeps": int(res.sweeps),
        "final_R": finite_or_none(res.max_change),
        "num_skipped": int(res.num_skipped),
        "finite": bool(np.all(np.isfinite(tau)) and np.all(np.isfinite(nu))),
        "R_history": [float(f"{h:.4g}") for h in res.history],
        "fit_time_s": elapsed,
    }


def _attribute(obj, path: str):
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


class ModelSlot:
    r"""
    One model reused across data sets of one shape (splits, repetitions): the training inputs and
    labels live in non-trainable ``tf.Variable``\ s (:attr:`X`, :attr:`Y`; also the model's
    ``data`` when ``holds_data``), and :meth:`load` resets every variable of the model
    (hyper-parameters, sites, variational parameters) to its value at construction before loading
    a data set. Results equal those of a fresh model, while every compiled function (the model's
    own, Scipy's cached loss and gradient, a train step) is traced once per slot instead of once
    per data set.

    :param model: the model, built on data of the shape of the data sets to come.
    :param spec: an optional description of the method (kept as :attr:`spec`).
    """

    def __init__(self, model, X, Y, *, holds_data: bool = True, spec: Optional[Dict] = None):
        dtype = gpflow.config.default_float()
        self.X = tf.Variable(np.asarray(X, float), trainable=False, dtype=dtype, name="X")
        self.Y = tf.Variable(np.asarray(Y, float), trainable=False, dtype=dtype, name="Y")
        if holds_data:
            model.data = (self.X, self.Y)
        self.model, self.spec, self.shape = model, spec, np.shape(X)
        self.initial = [(v, v.numpy().copy()) for v in model.variables]  # the variables themselves, not their order
        self._scipy = None

    def load(self, X, Y, values: Optional[Mapping] = None):
        """
        Reset the model, load (X, Y) and assign ``values`` (``{"kernel.lengthscales": 2.0, ...}``:
        dotted attribute paths of the model).

        :return: the model.
        """
        for variable, value in self.initial:
            variable.assign(value)
        self.X.assign(np.asarray(X, float))
        self.Y.assign(np.asarray(Y, float))
        for path, value in (values or {}).items():
            _attribute(self.model, path).assign(value)
        return self.model

    def minimize(self, loss: Callable, maxiter: int, **kwargs):
        """``gpflow.optimizers.Scipy().minimize`` on the model's trainable variables (one Scipy per slot)."""
        if self._scipy is None:
            self._scipy = gpflow.optimizers.Scipy()  # caches the compiled loss and gradient
        options = dict(maxiter=int(maxiter))
        return self._scipy.minimize(loss, self.model.trainable_variables, options=options, **kwargs)


def evaluate(model, X, Y, *, dual: bool = False, chunk: Optional[int] = None) -> Dict:
    r"""
    Test error and mean test NLPD of ``model`` on (X, Y), Y in {0, 1}, from the model's stored state:
    EP models (``EPGPC`` and its subclasses) predict from their sites through ``posterior()``, with
    no further EP run; other models (``SEPGPC``, GPflow's) through ``predict_f``.

    The error counts sign(E[f*]) ≠ y, the same as thresholding p(y* = 1) at ½ for the probit and
    noisy-step likelihoods; the NLPD is −mean ``likelihood.predict_log_density``.

    :param dual: also predict with the mean Σ_j dual_j k(x*, x_j) of Minka's predictor
        (``predict_with="dual"``; the variance still from q): ``error_dual``, ``nlpd_dual``.
    :param chunk: predict at most this many points at a time.
    :return: ``error``, ``nlpd`` (and ``error_dual``, ``nlpd_dual``), ``mean_finite`` (every
        predictive mean finite) and ``finite`` (every mean and log density finite).
    """
    X = np.asarray(X, float)
    Y = np.asarray(Y, float)
    n = X.shape[0]
    chunk = n if chunk is None else int(chunk)
    modes = ("sites", "dual") if dual else ("sites",)
    ep_model = isinstance(model, EPGPC)
    predict_f = model.posterior().predict_f if ep_model else model.predict_f
    previous = getattr(model, "predict_with", None)
    wrong = {m: 0.0 for m in modes}
    lpd = {m: 0.0 for m in modes}
    mean_finite = finite = True
    try:
        for start in range(0, n, max(chunk, 1)):
            Xc, Yc = X[start : start + chunk], Y[start : start + chunk]
            for mode in modes:
                if ep_model:
                    model.predict_with = mode
                mu, var = predict_f(Xc)
                log_density = model.likelihood.predict_log_density(Xc, mu, var, Yc).numpy()
                mu = mu.numpy()
                mean_finite &= bool(np.all(np.isfinite(mu)))
                finite &= bool(np.all(np.isfinite(mu)) and np.all(np.isfinite(log_density)))
                wrong[mode] += float(np.sum((mu > 0) != (Yc > 0.5)))
                lpd[mode] += float(np.sum(log_density))
    finally:
        if ep_model:
            model.predict_with = previous
    out = {"error": wrong["sites"] / n, "nlpd": -lpd["sites"] / n}
    if dual:
        out.update(error_dual=wrong["dual"] / n, nlpd_dual=-lpd["dual"] / n)
    out.update(mean_finite=mean_finite, finite=finite)
    return out


# ---------------------------------------------------------------- sparse models on minibatches

#: the SEP paper's damping of the parallel (batch) EP schedule
SEP_DAMPING = 0.5
#: the damping of SEP's minibatch site refresh
MINIBATCH_DAMPING = 0.99

MINIBATCH_NOTE = (
    "Minibatches come from `gpflow_ep.training.make_dataset` (shuffle → batch with drop_remainder → repeat), so "
    "no batch holds a site index twice; each epoch drops n mod batch points (different ones each epoch). "
    "(Before that builder batched within epochs, a batch straddling an epoch boundary could repeat a site and "
    "corrupt the running sums Λ_u, η_u — Crabs n=180, batch 50: test NLL 1.95 instead of 0.14; "
    "the minibatch refresh (`SEPGPC.refresh_sites`) now refuses such batches.)"
)
#: :func:`markdown_header` note of the SEP benchmarks
SHARED_MACHINE_NOTE = "other jobs shared the machine: absolute times are inflated; compare ratios"


def random_subset(X: np.ndarray, M: int, seed: int) -> np.ndarray:
    """M rows of X drawn without replacement (``seed``), in their original order: initial inducing inputs."""
    rng = np.random.default_rng(seed)
    return X[np.sort(rng.choice(X.shape[0], size=M, replace=False))].copy()


def make_optimizer(name: str):
    """``"adam"`` or ``"adam:<lr>"`` (default lr 0.01), or ``"adadelta"`` (the SEP paper's settings)."""
    if name == "adadelta":
        return paper_adadelta()
    if name.startswith("adam"):
        lr = float(name.split(":", 1)[1]) if ":" in name else 0.01
        return tf_keras.optimizers.Adam(lr)
    raise ValueError(f"unknown optimiser {name!r}; use adam[:lr] or adadelta")


class TimedSteps:
    """
    A compiled train step and its batch iterator, timed in chunks: :meth:`run` takes ``k`` steps and
    records (and returns) the seconds per step of the chunk in :attr:`per_step`. The step returns a
    loss or a tuple whose first entry is the loss (``make_train_step``'s (loss, skipped, applied)).
    """

    def __init__(self, step: Callable, batches):
        self.step, self.batches = step, batches
        self.per_step: List[float] = []

    def run(self, k: int) -> float:
        t0 = time.perf_counter()
        loss = None
        for _ in range(k):
            loss = self.step(next(self.batches))
        float(loss[0] if isinstance(loss, tuple) else loss)
        self.per_step.append((time.perf_counter() - t0) / k)
        return self.per_step[-1]

    def median_per_step(self) -> float:
        """Median seconds per step over the chunks after the first (the compiling one), if any."""
        return float(np.median(self.per_step[1:] or self.per_step))


class MinibatchRunner:
    """
    A sparse model trained on minibatches: ``SEPGPC`` (``method="SEP minibatch"``: minibatch EP,
    damping :data:`MINIBATCH_DAMPING`, and surrogate-gradient steps) or GPflow's whitened ``SVGP``
    (``method="SVGP"``), SE-ARD kernel and probit likelihood, inducing inputs starting at Z, or a
    given ``model``; its compiled train step (``gpflow_ep.training.make_train_step``) and minibatch
    iterator. :meth:`run` times chunks of steps; :func:`race` trains several against the clock.
    """

    def __init__(self, method: str, X, Y, Z, batch_size: int, optimizer: str, seed: int = 0, model=None):
        n, D = X.shape
        if model is not None:  # any model fit's train step takes (another benchmark's)
            self.model = model
        elif method == "SVGP":
            self.model = gpflow.models.SVGP(se_ard_kernel(D), Probit(), Z.copy(), num_data=n)
        else:
            self.model = SEPGPC(
                se_ard_kernel(D),
                Probit(),
                Z.copy(),
                num_data=n,
                damping=SEP_DAMPING,
                minibatch_damping=MINIBATCH_DAMPING,
            )
        self.method, self.n, self.batch_size = method, n, batch_size
        self.optimizer = make_optimizer(optimizer)
        self.step = make_train_step(self.model, self.optimizer)
        self.iterator = iter(make_dataset((X, Y), batch_size, seed=seed, drop_remainder=True))
        self.steps, self.train_seconds, self.skipped = 0, 0.0, 0
        self.chunk_times = []  # (steps, seconds)

    def run(self, k: int):
        """``k`` train steps; return (last loss, seconds)."""
        t0 = time.perf_counter()
        loss = None
        for _ in range(k):
            loss, skipped, _ = self.step(next(self.iterator))
            self.skipped += int(skipped)
        loss = float(loss)
        dt = time.perf_counter() - t0
        self.steps += k
        self.train_seconds += dt
        self.chunk_times.append((k, dt))
        return loss, dt


def race(
    runners: Mapping[str, "MinibatchRunner"],
    evaluate: Callable,
    time_budget: float,
    eval_every: int,
    steps_per_epoch: int,
    max_steps: Optional[int] = None,
    log: Callable[[str], None] = print,
) -> Dict:
    """
    Train ``runners`` in interleaved chunks of ``eval_every`` steps until each has used
    ``time_budget`` seconds of training (or ``max_steps``), each chunk followed by
    ``evaluate(model)`` (a dict with ``error`` and ``nll``) outside the training clock; the first
    (compiling) step of each is timed apart. Returns ``curves`` (per method, the evaluations with
    ``step`` and ``time_s``) and ``results`` (steps, epochs, median time per step and per epoch,
    the final and best evaluation, skipped site updates). The median time per step is taken over
    the chunks run while every method was still training (side by side; a method that goes on
    alone runs in a quieter machine), ``per_step_median_all_s`` over all of them.
    """
    curves = {m: [dict(step=0, time_s=0.0, **evaluate(r.model))] for m, r in runners.items()}
    compile_s = {}
    for m, r in runners.items():
        compile_s[m] = r.run(1)[1]
        r.train_seconds, r.chunk_times = 0.0, []
    log(f"first (compiling) step: {compile_s}")
    side_by_side: Dict[str, List[float]] = {m: [] for m in runners}
    while True:
        active = [
            m
            for m, r in runners.items()
            if r.train_seconds < time_budget and (max_steps is None or r.steps < max_steps)
        ]
        if not active:
            break
        for m in active:
            loss, dt = runners[m].run(eval_every)
            if len(active) == len(runners):
                side_by_side[m].append(dt / eval_every)
            r = runners[m]
            curves[m].append(dict(step=r.steps, time_s=r.train_seconds, loss=loss, **evaluate(r.model)))
        log(
            "; ".join(
                f"{m}: step {r.steps} t {r.train_seconds:.1f}s err {curves[m][-1]['error']:.4f} "
                f"nll {curves[m][-1]['nll']:.4f}"
                for m, r in runners.items()
            )
        )
    results = {}
    for m, r in runners.items():
        every = [dt / k for k, dt in r.chunk_times]
        med = float(np.median(side_by_side[m] or every))
        results[m] = dict(
            per_step_median_all_s=float(np.median(every)),
            side_by_side_chunks=len(side_by_side[m]),
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
    return dict(curves=curves, results=results)


def logistic_regression_baseline(X, Y, X_test, Y_test, floor: float) -> Dict:
    """
    scikit-learn's logistic regression (multinomial for several classes) on labels [N, 1] (0/1 or
    class indices): its test error (most probable class) and test NLL, the probabilities floored
    at ``floor``; the baseline of :func:`race`'s benchmarks.
    """
    from sklearn.linear_model import LogisticRegression

    y, y_test = np.asarray(Y)[:, 0].astype(int), np.asarray(Y_test)[:, 0].astype(int)
    p = np.maximum(LogisticRegression(max_iter=1000).fit(X, y).predict_proba(X_test), floor)
    return dict(
        name="logistic regression",
        error=float(np.mean(np.argmax(p, axis=1) != y_test)),
        nll=float(-np.mean(np.log(p[np.arange(len(y_test)), y_test]))),
    )


def plot_race(curves: Mapping[str, List[Dict]], baseline: Mapping, path: Path, title: str) -> None:
    """Test error and NLL against training time for each method of :func:`race` (and a baseline's lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for (m, c), style in zip(curves.items(), ("-o", "-s", "-^", "-v")):
        t = [x["time_s"] for x in c]
        axes[0].plot(t, [x["error"] for x in c], style, ms=3, label=m)
        axes[1].plot(t, [x["nll"] for x in c], style, ms=3, label=m)
    for ax, key in zip(axes, ("error", "nll")):
        if baseline.get(key) is not None:
            ax.axhline(baseline[key], color="gray", ls="--", label=baseline.get("name", "baseline"))
        ax.set_xlabel("training time (s, evaluation excluded)")
        ax.set_ylabel(f"test {key}")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------- outputs


def json_default(obj):
    """``json.dumps`` ``default`` for NumPy scalars."""
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, np.bool_):
        return bool(obj)
    raise TypeError(type(obj))


def write_json(path: Path, report: Dict, indent: int = 2) -> Path:
    """Write ``report`` as JSON (NumPy scalars allowed) to ``path``, creating its directory."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=indent, default=json_default) + "\n")
    return path


def write_report(prefix: Path, report: Dict, markdown: str, indent: int = 2) -> Tuple[Path, Path]:
    """Write ``<prefix>.json`` (the report) and ``<prefix>.md`` (its Markdown); return the two paths."""
    prefix = Path(prefix)
    json_path = write_json(prefix.with_name(prefix.name + ".json"), report, indent)
    md_path = prefix.with_name(prefix.name + ".md")
    md_path.write_text(markdown)
    return json_path, md_path


def markdown_section(title: str, items: Iterable[str], bullet: str = "-", blank_before: bool = True) -> List[str]:
    """A ``## title`` section of Markdown list items (after a blank line when ``blank_before``)."""
    return ([""] if blank_before else []) + [f"## {title}", ""] + [f"{bullet} {item}" for item in items]


def claim_items(claims: Iterable[Mapping]) -> List[str]:
    """Claim verdicts (``claim``, ``verdict``, ``evidence``) as Markdown list items, verdict in capitals."""
    return [f"**{c['claim']}: {c['verdict'].upper()}.** {c['evidence']}" for c in claims]


def rerender_report(
    prefix: Path, reanalyse: Callable[[Dict], Dict], markdown: Callable[[Dict], str], log, indent: int = 2
) -> int:
    """
    Redo the analysis of a stored report without new runs: ``reanalyse`` the report of
    ``<prefix>.json`` (summaries, claims), stamp it ``rerendered`` and rewrite ``<prefix>.json`` (at
    the ``indent`` its benchmark writes it with, so that the diff is the analysis only) and
    ``<prefix>.md``. For ``--rerender`` after a change of the analysis.
    """
    prefix = Path(prefix)
    report = reanalyse(json.loads(prefix.with_name(prefix.name + ".json").read_text()))
    report["rerendered"] = utc_now()
    json_path, md_path = write_report(prefix, report, markdown(report), indent=indent)
    log(f"re-rendered {json_path} and {md_path}")
    return 0


def markdown_header(title: str, report: Dict, note: Optional[str] = None) -> List[str]:
    """
    The first lines of a report of :func:`timed_report`: title, command, timestamps, wall time and
    machine (``note`` is added in brackets after the load averages); for a merged report whose runs
    ran on several CPUs, the runs per CPU.
    """
    mach = report["machine"]
    cpus = report.get("cpu_models") or {}
    return [
        f"# {title}",
        "",
        f"Command: `{report['command']}`  ",
        f"Started {report['started']}, finished {report['finished']}, wall time {report['wall_time_s']:.0f} s.  ",
        f"Machine: {mach['cpu_model']}, {mach['cpu_count']} CPUs (affinity {mach['cpu_affinity']}), "
        f"TensorFlow {mach['tensorflow']}, GPflow {mach['gpflow']}, NumPy {mach['numpy']}, Python {mach['python']}; "
        f"load average (1/5/15 min) {mach['load_average_start']} at start, {mach['load_average_end']} at end"
        + (f" ({note})" if note else "")
        + "."
        + (
            f"  \nThe merged runs ran on {len(cpus)} CPUs (the machine above is the first report's): "
            + ", ".join(f"{cpu} {n} runs" for cpu, n in cpus.items())
            + "."
            if len(cpus) > 1
            else ""
        ),
        "",
    ]
