r"""
Scalable multi-class EP (``SEPMGPC``) against GPflow's SVGP with ``MultiClass`` (robust max) and
``Softmax`` and against the Bayesian SVM's hinge SVGP (issue #13's benchmark).

For each data set and each of its first ``--splits`` splits (``shared/datasets/multiclass`` with its
fixed folds; scikit-learn's iris in stratified 80/20 splits seeded by the split number; inputs
standardised with the training part) every method gets the same SE-ARD kernel (lengthscales √D,
variance 1, shared by the classes), M = min(``--num-inducing``, N) inducing inputs per latent function
(k-means centres of the training inputs; SEPMGPC copies them per class), Adam (``--lr``), minibatches
of min(N, ``--batch``) points and ``--steps`` steps, all trained by ``gpflow_ep.training``'s compiled
step and interleaved in chunks (a method's training time is ``--steps`` × its median seconds per step,
compilation excluded, measured side by side):

* ``SEPMGPC``: :class:`~gpflow_ep.models.SEPMGPC` + ``MultiClassStep(C)`` (minibatch EP, ρ = 0.99);
* ``RobustMax``: ``SVGP`` + ``gpflow.likelihoods.MultiClass(C)``;
* ``Softmax``: ``SVGP`` + ``gpflow.likelihoods.Softmax(C)``;
* ``hinge``: ``SVGP`` + ``MultiClassHinge(C, bound="augmented")``.

Reported per set: test error and test NLL (mean ± s.e. over splits) and the median training time,
with its ratio to RobustMax's; over sets, on how many SEPMGPC's NLL is no worse than the better SVGP's.

Run ``python -m benchmarks.sepmgpc_multiclass [--quick] [--out-dir results/sepmgpc]``.
"""

from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np
from gpflow.keras import tf_keras
from scipy.cluster.vq import kmeans2

from gpflow_ep.likelihoods import MultiClassHinge, MultiClassStep
from gpflow_ep.models import SEPMGPC
from gpflow_ep.training import make_dataset, make_train_step

from .bsvm_multiclass import SHIPPED, load
from .claims import claim_items
from .dgp_uci import train_interleaved
from .minibatch import TimedSteps
from .report import markdown_header, markdown_section
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
from .stats import cell, mean_se

log = progress_logger("sepmgpc_multiclass")
QUICK_HELP = "iris, 1 split, 40 steps, M = 8"
METHODS = ("SEPMGPC", "RobustMax", "Softmax", "hinge")


def build(method: str, X, C: int, M: int, seed: int):
    n, D = X.shape
    Z, _ = kmeans2(X, min(M, n), minit="++", seed=seed)
    kernel = gpflow.kernels.SquaredExponential(lengthscales=np.full(D, np.sqrt(D)))
    if method == "SEPMGPC":
        return SEPMGPC(kernel, MultiClassStep(C), Z, num_data=n)
    likelihood = {
        "RobustMax": lambda: gpflow.likelihoods.MultiClass(C),
        "Softmax": lambda: gpflow.likelihoods.Softmax(C),
        "hinge": lambda: MultiClassHinge(C, bound="augmented"),
    }[method]()
    model = gpflow.models.SVGP(kernel, likelihood, Z.copy(), num_latent_gps=C, num_data=n)
    model.q_mu.assign(0.01 * np.random.default_rng(seed).normal(size=model.q_mu.shape))  # breaks hinge ties
    return model


def run_split(name, split, methods, M, steps, lr, batch, chunk, data_dir) -> Dict:
    data = load(name, split, data_dir)
    X, Y = data.X_train, data.Y_train.astype(np.int64)
    C = int(max(Y.max(), data.Y_test.max())) + 1
    size = min(len(X), batch)
    models = {m: build(m, X, C, M, seed=split) for m in methods}
    trainers = {
        m: TimedSteps(
            make_train_step(model, tf_keras.optimizers.Adam(lr)),
            iter(make_dataset((X, Y), size, seed=split, drop_remainder=True)),
        )
        for m, model in models.items()
    }
    train_interleaved(trainers.values(), steps, chunk)
    Yt = data.Y_test.astype(np.int64)
    results = {}
    for m, model in models.items():
        p = model.predict_y(data.X_test)[0].numpy()
        results[m] = dict(
            error=float(np.mean(np.argmax(p, axis=1) != Yt[:, 0])),
            nll=float(-np.mean(model.predict_log_density((data.X_test, Yt)).numpy())),
            training_seconds=steps * trainers[m].median_per_step(),
        )
        log(f"{name} split {split} {m}: error {results[m]['error']:.3f}, NLL {results[m]['nll']:.3f}")
    return dict(dataset=name, split=split, num_classes=C, num_train=len(X), results=results)


def summarise(runs: List[Dict], methods) -> Dict:
    per_set = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        rows = [r["results"] for r in runs if r["dataset"] == name]
        entry = {
            m: dict(
                error=mean_se([row[m]["error"] for row in rows]),
                nll=mean_se([row[m]["nll"] for row in rows]),
                training_seconds=float(np.median([row[m]["training_seconds"] for row in rows])),
            )
            for m in methods
        }
        per_set[name] = dict(splits=len(rows), methods=entry)
    claims = []
    svgps = [m for m in ("RobustMax", "Softmax") if m in methods]
    if "SEPMGPC" in methods and svgps:
        wins = [
            d
            for d, row in per_set.items()
            if row["methods"]["SEPMGPC"]["nll"]["mean"] <= min(row["methods"][m]["nll"]["mean"] for m in svgps)
        ]
        ratios = [
            row["methods"]["SEPMGPC"]["training_seconds"] / row["methods"][svgps[0]]["training_seconds"]
            for row in per_set.values()
        ]
        claims = [
            dict(
                claim=f"goal: SEPMGPC's test NLL no worse than SVGP's ({' or '.join(svgps)}, the better) on ≥ 6 of 8 sets",
                verdict="reproduced" if len(wins) >= 6 else "not reproduced",
                evidence=f"no worse on {len(wins)} of {len(per_set)} sets ({', '.join(wins) or 'none'})",
            ),
            dict(
                claim=f"goal: SEPMGPC's time per step ≤ 1.5× SVGP-{svgps[0]}'s",
                verdict="reproduced" if float(np.median(ratios)) <= 1.5 else "not reproduced",
                evidence=f"median ratio {float(np.median(ratios)):.2f} (per set {', '.join(f'{r:.2f}' for r in ratios)})",
            ),
        ]
    return dict(per_set=per_set, claims=claims)


def markdown(report) -> str:
    c, s = report["config"], report["summary"]
    methods = c["methods"]
    lines = markdown_header("Scalable multi-class EP (SEPMGPC) against SVGP likelihoods", report)
    lines += [
        f"M = {c['num_inducing']} (or N) per latent function, {c['steps']} Adam steps (lr {c['learning_rate']}, "
        f"batch min(N, {c['batch']})); mean ± s.e. over splits; median training time (steps × median time per step, "
        "compilation excluded, methods interleaved) with its ratio to RobustMax's.",
        "",
        "| data set | splits | "
        + " | ".join(f"error {m}" for m in methods)
        + " | "
        + " | ".join(f"NLL {m}" for m in methods)
        + " | "
        + " | ".join(f"time {m}" for m in methods)
        + " |",
        "|---" * (2 + 3 * len(methods)) + "|",
    ]
    for name, row in s["per_set"].items():
        e = row["methods"]
        ref = e["RobustMax"]["training_seconds"] if "RobustMax" in e else 1.0
        cells = [cell(e[m]["error"], 3) for m in methods]
        cells += [cell(e[m]["nll"], 3) for m in methods]
        cells += [f"{e[m]['training_seconds']:.1f} s ({e[m]['training_seconds'] / ref:.2f}×)" for m in methods]
        lines.append(f"| {name} | {row['splits']} | " + " | ".join(cells) + " |")
    lines += markdown_section("Claims", claim_items(s["claims"]))
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.sepmgpc_multiclass", __doc__, "results/sepmgpc", QUICK_HELP, data_dir=True)
    parser.add_argument("--datasets", default=",".join(SHIPPED))
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)}")
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--num-inducing", type=int, default=32)
    parser.add_argument("--chunk", type=int, default=250)
    add_split_grid_options(parser)
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    if args.merge:
        prefix = Path(args.out_dir) / "sepmgpc_multiclass"
        return merge_split_reports(args.merge, prefix, command, summarise, markdown, log)
    datasets, methods = parse_list(args.datasets), parse_list(args.methods)
    if args.quick:
        datasets, args.splits, args.steps, args.num_inducing, args.chunk = ["iris"], 1, 40, 8, 10
    check_choices(parser, "--methods", methods, METHODS)
    stem = "sepmgpc_multiclass_quick" if args.quick else "sepmgpc_multiclass"
    config = dict(
        datasets=datasets,
        methods=methods,
        splits=args.splits,
        steps=args.steps,
        learning_rate=args.lr,
        batch=args.batch,
        num_inducing=args.num_inducing,
        chunk=args.chunk,
    )

    return run_split_grid(
        datasets,
        args.splits,
        lambda name, split: run_split(
            name, split, methods, args.num_inducing, args.steps, args.lr, args.batch, args.chunk, args.data_dir
        ),
        lambda runs: summarise(runs, methods),
        config=config,
        command=command,
        prefix=Path(args.out_dir) / stem,
        markdown=markdown,
        log=log,
        first_split=args.first_split,
    )


if __name__ == "__main__":
    raise SystemExit(main())
