r"""
Active learning with the multi-class Bayesian SVM (Wistuba & Rawat 2018, §4.3.1 and Fig. 5): querying by
the variation ratio against querying by the entropy of the softmax of the mean prediction. Protocol and
results: docs/benchmarks/bsvm.md.
"""

from pathlib import Path
from typing import Dict, List

import numpy as np
import tensorflow as tf
from scipy.cluster.vq import kmeans2

from gpflow_ep.likelihoods import MultiClassHinge

from . import runner
from .bsvm_multiclass import SHIPPED, SKLEARN, adam_step, load, rank_by_accuracy, svgp
from .claims import Claim, claim_items, verdicts
from .report import markdown_header, markdown_section, timed_report, write_report
from .stats import markdown_table

log = runner.progress_logger("bsvm_active")
QUICK_HELP = "iris, 1 repeat, 5 queries, 20 steps per round"
POLICIES = ("variation ratio", "softmax entropy")


def scores(policy: str, model, X) -> np.ndarray:
    """The query score of each row of X under ``policy``; the largest is queried."""
    mean, var = model.predict_f(X)
    if policy == "variation ratio":
        return 1.0 - model.likelihood.argmax_probabilities(mean, var).numpy().max(1)
    p = tf.nn.softmax(mean).numpy()
    return -np.sum(p * np.log(np.maximum(p, 1e-300)), axis=1)


def run_curve(policy, data, start, queries, steps, M, lr, seed) -> List[float]:
    """Test error after 0, 1, ..., ``queries`` queries (P k-means inducing inputs of all X, Adam warm-started)."""
    rng, X, C = np.random.default_rng(seed), data.X_train, int(max(data.Y_train.max(), data.Y_test.max())) + 1
    Z, _ = kmeans2(X, min(M, len(X)), minit="++", seed=seed)
    # full batch (num_data None): the ELBO's data term is the sum over the labelled set
    model = svgp(MultiClassHinge(C, bound="augmented"), Z, X.shape[1], C, None, seed)
    spec = (tf.TensorSpec([None, X.shape[1]], tf.float64), tf.TensorSpec([None, 1], data.Y_train.dtype))
    step = adam_step(model, lr, input_signature=[spec])  # one trace for every size of the labelled set
    labelled = list(start)
    pool = np.setdiff1d(np.arange(len(data.X_train)), labelled)
    errors = []
    for q in range(queries + 1):
        batch = (tf.constant(X[labelled]), tf.constant(data.Y_train[labelled]))
        for _ in range(steps):
            step(batch)
        mean, _ = model.predict_f(data.X_test)
        errors.append(float(np.mean(np.argmax(mean.numpy(), 1) != data.Y_test[:, 0])))
        if q == queries or pool.size == 0:
            break
        s = scores(policy, model, X[pool])
        pick = pool[rng.choice(np.flatnonzero(s >= s.max() - 1e-12))]
        labelled.append(int(pick))
        pool = pool[pool != pick]
    return errors


def run(datasets, repeats, queries, steps, M, lr, data_dir) -> Dict:
    """The error curves of every policy, per data set: ``{name: {policy: [curve per repeat]}}``."""
    curves = {}
    for name in datasets:
        data = load(name, 0, data_dir)
        curves[name] = {p: [] for p in POLICIES}
        for r in range(repeats):
            rng, y = np.random.default_rng(1000 + r), data.Y_train[:, 0]
            start = [int(rng.choice(np.flatnonzero(y == c))) for c in np.unique(y)]
            for policy in POLICIES:
                curves[name][policy].append(run_curve(policy, data, start, queries, steps, M, lr, seed=r))
        log(f"{name}: " + ", ".join(f"{p} {np.mean([c[-1] for c in curves[name][p]]):.3f}" for p in POLICIES))
    return curves


def summarise(curves: Dict, queries: int) -> Dict:
    """Mean error curves, the policies' mean rank over data sets after each query, and the claim."""
    mean_error = {name: {p: np.mean(np.array(c[p]), axis=0).tolist() for p in POLICIES} for name, c in curves.items()}
    ranks = {p: [] for p in POLICIES}
    for q in range(queries + 1):
        per_set = [rank_by_accuracy([-mean_error[name][p][q] for p in POLICIES]) for name in mean_error]
        for i, p in enumerate(POLICIES):
            ranks[p].append(float(np.mean([r[i] for r in per_set])))
    late = range(min(20, queries), queries + 1)
    overall = dict(
        late_queries=f"{min(20, queries)}–{queries}",
        late_rank={p: float(np.mean([ranks[p][q] for q in late])) for p in POLICIES},
        final_error={p: float(np.mean([e[p][-1] for e in mean_error.values()])) for p in POLICIES},
    )
    return dict(mean_error=mean_error, mean_rank=ranks, claims=verdicts(CLAIMS, [overall]))


def _late_ranks(row) -> str:
    ranks = ", ".join(f"{p} {r:.2f}" for p, r in row["late_rank"].items())
    errors = ", ".join(f"{p} {e:.3f}" for p, e in row["final_error"].items())
    return f"mean rank over queries {row['late_queries']}: {ranks}; final test error (mean over sets) {errors}"


#: the paper's claim, over the policies' mean rank after ≥ 20 queries and final error
CLAIMS = (
    Claim(
        "Fig. 5a: after ≥ 20 queries the variation-ratio policy has the lower mean rank",
        lambda r: r["late_rank"]["variation ratio"] < r["late_rank"]["softmax entropy"],
        show=_late_ranks,
    ),
)


def plot(summary: Dict, path: Path) -> Path:
    """Test error per set and policy (solid: variation ratio, dashed: entropy) and the mean ranks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary["mean_error"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name in names:
        (line,) = axes[0].plot(summary["mean_error"][name][POLICIES[0]], "-", label=name if len(names) <= 4 else None)
        axes[0].plot(summary["mean_error"][name][POLICIES[1]], "--", color=line.get_color())
    axes[0].set(xlabel="queries", ylabel="test error", title="test error (solid: variation ratio, dashed: entropy)")
    if len(names) <= 4:
        axes[0].legend(fontsize=7)
    for p in POLICIES:
        axes[1].plot(summary["mean_rank"][p], label=p)
    axes[1].set(xlabel="queries", ylabel="mean rank over data sets", title="mean rank (lower is better)")
    axes[1].set_ylim(0.9, 2.1)
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def markdown(report) -> str:
    c, s = report["config"], report["summary"]
    marks = sorted({0, min(20, c["queries"]), c["queries"]})

    def after(curve, fmt):
        return " / ".join(format(curve[min(q, len(curve) - 1)], fmt) for q in marks)

    head = ["data set", *(f"{p}: error after {' / '.join(map(str, marks))} queries" for p in POLICIES)]
    rows = [[name, *(after(errors[p], ".3f") for p in POLICIES)] for name, errors in s["mean_error"].items()]
    rows.append(["**mean rank**", *(after(s["mean_rank"][p], ".2f") for p in POLICIES)])
    lines = markdown_header("Active learning with the multi-class Bayesian SVM", report)
    lines += [
        f"{c['repeats']} random starts per set, {c['queries']} queries, {c['steps']} Adam steps per round (lr "
        f"{c['learning_rate']}, warm start), P = {c['num_inducing']}; test error mean over starts. Curves: `{c['plot']}`.",
        "",
        *markdown_table(head, rows),
    ]
    lines += markdown_section("Claims", claim_items(s["claims"]))
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = runner.benchmark_parser("benchmarks.bsvm_active", __doc__, "results/bsvm", QUICK_HELP, data_dir=True)
    parser.add_argument("--repeats", type=int, default=3)
    args, command = runner.parse_command_line(parser, argv, shared=shared, log=log)
    prefix = Path(args.out_dir) / ("bsvm_active_quick" if args.quick else "bsvm_active")
    config = dict(datasets=list(SHIPPED + SKLEARN), repeats=args.repeats, queries=100, steps=50, learning_rate=0.05)
    config.update(num_inducing=4, plot=prefix.name + ".png")
    if args.quick:
        config.update(datasets=["iris"], repeats=1, queries=5, steps=20)
    settings = [config[k] for k in ("datasets", "repeats", "queries", "steps", "num_inducing", "learning_rate")]

    def body() -> Dict:
        curves = run(*settings, args.data_dir)
        return dict(config=config, curves=curves, summary=summarise(curves, config["queries"]))

    report = timed_report(command, body)
    write_report(prefix, report, markdown(report))
    log(f"wrote {plot(report['summary'], prefix.with_suffix('.png'))} and its JSON and Markdown")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
