r"""
Accuracy of sparse EP with tied sites (stochastic EP, Li, Hernández-Lobato & Turner 2015: one average site per
block of u) against the SEP paper's per-point sites (Hernández-Lobato & Hernández-Lobato 2016, Sec. 2.3) and
GPflow's SVGP, trained alike: the same SE-ARD kernel (shared by the classes), the same initial inducing inputs
(k-means centres), the same minibatches (``make_dataset``'s, with the site index for per-point EP only), the
same number of steps and the same Adam learning rate on every side.

* binary: tied and per-point ``SEPGPC`` against SVGP with stock ``gpflow.likelihoods.Bernoulli()`` on the six
  sets of the SEP paper's Table 1 (Australian, Breast, Crabs, Iono, Pima, Sonar) and on nycflights13
  "is the arrival delayed?" (a training subsample);
* multi-class: tied and per-point ``SEPMGPC`` (Villacampa-Calvo & Hernández-Lobato 2017) against SVGP with
  ``MultiClass(C)`` (robust max) and with ``Softmax(C)``, one kernel and one set of inducing inputs shared by
  the C latent functions on every side, on the eight multi-class sets.

Test error and NLPD, mean ± standard error over splits, and the goal "tied SEP's test NLPD within two standard
errors of per-point SEP's on every set". Protocol and results: docs/benchmarks/sepgpc_tied.md.
Run ``python -m benchmarks.tied_accuracy [--quick] [--out-dir results/tied]``.
"""

import math
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
from gpflow.keras import tf_keras

from gpflow_ep.compare import inducing_inputs
from gpflow_ep.training import make_dataset

from .claims import Claim, claim_items, verdicts
from .data import available_benchmarks, load_benchmark, load_flights
from .dgp_uci import train_interleaved
from .minibatch import MINIBATCH_NOTE, TimedSteps, sparse_model
from .models import ModelSlot
from .report import markdown_header, markdown_section
from .runner import benchmark_parser, check_datasets, parse_command_line, parse_list, progress_logger, run_split_grid
from .stats import cell, markdown_table, mean_se, paired_differences
from .step_speed import svgp_step
from .tied_speed import minibatch_ep_step

log = progress_logger("tied_accuracy")
BINARY = ("Australian", "Breast", "Crabs", "Iono", "Pima", "Sonar")
FLIGHTS = "flights"
#: method → (:func:`~benchmarks.minibatch.sparse_model`'s method, its EP options)
MODELS = {
    "SEPGPC tied": ("SEPGPC", dict(sites="tied")),
    "SEPGPC per-point": ("SEPGPC", dict(sites="per_point")),
    "SVGP": ("SVGP", {}),
    "SEPMGPC tied": ("SEPMGPC", dict(sites="tied")),
    "SEPMGPC per-point": ("SEPMGPC", dict(sites="per_point")),
    "SVGP RobustMax": ("RobustMax", {}),
    "SVGP Softmax": ("Softmax", {}),
}
METHODS = {
    "binary": ("SEPGPC tied", "SEPGPC per-point", "SVGP"),
    "multiclass": ("SEPMGPC tied", "SEPMGPC per-point", "SVGP RobustMax", "SVGP Softmax"),
}
#: the (tied, per-point) pair of each kind, whose NLPDs the goal compares
PAIRS = {kind: methods[:2] for kind, methods in METHODS.items()}
#: settings of the small sets (the same number of steps on each) and of the flights (epochs), full and quick
FULL = dict(
    splits=5,
    lr=0.01,
    chunk=100,
    small=dict(M=50, batch=50, steps=1000),
    flights=dict(n_train=100_000, n_test=10_000, M=100, batch=1000, epochs=30, kmeans_rows=10_000),
)
QUICK = dict(
    splits=1,
    lr=0.01,
    chunk=20,
    small=dict(M=10, batch=50, steps=20),
    flights=dict(n_train=2_000, n_test=1_000, M=10, batch=200, epochs=3, kmeans_rows=2_000),
    sets=["binary/Crabs", "multiclass/wine", FLIGHTS],
)


def score(model, X, Y) -> Dict:
    """
    Test error (the most probable class; p(y = 1) > ½ for one latent GP), NLPD (-mean log p(y* | x*)) and
    the standard error of that mean over the test points, and the test log densities themselves.
    """
    p = model.predict_y(X)[0].numpy()
    predicted = np.argmax(p, axis=1) if p.shape[1] > 1 else (p[:, 0] > 0.5).astype(float)
    log_density = model.predict_log_density((X, Y)).numpy()
    return dict(
        error=float(np.mean(predicted != Y[:, 0])),
        nlpd=float(-np.mean(log_density)),
        nlpd_se_points=float(np.std(log_density, ddof=1) / math.sqrt(len(log_density))),
        log_density=log_density,
    )


class MethodSlot(ModelSlot):
    """
    One method's model, Adam and compiled step for the splits of one data set (same n, D, C): reset to the
    model's initial state and the split's inducing inputs at each split, so that the step is compiled once.
    """

    def __init__(self, method: str, n: int, D: int, C: int, M: int, lr: float):
        name, options = MODELS[method]
        Z0 = np.random.default_rng(0).standard_normal((M, D))  # placeholder, replaced per split
        model = sparse_model(name, D, Z0, n, C, inducing="shared" if C > 2 else None, **options)
        super().__init__(model, np.zeros((n, D)), np.zeros((n, 1)), holds_data=False)
        self.optimizer = tf_keras.optimizers.Adam(lr)
        self.optimizer.build(model.trainable_variables)
        make_step = svgp_step if name in ("SVGP", "RobustMax", "Softmax") else minibatch_ep_step
        self.step, self.method, self.n = make_step(model, self.optimizer), method, n
        self.with_index = options.get("sites") == "per_point"
        iv = model.inducing_variable
        self.z_path = "inducing_variable.inducing_variable.Z" if hasattr(iv, "inducing_variable") else "inducing_variable.Z"

    def trainer(self, X, Y, Z, batch: int, seed: int) -> TimedSteps:
        """The model reset with inducing inputs Z and Adam's state zeroed; its compiled step on (X, Y)'s batches."""
        self.load(X, Y, {self.z_path: Z})
        for variable in self.optimizer.variables():
            variable.assign(np.zeros(variable.shape))
        batches = make_dataset((X, Y), batch, seed=seed, drop_remainder=True, index=self.with_index)
        return TimedSteps(self.step, iter(batches))


def load_set(name: str, split: int, flights: Dict, data_dir):
    """(kind, X, Y, X_test, Y_test) of ``"binary/<name>"``, ``"multiclass/<name>"`` or ``"flights"``."""
    if name == FLIGHTS:
        X, Y, Xt, Yt, _ = load_flights(test_size=flights["n_test"], seed=split, subsample=flights["n_train"])
        return "binary", X, Y, Xt, Yt
    kind, set_name = name.split("/")
    data = load_benchmark(set_name, split, data_dir=data_dir, kind=kind)
    if kind == "multiclass":
        return kind, data.X_train, data.Y_train.astype(np.int64), data.X_test, data.Y_test.astype(np.int64)
    return kind, data.X_train, data.Y_train, data.X_test, data.Y_test


def make_run_split(config: Dict, data_dir):
    """``run_split(name, split)``: every method of the set's kind trained side by side on one split, scored."""
    slots: Dict = {}

    def run_split(name: str, split: int) -> Dict:
        kind, X, Y, Xt, Yt = load_set(name, split, config["flights"], data_dir)
        s = config["flights"] if name == FLIGHTS else config["small"]
        (n, D), M = X.shape, min(s["M"], X.shape[0])
        C = int(max(Y.max(), Yt.max())) + 1 if kind == "multiclass" else 2
        rows = np.random.default_rng(split).permutation(n)[: s.get("kmeans_rows", n)]
        Z = inducing_inputs(X[np.sort(rows)], M, seed=split)
        batch = min(s["batch"], n)
        steps = s["steps"] if "steps" in s else s["epochs"] * (n // batch)
        trainers = {}
        for method in METHODS[kind]:
            key = (name, method)
            if key not in slots or slots[key].n != n:
                slots[key] = MethodSlot(method, n, D, C, M, config["lr"])
            trainers[method] = slots[key].trainer(X, Y, Z, batch, seed=split)
        train_interleaved(trainers.values(), steps, config["chunk"])
        scores = {method: score(slots[name, method].model, Xt, Yt) for method in METHODS[kind]}
        tied, per_point = (scores[m].pop("log_density") for m in PAIRS[kind])
        for other in scores.values():
            other.pop("log_density", None)
        difference = mean_se(tied - per_point)  # of the log densities: NLPD(per-point) - NLPD(tied), paired
        results = {m: dict(scores[m], ms_per_step=1e3 * trainers[m].median_per_step()) for m in METHODS[kind]}
        return dict(
            dataset=name, kind=kind, split=split, n_train=n, n_test=len(Xt), D=D, num_classes=C, M=M,
            batch=batch, steps=steps, epochs=steps * batch / n, results=results,
            nlpd_difference_points=dict(mean=-difference["mean"], se=difference["se"]),
        )

    return run_split


def _within(a: Dict, b: Dict) -> Optional[bool]:
    """|a - b| ≤ 2 √(se_a² + se_b²) of two NLPD summaries (None without standard errors)."""
    if a["se"] is None or b["se"] is None:
        return None
    return bool(abs(a["mean"] - b["mean"]) <= 2.0 * math.hypot(a["se"], b["se"]))


def summarise(runs: List[Dict]) -> Dict:
    """
    Per set: each method's error and NLPD, mean ± standard error over splits (over the test points with one
    split), median ms per step; tied − per-point NLPD, unpaired and paired; the goal's verdict per set and over all.
    """
    per_set = {}
    for name in dict.fromkeys(r["dataset"] for r in runs):
        rows = [r for r in runs if r["dataset"] == name]
        kind, one = rows[0]["kind"], len(rows) == 1
        methods = {}
        for m in METHODS[kind]:
            results = [r["results"][m] for r in rows]
            nlpd = mean_se([x["nlpd"] for x in results])
            if one:
                nlpd["se"] = results[0]["nlpd_se_points"]
            methods[m] = dict(
                error=mean_se([x["error"] for x in results]),
                nlpd=nlpd,
                ms_per_step=float(np.median([x["ms_per_step"] for x in results])),
                nonfinite_splits=[r["split"] for r, x in zip(rows, results) if not math.isfinite(x["nlpd"])],
            )
        tied, per_point = PAIRS[kind]
        if one:
            paired = dict(rows[0]["nlpd_difference_points"], n=rows[0]["n_test"])
        else:
            by_split = {m: {r["split"]: r["results"][m]["nlpd"] for r in rows} for m in (tied, per_point)}
            paired = paired_differences(by_split[tied], by_split[per_point])
        keys = ("kind", "n_train", "n_test", "D", "num_classes", "M", "batch", "steps", "epochs")
        settings = {k: rows[0][k] for k in keys}
        per_set[name] = dict(
            settings,
            splits=len(rows),
            se_over="test points" if one else "splits",
            methods=methods,
            tied_minus_per_point=methods[tied]["nlpd"]["mean"] - methods[per_point]["nlpd"]["mean"],
            paired=paired,
            within_2se=_within(methods[tied]["nlpd"], methods[per_point]["nlpd"]),
        )
    table = [dict(row, name=name) for name, row in per_set.items()]
    nonfinite = [
        f"{name} {m}: non-finite test NLPD on splits {e['nonfinite_splits']} (left out of its mean)"
        for name, row in per_set.items()
        for m, e in row["methods"].items()
        if e["nonfinite_splits"]
    ]
    return dict(per_set=per_set, claims=verdicts([GOAL], table), nonfinite=nonfinite)


def _show(row) -> str:
    tied, per_point = (row["methods"][m]["nlpd"] for m in PAIRS[row["kind"]])
    bound = "—" if tied["se"] is None else f"{2 * math.hypot(tied['se'], per_point['se']):.3f}"
    return f"{row['name']} {tied['mean']:.3f} vs {per_point['mean']:.3f} (|Δ| {abs(row['tied_minus_per_point']):.3f}, 2 SE {bound})"


GOAL = Claim(
    "goal: tied SEP's test NLPD within two standard errors (combined, √(se_tied² + se_per-point²)) of per-point "
    "SEP's on every set",
    holds=lambda row: bool(row["within_2se"]),
    show=_show,
)


def _set_table(per_set: Dict, kind: str) -> List[str]:
    methods = METHODS[kind]
    short = [m.replace("SEPGPC ", "").replace("SEPMGPC ", "").replace("SVGP ", "") for m in methods]
    header = ["set", "n train", "splits", "M", "batch", "steps", "epochs"]
    header += [f"error {s}" for s in short] + [f"NLPD {s}" for s in short]
    header += ["tied − per-point NLPD", "paired", "within 2 SE", *(f"ms/step {s}" for s in short)]
    rows = []
    for name, row in per_set.items():
        if row["kind"] != kind:
            continue
        e = row["methods"]
        best = min(e[m]["nlpd"]["mean"] for m in methods)
        rows.append(
            [name.split("/")[-1], row["n_train"], row["splits"], row["M"], row["batch"], row["steps"], f"{row['epochs']:.0f}"]
            + [cell(e[m]["error"], 3) for m in methods]
            + [cell(e[m]["nlpd"], 3, bold=e[m]["nlpd"]["mean"] == best) for m in methods]
            + [cell(row["tied_minus_per_point"], 3, signed=True), cell(row["paired"], 3, signed=True)]
            + [{True: "yes", False: "**no**", None: "—"}[row["within_2se"]]]
            + [f"{e[m]['ms_per_step']:.2f}" for m in methods]
        )
    return markdown_table(header, rows)


def markdown(report: Dict) -> str:
    c, s = report["config"], report["summary"]
    small, fl = c["small"], c["flights"]
    lines = markdown_header("Tied sites: accuracy against per-point sites and SVGP", report) + [
        f"Every method of a set trains on the same minibatches (seed = split) from the same initial inducing inputs "
        f"(k-means centres, seed = split) with the same SE-ARD kernel (variance 1, lengthscales √D; one kernel and "
        f"one set of inducing inputs shared by the C latent functions), Adam {c['lr']} on all hyper-parameters "
        f"(and on SVGP's q(u)); EP's q(u) by its minibatch refresh. Small sets: M = {small['M']}, batch "
        f"{small['batch']}, {small['steps']} steps on each set (its epochs in the table), fixed splits "
        f"{c['first_split']}–{c['first_split'] + c['splits'] - 1}. nycflights13 \"delayed\": {fl['n_train']:,} "
        f"training flights (the first of a random order) and {fl['n_test']:,} test flights, M = {fl['M']} (k-means "
        f"of {fl['kmeans_rows']:,} training rows), batch {fl['batch']}, {fl['epochs']} epochs, one split.",
        "",
        "Error and NLPD: mean ± standard error over splits; with one split (flights) the standard error of the "
        "mean over the test points. Bold: the lowest NLPD. \"tied − per-point NLPD\": difference of the means; "
        "\"paired\": mean ± s.e. of the per-split differences (flights: of the per-point log densities). "
        "\"within 2 SE\": |tied − per-point| ≤ 2 √(se_tied² + se_per-point²). ms/step: median over splits of the "
        "median time per step over interleaved chunks of steps (compilation excluded), for orientation only "
        "(benchmarks.tied_speed and benchmarks.tied_time_to_accuracy time the steps).",
        "",
        "## Binary (SEPGPC; SVGP with Bernoulli)",
        "",
        *_set_table(s["per_set"], "binary"),
        "",
        "## Multi-class (SEPMGPC; SVGP with MultiClass (robust max) and Softmax)",
        "",
        *_set_table(s["per_set"], "multiclass"),
        *markdown_section("Goal", claim_items(s["claims"])),
        *markdown_section("Notes", [*s["nonfinite"], MINIBATCH_NOTE, "SVGP Softmax's NLPD is GPflow's Monte Carlo "
                                    "estimate (its likelihood has no closed form)."]),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    quick = "Crabs, wine and 2,000 flights, 1 split, M = 10, a few epochs"
    parser = benchmark_parser("benchmarks.tied_accuracy", __doc__, "results/tied", quick, data_dir=True)
    parser.add_argument("--splits", type=int, default=None, help=f"splits per small set (default {FULL['splits']})")
    parser.add_argument("--first-split", type=int, default=0, help="the first split")
    parser.add_argument("--sets", default=None, help="e.g. binary/Crabs,multiclass/wine,flights (default: all)")
    args, command = parse_command_line(parser, argv)
    config = dict(QUICK if args.quick else FULL)
    if args.splits is not None:
        config["splits"] = args.splits
    default_sets = [f"binary/{b}" for b in BINARY] + [FLIGHTS]
    default_sets += [f"multiclass/{m}" for m in available_benchmarks("multiclass", args.data_dir)]
    sets = parse_list(args.sets) if args.sets else config.pop("sets", default_sets)
    config.pop("sets", None)
    for kind in ("binary", "multiclass"):
        check_datasets(parser, [s.split("/")[1] for s in sets if s.startswith(kind + "/")], kind, args.data_dir)
    splits = {name: 1 if name == FLIGHTS else config["splits"] for name in sets}
    prefix = Path(args.out_dir) / ("tied_accuracy_quick" if args.quick else "tied_accuracy")
    config = dict(config, sets=sets, methods=METHODS)
    return run_split_grid(
        sets,
        splits,
        make_run_split(config, args.data_dir),
        summarise,
        config=config,
        command=command,
        prefix=prefix,
        markdown=markdown,
        log=log,
        describe=lambda r: f"{r['dataset']} split {r['split']}: "
        + ", ".join(f"{m} NLPD {x['nlpd']:.3f}" for m, x in r["results"].items()),
        first_split=args.first_split,
    )


if __name__ == "__main__":
    raise SystemExit(main())
