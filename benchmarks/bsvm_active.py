r"""
Active learning with the multi-class Bayesian SVM (Wistuba & Rawat 2018, §4.3.1 and Fig. 5): querying by
the variation ratio against querying by the entropy of the softmax of the mean prediction.

For each data set (split 0 of the shipped multi-class sets; scikit-learn's iris and digits in a
seeded stratified 80/20 split) and each of ``--repeats`` random starts: one labelled training point
per class drawn at random, the rest of the training part is the pool. A whitened ``SVGP`` with
``MultiClassHinge(C, bound="augmented")``, P = ``--num-inducing`` inducing inputs (k-means of the
whole training part, trainable) and an SE-ARD kernel (lengthscales √D) is trained full batch by
``--steps`` Adam steps (lr ``--lr``) on the labelled set, then one pool point is queried, labelled
and added, ``--queries`` times; the model is warm-started from the previous round. Both policies use
the same start, model and steps:

* ``variation ratio`` (the paper's Bayesian policy): the pool point of largest
  1 - max_c P(argmax_j f_j = c), the many-sample limit of the paper's vote ratio;
* ``softmax entropy`` (the paper's point-estimate policy): the largest entropy of softmax(E[f]).

Ties are broken at random. Reported: the test error after every query, per policy and data set (mean
over repeats), the rank of each policy per data set and query (1 = lower error, ties 1.5) and its mean
over data sets; the curves are drawn in a PNG.

Run ``python -m benchmarks.bsvm_active [--quick] [--out-dir results/bsvm]``.
"""

from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from scipy.cluster.vq import kmeans2

from gpflow_ep.likelihoods import MultiClassHinge

from .bsvm_multiclass import SHIPPED, SKLEARN, load, rank_by_accuracy
from .claims import claim_items
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger

log = progress_logger("bsvm_active")
QUICK_HELP = "iris, 1 repeat, 5 queries, 20 steps per round"
POLICIES = ("variation ratio", "softmax entropy")


def scores(policy: str, model, X) -> np.ndarray:
    mean, var = model.predict_f(X)
    if policy == "variation ratio":
        return 1.0 - model.likelihood.argmax_probabilities(mean, var).numpy().max(1)
    p = tf.nn.softmax(mean).numpy()
    return -np.sum(p * np.log(np.maximum(p, 1e-300)), axis=1)


class Learner:
    """The model, its compiled full-batch Adam step (any number of labelled points) and the labelled set."""

    def __init__(self, X, C: int, M: int, lr: float, seed: int):
        D = X.shape[1]
        Z, _ = kmeans2(X, min(M, len(X)), minit="++", seed=seed)
        self.model = gpflow.models.SVGP(
            gpflow.kernels.SquaredExponential(lengthscales=np.full(D, np.sqrt(D))),
            MultiClassHinge(C, bound="augmented"),
            gpflow.inducing_variables.InducingPoints(Z),
            num_latent_gps=C,
            num_data=None,  # full batch: the ELBO's data term is the sum over the labelled set
        )
        self.model.q_mu.assign(0.01 * np.random.default_rng(seed).normal(size=self.model.q_mu.shape))
        optimizer = tf_keras.optimizers.Adam(lr)
        variables = self.model.trainable_variables
        optimizer.build(variables)
        spec = (tf.TensorSpec([None, D], tf.float64), tf.TensorSpec([None, 1], tf.float64))

        @tf.function(input_signature=spec, autograph=False)
        def step(X, Y):
            with tf.GradientTape() as tape:
                loss = self.model.training_loss((X, Y))
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        self.step = step

    def train(self, X, Y, steps: int) -> None:
        X, Y = tf.constant(X), tf.constant(Y)
        for _ in range(steps):
            self.step(X, Y)


def run_curve(policy, data, start, queries, steps, M, lr, seed) -> List[float]:
    """Test error after 0, 1, ..., ``queries`` queries."""
    rng = np.random.default_rng(seed)
    C = int(max(data.Y_train.max(), data.Y_test.max())) + 1
    learner = Learner(data.X_train, C, M, lr, seed)
    labelled = list(start)
    pool = np.setdiff1d(np.arange(len(data.X_train)), labelled)
    errors = []
    for q in range(queries + 1):
        learner.train(data.X_train[labelled], data.Y_train[labelled], steps)
        mean, _ = learner.model.predict_f(data.X_test)
        errors.append(float(np.mean(np.argmax(mean.numpy(), 1) != data.Y_test[:, 0])))
        if q == queries or pool.size == 0:
            break
        s = scores(policy, learner.model, data.X_train[pool])
        best = np.flatnonzero(s >= s.max() - 1e-12)
        pick = pool[rng.choice(best)]
        labelled.append(int(pick))
        pool = pool[pool != pick]
    return errors


def run(datasets, repeats, queries, steps, M, lr, data_dir) -> Dict:
    curves = {}
    for name in datasets:
        data = load(name, 0, data_dir)
        curves[name] = {p: [] for p in POLICIES}
        for r in range(repeats):
            rng = np.random.default_rng(1000 + r)
            y = data.Y_train[:, 0]
            start = [int(rng.choice(np.flatnonzero(y == c))) for c in np.unique(y)]
            for policy in POLICIES:
                curves[name][policy].append(run_curve(policy, data, start, queries, steps, M, lr, seed=r))
        log(f"{name}: " + ", ".join(f"{p} {np.mean([c[-1] for c in curves[name][p]]):.3f}" for p in POLICIES))
    return curves


def summarise(curves: Dict, queries: int) -> Dict:
    mean_error = {name: {p: np.mean(np.array(c[p]), axis=0).tolist() for p in POLICIES} for name, c in curves.items()}
    ranks = {p: [] for p in POLICIES}
    for q in range(queries + 1):
        per_set = [rank_by_accuracy([-mean_error[name][p][q] for p in POLICIES]) for name in mean_error]
        for i, p in enumerate(POLICIES):
            ranks[p].append(float(np.mean([r[i] for r in per_set])))
    late = range(min(20, queries), queries + 1)
    vr_late = float(np.mean([ranks["variation ratio"][q] for q in late]))
    se_late = float(np.mean([ranks["softmax entropy"][q] for q in late]))
    claims = [
        dict(
            claim="Fig. 5a: after ≥ 20 queries the variation-ratio policy has the lower mean rank",
            verdict="reproduced" if vr_late < se_late else "not reproduced",
            evidence=f"mean rank over queries {min(20, queries)}–{queries}: variation ratio {vr_late:.2f}, "
            f"softmax entropy {se_late:.2f}; final test error (mean over sets) "
            + ", ".join(f"{p} {np.mean([mean_error[n][p][-1] for n in mean_error]):.3f}" for p in POLICIES),
        )
    ]
    return dict(mean_error=mean_error, mean_rank=ranks, claims=claims)


def plot(summary: Dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary["mean_error"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name in names:
        for p, style in zip(POLICIES, ("-", "--")):
            errors = summary["mean_error"][name][p]
            line = axes[0].plot(errors, style, label=f"{name}, {p}" if len(names) <= 4 else None)
            if p == POLICIES[0]:
                color = line[0].get_color()
            else:
                line[0].set_color(color)
    axes[0].set(xlabel="queries", ylabel="test error", title="test error (solid: variation ratio, dashed: entropy)")
    if len(names) <= 4:
        axes[0].legend(fontsize=7)
    for p in POLICIES:
        axes[1].plot(summary["mean_rank"][p], label=p)
    axes[1].set(
        xlabel="queries", ylabel="mean rank over data sets", title="mean rank (lower is better)", ylim=(0.9, 2.1)
    )
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def markdown(report) -> str:
    c, s = report["config"], report["summary"]
    marks = sorted({0, min(20, c["queries"]), c["queries"]})
    lines = markdown_header("Active learning with the multi-class Bayesian SVM", report)
    lines += [
        f"{c['repeats']} random starts per set, {c['queries']} queries, {c['steps']} Adam steps per round (lr "
        f"{c['learning_rate']}, warm start), P = {c['num_inducing']}; test error mean over starts. Curves: `{c['plot']}`.",
        "",
        "| data set | "
        + " | ".join(f"{p}: error after {' / '.join(map(str, marks))} queries" for p in POLICIES)
        + " |",
        "|---" * (1 + len(POLICIES)) + "|",
    ]
    for name, errors in s["mean_error"].items():
        cells = [" / ".join(f"{errors[p][min(q, len(errors[p]) - 1)]:.3f}" for q in marks) for p in POLICIES]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(
        "| **mean rank** | "
        + " | ".join(
            " / ".join(f"{s['mean_rank'][p][min(q, len(s['mean_rank'][p]) - 1)]:.2f}" for q in marks) for p in POLICIES
        )
        + " |"
    )
    lines += markdown_section("Claims", claim_items(s["claims"]))
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.bsvm_active", __doc__, "results/bsvm", QUICK_HELP, data_dir=True)
    parser.add_argument("--datasets", default=",".join(SHIPPED + SKLEARN))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--num-inducing", type=int, default=4)
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    datasets = parse_list(args.datasets)
    if args.quick:
        datasets, args.repeats, args.queries, args.steps = ["iris"], 1, 5, 20
    stem = "bsvm_active_quick" if args.quick else "bsvm_active"
    png = Path(args.out_dir) / f"{stem}.png"
    config = dict(
        datasets=datasets,
        repeats=args.repeats,
        queries=args.queries,
        steps=args.steps,
        learning_rate=args.lr,
        num_inducing=args.num_inducing,
        plot=png.name,
    )

    def body() -> Dict:
        curves = run(datasets, args.repeats, args.queries, args.steps, args.num_inducing, args.lr, args.data_dir)
        return dict(config=config, curves=curves, summary=summarise(curves, args.queries))

    report = timed_report(command, body)
    png.parent.mkdir(parents=True, exist_ok=True)
    plot(report["summary"], png)
    json_path, md_path = write_report(Path(args.out_dir) / stem, report, markdown(report))
    log(f"wrote {json_path}, {md_path} and {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
