"""
Sparse models trained on minibatches (the SEP benchmarks): the SVGPs, SEPGPC and SEPMGPC of :func:`sparse_model`,
:class:`MinibatchRunner`, :func:`race` on the flights against the clock with its table and plot; and
:class:`TimedSteps` and :func:`interleaved_rounds`, which other benchmarks time their steps with.
"""

import time
from functools import partial
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import gpflow
import numpy as np
from gpflow.inducing_variables import InducingPoints
from gpflow.keras import tf_keras

from gpflow_ep.compare import make_kernel, make_model
from gpflow_ep.likelihoods import MultiClassHinge
from gpflow_ep.training import make_dataset, make_train_step, paper_adadelta

from .data import load_flights
from .report import write_report
from .stats import cell, markdown_table

#: the SEP paper's damping of the parallel (batch) EP schedule
SEP_DAMPING = 0.5
#: the damping of SEP's minibatch site refresh
MINIBATCH_DAMPING = 0.99

MINIBATCH_NOTE = (
    "Minibatches come from `gpflow_ep.training.make_dataset` (shuffle → batch with drop_remainder → repeat): no "
    "batch holds a site twice (which would corrupt the running sums Λ_u, η_u; a refresh refuses "
    "such batches), and each epoch drops n mod batch points, different ones each epoch."
)
#: the note of the SEP benchmarks' Markdown headers
SHARED_MACHINE_NOTE = "other jobs shared the machine: absolute times are inflated; compare ratios"


def random_subset(X: np.ndarray, M: int, seed: int) -> np.ndarray:
    """M rows of X drawn without replacement (``seed``), in their original order: initial inducing inputs."""
    rng = np.random.default_rng(seed)
    return X[np.sort(rng.choice(X.shape[0], size=M, replace=False))].copy()


def make_optimizer(name: str):
    """``"adam"`` or ``"adam:<lr>"`` (default lr 0.01), or ``"adadelta"`` (the SEP paper's settings)."""
    if name == "adadelta":
        return paper_adadelta()
    if name.startswith("adam"):
        lr = float(name.split(":", 1)[1]) if ":" in name else 0.01
        return tf_keras.optimizers.Adam(lr)
    raise ValueError(f"unknown optimiser {name!r}; use adam[:lr] or adadelta")


#: the Bayesian SVM's hinge objective (Wistuba & Rawat 2018: the augmented bound), in every benchmark's hinge SVGP
HINGE_BOUND = "augmented"
#: the likelihoods of the multi-class SVGPs, by method: a function of the number of classes
SVGP_LIKELIHOODS = dict(
    RobustMax=gpflow.likelihoods.MultiClass,
    Softmax=gpflow.likelihoods.Softmax,
    hinge=partial(MultiClassHinge, bound=HINGE_BOUND),
)


#: the benchmarks' method names → the package factory's (:func:`gpflow_ep.compare.make_model`)
_FACTORY_NAMES = dict(SVGP="svgp", RobustMax="svgp", Softmax="svgp-softmax", hinge="bsvm", SEPMGPC="sepmgpc")


def multiclass_prior(D: int, Z: np.ndarray, num_classes: int, inducing: str):
    """
    One SE-ARD kernel shared by the C latent functions (GPflow's ``SharedIndependent``) and inducing
    inputs Z: ``"shared"`` by the classes (``SharedIndependentInducingVariables``) or ``"separate"``,
    a trainable copy per class (``SeparateIndependentInducingVariables``).
    """
    kernel = gpflow.kernels.SharedIndependent(make_kernel(D), output_dim=num_classes)
    if inducing == "shared":
        return kernel, gpflow.inducing_variables.SharedIndependentInducingVariables(InducingPoints(Z.copy()))
    if inducing == "separate":
        copies = [InducingPoints(Z.copy()) for _ in range(num_classes)]
        return kernel, gpflow.inducing_variables.SeparateIndependentInducingVariables(copies)
    raise ValueError(f"inducing: 'shared' or 'separate'; got {inducing!r}")


def sparse_model(
    method: str, D: int, Z: np.ndarray, n: int, num_classes: int = 2, inducing: Optional[str] = None, **ep_options
):
    """
    :func:`gpflow_ep.compare.make_model`'s sparse classifier with an SE-ARD kernel on inducing inputs Z: GPflow's whitened
    SVGP (``"SVGP"``: probit; C latent GPs with one of :data:`SVGP_LIKELIHOODS`), SEPMGPC or SEPGPC
    (:data:`SEP_DAMPING`, :data:`MINIBATCH_DAMPING`). Multi-class models by default as the benchmarks' tables
    were made: SVGP with one kernel and one Z for its C latent GPs, SEPMGPC with a copy of Z per class;
    ``inducing`` ("shared" or "separate", :func:`multiclass_prior`) gives both the same GPflow multi-output
    kernel and inducing variables. ``ep_options`` go to SEPGPC and SEPMGPC (e.g. ``sites="tied"``).
    """
    kernel, C = make_kernel(D), num_classes
    if method == "SVGP":
        return make_model("svgp", kernel=kernel, inducing_variable=Z.copy(), num_data=n)
    if method in SVGP_LIKELIHOODS:
        kernel, iv = (kernel, Z.copy()) if inducing is None else multiclass_prior(D, Z, C, inducing)
        likelihood = SVGP_LIKELIHOODS[method](C)
        return make_model(
            _FACTORY_NAMES[method], kernel=kernel, likelihood=likelihood, inducing_variable=iv, num_data=n, num_classes=C
        )
    if method == "SEPMGPC":
        kernel, iv = multiclass_prior(D, Z, C, inducing or "separate")
        return make_model("sepmgpc", kernel=kernel, inducing_variable=iv, num_data=n, num_classes=C, **ep_options)
    options = {"damping": SEP_DAMPING, "minibatch_damping": MINIBATCH_DAMPING, **ep_options}
    return make_model("sepgpc", kernel=kernel, inducing_variable=Z.copy(), num_data=n, **options)


class TimedSteps:
    """A compiled step (returning a loss or a tuple led by it) and its batches, timed in chunks of :meth:`run`."""

    def __init__(self, step: Callable, batches):
        self.step, self.batches = step, batches
        self.per_step: List[float] = []

    def run(self, k: int) -> float:
        """``k`` steps: their seconds per step, also appended to :attr:`per_step`."""
        t0 = time.perf_counter()
        for _ in range(k):
            loss = self.step(next(self.batches))
        float(loss[0] if isinstance(loss, tuple) else loss)
        self.per_step.append((time.perf_counter() - t0) / k)
        return self.per_step[-1]

    def median_per_step(self) -> float:
        """Median seconds per step over the chunks after the first (the compiling one), if any."""
        return float(np.median(self.per_step[1:] or self.per_step))


def interleaved_rounds(steppers: Dict[str, TimedSteps], rounds: int, steps: int, log, label: str = "") -> Dict:
    """Per name, the seconds per step of ``rounds`` rounds of ``steps`` steps (order reversed every other round)."""
    names = list(steppers)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            steppers[name].run(steps)
        times = ", ".join(f"{k} {1e3 * s.per_step[-1]:.2f} ms" for k, s in steppers.items())
        log(f"{label}round {r + 1}/{rounds}: {times}")
    return {name: np.asarray(s.per_step[1:]) for name, s in steppers.items()}


class MinibatchRunner(TimedSteps):
    """``model``'s compiled train step on shuffled minibatches of ``data``: steps, seconds, skipped updates counted."""

    def __init__(self, model, data, batch_size: int, optimizer: str, seed: int = 0):
        self.train_step = make_train_step(model, make_optimizer(optimizer))
        super().__init__(self._counted, iter(make_dataset(data, batch_size, seed=seed, drop_remainder=True)))
        self.model, self.steps, self.train_seconds, self.skipped = model, 0, 0.0, 0

    def _counted(self, batch):
        """One train step, its skipped site updates counted."""
        loss, skipped, _ = self.train_step(batch)
        self.skipped += int(skipped)
        return loss

    def run(self, k: int) -> float:
        per_step = super().run(k)
        self.steps, self.train_seconds = self.steps + k, self.train_seconds + k * per_step
        return per_step


def race(runners: Mapping[str, MinibatchRunner], evaluate: Callable, budget, eval_every, epoch, max_steps, log) -> Dict:
    """
    ``curves`` (``evaluate(model)`` after every chunk of ``eval_every`` steps) and ``results`` of ``runners``
    trained in interleaved chunks for ``budget`` seconds or ``max_steps`` steps each (``epoch`` steps an epoch).
    """
    curves = {m: [dict(step=0, time_s=0.0, **evaluate(r.model))] for m, r in runners.items()}
    compile_s = {m: r.run(1) for m, r in runners.items()}
    for r in runners.values():
        r.train_seconds, r.per_step = 0.0, []
    log(f"first (compiling) step: {compile_s}")
    side_by_side: Dict[str, List[float]] = {m: [] for m in runners}
    while active := [m for m, r in runners.items() if r.train_seconds < budget and r.steps < max_steps]:
        for m in active:
            r = runners[m]
            per_step = r.run(eval_every)
            if len(active) == len(runners):
                side_by_side[m].append(per_step)
            curves[m].append(dict(step=r.steps, time_s=r.train_seconds, **evaluate(r.model)))
        log("; ".join(f"{m}: step {r.steps}, test NLL {curves[m][-1]['nll']:.4f}" for m, r in runners.items()))
    medians = {m: float(np.median(side_by_side[m] or r.per_step)) for m, r in runners.items()}
    results = {
        m: dict(steps=r.steps, train_seconds=r.train_seconds, epochs_done=r.steps / epoch)
        | dict(per_step_median_s=medians[m], epoch_time_s=epoch * medians[m], compile_first_step_s=compile_s[m])
        | dict(final=curves[m][-1], best_nll=min(c["nll"] for c in curves[m]), skipped_site_updates=r.skipped)
        for m, r in runners.items()
    }
    return dict(curves=curves, results=results)


def race_on_flights(args, methods, score, log, budget, eval_every, M, num_classes=2, floor=1e-12, target="delayed"):
    """:func:`race` of ``methods`` (:func:`sparse_model`, batch 200) on the flights, and logistic regression."""
    subsample, test_size, max_steps = (2000, 1000, 30) if args.quick else (None, 10_000, np.inf)
    budget, eval_every = (5.0, 10) if args.quick else (budget, eval_every)
    Xtr, Ytr, Xte, Yte, info = load_flights(test_size=test_size, subsample=subsample, target=target)
    (n, D), batch = Xtr.shape, 200
    Z = random_subset(Xtr, M, seed=1)
    models = {m: sparse_model(m, D, Z, n, num_classes) for m in methods}
    runners = {m: MinibatchRunner(model, (Xtr, Ytr), batch, args.optimizer) for m, model in models.items()}
    log(f"flights n_train={n}")
    raced = race(runners, lambda model: score(model, Xte, Yte), budget, eval_every, n // batch, max_steps, log)
    settings = dict(M=M, batch_size=batch, optimizer=args.optimizer, time_budget_s=budget, eval_every=eval_every)
    baseline = logistic_regression_baseline(Xtr, Ytr, Xte, Yte, floor)
    return dict(data=info, **settings, steps_per_epoch=n // batch, logistic_regression=baseline, **raced)


def write_race(prefix: Path, report: Dict, markdown: str, label: str, log) -> int:
    """A race's ``<prefix>.json``, ``.md`` (``markdown``) and ``.png`` (test error and NLL against training time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    json_path, md_path = write_report(prefix, report, markdown)
    baseline, png = report["logistic_regression"], prefix.with_suffix(".png")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key in zip(axes, ("error", "nll")):
        for (m, c), style in zip(report["curves"].items(), ("-o", "-s", "-^", "-v")):
            ax.plot([x["time_s"] for x in c], [x[key] for x in c], style, ms=3, label=m)
        ax.axhline(baseline[key], color="gray", ls="--", label=baseline["name"])
        ax.set(xlabel="training time (s, evaluation excluded)", ylabel=f"test {key}")
        ax.grid(alpha=0.3)
        ax.legend()
    d = report["data"]
    batch = f"batch {report['batch_size']}, {report['optimizer']}"
    fig.suptitle(f"nycflights13 {label}: n_train={d['n_train']}, M={report['M']}, {batch}")
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    log(f"wrote {json_path}, {md_path} and {png.name} (wall time {report['wall_time_s']:.0f} s)")
    return 0


#: the cells of a method's row in a race's results table (:func:`race_table`)
CELLS = dict(
    steps=lambda r: r["steps"],
    epochs=lambda r: cell(r["epochs_done"], 2),
    train_s=lambda r: cell(r["train_seconds"], 1),
    step_ms=lambda r: cell(1000 * r["per_step_median_s"], 2),
    per_1000_s=lambda r: cell(1000 * r["per_step_median_s"], 1),
    epoch_s=lambda r: cell(r["epoch_time_s"], 1),
    compile_s=lambda r: cell(r["compile_first_step_s"], 1),
    error=lambda r: cell(r["final"]["error"], 4),
    nll=lambda r: cell(r["final"]["nll"], 4),
    best_nll=lambda r: cell(r["best_nll"], 4),
    skipped=lambda r: r["skipped_site_updates"],
)


def race_table(report: Dict, columns: Sequence[Tuple[str, str]], baseline: str, caption: str) -> List[str]:
    """A row per method (``columns``: header, :data:`CELLS` key) and the baseline's; ``caption``; the curves."""
    rows = [[m, *(CELLS[key](r) for _, key in columns)] for m, r in report["results"].items()]
    lr = report["logistic_regression"]
    rows.append([baseline, *(cell(lr[k], 4) if k in ("error", "nll") else "–" for _, k in columns)])
    curves = [
        [m, x["step"], cell(x["time_s"], 1), cell(x["error"], 4), cell(x["nll"], 4)]
        for m, c in report["curves"].items()
        for x in c
    ]
    return (
        markdown_table(["method", *(h for h, _ in columns)], rows)
        + ["", caption, ""]
        + markdown_table(["method", "step", "time (s)", "test error", "test NLL"], curves)
    )


def logistic_regression_baseline(X, Y, X_test, Y_test, floor: float) -> Dict:
    """scikit-learn's logistic regression on labels [N, 1]: test error and NLL (probabilities floored at ``floor``)."""
    from sklearn.linear_model import LogisticRegression

    y, y_test = np.asarray(Y)[:, 0].astype(int), np.asarray(Y_test)[:, 0].astype(int)
    p = np.maximum(LogisticRegression(max_iter=1000).fit(X, y).predict_proba(X_test), floor)
    return dict(
        name="logistic regression",
        error=float(np.mean(np.argmax(p, axis=1) != y_test)),
        nll=float(-np.mean(np.log(p[np.arange(len(y_test)), y_test]))),
    )
