r"""
DGP-AEP on the UCI regression benchmark (Bui et al. 2016, §8.2) against GPflux's DeepGP and GPflow's SVGP/SGPR.

For every dataset of ``shared/datasets/regression`` and each of its first ``--splits`` fixed splits
(``--large-splits`` for kin8nm, naval and power), inputs standardised with the training split
(the reference code does not standardise X: a labelled deviation) and y standardised with the
training split's mean and std (as the reference code), these models are trained with Adam (learning rate
``--lr``, default 0.005 as the reference code), minibatches of 50 and the same number of
iterations (``--iterations``, default 6000 as the reference code):

* ``GP-AEP``: DGPAEP with one layer [D, 1] (the paper's "GP" column);
* ``DGP-AEP 2``: [D, 2, 1] (the paper's "DGP-2": two layers, hidden width 2);
* ``DGP-AEP 3``: [D, 2, 2, 1] (three layers; no column in the paper);
* ``GPflux 2`` / ``GPflux 3``: ``gpflux.models.DeepGP`` (doubly stochastic VI) with the same widths,
  inducing inputs and first-layer lengthscales, GPflux's PCA mean functions in hidden layers and
  zero mean in the last, inner q(u) variances scaled by 1e-5 (GPflux's convention); its test
  log-likelihood is the log-mean-exp over ``--samples`` forward samples (a Gaussian mixture), its
  prediction the mixture mean;
* ``SVGP``: GPflow's whitened SVGP with the first layer's inducing inputs and kernel start;
* ``SGPR``: GPflow's SGPR (full batch, L-BFGS, at most 1000 iterations; no per-iteration time).

Every model uses M = ``--num-inducing`` (per GP) and starts from the same k-means inducing inputs
and median-distance lengthscales (DGPAEP.from_data, the reference code's initialisation). The
minibatch models are trained in interleaved chunks of ``--chunk`` steps, so their per-iteration
times (median over chunks, compilation excluded) are measured side by side. Reported: mean ± s.e.
over splits of the test log-likelihood and RMSE in the original units, the median time per iteration
and its ratio to DGP-AEP's, beside the paper's Table 3/4 values (GP and DGP-2 columns at M = 50 and
100). Run ``python -m benchmarks.dgp_uci [--quick] [--out-dir results/dgp]``.
"""

import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ep.datasets import load_benchmark
from gpflow_ep.models import DGPAEP
from gpflow_ep.training import make_dataset, make_train_step

from .minibatch import TimedSteps
from .report import RunClock, machine_info, markdown_header, rerender_report, write_report
from .runner import (
    add_split_grid_options,
    benchmark_parser,
    check_choices,
    check_datasets,
    merge_split_reports,
    parse_command_line,
    parse_list,
    progress_logger,
)
from .stats import cell, mean_se, paired_differences

log = progress_logger("dgp_uci")
QUICK_HELP = "yacht, 1 split, 60 iterations, M = 5, 5 GPflux samples"

#: dataset folder → the paper's name, and the sets with fewer splits in the paper's protocol
NAMES = {
    "bostonHousing": "boston",
    "concrete": "concrete",
    "energy": "energy",
    "kin8nm": "kin8nm",
    "naval-propulsion-plant": "naval",
    "power-plant": "power",
    "wine-quality-red": "red wine",
    "yacht": "yacht",
}
LARGE = ("kin8nm", "naval-propulsion-plant", "power-plant")
METHODS = ("GP-AEP", "DGP-AEP 2", "DGP-AEP 3", "GPflux 2", "GPflux 3", "SVGP", "SGPR")
WIDTHS = {"GP-AEP": [1], "DGP-AEP 2": [2, 1], "DGP-AEP 3": [2, 2, 1], "GPflux 2": [2, 1], "GPflux 3": [2, 2, 1]}

#: Bui et al. 2016, App. A.1: Table 3 (test log-likelihood) and Table 4 (RMSE), mean and s.e.
PAPER = {
    "ll": {
        "boston": {
            "GP 50": (-2.22, 0.07),
            "DGP-2 50": (-2.17, 0.10),
            "GP 100": (-2.16, 0.07),
            "DGP-2 100": (-2.09, 0.06),
        },
        "concrete": {
            "GP 50": (-2.85, 0.02),
            "DGP-2 50": (-2.61, 0.02),
            "GP 100": (-2.65, 0.02),
            "DGP-2 100": (-2.43, 0.02),
        },
        "energy": {
            "GP 50": (-1.29, 0.01),
            "DGP-2 50": (-0.95, 0.01),
            "GP 100": (-1.11, 0.02),
            "DGP-2 100": (-0.90, 0.01),
        },
        "kin8nm": {"GP 50": (1.31, 0.01), "DGP-2 50": (1.79, 0.02), "GP 100": (1.68, 0.01), "DGP-2 100": (2.31, 0.01)},
        "naval": {"GP 50": (4.86, 0.04), "DGP-2 50": (4.77, 0.32), "GP 100": (5.51, 0.03), "DGP-2 100": (5.13, 0.27)},
        "power": {
            "GP 50": (-2.66, 0.01),
            "DGP-2 50": (-2.58, 0.01),
            "GP 100": (-2.55, 0.01),
            "DGP-2 100": (-2.39, 0.02),
        },
        "red wine": {
            "GP 50": (-0.67, 0.01),
            "DGP-2 50": (-0.10, 0.03),
            "GP 100": (-0.57, 0.02),
            "DGP-2 100": (0.37, 0.02),
        },
        "yacht": {
            "GP 50": (-1.15, 0.03),
            "DGP-2 50": (-0.99, 0.07),
            "GP 100": (-1.26, 0.03),
            "DGP-2 100": (-0.96, 0.06),
        },
    },
    "rmse": {
        "boston": {"GP 50": (2.43, 0.12), "DGP-2 50": (2.38, 0.12), "GP 100": (2.39, 0.12), "DGP-2 100": (2.38, 0.11)},
        "concrete": {
            "GP 50": (5.55, 0.12),
            "DGP-2 50": (4.64, 0.11),
            "GP 100": (4.78, 0.12),
            "DGP-2 100": (4.16, 0.13),
        },
        "energy": {"GP 50": (1.02, 0.02), "DGP-2 50": (0.57, 0.02), "GP 100": (0.87, 0.03), "DGP-2 100": (0.56, 0.02)},
        "kin8nm": {"GP 50": (0.07, 0.00), "DGP-2 50": (0.05, 0.00), "GP 100": (0.06, 0.00), "DGP-2 100": (0.03, 0.00)},
        "naval": {"GP 50": (0.00, 0.00), "DGP-2 50": (0.01, 0.00), "GP 100": (0.00, 0.00), "DGP-2 100": (0.00, 0.00)},
        "power": {"GP 50": (3.75, 0.03), "DGP-2 50": (3.60, 0.03), "GP 100": (3.60, 0.04), "DGP-2 100": (3.21, 0.06)},
        "red wine": {
            "GP 50": (0.57, 0.01),
            "DGP-2 50": (0.50, 0.01),
            "GP 100": (0.55, 0.01),
            "DGP-2 100": (0.41, 0.01),
        },
        "yacht": {"GP 50": (1.15, 0.09), "DGP-2 50": (0.98, 0.09), "GP 100": (1.16, 0.07), "DGP-2 100": (1.06, 0.14)},
    },
}


class _Trainer(TimedSteps):
    """A minibatch model's timed step and batches, and ``predict(X, Y) -> (log densities, means)``."""

    def __init__(self, step: Callable, batches, predict: Callable):
        super().__init__(step, batches)
        self.predict = predict


def train_interleaved(trainers, iterations: int, chunk: int) -> None:
    """One (compiling, untimed) step of each trainer, then chunks of ``chunk`` steps in turn."""
    trainers = list(trainers)
    for trainer in trainers:
        trainer.run(1)
    done = 1
    while done < iterations:
        k = min(chunk, iterations - done)
        for trainer in trainers:
            trainer.run(k)
        done += k


def _gaussian_predictor(model):
    def predict(X, Y):
        mean, var = model.predict_y(X)
        return model.predict_log_density((X, Y)).numpy(), mean.numpy()[:, 0]

    return predict


def minibatch_trainer(model, X, Y, lr, batch_size, seed):
    """A GPflow-style model (any with training_loss) with its compiled Adam step and batches."""
    step = make_train_step(model, tf_keras.optimizers.Adam(lr))
    return _Trainer(
        step, iter(make_dataset((X, Y), batch_size, seed=seed, drop_remainder=True)), _gaussian_predictor(model)
    )


def _gpflux_trainer(start: DGPAEP, widths, X, Y, lr, batch_size, seed, samples):
    """GPflux DeepGP with the DGP-AEP model's first-layer start (Z, lengthscales), module docstring."""
    from gpflux.helpers import construct_basic_inducing_variables, construct_basic_kernel, construct_mean_function
    from gpflux.layers import GPLayer, LikelihoodLayer
    from gpflux.models import DeepGP

    n, D = X.shape
    first = start.layers[0]
    Z = first.inducing_variables[0].Z.numpy()
    lengthscale = first.kernels[0].lengthscales.numpy()
    layers, inputs, Z_in = [], X, Z
    for depth, (d_in, d_out) in enumerate(zip([D] + widths[:-1], widths)):
        last = depth == len(widths) - 1
        ls = lengthscale if depth == 0 else np.full(d_in, np.e)
        kernel = construct_basic_kernel(
            [gpflow.kernels.SquaredExponential(lengthscales=ls.copy()) for _ in range(d_out)],
            output_dim=d_out,
            share_hyperparams=False,
        )
        inducing = construct_basic_inducing_variables(
            Z.shape[0], d_in, d_out, share_variables=False, z_init=np.stack([Z_in.copy()] * d_out)
        )
        mean_function = gpflow.mean_functions.Zero() if last else construct_mean_function(inputs, d_in, d_out)
        layer = GPLayer(kernel, inducing, num_data=n, mean_function=mean_function)
        if not last:
            layer.q_sqrt.assign(layer.q_sqrt * 1e-5)
            inputs, Z_in = (np.asarray(mean_function(t)) for t in (inputs, Z_in))
        layers.append(layer)
    model = DeepGP(layers, LikelihoodLayer(gpflow.likelihoods.Gaussian(0.01)), num_data=n)
    optimizer = tf_keras.optimizers.Adam(lr)
    variables = model.trainable_variables
    optimizer.build(variables)

    @tf.function(autograph=False)
    def step(batch):
        with tf.GradientTape() as tape:
            loss = -model.elbo((batch[0], batch[1]))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    noise = model.likelihood_layer.likelihood.variance

    @tf.function(autograph=False)
    def sample_predictive(X):
        h = X
        for layer in model.f_layers[:-1]:
            mean, var = layer.predict(h, full_cov=False)
            h = mean + tf.sqrt(var) * tf.random.normal(tf.shape(mean), dtype=mean.dtype)
        return model.f_layers[-1].predict(h, full_cov=False)

    def predict(Xt, Yt):
        log_densities, means = [], []
        for _ in range(samples):
            mean, var = (t.numpy() for t in sample_predictive(Xt))
            total = var + noise.numpy()
            log_densities.append(-0.5 * np.log(2 * np.pi * total) - 0.5 * (Yt - mean) ** 2 / total)
            means.append(mean)
        log_density = np.logaddexp.reduce(np.stack(log_densities), axis=0)[:, 0] - np.log(samples)
        return log_density, np.mean(means, axis=0)[:, 0]

    return _Trainer(step, iter(make_dataset((X, Y), batch_size, seed=seed, drop_remainder=True)), predict)


def _start(X, Y, widths, M, seed) -> DGPAEP:
    return DGPAEP.from_data(X, Y, [X.shape[1]] + list(widths), num_inducing=M, seed=seed)


def _sparse_gp_start(X, Y, M, seed):
    """Kernel and Z of the one-layer DGP-AEP start (k-means Z, median-distance lengthscales)."""
    first = _start(X, Y, [1], M, seed).layers[0]
    kernel = gpflow.kernels.SquaredExponential(lengthscales=first.kernels[0].lengthscales.numpy())
    return kernel, first.inducing_variables[0].Z.numpy()


def minibatch_trainers(X, Y, methods, M, lr, samples, seed, batch_size=50) -> Dict[str, _Trainer]:
    """The trainers of the minibatch ``methods`` (SGPR is not one), all from the same start."""
    trainers = {}
    for method in methods:
        if method in ("GP-AEP", "DGP-AEP 2", "DGP-AEP 3"):
            trainers[method] = minibatch_trainer(_start(X, Y, WIDTHS[method], M, seed), X, Y, lr, batch_size, seed)
        elif method.startswith("GPflux"):
            start = _start(X, Y, WIDTHS[method], M, seed)
            trainers[method] = _gpflux_trainer(start, WIDTHS[method], X, Y, lr, batch_size, seed, samples)
        elif method == "SVGP":
            kernel, Z = _sparse_gp_start(X, Y, M, seed)
            model = gpflow.models.SVGP(kernel, gpflow.likelihoods.Gaussian(0.01), Z, num_data=len(X))
            trainers[method] = minibatch_trainer(model, X, Y, lr, batch_size, seed)
    return trainers


def run_split(name, split, methods, M, iterations, lr, chunk, samples, data_dir, seed=0) -> Dict:
    data = load_benchmark(name, split, data_dir, kind="regression")
    X, Xt = data.X_train, data.X_test
    y_mean, y_std = float(data.Y_train.mean()), float(data.Y_train.std())
    Y, Yt = (data.Y_train - y_mean) / y_std, (data.Y_test - y_mean) / y_std
    trainers, results = minibatch_trainers(X, Y, methods, M, lr, samples, seed), {}
    train_interleaved(trainers.values(), iterations, chunk)
    for method, trainer in trainers.items():
        log_density, mean = trainer.predict(Xt, Yt)
        results[method] = _scores(log_density, mean, Yt, y_std)
        results[method]["seconds_per_iteration"] = trainer.median_per_step()
    if "SGPR" in methods:
        kernel, Z = _sparse_gp_start(X, Y, M, seed)
        model = gpflow.models.SGPR((X, Y), kernel, Z, noise_variance=0.01)
        gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables, options=dict(maxiter=1000))
        results["SGPR"] = _scores(
            model.predict_log_density((Xt, Yt)).numpy(), model.predict_y(Xt)[0].numpy()[:, 0], Yt, y_std
        )
    return results


def _scores(log_density, mean, Yt, y_std) -> Dict:
    """Test log-likelihood and RMSE in the original units (y = ȳ + s_y ỹ)."""
    return dict(
        test_ll=float(np.mean(log_density) - np.log(y_std)),
        rmse=float(y_std * np.sqrt(np.mean((mean - Yt[:, 0]) ** 2))),
        finite=bool(np.all(np.isfinite(log_density)) and np.all(np.isfinite(mean))),
    )


def run_uci(
    datasets, methods, M, splits, large_splits, iterations, lr, chunk, samples, data_dir, on_split=None, first_split=0
) -> Dict:
    """
    Splits ``first_split`` … ``first_split + splits - 1`` (``large_splits`` of them for the large
    sets) of every dataset; ``on_split(report)`` is called with the report so far after each split.
    """
    config = dict(
        first_split=first_split,
        datasets=list(datasets),
        methods=list(methods),
        num_inducing=M,
        splits=splits,
        large_splits=large_splits,
        iterations=iterations,
        learning_rate=lr,
        batch_size=50,
        chunk=chunk,
        gpflux_samples=samples,
    )
    runs, cpu = [], machine_info()["cpu_model"]
    for name in datasets:
        for split in range(first_split, first_split + (large_splits if name in LARGE else splits)):
            t0 = time.perf_counter()
            result = run_split(name, split, methods, M, iterations, lr, chunk, samples, data_dir)
            runs.append(dict(dataset=name, split=split, results=result, cpu_model=cpu))
            log(
                f"{name} split {split} ({time.perf_counter() - t0:.0f} s): "
                + ", ".join(f"{m} {r['test_ll']:.2f}/{r['rmse']:.3f}" for m, r in result.items())
            )
            if on_split is not None:
                on_split(dict(config=config, runs=runs, summary=summarise(runs, methods), partial=True))
    return dict(config=config, runs=runs, summary=summarise(runs, methods))


def summarise(runs, methods, metrics=("test_ll", "rmse")) -> Dict:
    """Per dataset and method: mean ± s.e. of each metric over splits, median time per iteration, all finite."""
    summary = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        rows = [r["results"] for r in runs if r["dataset"] == name]
        summary[name] = {}
        for m in methods:
            values = [row[m] for row in rows if m in row]
            entry = {k: mean_se([v[k] for v in values]) for k in metrics}
            times = [v["seconds_per_iteration"] for v in values if "seconds_per_iteration" in v]
            entry["seconds_per_iteration"] = float(np.median(times)) if times else None
            entry["all_finite"] = all(v["finite"] for v in values)
            summary[name][m] = entry
    return summary


_cell = cell


def uci_markdown(report) -> str:
    c, summary = report["config"], report["summary"]
    methods = c["methods"]
    M = c["num_inducing"]
    paper_cols = [f"GP {M}", f"DGP-2 {M}"] if M in (50, 100) else []
    lines = markdown_header("DGP-AEP on UCI regression", report)
    if report.get("partial"):
        lines += [
            "**Partial report**: written after each split while the run went on; the splits listed are those finished.",
            "",
        ]
    lines += [
        f"M = {M} per GP, {c['iterations']} Adam iterations (lr {c['learning_rate']}, batch {c['batch_size']}); "
        + (
            "splits per dataset in the tables' second column (merged runs)"
            if "splits_per_dataset" in c
            else f"{c['splits']} splits ({c['large_splits']} for kin8nm, naval, power)"
        )
        + f"; X and y standardised with the training split; GPflux test LL from {c['gpflux_samples']} forward samples.",
        "",
    ]
    for metric, title, digits in (
        ("test_ll", "Test log-likelihood (nats, higher is better)", 2),
        ("rmse", "Test RMSE (lower is better)", 3),
    ):
        key = "ll" if metric == "test_ll" else "rmse"
        lines += [
            f"**{title}**",
            "",
            "| dataset | splits | " + " | ".join(methods) + "".join(f" | paper {p}" for p in paper_cols) + " |",
        ]
        lines.append("|---" * (2 + len(methods) + len(paper_cols)) + "|")
        for name, row in summary.items():
            paper = PAPER[key].get(NAMES.get(name, name), {})
            n = max(row[m][metric]["n"] for m in methods)
            cells = [_cell(row[m][metric], digits) for m in methods]
            cells += [f"{paper[p][0]:.{digits}f} ± {paper[p][1]:.{digits}f}" if p in paper else "—" for p in paper_cols]
            lines.append(f"| {NAMES.get(name, name)} | {n} | " + " | ".join(cells) + " |")
        lines.append("")
    timed = [m for m in methods if m != "SGPR"]
    base = "DGP-AEP 2" if "DGP-AEP 2" in timed else timed[0]
    groups = timing_groups(report)
    several = len({cpu for _, cpu, _, _ in groups}) > 1
    lines += [
        f"**Median time per iteration (ms), ratio to {base}'s in brackets** (interleaved chunks, compilation excluded"
        + ("; medians over the splits run on each CPU, never pooled across CPUs)" if several else ")"),
        "",
    ]
    head = ["dataset", "CPU", "splits"] if several else ["dataset"]
    lines += ["| " + " | ".join(head + timed) + " |", "|---" * (len(head) + len(timed)) + "|"]
    for name, cpu, n, times in groups:
        ref = times.get(base)
        cells = [f"{1e3 * times[m]:.2f} ({times[m] / ref:.2f}×)" if times.get(m) and ref else "—" for m in timed]
        lines.append("| " + " | ".join(([NAMES.get(name, name)] + ([cpu, str(n)] if several else [])) + cells) + " |")
    pairs = [(a, f) for a, f in PAIRS if a in methods and f in methods]
    if pairs:
        lines += [
            "",
            "**Paired test log-likelihood differences, DGP-AEP − GPflux on the same split** "
            "(mean ± s.e. over splits; positive favours DGP-AEP; splits DGP-AEP won)",
            "",
            "| dataset | " + " | ".join(f"{a} − {f} | won" for a, f in pairs) + " |",
            "|---" * (1 + 2 * len(pairs)) + "|",
        ]
        for name in summary:
            cells = []
            for a, f in pairs:
                d = paired_ll(report["runs"], name, a, f)
                cells += [_signed(d), f"{d['wins']}/{d['n']}"]
            lines.append(f"| {NAMES.get(name, name)} | " + " | ".join(cells) + " |")
    lines += ["", "## Claims", ""] + [f"- {c}" for c in claims(report)]
    return "\n".join(lines) + "\n"


PAIRS = (("DGP-AEP 2", "GPflux 2"), ("DGP-AEP 3", "GPflux 3"))


def paired_ll(runs, name, a, b) -> Dict:
    """
    Test log-likelihood of ``a`` minus ``b`` over the splits of data set ``name`` that both ran:
    :func:`paired_differences` of the negative log-likelihoods (so its ``wins`` are the
    splits where ``a`` is higher), with the mean turned back to ``a − b``.
    """

    def nll(method):
        return {
            r["split"]: -r["results"][method]["test_ll"]
            for r in runs
            if r["dataset"] == name and method in r["results"]
        }

    d = paired_differences(nll(a), nll(b))
    if d["mean"] is not None:
        d["mean"] = -d["mean"]
    return d


def _signed(stat: Dict, digits: int = 3) -> str:
    """A paired difference as "+mean ± se" ("—" without pairs), with a typographic minus."""
    return cell(stat, digits, signed=True).replace("-", "−")


def timing_groups(report) -> List[Tuple[str, str, int, Dict[str, float]]]:
    """
    (data set, CPU, splits, median seconds per iteration of each method) over the runs of each data
    set on each CPU (a run's ``cpu_model``, else the report's machine): times from different CPUs
    are not comparable, so they are never pooled (the ratios within a run are).
    """
    default = report["machine"]["cpu_model"]
    out = []
    for name in report["summary"]:
        runs = [r for r in report["runs"] if r["dataset"] == name]
        for cpu in dict.fromkeys(r.get("cpu_model") or default for r in runs):
            rows = [r["results"] for r in runs if (r.get("cpu_model") or default) == cpu]
            per_method = {
                m: [row[m]["seconds_per_iteration"] for row in rows if "seconds_per_iteration" in row.get(m, {})]
                for m in report["config"]["methods"]
            }
            times = {m: float(np.median(t)) for m, t in per_method.items() if t}
            out.append((name, cpu, len(rows), times))
    return out


def claims(report) -> List[str]:
    summary, methods = report["summary"], report["config"]["methods"]
    groups = timing_groups(report)
    cpus = list(dict.fromkeys(cpu for _, cpu, _, _ in groups))
    out = []
    for aep, flux in PAIRS:
        if aep in methods and flux in methods:
            wins = [n for n, row in summary.items() if row[aep]["test_ll"]["mean"] > row[flux]["test_ll"]["mean"]]
            clear = [
                n
                for n in wins
                if (d := paired_ll(report["runs"], n, aep, flux))["se"] is not None and d["mean"] > 2 * d["se"]
            ]
            spans = []  # one range of the ratio per CPU
            for cpu in cpus:
                ratios = [t[aep] / t[flux] for _, c, _, t in groups if c == cpu and aep in t and flux in t]
                if ratios:
                    on = f" on {cpu}" if len(cpus) > 1 else ""
                    spans.append(f"{min(ratios):.2f}–{max(ratios):.2f}× GPflux's{on}")
            out.append(
                f"{aep} has a higher mean test log-likelihood than {flux} on {len(wins)} of {len(summary)} datasets "
                f"({', '.join(NAMES.get(n, n) for n in wins) or 'none'}); goal ≥ 6 of 8. By more than two paired "
                f"standard errors on {len(clear)} of them ({', '.join(NAMES.get(n, n) for n in clear) or 'none'}). "
                f"Its time per iteration is {' and '.join(spans)} (goal ≤ 2×)."
            )
    if "GP-AEP" in methods and "DGP-AEP 2" in methods:
        better = [
            n for n, row in summary.items() if row["DGP-AEP 2"]["test_ll"]["mean"] > row["GP-AEP"]["test_ll"]["mean"]
        ]
        out.append(
            f"DGP-AEP 2 beats GP-AEP in test log-likelihood on {len(better)} of {len(summary)} datasets (paper, Table 3: 9 of 10 at M = 50 and at M = 100, naval the exception)."
        )
    return out


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.dgp_uci", __doc__, "results/dgp", QUICK_HELP, data_dir=True)
    parser.add_argument("--datasets", default=",".join(NAMES), help="regression dataset folders")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)}")
    parser.add_argument("--num-inducing", type=int, default=50)
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--large-splits", type=int, default=20, help="splits for kin8nm, naval and power")
    parser.add_argument("--iterations", type=int, default=6000)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--chunk", type=int, default=500, help="steps per interleaved timing chunk")
    parser.add_argument("--samples", type=int, default=100, help="GPflux forward samples for the test log-likelihood")
    add_split_grid_options(parser)
    parser.add_argument(
        "--rerender", action="store_true", help="redo summary, tables and claims of the stored dgp_uci_M<M>.json"
    )
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    if args.rerender:

        def reanalyse(report):
            return dict(report, summary=summarise(report["runs"], report["config"]["methods"]))

        stem = "dgp_uci_quick" if args.quick else f"dgp_uci_M{args.num_inducing}"
        return rerender_report(Path(args.out_dir) / stem, reanalyse, uci_markdown, log)
    if args.merge:

        def prefix(config):  # the merged runs' M names the report
            return Path(args.out_dir) / f"dgp_uci_M{config['num_inducing']}"

        return merge_split_reports(args.merge, prefix, command, summarise, uci_markdown, log)
    datasets, methods = parse_list(args.datasets), parse_list(args.methods)
    if args.quick:
        datasets, args.splits, args.large_splits, args.iterations, args.num_inducing, args.chunk, args.samples = (
            ["yacht"],
            1,
            1,
            60,
            5,
            20,
            5,
        )
    check_choices(parser, "--methods", methods, METHODS)
    check_datasets(parser, datasets, "regression", args.data_dir)
    stem = "dgp_uci_quick" if args.quick else f"dgp_uci_M{args.num_inducing}"
    clock = RunClock()

    def save_partial(partial):  # what has finished is kept if the run is stopped
        report = clock.stamp(partial, command)
        write_report(Path(args.out_dir) / stem, report, uci_markdown(report))

    report = clock.stamp(
        run_uci(
            datasets,
            methods,
            args.num_inducing,
            args.splits,
            args.large_splits,
            args.iterations,
            args.lr,
            args.chunk,
            args.samples,
            args.data_dir,
            on_split=save_partial,
            first_split=args.first_split,
        ),
        command,
    )
    json_path, md_path = write_report(Path(args.out_dir) / stem, report, uci_markdown(report))
    log(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
