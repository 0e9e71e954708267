"""
Fuzzing where users go: ``EPGP`` with every scalar likelihood of the package's guide — probit,
logistic, Student-t (default settings and ``robust_settings()``), Laplace, Poisson, ordinal, noisy
step, hinge — on random problems as users bring them: unscaled inputs (each feature with its own
scale, 1e-2 … 1e3, and offset), kernel lengthscales (ARD) and signal variance drawn log-uniformly from
1e-2 … 1e2, likelihood parameters drawn over wide ranges, raw regression targets (scales and offsets)
with 20 % gross outliers for the regression likelihoods. For each problem the nested training loss
(−log Z_EP after EP run to convergence, ``EPGP.training_loss()`` in a ``tf.function``, as under
``Scipy().minimize``) and its gradient with respect to every trainable variable (the kernel's and the
likelihood's) are finite, the stored EP state is finite and EP's full run was stored (the model's
guard against non-finite site state did not have to step in), and EP either converged or said it did
not: ``ep_diagnostics.runs_not_converged`` counts the run and exactly one ``EPConvergenceWarning``
comes from the compiled loss.

Design: one model per likelihood serves all its problems without retracing. The model holds its data
in two non-trainable ``tf.Variable`` of fixed shape [N, D] and [N, 1] (``model.data``, which
``EPGP.site_problem`` reads at run time); between problems the harness assigns new data,
hyper-parameters and likelihood parameters, flattens the sites (a fresh model's start) and resets
the diagnostics. One ``tf.function`` per likelihood computes the loss and its gradient (without
autograph, as the package compiles its own EP runs: the engine's control flow is explicit
``tf.while_loop``/``tf.cond``, and autograph's conversion only slows the trace), and the test checks
it was traced once. So the fuzzed code is the model users train, not a re-assembly of the engine.

Seeds are fixed: problem ``seed`` of likelihood ``name`` is drawn from ``SeedSequence([crc32(name),
seed])`` ("student-t robust" solves the problems of "student-t", so the two settings are compared on
the same problems), so a failing problem is reproduced by ``FUZZERS(name).check(seed)``, and the
failure message gives its seed and parameters. The default run checks ``FAST_PROBLEMS`` problems per
likelihood; the full set, ``SLOW_PROBLEMS`` per likelihood, is::

    GPFLOW_EP_FUZZ_COUNTS=counts.jsonl pytest -m slow tests/integration/test_fuzz_likelihoods.py

which appends each likelihood's counts to ``counts.jsonl`` (docs/guide/reliability.md, "Fuzzing").
"""

import functools
import json
import os
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.ep import EPConvergenceWarning, robust_settings
from gpflow_ep.likelihoods import BinaryHinge, Laplace, NoisyStep, Probit, check_targets
from gpflow_ep.models import EPGP

N, D = 30, 3
OUTLIER_FRACTION = 0.2
ORDINAL_EDGES = np.array([-1.0, 0.0, 1.0])  # four classes
FAST_PROBLEMS = 10
SLOW_PROBLEMS = 1000


def log_uniform(rng, low, high, size=None):
    return 10.0 ** rng.uniform(np.log10(low), np.log10(high), size)


def student_t():
    likelihood = gpflow.likelihoods.StudentT()
    # ν as a Parameter (learned with the rest, as robust-regression users do), so one compiled loss serves every ν
    likelihood.df = gpflow.Parameter(3.0, transform=gpflow.utilities.positive())
    return likelihood


@dataclass(frozen=True)
class Config:
    """A likelihood to fuzz: how to build it, its kind of targets, how to draw its parameters, EP options."""

    likelihood: Callable[[], gpflow.likelihoods.Likelihood]
    targets: str  # "binary", "regression", "counts", "ordinal"
    parameters: Callable[[np.random.Generator], Dict[str, float]] = lambda rng: {}
    ep_options: Dict = field(default_factory=dict)
    #: the name whose problems these are (default: its own): settings compared on the same problems
    problems_of: Optional[str] = None


CONFIGS = {
    "probit": Config(Probit, "binary"),
    "logistic": Config(functools.partial(gpflow.likelihoods.Bernoulli, invlink=tf.sigmoid), "binary"),
    "student-t": Config(
        student_t, "regression", lambda rng: {"scale": log_uniform(rng, 1e-2, 1e2), "df": log_uniform(rng, 1.0, 30.0)}
    ),
    "student-t robust": Config(
        student_t,
        "regression",
        lambda rng: {"scale": log_uniform(rng, 1e-2, 1e2), "df": log_uniform(rng, 1.0, 30.0)},
        robust_settings(),
        problems_of="student-t",
    ),
    "laplace": Config(Laplace, "regression", lambda rng: {"scale": log_uniform(rng, 1e-2, 1e2)}),
    "poisson": Config(gpflow.likelihoods.Poisson, "counts"),
    "ordinal": Config(
        functools.partial(gpflow.likelihoods.Ordinal, ORDINAL_EDGES),
        "ordinal",
        lambda rng: {"sigma": log_uniform(rng, 1e-2, 1e2)},
    ),
    "noisy step": Config(NoisyStep, "binary", lambda rng: {"epsilon": log_uniform(rng, 1e-3, 0.4)}),
    "hinge": Config(BinaryHinge, "binary"),
}


@dataclass
class Problem:
    """One random problem: data, kernel hyper-parameters and likelihood parameters, and how it was drawn."""

    name: str
    seed: int
    X: np.ndarray
    Y: np.ndarray
    lengthscales: np.ndarray
    variance: float
    parameters: Dict[str, float]
    feature_scales: np.ndarray
    feature_offsets: np.ndarray
    target_summary: str

    def __str__(self) -> str:
        params = "".join(f", {k}={v:.4g}" for k, v in self.parameters.items())
        lengthscales, scales, offsets = (
            np.array2string(a, precision=4) for a in (self.lengthscales, self.feature_scales, self.feature_offsets)
        )
        return (
            f"{self.name!r} problem seed={self.seed}: lengthscales={lengthscales}, variance={self.variance:.4g}"
            f"{params}; feature scales {scales}, offsets {offsets}; {self.target_summary}"
        )


def draw_problem(name: str, seed: int) -> Problem:
    """Problem ``seed`` of likelihood ``name`` (module docstring): the same arrays on every machine."""
    config = CONFIGS[name]
    key = config.problems_of or name
    rng = np.random.default_rng(np.random.SeedSequence([zlib.crc32(key.encode()), seed]))
    scales = log_uniform(rng, 1e-2, 1e3, D)
    offsets = rng.choice([0.0, 1.0], D) * rng.choice([-1.0, 1.0], D) * log_uniform(rng, 1e-2, 1e3, D)
    Z = rng.normal(size=(N, D))
    X = offsets + scales * Z
    # the truth: a smooth function of the standardised inputs at a random frequency, plus a linear trend
    w = rng.normal(size=(D, 1)) * log_uniform(rng, 0.1, 3.0)
    f = np.sin(Z @ w + rng.uniform(0, 2 * np.pi)) + 0.3 * Z @ rng.normal(size=(D, 1))
    f = f * log_uniform(rng, 0.1, 10.0)
    if config.targets == "binary":
        Y = (f > 0).astype(np.float64)
        flipped = rng.uniform(size=(N, 1)) < rng.uniform(0.0, 0.2)  # label noise
        Y[flipped] = 1.0 - Y[flipped]
        summary = f"{int(Y.sum())} of {N} labels 1, {int(flipped.sum())} flipped"
    elif config.targets == "regression":
        target_scale = log_uniform(rng, 1e-2, 1e3)
        target_offset = rng.choice([0.0, 1.0]) * rng.choice([-1.0, 1.0]) * log_uniform(rng, 1e-2, 1e3)
        Y = target_offset + target_scale * (f + 0.1 * rng.normal(size=(N, 1)))
        outliers = rng.permutation(N)[: int(round(OUTLIER_FRACTION * N))]
        gross = rng.choice([-1.0, 1.0], len(outliers)) * log_uniform(rng, 5.0, 100.0, len(outliers))
        Y[outliers, 0] += gross * target_scale * max(np.std(f), 1.0)
        summary = (
            f"targets scale {target_scale:.3g}, offset {target_offset:.3g}, {len(outliers)} gross outliers; "
            f"Y in [{Y.min():.3g}, {Y.max():.3g}]"
        )
    elif config.targets == "counts":
        log_rate = np.log(log_uniform(rng, 1e-2, 1e2)) + f
        Y = rng.poisson(np.exp(np.minimum(log_rate, 10.0))).astype(np.float64)
        summary = f"counts in [{Y.min():.0f}, {Y.max():.0f}], {int((Y == 0).sum())} zeros"
    else:  # ordinal
        latent = f + 0.3 * rng.normal(size=(N, 1))
        Y = np.searchsorted(ORDINAL_EDGES, latent[:, 0]).astype(np.float64)[:, None]
        summary = f"class counts {np.bincount(Y[:, 0].astype(int), minlength=len(ORDINAL_EDGES) + 1).tolist()}"
    parameters = config.parameters(rng)
    return Problem(
        name,
        seed,
        X,
        Y,
        log_uniform(rng, 1e-2, 1e2, D),
        float(log_uniform(rng, 1e-2, 1e2)),
        parameters,
        scales,
        offsets,
        summary,
    )


@dataclass
class Outcome:
    """What one problem gave: EP's record and the failures of the checks (empty: the problem passed)."""

    problem: Problem
    converged: bool
    reported: bool  # runs_not_converged counted the run and the compiled loss warned once
    loss: float
    finite: bool  # loss, gradient and stored EP state finite, and the run stored
    failures: List[str]


class Fuzzer:
    """
    One ``EPGP`` for likelihood ``name`` whose data and parameters are replaced between problems, and
    one compiled loss-and-gradient (module docstring).
    """

    def __init__(self, name: str):
        self.name = name
        self.config = CONFIGS[name]
        first = draw_problem(name, 0)
        kernel = gpflow.kernels.SquaredExponential(lengthscales=np.ones(D))
        self.model = EPGP((first.X, first.Y), kernel, self.config.likelihood(), **self.config.ep_options)
        self.X = tf.Variable(first.X, trainable=False, name="X")
        self.Y = tf.Variable(first.Y, trainable=False, name="Y")
        self.model.data = (self.X, self.Y)  # read by EPGP.site_problem when the compiled loss runs
        self.loss_and_gradient = tf.function(self._loss_and_gradient, autograph=False)

    def _loss_and_gradient(self):
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            loss = self.model.training_loss()
        return loss, tape.gradient(loss, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)

    def load(self, problem: Problem) -> None:
        """A fresh model's state for ``problem``: its data and parameters, flat sites, no diagnostics."""
        check_targets(self.model.likelihood, problem.Y, "Y")  # the problem is one a user could build
        model = self.model
        self.X.assign(problem.X)
        self.Y.assign(problem.Y)
        model.kernel.lengthscales.assign(problem.lengthscales)
        model.kernel.variance.assign(problem.variance)
        for parameter, value in problem.parameters.items():
            getattr(model.likelihood, parameter).assign(value)
        model.sites.reset()
        model.ep_state.sites_fitted.assign(0)
        model.ep_diagnostics.reset()

    def check(self, seed: int) -> Outcome:
        problem = draw_problem(self.name, seed)
        self.load(problem)
        model = self.model
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss, gradient = self.loss_and_gradient()
        convergence_warnings = [w for w in caught if issubclass(w.category, EPConvergenceWarning)]
        diagnostics = model.ep_diagnostics
        runs = int(diagnostics.runs.numpy())
        converged = bool(diagnostics.converged.numpy())
        not_converged = int(diagnostics.runs_not_converged.numpy())
        stored = int(model.ep_state.sites_fitted.numpy()) == 1
        failures = []
        if not np.isfinite(loss.numpy()):
            failures.append(f"loss {loss.numpy()}")
        for variable, g in zip(model.trainable_variables, gradient):
            if not np.all(np.isfinite(g.numpy())):
                failures.append(f"gradient wrt {variable.name}: {g.numpy()}")
        for variable in (model.sites.precision, model.sites.natural_mean, model.sites.dual):
            if not np.all(np.isfinite(variable.numpy())):
                failures.append(f"stored {variable.name} not finite")
        if not stored:
            failures.append("EP's run was not stored: its site state was not finite (the model kept flat sites)")
        finite = not failures
        if runs != 1:
            failures.append(f"ep_diagnostics.runs = {runs} after one loss evaluation")
        reported = not_converged == 1 and len(convergence_warnings) == 1
        if converged and (not_converged or convergence_warnings):
            failures.append(
                f"converged, yet runs_not_converged = {not_converged} and {len(convergence_warnings)} warning(s)"
            )
        if not converged and not reported:
            failures.append(
                f"not converged, but runs_not_converged = {not_converged} and "
                f"{len(convergence_warnings)} EPConvergenceWarning(s) (expected 1 and 1)"
            )
        return Outcome(problem, converged, reported, float(loss.numpy()), finite, failures)

    def tracing_count(self) -> int:
        return self.loss_and_gradient.experimental_get_tracing_count()


@functools.lru_cache(maxsize=None)
def FUZZERS(name: str) -> Fuzzer:  # noqa: N802  (a cache of one fuzzer per likelihood, shared by the tests)
    return Fuzzer(name)


def run_problems(name: str, seeds) -> Dict[str, int]:
    """
    Check every seed and return the counts; assert that each problem passed (the message names the
    failed problems) and that the compiled loss was traced once. With ``$GPFLOW_EP_FUZZ_COUNTS`` set
    to a path, the counts are appended to it as a JSON line (before the assertions).
    """
    fuzzer = FUZZERS(name)
    counts = {"problems": 0, "converged": 0, "not converged (reported)": 0, "non-finite": 0, "failed": 0}
    failed = []
    for seed in seeds:
        outcome = fuzzer.check(seed)
        counts["problems"] += 1
        counts["converged"] += outcome.converged
        counts["not converged (reported)"] += (not outcome.converged) and outcome.reported
        counts["non-finite"] += not outcome.finite
        counts["failed"] += bool(outcome.failures)
        if outcome.failures:
            failed.append(f"{outcome.problem}\n    -> {'; '.join(outcome.failures)}")
    if os.environ.get("GPFLOW_EP_FUZZ_COUNTS"):
        with open(os.environ["GPFLOW_EP_FUZZ_COUNTS"], "a") as f:
            f.write(json.dumps({"likelihood": name, **counts, "failures": failed}) + "\n")
    assert fuzzer.tracing_count() == 1, f"the compiled loss of {name!r} was traced {fuzzer.tracing_count()} times"
    assert not failed, f"{len(failed)} of {len(seeds)} {name!r} problems failed:\n" + "\n".join(failed[:20])
    return counts


@pytest.mark.parametrize("name", list(CONFIGS))
def test_nested_loss_and_gradient_are_finite_and_ep_converges_or_says_so(name):
    run_problems(name, range(FAST_PROBLEMS))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGS))
def test_nested_loss_and_gradient_are_finite_and_ep_converges_or_says_so_many_problems(name):
    counts = run_problems(name, range(SLOW_PROBLEMS))
    print(f"\nfuzz {name}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
