"""
Sparse models trained on minibatches (the SEP benchmarks): :class:`MinibatchRunner`, :func:`race`
against the clock, :class:`TimedSteps`, :func:`logistic_regression_baseline` and :func:`plot_race`.
"""

import time
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional

import gpflow
import numpy as np
from gpflow.keras import tf_keras

from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import SEPGPC
from gpflow_ep.training import make_dataset, make_train_step, paper_adadelta

from .models import se_ard_kernel

#: the SEP paper's damping of the parallel (batch) EP schedule
SEP_DAMPING = 0.5
#: the damping of SEP's minibatch site refresh
MINIBATCH_DAMPING = 0.99

MINIBATCH_NOTE = (
    "Minibatches come from `gpflow_ep.training.make_dataset` (shuffle → batch with drop_remainder → repeat), so "
    "no batch holds a site index twice; each epoch drops n mod batch points (different ones each epoch). "
    "(Before that builder batched within epochs, a batch straddling an epoch boundary could repeat a site and "
    "corrupt the running sums Λ_u, η_u — Crabs n=180, batch 50: test NLL 1.95 instead of 0.14; "
    "the minibatch refresh (`SEPGPC.refresh_sites`) now refuses such batches.)"
)
#: :func:`markdown_header` note of the SEP benchmarks
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


class TimedSteps:
    """
    A compiled train step and its batch iterator, timed in chunks: :meth:`run` takes ``k`` steps and
    records (and returns) the seconds per step of the chunk in :attr:`per_step`. The step returns a
    loss or a tuple whose first entry is the loss (``make_train_step``'s (loss, skipped, applied)).
    """

    def __init__(self, step: Callable, batches):
        self.step, self.batches = step, batches
        self.per_step: List[float] = []

    def run(self, k: int) -> float:
        t0 = time.perf_counter()
        loss = None
        for _ in range(k):
            loss = self.step(next(self.batches))
        float(loss[0] if isinstance(loss, tuple) else loss)
        self.per_step.append((time.perf_counter() - t0) / k)
        return self.per_step[-1]

    def median_per_step(self) -> float:
        """Median seconds per step over the chunks after the first (the compiling one), if any."""
        return float(np.median(self.per_step[1:] or self.per_step))


def interleaved_rounds(steppers: Dict[str, TimedSteps], rounds: int, steps: int, log, label: str = "") -> Dict:
    """
    Time warmed-up steppers side by side: ``rounds`` rounds of ``steps`` steps each, the order reversed
    every other round; logs each round's ms/step and returns, per name, the seconds per step of every
    round (the first chunk, the warm-up, left out).
    """
    names = list(steppers)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            steppers[name].run(steps)
        log(
            f"{label}round {r + 1}/{rounds}: "
            + ", ".join(f"{k} {1e3 * s.per_step[-1]:.2f} ms" for k, s in steppers.items())
        )
    return {name: np.asarray(s.per_step[1:]) for name, s in steppers.items()}


class MinibatchRunner:
    """
    A sparse model trained on minibatches: ``SEPGPC`` (``method="SEP minibatch"``: minibatch EP,
    damping :data:`MINIBATCH_DAMPING`, and surrogate-gradient steps) or GPflow's whitened ``SVGP``
    (``method="SVGP"``), SE-ARD kernel and probit likelihood, inducing inputs starting at Z, or a
    given ``model``; its compiled train step (``gpflow_ep.training.make_train_step``) and minibatch
    iterator. :meth:`run` times chunks of steps; :func:`race` trains several against the clock.
    """

    def __init__(self, method: str, X, Y, Z, batch_size: int, optimizer: str, seed: int = 0, model=None):
        n, D = X.shape
        if model is not None:  # any model fit's train step takes (another benchmark's)
            self.model = model
        elif method == "SVGP":
            self.model = gpflow.models.SVGP(se_ard_kernel(D), Probit(), Z.copy(), num_data=n)
        else:
            self.model = SEPGPC(
                se_ard_kernel(D),
                Probit(),
                Z.copy(),
                num_data=n,
                damping=SEP_DAMPING,
                minibatch_damping=MINIBATCH_DAMPING,
            )
        self.method, self.n, self.batch_size = method, n, batch_size
        self.optimizer = make_optimizer(optimizer)
        self.step = make_train_step(self.model, self.optimizer)
        self.iterator = iter(make_dataset((X, Y), batch_size, seed=seed, drop_remainder=True))
        self.steps, self.train_seconds, self.skipped = 0, 0.0, 0
        self.chunk_times = []  # (steps, seconds)

    def run(self, k: int):
        """``k`` train steps; return (last loss, seconds)."""
        t0 = time.perf_counter()
        loss = None
        for _ in range(k):
            loss, skipped, _ = self.step(next(self.iterator))
            self.skipped += int(skipped)
        loss = float(loss)
        dt = time.perf_counter() - t0
        self.steps += k
        self.train_seconds += dt
        self.chunk_times.append((k, dt))
        return loss, dt


def race(
    runners: Mapping[str, "MinibatchRunner"],
    evaluate: Callable,
    time_budget: float,
    eval_every: int,
    steps_per_epoch: int,
    max_steps: Optional[int] = None,
    log: Callable[[str], None] = print,
) -> Dict:
    """
    Train ``runners`` in interleaved chunks of ``eval_every`` steps until each has used
    ``time_budget`` seconds of training (or ``max_steps``), each chunk followed by
    ``evaluate(model)`` (a dict with ``error`` and ``nll``) outside the training clock; the first
    (compiling) step of each is timed apart. Returns ``curves`` (per method, the evaluations with
    ``step`` and ``time_s``) and ``results`` (steps, epochs, median time per step and per epoch,
    the final and best evaluation, skipped site updates). The median time per step is taken over
    the chunks run while every method was still training (side by side; a method that goes on
    alone runs in a quieter machine), ``per_step_median_all_s`` over all of them.
    """
    curves = {m: [dict(step=0, time_s=0.0, **evaluate(r.model))] for m, r in runners.items()}
    compile_s = {}
    for m, r in runners.items():
        compile_s[m] = r.run(1)[1]
        r.train_seconds, r.chunk_times = 0.0, []
    log(f"first (compiling) step: {compile_s}")
    side_by_side: Dict[str, List[float]] = {m: [] for m in runners}
    while True:
        active = [
            m
            for m, r in runners.items()
            if r.train_seconds < time_budget and (max_steps is None or r.steps < max_steps)
        ]
        if not active:
            break
        for m in active:
            loss, dt = runners[m].run(eval_every)
            if len(active) == len(runners):
                side_by_side[m].append(dt / eval_every)
            r = runners[m]
            curves[m].append(dict(step=r.steps, time_s=r.train_seconds, loss=loss, **evaluate(r.model)))
        log(
            "; ".join(
                f"{m}: step {r.steps} t {r.train_seconds:.1f}s err {curves[m][-1]['error']:.4f} "
                f"nll {curves[m][-1]['nll']:.4f}"
                for m, r in runners.items()
            )
        )
    results = {}
    for m, r in runners.items():
        every = [dt / k for k, dt in r.chunk_times]
        med = float(np.median(side_by_side[m] or every))
        results[m] = dict(
            per_step_median_all_s=float(np.median(every)),
            side_by_side_chunks=len(side_by_side[m]),
            steps=r.steps,
            train_seconds=r.train_seconds,
            epochs_done=r.steps / steps_per_epoch,
            per_step_median_s=med,
            per_1000_steps_s=1000 * med,
            epoch_time_s=steps_per_epoch * med,
            epoch_time_measured_s=(r.train_seconds / (r.steps - 1) * steps_per_epoch) if r.steps > 1 else None,
            compile_first_step_s=compile_s[m],
            final=curves[m][-1],
            skipped_site_updates=r.skipped,
            best_nll=min(c["nll"] for c in curves[m]),
            best_error=min(c["error"] for c in curves[m]),
        )
    return dict(curves=curves, results=results)


def logistic_regression_baseline(X, Y, X_test, Y_test, floor: float) -> Dict:
    """
    scikit-learn's logistic regression (multinomial for several classes) on labels [N, 1] (0/1 or
    class indices): its test error (most probable class) and test NLL, the probabilities floored
    at ``floor``; the baseline of :func:`race`'s benchmarks.
    """
    from sklearn.linear_model import LogisticRegression

    y, y_test = np.asarray(Y)[:, 0].astype(int), np.asarray(Y_test)[:, 0].astype(int)
    p = np.maximum(LogisticRegression(max_iter=1000).fit(X, y).predict_proba(X_test), floor)
    return dict(
        name="logistic regression",
        error=float(np.mean(np.argmax(p, axis=1) != y_test)),
        nll=float(-np.mean(np.log(p[np.arange(len(y_test)), y_test]))),
    )


def plot_race(curves: Mapping[str, List[Dict]], baseline: Mapping, path: Path, title: str) -> None:
    """Test error and NLL against training time for each method of :func:`race` (and a baseline's lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for (m, c), style in zip(curves.items(), ("-o", "-s", "-^", "-v")):
        t = [x["time_s"] for x in c]
        axes[0].plot(t, [x["error"] for x in c], style, ms=3, label=m)
        axes[1].plot(t, [x["nll"] for x in c], style, ms=3, label=m)
    for ax, key in zip(axes, ("error", "nll")):
        if baseline.get(key) is not None:
            ax.axhline(baseline[key], color="gray", ls="--", label=baseline.get("name", "baseline"))
        ax.set_xlabel("training time (s, evaluation excluded)")
        ax.set_ylabel(f"test {key}")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
