r"""
DGP-AEP on the UCI regression benchmark (Bui et al. 2016, Sec. 8.2, Tables 3 and 4) against GPflux's DeepGP and
GPflow's SVGP and SGPR, all from the same start: test log-likelihood, RMSE and time per iteration.

Protocol and results: docs/benchmarks/dgp.md. The minibatch models here are also those of ``dgp_binary`` and
``dgp_timing``.
"""

from pathlib import Path
from typing import Callable, Dict, List

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ep.compare import make_model
from gpflow_ep.models import DGPAEP
from gpflow_ep.training import make_dataset, make_train_step

from . import runner
from .claims import Claim, claim_items, verdicts
from .data import load_benchmark
from .minibatch import TimedSteps
from .report import machine_info, markdown_header, markdown_section, rerender_report
from .stats import cell, markdown_table, mean_se, paired_differences

log = runner.progress_logger("dgp_uci")
QUICK = dict(datasets="yacht", splits=1, large_splits=1, iterations=60, num_inducing=5, chunk=20, samples=5)
QUICK_HELP = "yacht, 1 split, 60 iterations, M = 5, 5 GPflux samples"

#: data set folder → the paper's name; the large sets (``--large-splits``)
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
BATCH = 50
METHODS = ("GP-AEP", "DGP-AEP 2", "DGP-AEP 3", "GPflux 2", "GPflux 3", "SVGP", "SGPR")
WIDTHS = {"GP-AEP": [1], "DGP-AEP 2": [2, 1], "DGP-AEP 3": [2, 2, 1], "GPflux 2": [2, 1], "GPflux 3": [2, 2, 1]}
#: DGP-AEP − GPflux at equal depth: the paired comparisons
PAIRS = (("DGP-AEP 2", "GPflux 2"), ("DGP-AEP 3", "GPflux 3"))

#: Bui et al. 2016, App. A.1: (mean, s.e.) of each of :data:`PAPER_COLUMNS` in Table 3 (test log-likelihood), then
#: in Table 4 (RMSE)
PAPER_COLUMNS = ("GP 50", "DGP-2 50", "GP 100", "DGP-2 100")
PAPER = {
    "boston": (-2.22, 0.07, -2.17, 0.10, -2.16, 0.07, -2.09, 0.06, 2.43, 0.12, 2.38, 0.12, 2.39, 0.12, 2.38, 0.11),
    "concrete": (-2.85, 0.02, -2.61, 0.02, -2.65, 0.02, -2.43, 0.02, 5.55, 0.12, 4.64, 0.11, 4.78, 0.12, 4.16, 0.13),
    "energy": (-1.29, 0.01, -0.95, 0.01, -1.11, 0.02, -0.90, 0.01, 1.02, 0.02, 0.57, 0.02, 0.87, 0.03, 0.56, 0.02),
    "kin8nm": (1.31, 0.01, 1.79, 0.02, 1.68, 0.01, 2.31, 0.01, 0.07, 0.00, 0.05, 0.00, 0.06, 0.00, 0.03, 0.00),
    "naval": (4.86, 0.04, 4.77, 0.32, 5.51, 0.03, 5.13, 0.27, 0.00, 0.00, 0.01, 0.00, 0.00, 0.00, 0.00, 0.00),
    "power": (-2.66, 0.01, -2.58, 0.01, -2.55, 0.01, -2.39, 0.02, 3.75, 0.03, 3.60, 0.03, 3.60, 0.04, 3.21, 0.06),
    "red wine": (-0.67, 0.01, -0.10, 0.03, -0.57, 0.02, 0.37, 0.02, 0.57, 0.01, 0.50, 0.01, 0.55, 0.01, 0.41, 0.01),
    "yacht": (-1.15, 0.03, -0.99, 0.07, -1.26, 0.03, -0.96, 0.06, 1.15, 0.09, 0.98, 0.09, 1.16, 0.07, 1.06, 0.14),
}


# ---------------------------------------------------------------- the models and their training


class Trainer(TimedSteps):
    """A model's timed compiled step on batches of (X, Y) and its ``predict(Xt, Yt) -> (log densities, means)``."""

    def __init__(self, model, step: Callable, X, Y, seed: int, predict: Callable):
        super().__init__(step, iter(make_dataset((X, Y), BATCH, seed=seed, drop_remainder=True)))
        self.model, self.predict = model, predict


def train_interleaved(trainers, iterations: int, chunk: int) -> None:
    """One (compiling, untimed) step of each trainer, then chunks of ``chunk`` steps in turn."""
    trainers = list(trainers)
    for trainer in trainers:
        trainer.run(1)
    for done in range(1, iterations, chunk):
        for trainer in trainers:
            trainer.run(min(chunk, iterations - done))


def _gpflow_predict(model) -> Callable:
    """``predict(Xt, Yt)`` of a GPflow-style model: its test log densities and predictive means."""
    return lambda Xt, Yt: (model.predict_log_density((Xt, Yt)).numpy(), model.predict_y(Xt)[0].numpy()[:, 0])


def gpflux_deep_gp(X, widths, Z, lengthscales, variances, *, share: bool, likelihood_variance: float = 0.01):
    """
    GPflux's DeepGP with layer ``widths`` [D_1, ..., 1] on inputs X, built as
    ``gpflux.architectures.build_constant_input_dim_deep_gp`` builds its layers (GPflux's helpers, whitened
    q(u), a PCA ``Linear`` or ``Identity`` mean function in the hidden layers and a zero mean in the last,
    the hidden layers' q_sqrt scaled by 1e-5, a Gaussian likelihood): inducing inputs ``Z`` [M, D] (taken
    through the mean functions to the later layers), SE kernels with ``lengthscales[l]`` and
    ``variances[l]``. ``share``: one kernel and one set of inducing inputs per layer shared by its outputs
    (``SharedIndependent``, ``SharedIndependentInducingVariables``: GPflux's default), else a kernel and a
    set per output.
    """
    from gpflux.helpers import construct_basic_inducing_variables, construct_basic_kernel, construct_mean_function
    from gpflux.layers import GPLayer, LikelihoodLayer
    from gpflux.models import DeepGP

    n, D = X.shape
    layers, inputs, Z_in = [], X, Z
    for depth, (d_in, d_out) in enumerate(zip([D] + list(widths[:-1]), widths)):
        last = depth == len(widths) - 1
        se = gpflow.kernels.SquaredExponential(variance=variances[depth], lengthscales=np.array(lengthscales[depth]))
        kernel = construct_basic_kernel(se, output_dim=d_out, share_hyperparams=share)
        z_init = Z_in.copy() if share else np.stack([Z_in.copy()] * d_out)
        inducing = construct_basic_inducing_variables(len(Z), d_in, d_out, share_variables=share, z_init=z_init)
        mean_function = gpflow.mean_functions.Zero() if last else construct_mean_function(inputs, d_in, d_out)
        layer = GPLayer(kernel, inducing, num_data=n, mean_function=mean_function)
        if not last:
            layer.q_sqrt.assign(layer.q_sqrt * 1e-5)
            inputs, Z_in = (np.asarray(mean_function(t)) for t in (inputs, Z_in))
        layers.append(layer)
    return DeepGP(layers, LikelihoodLayer(gpflow.likelihoods.Gaussian(likelihood_variance)), num_data=n)


def gpflux_step(model, optimizer) -> Callable:
    """A plain compiled Adam step on GPflux's ELBO (what a GPflux user writes), returning the loss."""
    variables = model.trainable_variables
    optimizer.build(variables)

    @tf.function(autograph=False)
    def step(batch):
        with tf.GradientTape() as tape:
            loss = -model.elbo((batch[0], batch[1]))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return step


def _gpflux_trainer(start: DGPAEP, widths, X, Y, lr, seed, samples) -> Trainer:
    """
    GPflux's DeepGP in its default structure (one kernel and one Z per layer) on the DGP-AEP ``start`` (its
    first layer's Z and lengthscales, ℓ = e above, σ_f² = 1), ``samples`` forward samples to predict.
    """
    first = start.layers[0]
    lengthscales = [first.kernels[0].lengthscales.numpy()] + [np.full(w, np.e) for w in widths[:-1]]
    Z = first.inducing_variables[0].Z.numpy()
    model = gpflux_deep_gp(X, widths, Z, lengthscales, [1.0] * len(widths), share=True)
    step = gpflux_step(model, tf_keras.optimizers.Adam(lr))
    sample = tf.function(model.predict_f, autograph=False)  # the last layer's marginals at a forward sample

    def predict(Xt, Yt):  # the mixture of the forward samples
        mean, var = (np.stack(draws)[..., 0] for draws in zip(*(sample(Xt) for _ in range(samples))))
        var = var + model.likelihood_layer.likelihood.variance.numpy()
        log_densities = -0.5 * np.log(2 * np.pi * var) - 0.5 * (Yt[:, 0] - mean) ** 2 / var
        return np.logaddexp.reduce(log_densities, axis=0) - np.log(samples), mean.mean(axis=0)

    return Trainer(model, step, X, Y, seed, predict)


def sparse_gp_start(X, Y, M: int, seed: int):
    """The SE-ARD kernel and Z of the one-layer DGP-AEP start (k-means Z, median-distance lengthscales)."""
    first = DGPAEP.from_data(X, Y, [X.shape[1], 1], num_inducing=M, seed=seed).layers[0]
    kernel = gpflow.kernels.SquaredExponential(lengthscales=first.kernels[0].lengthscales.numpy())
    return kernel, first.inducing_variables[0].Z.numpy()


def trainers(
    X, Y, methods, M: int, lr: float, seed: int, samples: int = 1, likelihood=None, widths=None
) -> Dict[str, Trainer]:
    """
    The minibatch ``methods`` from one start; ``likelihood()`` makes theirs (default Gaussian(0.01));
    ``widths`` gives the deep models' layer widths by method name (default :data:`WIDTHS`).
    """
    likelihood, out, widths = likelihood or (lambda: gpflow.likelihoods.Gaussian(0.01)), {}, widths or WIDTHS
    for method in methods:
        if method in widths:
            model = DGPAEP.from_data(X, Y, [X.shape[1], *widths[method]], M, likelihood=likelihood(), seed=seed)
            if method.startswith("GPflux"):
                out[method] = _gpflux_trainer(model, widths[method], X, Y, lr, seed, samples)
                continue
        elif method in ("SVGP", "SEPGPC"):
            kernel, Z = sparse_gp_start(X, Y, M, seed)
            name = "svgp" if method == "SVGP" else "sepgpc"
            model = make_model(name, kernel=kernel, likelihood=likelihood(), inducing_variable=Z, num_data=len(X))
        else:  # SGPR: not a minibatch model
            continue
        step = make_train_step(model, tf_keras.optimizers.Adam(lr))
        out[method] = Trainer(model, step, X, Y, seed, _gpflow_predict(model))
    return out


def standardised_split(name: str, split: int, data_dir):
    """X, Y, X test, Y test and s_y of a regression split, y standardised with the training split's mean and std."""
    data = load_benchmark(name, split, data_dir, kind="regression")
    y_mean, y_std = float(data.Y_train.mean()), float(data.Y_train.std())
    return data.X_train, (data.Y_train - y_mean) / y_std, data.X_test, (data.Y_test - y_mean) / y_std, y_std


def run_split(name, split, methods, M, iterations, lr, chunk, samples, data_dir, seed=0) -> Dict:
    """Every method on one split: test log-likelihood and RMSE (in y's units), median seconds per iteration."""
    X, Y, Xt, Yt, y_std = standardised_split(name, split, data_dir)
    models = trainers(X, Y, methods, M, lr, seed, samples)
    train_interleaved(models.values(), iterations, chunk)
    predicted = {m: (t.predict, dict(seconds_per_iteration=t.median_per_step())) for m, t in models.items()}
    if "SGPR" in methods:
        kernel, Z = sparse_gp_start(X, Y, M, seed)
        model = make_model("sgpr", data=(X, Y), kernel=kernel, inducing_variable=Z, noise_variance=0.01)
        gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables, options=dict(maxiter=1000))
        predicted["SGPR"] = (_gpflow_predict(model), {})
    results = {}
    for method, (predict, timing) in predicted.items():
        log_density, mean = predict(Xt, Yt)
        rmse = float(y_std * np.sqrt(np.mean((mean - Yt[:, 0]) ** 2)))
        finite = bool(np.all(np.isfinite(log_density)) and np.all(np.isfinite(mean)))
        results[method] = dict(test_ll=float(np.mean(log_density) - np.log(y_std)), rmse=rmse, finite=finite, **timing)
    return results


# ---------------------------------------------------------------- summaries, tables and claims


def summarise(runs, methods, metrics=("test_ll", "rmse")) -> Dict:
    """Per data set and method: mean ± s.e. of each metric over splits, median time per iteration, all finite."""
    summary = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        rows = [r["results"] for r in runs if r["dataset"] == name]
        summary[name] = {}
        for m in methods:
            values = [row[m] for row in rows if m in row]
            times = [v["seconds_per_iteration"] for v in values if "seconds_per_iteration" in v]
            summary[name][m] = {k: mean_se([v[k] for v in values]) for k in metrics}
            summary[name][m].update(seconds_per_iteration=float(np.median(times)) if times else None)
            summary[name][m].update(all_finite=all(v["finite"] for v in values))
    return summary


def paired_ll(runs, name, a, b) -> Dict:
    """Paired test log-likelihood differences ``a`` − ``b`` over the splits of ``name`` both ran (wins: a higher)."""
    ll = [
        {r["split"]: r["results"][m]["test_ll"] for r in runs if r["dataset"] == name and m in r["results"]}
        for m in (b, a)
    ]
    d = paired_differences(*ll)  # b − a, whose wins (b lower) are a's
    return dict(d, mean=None if d["mean"] is None else -d["mean"])


def _signed(stat: Dict) -> str:
    """A paired difference as "+mean ± se" with a typographic minus."""
    return cell(stat, 3, signed=True).replace("-", "−")


def timing_groups(report) -> List:
    """(data set, CPU, splits, median s per iteration per method): times of different CPUs are never pooled."""
    default, methods, out = report["machine"]["cpu_model"], report["config"]["methods"], []
    for name in report["summary"]:
        runs = [r for r in report["runs"] if r["dataset"] == name]
        for cpu in dict.fromkeys(r.get("cpu_model") or default for r in runs):
            group = [r for r in runs if (r.get("cpu_model") or default) == cpu]
            times = {m: s["seconds_per_iteration"] for m, s in summarise(group, methods)[name].items()}
            out.append((name, cpu, len(group), {m: t for m, t in times.items() if t is not None}))
    return out


def claims(report) -> List[Claim]:
    """DGP-AEP against GPflux at equal depth (the goals) and against the one-layer GP-AEP (the paper's Table 3)."""
    methods, out = report["config"]["methods"], []
    for a, f in (p for p in PAIRS if set(p) <= set(methods)):
        out += [
            Claim(
                f"{a} has a higher mean test log-likelihood than {f} (the goal: on 6 of 8 datasets)",
                holds=lambda r, a=a, f=f: r["ll"][a] > r["ll"][f],
                rows=_datasets,
                show=lambda r, a=a, f=f: f"{r['name']} {cell(r['ll'][a] - r['ll'][f], 2, signed=True)}",
            ),
            Claim(
                f"{a} beats {f} by more than two paired standard errors [ours]",
                holds=lambda r, a=a, f=f: (d := r["paired"][a, f])["se"] is not None and d["mean"] > 2 * d["se"],
                rows=_datasets,
                show=lambda r, a=a, f=f: f"{r['name']} {_signed(r['paired'][a, f])}",
            ),
            Claim(
                f"{a}'s time per iteration at most 2× {f}'s (the goal; per CPU)",
                holds=lambda r, a=a, f=f: r["times"][a] / r["times"][f] <= 2.0,
                rows=lambda table, a=a, f=f: [r for r in table if a in r["times"] and f in r["times"]],
                show=lambda r, a=a, f=f: f"{r['name']}{r['on']} {r['times'][a] / r['times'][f]:.2f}×",
            ),
        ]
    if {"GP-AEP", "DGP-AEP 2"} <= set(methods):
        out.append(
            Claim(
                "DGP-AEP 2 beats GP-AEP in test log-likelihood (paper, Table 3: on 9 of 10 datasets at M = 50 and 100)",
                holds=lambda r: r["ll"]["DGP-AEP 2"] > r["ll"]["GP-AEP"],
                rows=_datasets,
                show=lambda r: f"{r['name']} {cell(r['ll']['DGP-AEP 2'] - r['ll']['GP-AEP'], 2, signed=True)}",
            )
        )
    return out


def _datasets(table):
    return [r for r in table if r["ll"]]


def claim_table(report) -> List[Dict]:
    """The rows :func:`claims` checks: per data set, mean test LL and paired differences; per (data set, CPU), times."""
    methods, groups = report["config"]["methods"], timing_groups(report)
    on = len({g[1] for g in groups}) > 1
    table = [
        dict(
            name=NAMES.get(name, name),
            ll={m: row[m]["test_ll"]["mean"] for m in methods},
            paired={p: paired_ll(report["runs"], name, *p) for p in PAIRS if set(p) <= set(methods)},
            times={},
        )
        for name, row in report["summary"].items()
    ]
    return table + [dict(name=NAMES.get(g[0], g[0]), on=f" on {g[1]}" if on else "", ll={}, times=g[3]) for g in groups]


def uci_markdown(report) -> str:
    """Test LL and RMSE beside the paper's, times per iteration (per CPU), paired LL differences and the claims."""
    c, summary, methods = report["config"], report["summary"], report["config"]["methods"]
    paper = [k for k, column in enumerate(PAPER_COLUMNS) if column.endswith(f" {c['num_inducing']}")]
    lines = markdown_header("DGP-AEP on UCI regression", report)
    if report.get("partial"):
        lines += ["**Partial report**: written after each split; the splits listed are those finished.", ""]
    splits = f"{c['splits']} splits ({c['large_splits']} for kin8nm, naval, power)"
    if "splits_per_dataset" in c:
        splits = "splits per dataset in the tables' second column (merged runs)"
    lines += [
        f"M = {c['num_inducing']} per GP, {c['iterations']} Adam iterations (lr {c['learning_rate']}, batch "
        f"{c['batch_size']}); {splits}; X and y standardised with the training split; GPflux test LL from "
        f"{c['gpflux_samples']} forward samples.",
        "",
    ]
    for metric, offset, title, digits in (
        ("test_ll", 0, "Test log-likelihood (nats, higher is better)", 2),
        ("rmse", 8, "Test RMSE (lower is better)", 3),
    ):
        rows = []
        for name, row in summary.items():
            ref = PAPER.get(NAMES.get(name, name))
            rows.append(
                [NAMES.get(name, name), max(row[m][metric]["n"] for m in methods)]
                + [cell(row[m][metric], digits) for m in methods]
                + [cell(ref[offset + 2 * k], digits, se=ref[offset + 2 * k + 1]) if ref else "—" for k in paper]
            )
        header = ["dataset", "splits", *methods, *(f"paper {PAPER_COLUMNS[k]}" for k in paper)]
        lines += [f"**{title}**", "", *markdown_table(header, rows), ""]
    timed = [m for m in methods if m != "SGPR"]
    base = "DGP-AEP 2" if "DGP-AEP 2" in timed else timed[0]
    groups = timing_groups(report)
    several = len({g[1] for g in groups}) > 1
    lines += [
        f"**Median time per iteration (ms), ratio to {base}'s in brackets** (interleaved chunks, compilation excluded"
        + ("; medians over the splits run on each CPU, never pooled across CPUs)" if several else ")"),
        "",
    ]
    rows = [
        [NAMES.get(name, name), *([cpu, n] if several else [])]
        + [f"{1e3 * t[m]:.2f} ({t[m] / t[base]:.2f}×)" if t.get(m) and t.get(base) else "—" for m in timed]
        for name, cpu, n, t in groups
    ]
    lines += markdown_table(["dataset", *(["CPU", "splits"] if several else []), *timed], rows)
    pairs = [p for p in PAIRS if set(p) <= set(methods)]
    if pairs:
        rows = []
        for name in summary:
            diffs = [paired_ll(report["runs"], name, *p) for p in pairs]
            rows.append([NAMES.get(name, name), *(x for d in diffs for x in (_signed(d), f"{d['wins']}/{d['n']}"))])
        lines += [
            "",
            "**Paired test log-likelihood differences, DGP-AEP − GPflux on the same split** "
            "(mean ± s.e. over splits; positive favours DGP-AEP; splits DGP-AEP won)",
            "",
            *markdown_table(["dataset", *(x for a, f in pairs for x in (f"{a} − {f}", "won"))], rows),
        ]
    lines += markdown_section("Claims", claim_items(verdicts(claims(report), claim_table(report))))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- entry point


def main(argv=None) -> int:
    parser = runner.benchmark_parser("benchmarks.dgp_uci", __doc__, "results/dgp", QUICK_HELP, data_dir=True)
    parser.add_argument("--datasets", default=",".join(NAMES), help="regression dataset folders")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)}")
    parser.add_argument("--num-inducing", type=int, default=50)
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--large-splits", type=int, default=20, help="splits for kin8nm, naval and power")
    runner.add_split_grid_options(parser)
    parser.add_argument("--rerender", action="store_true", help="redo the tables and claims of dgp_uci_M<M>.json")
    parser.set_defaults(iterations=6000, lr=0.005, chunk=500, samples=100)  # the chunk: steps per interleaved turn
    args, command = runner.parse_command_line(parser, argv)
    if args.quick:
        vars(args).update(QUICK)
    stem = Path(args.out_dir) / ("dgp_uci_quick" if args.quick else f"dgp_uci_M{args.num_inducing}")
    if args.rerender:
        reanalyse = lambda r: dict(r, summary=summarise(r["runs"], r["config"]["methods"]))
        return rerender_report(stem, reanalyse, uci_markdown, log)
    if args.merge:  # the merged runs' M names the report
        prefix = lambda config: Path(args.out_dir) / f"dgp_uci_M{config['num_inducing']}"
        return runner.merge_split_reports(args.merge, prefix, command, summarise, uci_markdown, log)
    datasets, methods = runner.parse_list(args.datasets), runner.parse_list(args.methods)
    runner.check_choices(parser, "--methods", methods, METHODS)
    runner.check_datasets(parser, datasets, "regression", args.data_dir)
    config = dict(datasets=datasets, methods=methods, num_inducing=args.num_inducing)
    config.update(splits=args.splits, large_splits=args.large_splits, iterations=args.iterations, learning_rate=args.lr)
    config.update(batch_size=BATCH, chunk=args.chunk, gpflux_samples=args.samples)
    settings = (methods, args.num_inducing, args.iterations, args.lr, args.chunk, args.samples, args.data_dir)
    cpu = machine_info()["cpu_model"]

    def run(name, split):
        return dict(dataset=name, split=split, results=run_split(name, split, *settings), cpu_model=cpu)

    def describe(run):
        scores = ", ".join(f"{m} {r['test_ll']:.2f}/{r['rmse']:.3f}" for m, r in run["results"].items())
        return f"{run['dataset']} split {run['split']}: {scores}"

    splits = {name: args.large_splits if name in LARGE else args.splits for name in datasets}
    grid = dict(config=config, command=command, prefix=stem, markdown=uci_markdown, log=log, describe=describe)
    return runner.run_split_grid(
        datasets, splits, run, lambda runs: summarise(runs, methods), first_split=args.first_split, **grid
    )


if __name__ == "__main__":
    raise SystemExit(main())
