r"""
Scalable multi-class EP (``SEPMGPC``, Villacampa-Calvo & Hernández-Lobato 2017) against GPflow's SVGP with
``MultiClass`` (robust max), ``Softmax`` and the Bayesian SVM's ``MultiClassHinge``, on the multi-class sets
with fixed splits, trained side by side. Protocol and results: docs/benchmarks/sepmgpc.md.
"""

from typing import Dict, List

import numpy as np
from scipy.cluster.vq import kmeans2

from gpflow_ep.evaluation import held_out_metrics

from . import runner
from .bsvm_multiclass import SHIPPED, load, multiclass_parser, run_multiclass, time_cell, train_side_by_side
from .claims import Claim, claim_items, verdicts
from .minibatch import sparse_model
from .report import markdown_header, markdown_section
from .stats import cell, markdown_table, mean_se

log = runner.progress_logger("sepmgpc_multiclass")
METHODS = ("SEPMGPC", "RobustMax", "Softmax", "hinge")


def build(method: str, X, C: int, M: int, seed: int):
    """:func:`sparse_model` on k-means inducing inputs; an SVGP's q_mu ~ N(0, 0.01²) (breaks the hinge's ties)."""
    n, D = X.shape
    Z, _ = kmeans2(X, min(M, n), minit="++", seed=seed)
    model = sparse_model(method, D, Z, n, C)
    if method != "SEPMGPC":
        model.q_mu.assign(0.01 * np.random.default_rng(seed).normal(size=model.q_mu.shape))
    return model


def run_split(name: str, split: int, methods, args) -> Dict:
    """Every method trained side by side on one split; test error, NLL and training time of each."""
    data = load(name, split, args.data_dir)
    X, Y, Yt = data.X_train, data.Y_train.astype(np.int64), data.Y_test.astype(np.int64)
    C = int(max(Y.max(), Yt.max())) + 1
    models = {m: build(m, X, C, args.num_inducing, seed=split) for m in methods}
    built = {m: [(model, Y)] for m, model in models.items()}
    seconds = train_side_by_side(built, X, args.steps, args.lr, min(len(X), args.batch), args.chunk, split)
    results = {}
    for m, model in models.items():
        metrics = held_out_metrics(model, data.X_test, Yt, task="multiclass")
        results[m] = dict(error=metrics["error"], nll=metrics["nlpd"], training_seconds=seconds[m])
    return dict(dataset=name, split=split, num_classes=C, num_train=len(X), results=results)


def summarise(runs: List[Dict], methods) -> Dict:
    """Per set: test error and NLL (mean ± s.e. over splits) and the median training time; the claims."""
    per_set = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        rows = [r["results"] for r in runs if r["dataset"] == name]
        entry = {m: {k: mean_se([row[m][k] for row in rows]) for k in ("error", "nll")} for m in methods}
        for m in methods:
            entry[m]["training_seconds"] = float(np.median([row[m]["training_seconds"] for row in rows]))
        per_set[name] = dict(splits=len(rows), methods=entry)
    svgps = [m for m in ("RobustMax", "Softmax") if m in methods]
    if "SEPMGPC" not in methods or not svgps:
        return dict(per_set=per_set, claims=[])
    nll = lambda row, m: row["methods"][m]["nll"]["mean"]  # noqa: E731
    wins = [d for d, row in per_set.items() if nll(row, "SEPMGPC") <= min(nll(row, m) for m in svgps)]
    seconds = [[row["methods"][m]["training_seconds"] for m in ("SEPMGPC", svgps[0])] for row in per_set.values()]
    ratios = [ep / vi for ep, vi in seconds]
    overall = dict(svgps=svgps, wins=wins, sets=len(per_set), ratios=ratios, median_ratio=float(np.median(ratios)))
    return dict(per_set=per_set, claims=verdicts(claims(svgps), [overall]))


def claims(svgps: List[str]) -> List[Claim]:
    """Our goals for SEPMGPC, over the summary of all sets (``svgps``: the SVGP likelihoods run)."""
    return [
        Claim(
            f"goal: SEPMGPC's test NLL no worse than SVGP's ({' or '.join(svgps)}, the better) on ≥ 6 of 8 sets",
            lambda r: len(r["wins"]) >= 6,
            show=lambda r: f"no worse on {len(r['wins'])} of {r['sets']} sets ({', '.join(r['wins']) or 'none'})",
        ),
        Claim(
            f"goal: SEPMGPC's time per step ≤ 1.5× SVGP-{svgps[0]}'s",
            lambda r: r["median_ratio"] <= 1.5,
            show=lambda r: (
                f"median ratio {r['median_ratio']:.2f} (per set {', '.join(f'{x:.2f}' for x in r['ratios'])})"
            ),
        ),
    ]


def markdown(report) -> str:
    c, s = report["config"], report["summary"]
    methods, rows = c["methods"], []
    for name, row in s["per_set"].items():
        e = row["methods"]
        ref = e["RobustMax"]["training_seconds"] if "RobustMax" in e else 1.0
        times = [time_cell(e[m]["training_seconds"], ref) for m in methods]
        rows.append([name, row["splits"], *(cell(e[m][k], 3) for k in ("error", "nll") for m in methods), *times])
    lines = markdown_header("Scalable multi-class EP (SEPMGPC) against SVGP likelihoods", report) + [
        f"M = {c['num_inducing']} (or N) per latent function, {c['steps']} Adam steps (lr {c['learning_rate']}, "
        f"batch min(N, {c['batch']})); mean ± s.e. over splits; median training time (steps × median time per step, "
        "compilation excluded, methods interleaved) with its ratio to RobustMax's.",
        "",
        *markdown_table(["data set", "splits", *(f"{k} {m}" for k in ("error", "NLL", "time") for m in methods)], rows),
    ]
    return "\n".join(lines + markdown_section("Claims", claim_items(s["claims"]))) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = multiclass_parser("sepmgpc_multiclass", __doc__, "results/sepmgpc", SHIPPED, METHODS, 32, batch=128)
    args, command = runner.parse_command_line(parser, argv, shared=shared, log=log)
    methods = runner.parse_list(args.methods)
    runner.check_choices(parser, "--methods", methods, METHODS)
    config = dict(batch=args.batch)  # the report's settings beside the options
    return run_multiclass(args, command, "sepmgpc_multiclass", methods, run_split, summarise, markdown, log, config)


if __name__ == "__main__":
    raise SystemExit(main())
