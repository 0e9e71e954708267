"""
The default EP schedule of ``EPGP`` for likelihoods that are not log-concave, measured where users meet
it: nested training (``gpflow.optimizers.Scipy().minimize(model.training_loss, ...)``, EP re-run to
convergence at every loss evaluation) with a Student-t on 1-D data with 20 % gross outliers, and the
label-flip ``NoisyStep`` and GPflow's own ``Bernoulli()`` (jittered probit) on subsets of
scikit-learn's breast-cancer data with their raw, unscaled features. Each problem is trained three
times from the same start: damped parallel EP (``schedule="parallel"``, the earlier default), the
current default (no schedule given: parallel EP falling back to the convergent double loop of the same
power EP, ``schedule="robust"``, ``max_sweeps=100``), and the same with ``max_sweeps=1000``.

Reported per likelihood and setting: EP runs (loss evaluations) and how many did not converge, the
problems whose training met any non-converged run, the runs in which the double loop took over, the
final training objective (−log Z_EP, lower is better; compared only where the final run converged)
and the median wall time per problem (compilation included, as a user pays it).
"""

import time
import warnings
from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np
from sklearn.datasets import load_breast_cancer

from gpflow_ep.compare import make_model
from gpflow_ep.likelihoods import NoisyStep

from .report import markdown_header
from .runner import benchmark_parser, parse_command_line, progress_logger, run_split_grid
from .stats import markdown_table

log = progress_logger("nested_default")

#: the settings compared (EP options given to the model; "default" gives none)
SETTINGS = {
    "parallel (earlier default)": dict(schedule="parallel"),
    "default (robust, max_sweeps=100)": dict(),
    "default, max_sweeps=1000": dict(max_sweeps=1000),
}
LIKELIHOODS = ("student-t", "noisy step", "bernoulli")
FULL = dict(problems=6, n_regression=100, n_classification=200, maxiter=50)
QUICK = dict(problems=1, n_regression=30, n_classification=40, maxiter=3)


def log_uniform(rng, low, high):
    return float(10.0 ** rng.uniform(np.log10(low), np.log10(high)))


def problem(name: str, seed: int, config: Dict):
    """Data, kernel and likelihood of problem ``seed`` of ``name`` (fixed seeds: the same on every machine)."""
    rng = np.random.default_rng([LIKELIHOODS.index(name), seed])
    if name == "student-t":
        n = config["n_regression"]
        X = rng.uniform(-3.0, 3.0, (n, 1))
        Y = np.sin(2.0 * X) + 0.1 * rng.standard_normal((n, 1))
        outliers = rng.permutation(n)[: n // 5]
        Y[outliers] += 5.0 * rng.standard_normal((len(outliers), 1))
        kernel = gpflow.kernels.SquaredExponential(lengthscales=log_uniform(rng, 0.05, 2.0))
        likelihood = gpflow.likelihoods.StudentT(scale=log_uniform(rng, 0.02, 1.0), df=3.0)
        return (X, Y), kernel, likelihood
    X, y = load_breast_cancer(return_X_y=True)
    rows = rng.permutation(len(y))[: config["n_classification"]]
    X, Y = X[rows], y[rows, None].astype(np.float64)
    kernel = gpflow.kernels.SquaredExponential(lengthscales=log_uniform(rng, 1.0, 1000.0))
    likelihood = NoisyStep(log_uniform(rng, 0.01, 0.2)) if name == "noisy step" else gpflow.likelihoods.Bernoulli()
    return (X, Y), kernel, likelihood


def train(name: str, seed: int, options: Dict, config: Dict) -> Dict:
    """Problem ``seed`` of ``name`` trained by ``Scipy().minimize`` of the nested loss with EP options ``options``."""
    data, kernel, likelihood = problem(name, seed, config)
    model = make_model("epgp", data=data, kernel=kernel, likelihood=likelihood, **options)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # counted from ep_diagnostics instead
        result = gpflow.optimizers.Scipy().minimize(
            model.training_loss, model.trainable_variables, options=dict(maxiter=config["maxiter"])
        )
    seconds = time.perf_counter() - t0
    d = model.ep_diagnostics
    return dict(
        schedule=model.ep_settings.schedule,
        max_sweeps=model.ep_settings.max_sweeps,
        runs=int(d.runs.numpy()),
        not_converged=int(d.runs_not_converged.numpy()),
        fallbacks=int(d.fallbacks.numpy()),
        last_converged=bool(d.converged.numpy()),
        objective=float(result.fun),
        scipy_iterations=int(result.nit),
        seconds=seconds,
    )


def run_problem(name: str, seed: int, config: Dict) -> Dict:
    return dict(dataset=name, split=seed, results={s: train(name, seed, o, config) for s, o in SETTINGS.items()})


def summarise(runs: List[Dict]) -> Dict:
    summary = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        mine = [r["results"] for r in runs if r["dataset"] == name]
        both = [r for r in mine if all(r[s]["last_converged"] for s in SETTINGS)]
        summary[name] = {}
        for s in SETTINGS:
            rs = [r[s] for r in mine]
            summary[name][s] = dict(
                problems=len(rs),
                runs=sum(r["runs"] for r in rs),
                not_converged=sum(r["not_converged"] for r in rs),
                problems_not_converged=sum(r["not_converged"] > 0 for r in rs),
                last_not_converged=sum(not r["last_converged"] for r in rs),
                fallbacks=sum(r["fallbacks"] for r in rs),
                median_seconds=float(np.median([r["seconds"] for r in rs])),
                # on problems where every setting's final run converged: the mean final objective
                mean_objective_all_converged=float(np.mean([r[s]["objective"] for r in both])) if both else None,
                problems_all_converged=len(both),
            )
    return summary


def markdown(report: Dict) -> str:
    c = report["config"]
    rows = []
    for name, settings in report["summary"].items():
        for s, r in settings.items():
            objective = r["mean_objective_all_converged"]
            rows.append(
                [
                    name,
                    s,
                    f"{r['runs'] - r['not_converged']} of {r['runs']}",
                    f"{r['problems_not_converged']} of {r['problems']}",
                    f"{r['last_not_converged']}",
                    f"{r['fallbacks']}",
                    "–" if objective is None else f"{objective:.3f} ({r['problems_all_converged']})",
                    f"{r['median_seconds']:.1f}",
                ]
            )
    header = [
        "likelihood",
        "EP settings",
        "EP runs converged",
        "problems with a non-converged run",
        "final run not converged",
        "double-loop fallbacks",
        "mean final −log Z_EP (problems where all settings converged)",
        "s per problem (median)",
    ]
    lines = markdown_header("Nested training of non-log-concave likelihoods: parallel EP vs the default", report)
    lines += [
        f"{c['problems']} problems per likelihood; Student-t on n = {c['n_regression']} 1-D points with 20 % gross "
        f"outliers, NoisyStep and GPflow's Bernoulli() on n = {c['n_classification']} raw breast-cancer points; "
        f"Scipy L-BFGS-B, maxiter {c['maxiter']}; time includes compilation.",
        "",
        *markdown_table(header, rows),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    quick = "1 problem per likelihood, small data, 3 L-BFGS iterations"
    parser = benchmark_parser("benchmarks.nested_default", __doc__, "results/nested_default", quick)
    parser.add_argument("--problems", type=int, default=FULL["problems"], help="problems per likelihood")
    args, command = parse_command_line(parser, argv, log=log)
    config = dict(QUICK) if args.quick else dict(FULL, problems=args.problems)

    def describe(run):
        parts = [
            f"{s.split(' ')[0]}: {r['runs'] - r['not_converged']}/{r['runs']} fb {r['fallbacks']} {r['seconds']:.1f}s"
            for s, r in run["results"].items()
        ]
        return f"{run['dataset']} {run['split']}: " + "; ".join(parts)

    return run_split_grid(
        LIKELIHOODS,
        config["problems"],
        lambda name, seed: run_problem(name, seed, config),
        summarise,
        config=config,
        command=command,
        prefix=Path(args.out_dir) / ("nested_default_quick" if args.quick else "nested_default"),
        markdown=markdown,
        log=log,
        describe=describe,
    )


if __name__ == "__main__":
    raise SystemExit(main())
