r"""
The hybrid Bayesian SVM (Wistuba & Rawat 2018, §3.4, §4.2 and §4.3.2) on scikit-learn's digits against
the same CNN with a softmax head, and FGSM adversarial detection by the variation ratio. Protocol and
results: docs/benchmarks/bsvm.md.
"""

from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from scipy.cluster.vq import kmeans2
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from gpflow_ep.compare import make_model
from gpflow_ep.kernels import DeepKernel, FeatureInducingPoints
from gpflow_ep.likelihoods import MultiClassHinge

from . import runner
from .bsvm_multiclass import adam_step
from .claims import Claim, claim_items, verdicts
from .dgp_uci import train_interleaved
from .minibatch import TimedSteps
from .report import markdown_header, markdown_section, rerender_report, timed_report, write_report
from .stats import cell, markdown_table, mean_se

log = runner.progress_logger("bsvm_hybrid")
QUICK_HELP = "1 seed, 60 steps, M = 10, eps in {0, 0.1}"
METHODS = ("hybrid BSVM", "CNN softmax")
NUM_CLASSES = 10
BATCH = 128
ATTACK_STATS = ("accuracy", "mean_uncertainty", "roc_auc")


def digits(seed: int):
    """(X_train, X_test, Y_train, Y_test): a stratified 80/20 split of scikit-learn's digits, pixels in [0, 1]."""
    X, y = load_digits(return_X_y=True)
    return train_test_split(X / 16.0, y[:, None].astype(np.float64), test_size=0.2, stratify=y, random_state=seed)


def trunk(features: int, seed: int) -> tf_keras.Model:
    """φ: ``conv(16,3,3) - conv(32,3,3) - max_pool - fc(128) - fc(features)``, ReLU but on the last."""
    init, layers = tf_keras.initializers.GlorotUniform, tf_keras.layers
    return tf_keras.Sequential(
        [
            layers.Reshape((8, 8, 1)),
            layers.Conv2D(16, 3, padding="same", activation="relu", kernel_initializer=init(seed)),
            layers.Conv2D(32, 3, padding="same", activation="relu", kernel_initializer=init(seed + 1)),
            layers.MaxPool2D(2),
            layers.Flatten(),
            layers.Dense(128, activation="relu", kernel_initializer=init(seed + 2)),
            layers.Dense(features, kernel_initializer=init(seed + 3)),
        ]
    )


def hybrid_model(X, features: int, M: int, seed: int) -> gpflow.models.SVGP:
    """SVGP + MultiClassHinge on the DeepKernel of a fresh trunk, Z the k-means of its features of X."""
    network = trunk(features, seed)
    Z, _ = kmeans2(network(tf.constant(X, tf.float32)).numpy().astype(np.float64), M, minit="++", seed=seed)
    model = make_model(
        "bsvm",
        kernel=DeepKernel(gpflow.kernels.SquaredExponential(lengthscales=np.full(features, np.sqrt(features))), network),
        likelihood=MultiClassHinge(NUM_CLASSES, bound="augmented"),
        inducing_variable=FeatureInducingPoints(Z),
        num_data=len(X),
        num_classes=NUM_CLASSES,
    )
    model.q_mu.assign(0.01 * np.random.default_rng(seed).normal(size=(M, NUM_CLASSES)))
    model.q_sqrt.assign(np.stack([0.1 * np.eye(M)] * NUM_CLASSES))
    return model


class SoftmaxCNN(tf.Module):
    """The trunk followed by fc(10) logits."""

    def __init__(self, features: int, seed: int):
        super().__init__()
        self.network = trunk(features, seed)
        self.head = tf_keras.layers.Dense(NUM_CLASSES, kernel_initializer=tf_keras.initializers.GlorotUniform(seed + 4))
        self.logits(tf.zeros([1, 64], tf.float32))  # build the variables before the optimiser collects them

    def logits(self, X):
        return self.head(self.network(tf.cast(X, tf.float32)))

    def per_point_loss(self, X, Y):
        labels = tf.cast(tf.reshape(Y, [-1]), tf.int32)
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, self.logits(X))

    def training_loss(self, data):
        return tf.reduce_mean(self.per_point_loss(*data))


def per_point_loss(model, X, Y):
    """J: the CNN's cross-entropy, or -ℓ_n*, the negative per-point data term of the hybrid's ELBO."""
    if isinstance(model, SoftmaxCNN):
        return model.per_point_loss(X, Y)
    mean, var = model.predict_f(X)
    return -model.likelihood.variational_expectations(X, mean, var, Y)


def batches(X, Y, seed: int):
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().shuffle(len(X), seed=seed).batch(BATCH, True)
    return iter(dataset.prefetch(2))


def scores(model, X) -> Dict[str, np.ndarray]:
    """Predicted labels and the uncertainty score 1 − max_c p(c): the variation ratio, or from the softmax."""
    if isinstance(model, SoftmaxCNN):
        p = tf.nn.softmax(model.logits(X)).numpy()
        return dict(label=np.argmax(p, 1), uncertainty=1.0 - p.max(1))
    mean, var = model.predict_f(X)
    p = model.likelihood.argmax_probabilities(mean, var).numpy()
    return dict(label=np.argmax(mean.numpy(), 1), uncertainty=1.0 - p.max(1))


def attack(model, X, Y, eps: float, clean: Dict) -> Dict:
    """
    Accuracy and mean uncertainty on the FGSM images x_adv = clip(x + ε sign ∇_x J(x, y), 0, 1), and the
    ROC-AUC of the uncertainty score, clean against attacked (``clean``: :func:`scores` of X).
    """
    adv, auc = clean, None
    if eps > 0:
        X_tensor = tf.constant(X)
        with tf.GradientTape() as tape:
            tape.watch(X_tensor)
            loss = tf.reduce_sum(per_point_loss(model, X_tensor, Y))
        adv = scores(model, np.clip(X + eps * np.sign(tape.gradient(loss, X_tensor).numpy()), 0.0, 1.0))
        auc = roc_auc_score(np.r_[np.zeros(len(X)), np.ones(len(X))], np.r_[clean["uncertainty"], adv["uncertainty"]])
    accuracy = float(np.mean(adv["label"] == Y[:, 0]))
    return dict(eps=eps, accuracy=accuracy, mean_uncertainty=float(np.mean(adv["uncertainty"])), roc_auc=auc)


def run_seed(seed: int, steps: int, lr: float, M: int, features: int, chunk: int, epsilons: List[float]) -> Dict:
    """Both models trained side by side on split ``seed``, then attacked at every ε."""
    Xtr, Xte, Ytr, Yte = digits(seed)
    tf_keras.utils.set_random_seed(seed)
    models = {"hybrid BSVM": hybrid_model(Xtr, features, M, seed), "CNN softmax": SoftmaxCNN(features, seed)}
    runners = {m: TimedSteps(adam_step(model, lr), batches(Xtr, Ytr, seed)) for m, model in models.items()}
    train_interleaved(runners.values(), steps, chunk)
    results = {}
    for method, model in models.items():
        clean = scores(model, Xte)
        results[method] = dict(
            accuracy=float(np.mean(clean["label"] == Yte[:, 0])),
            seconds_per_step=runners[method].median_per_step(),
            attacks=[attack(model, Xte, Yte, eps, clean) for eps in epsilons],
        )
    log(f"seed {seed}: " + ", ".join(f"{m} {r['accuracy']:.4f}" for m, r in results.items()))
    return results


def summarise(runs: List[Dict], epsilons: List[float]) -> Dict:
    """Mean ± s.e. over seeds of every accuracy and attack statistic, median time per step, and the claims."""
    summary = {}
    for method in METHODS:
        rows = [r["results"][method] for r in runs]
        summary[method] = dict(
            accuracy=mean_se([r["accuracy"] for r in rows]),
            seconds_per_step=float(np.median([r["seconds_per_step"] for r in rows])),
            attacks=[
                dict(eps=eps, **{k: mean_se([r["attacks"][i][k] for r in rows]) for k in ATTACK_STATS})
                for i, eps in enumerate(epsilons)
            ],
        )
    hybrid, cnn = summary["hybrid BSVM"], summary["CNN softmax"]
    overall = dict(hybrid=hybrid["accuracy"]["mean"], cnn=cnn["accuracy"]["mean"])
    overall["time_ratio"] = hybrid["seconds_per_step"] / cnn["seconds_per_step"]
    attacks = [
        dict(eps=a["eps"], hybrid=a["roc_auc"]["mean"], cnn=b["roc_auc"]["mean"])
        for a, b in zip(hybrid["attacks"], cnn["attacks"])
        if a["eps"] > 0
    ]
    return dict(methods=summary, claims=verdicts(TRAINING_CLAIMS, [overall]) + verdicts(FGSM_CLAIMS, attacks))


#: the paper's claims on accuracy and cost, over the mean accuracies and the ratio of the times per step
TRAINING_CLAIMS = (
    Claim(
        "Fig. 4: hybrid accuracy ≥ 0.95 and within 0.02 of the CNN's",
        lambda r: r["hybrid"] >= 0.95 and abs(r["hybrid"] - r["cnn"]) <= 0.02,
        show=lambda r: f"hybrid {r['hybrid']:.4f}, CNN {r['cnn']:.4f} (difference {r['hybrid'] - r['cnn']:+.4f})",
    ),
    Claim(
        "Fig. 4: the hybrid trains slower than the CNN",
        lambda r: r["time_ratio"] > 1.0,
        show=lambda r: f"time per step {r['time_ratio']:.2f}× the CNN's",
    ),
)
#: the paper's claims on FGSM detection, over the ROC-AUCs of the uncertainty scores at every ε > 0
FGSM_CLAIMS = (
    Claim(
        "§4.3.2: the variation ratio detects FGSM images better than chance (ROC-AUC > 0.5)",
        lambda r: r["hybrid"] > 0.5,
        show=lambda r: f"ε {r['eps']:g}: ROC-AUC {r['hybrid']:.3f}",
    ),
    Claim(
        "§4.3.2: detection ROC-AUC almost 1 (paper, MNIST; taken as ≥ 0.95 at some ε)",
        lambda r: r["hybrid"] >= 0.95,
        need="any",
        show=lambda r: f"ε {r['eps']:g}: ROC-AUC {r['hybrid']:.3f} (the CNN's 1 - max softmax {r['cnn']:.3f})",
    ),
)


def markdown(report) -> str:
    c, summary = report["config"], report["summary"]["methods"]
    ref = summary["CNN softmax"]["seconds_per_step"]
    methods = [
        [m, cell(s["accuracy"]["mean"], 4, se=s["accuracy"]["se"] or 0), cell(1e3 * s["seconds_per_step"], 2)]
        + [cell(s["seconds_per_step"] / ref, 2)]
        for m, s in summary.items()
    ]
    attacks = [
        [f"{eps:g}"]
        + [
            " / ".join(cell(a[k]["mean"], 3, missing="–") for k in ATTACK_STATS)
            for a in (summary[m]["attacks"][i] for m in METHODS)
        ]
        for i, eps in enumerate(c["epsilons"])
    ]
    lines = markdown_header("Hybrid Bayesian SVM on digits", report)
    lines += [
        f"{c['seeds']} stratified 80/20 splits, {c['steps']} Adam steps (lr {c['learning_rate']}, batch {BATCH}), "
        f"M = {c['num_inducing']} inducing features of F = {c['features']}; mean ± s.e. over splits, "
        "median time per step (interleaved chunks, compilation excluded).",
        "",
        *markdown_table(["method", "test accuracy", "ms / step", "× CNN"], methods),
        "",
        "**FGSM** (accuracy on the attacked test images / mean uncertainty score / ROC-AUC clean vs attacked)",
        "",
        *markdown_table(["ε", *METHODS], attacks),
    ]
    lines += markdown_section("Claims", claim_items(report["summary"]["claims"]))
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = runner.benchmark_parser("benchmarks.bsvm_hybrid", __doc__, "results/bsvm", QUICK_HELP)
    parser.add_argument("--rerender", action="store_true", help="redo summary, claims and table of the stored JSON")
    args, command = runner.parse_command_line(parser, argv, shared=shared, log=log)
    prefix = Path(args.out_dir) / ("bsvm_hybrid_quick" if args.quick else "bsvm_hybrid")
    if args.rerender:
        reanalyse = lambda r: dict(r, summary=summarise(r["runs"], r["config"]["epsilons"]))  # noqa: E731
        return rerender_report(prefix, reanalyse, markdown, log)
    config = dict(seeds=3, steps=3000, learning_rate=1e-3, num_inducing=64, features=32, chunk=250)
    config["epsilons"] = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
    if args.quick:
        config.update(seeds=1, steps=60, num_inducing=10, chunk=20, epsilons=[0.0, 0.1])
    settings = [config[k] for k in ("steps", "learning_rate", "num_inducing", "features", "chunk", "epsilons")]

    def run() -> Dict:
        runs = [dict(seed=seed, results=run_seed(seed, *settings)) for seed in range(config["seeds"])]
        return dict(config=config, runs=runs, summary=summarise(runs, config["epsilons"]))

    report = timed_report(command, run)
    log("wrote {} and {}".format(*write_report(prefix, report, markdown(report))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
