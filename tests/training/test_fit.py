"""gpflow_ep.training.fit: one loop for SEPGPC, SVGP and EPGPC; its monitor, progress bar and README snippets."""

import io
import logging
import re
import sys
import warnings
from pathlib import Path

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC, SEPGPC
from gpflow_ep.optimizers import MinibatchEP
from gpflow_ep.training import fit, make_dataset, make_train_step, paper_adadelta


@pytest.mark.parametrize("model_name", ["SEPGPC", "SVGP"])
def test_minibatch_training_learns(data, model_name):
    (X, Y), (Xt, Yt) = data
    cls = SEPGPC if model_name == "SEPGPC" else gpflow.models.SVGP
    m = cls(gpflow.kernels.SquaredExponential(), Probit(), X[:20].copy(), num_data=len(X))
    nlpd_before = -np.mean(m.predict_log_density((Xt, Yt)))
    result = fit(m, (X, Y), batch_size=50, epochs=3)
    assert result.steps == 24 and result.epochs == 3.0 and result.skipped_site_updates == 0
    assert np.all(np.isfinite(result.losses))
    assert -np.mean(m.predict_log_density((Xt, Yt))) < nlpd_before - 0.1


def test_paper_adadelta_and_iteration_limit(data):
    (X, Y), _ = data
    m = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:20].copy(), num_data=len(X))
    result = fit(m, (X, Y), batch_size=20, iterations=5, optimizer=paper_adadelta())
    assert result.steps == 5


def test_alternated_training_of_a_model_that_holds_its_data(data):
    (X, Y), _ = data
    m = EPGPC((X[:100], Y[:100]), gpflow.kernels.SquaredExponential(), Probit(), ep_mode="alternated")
    result = fit(m, (X[:100], Y[:100]), iterations=40, ep_every=20)
    assert result.losses[-1] < result.losses[0]


def test_a_nested_model_is_trained_as_by_a_plain_gpflow_loop(data):
    """
    With the default ep_mode="nested", fit's step is the gradient step on the nested loss (EP run
    to convergence inside it, warm-started) and nothing else: the same losses and EP sweeps, step
    by step, as ``optimizer.minimize(model.training_loss, ...)`` on an identical model. Before, fit
    also ran EP before the first step, so its first loss evaluation took 1 sweep instead of the
    plain loop's full run (issue 27: "sweeps after three steps: 1, 8, 8").
    """
    (X, Y), _ = data
    X, Y = X[:60], Y[:60]

    def build():
        return EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit())

    assert build().ep_mode == "nested"
    plain, plain_losses, plain_sweeps = build(), [], []
    adam = tf_keras.optimizers.Adam(0.01)  # fit's default optimiser
    variables = plain.trainable_variables

    @tf.function
    def step():  # GPflow's custom training loop
        with tf.GradientTape() as tape:
            loss = plain.training_loss()
        adam.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    for _ in range(3):
        plain_losses.append(float(step()))
        plain_sweeps.append(int(plain.ep_diagnostics.sweeps))
    model, sweeps = build(), []

    def record_sweeps(steps_done):
        if steps_done > 0:
            sweeps.append(int(model.ep_diagnostics.sweeps))

    result = fit(model, (X, Y), iterations=3, monitor=record_sweeps)
    assert sweeps == plain_sweeps and plain_sweeps[0] > 1
    # the same computation in another compiled function: equal to float64 round-off of |loss|
    np.testing.assert_allclose(result.losses, plain_losses, rtol=1e-12)
    for a, b in zip(model.trainable_variables, plain.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_ep_every_is_refused_for_a_nested_model(data):
    (X, Y), _ = data
    m = EPGPC((X[:30], Y[:30]), gpflow.kernels.SquaredExponential(), Probit())
    with pytest.raises(ValueError, match=r"ep_every: EPGPC is in ep_mode='nested'.*ep_mode='alternated'"):
        fit(m, (X[:30], Y[:30]), iterations=2, ep_every=1)


def test_training_reaches_models_through_public_names_only():
    """
    No private attribute of another object (``model._name``), no private name imported from another
    module and no ``hasattr`` dispatch in any module of gpflow_ep.training.
    """
    import ast

    import gpflow_ep.training as training

    private, hasattrs = [], []
    for path in sorted(Path(training.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        private += [
            f"{path.name} line {node.lineno}: .{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id == "self")  # a class's own state
        ]
        private += [
            f"{path.name} line {node.lineno}: import {alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
            if alias.name.startswith("_")
        ]
        hasattrs += [
            f"{path.name} line {node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr"
        ]
    assert not private and not hasattrs, (private, hasattrs)


@pytest.mark.parametrize("model_name", ["SEPGPC", "SVGP", "EPGPC"])
def test_fit_trains_every_kind_of_model(data, model_name):
    """fit trains SEPGPC (MinibatchEP), SVGP and EPGPC (run_ep + training_loss) alike."""
    (X, Y), _ = data
    kernel = gpflow.kernels.SquaredExponential()
    if model_name == "EPGPC":
        m = EPGPC((X[:60], Y[:60]), kernel, Probit(), ep_mode="alternated")
        train = (X[:60], Y[:60])
    elif model_name == "SEPGPC":
        m = SEPGPC(kernel, Probit(), X[:10].copy(), num_data=len(X))
        train = (X, Y)
    else:
        m = gpflow.models.SVGP(kernel, Probit(), X[:10].copy(), num_data=len(X))
        train = (X, Y)
    before = [v.numpy().copy() for v in m.trainable_variables]
    result = fit(m, train, batch_size=None if model_name == "EPGPC" else 40, iterations=3)
    assert result.steps == 3 and np.all(np.isfinite(result.losses))
    assert any(np.any(v.numpy() != b) for v, b in zip(m.trainable_variables, before))
    if model_name == "SEPGPC":
        assert np.any(m.sites.precision.numpy() != 0.0)


def test_sepgpc_in_a_plain_gpflow_loop(data):
    """
    SEPGPC is a drop-in for SVGP: a plain ``optimizer.minimize(loss)`` loop over (X, Y, index) batches
    trains it, with ``loss = MinibatchEP().loss_closure(model, batches)`` (each call refreshes the
    batch's sites, then returns -F_M); (X, Y) minibatches are refused at once with a ValueError that
    says what to do.
    """
    (X, Y), (Xt, Yt) = data
    m = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:20].copy(), num_data=len(X))
    adam = tf_keras.optimizers.Adam(0.01)
    plain = iter(tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(100))
    with pytest.raises(ValueError, match=r"\(X, Y, index\)"):
        adam.minimize(MinibatchEP().loss_closure(m, plain), m.trainable_variables)
    closure = MinibatchEP().loss_closure(m, iter(make_dataset((X, Y), 100)))
    adam.minimize(closure, m.trainable_variables)  # one eager step, then compiled as GPflow's notebooks do
    step = tf.function(lambda: adam.minimize(closure, m.trainable_variables))
    for _ in range(119):
        step()
    assert np.all(m.sites.precision.numpy() > 0.0)  # every site refreshed (probit sites are positive)
    mean, _ = m.predict_y(Xt)
    assert np.mean((mean.numpy() > 0.5) != Yt) < 0.15


def test_bad_arguments(data):
    (X, Y), _ = data
    m = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:5].copy(), num_data=len(X))
    with pytest.raises(ValueError, match="batch_size"):
        fit(m, (X, Y), batch_size=0)
    with pytest.raises(ValueError, match="epochs"):
        fit(m, make_dataset((X, Y), 10), epochs=1)
    bad = dict(epochs=[0, -1, float("nan"), "ten"], time_budget=[0, -5.0], monitor=[5], optimizer=["adam"])
    for argument, values in bad.items():  # each was accepted (0 steps, or a TensorFlow error later)
        for value in values:
            with pytest.raises(ValueError, match=f"^{argument} must be"):
                fit(m, (X, Y), batch_size=10, **{argument: value})


def test_progress_bar_and_gpflow_monitor_tasks(data, tmp_path, capsys):
    """``progress=True`` draws a bar to stderr; ``monitor=`` runs gpflow.monitor tasks (TensorBoard)."""
    from gpflow.monitor import Monitor, MonitorTaskGroup, ScalarToTensorBoard

    (X, Y), _ = data
    m = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:20].copy(), num_data=len(X))
    task = ScalarToTensorBoard(str(tmp_path), lambda: m.kernel.variance, "variance")
    fit(m, (X, Y), batch_size=20, iterations=6, progress=True, monitor=Monitor(MonitorTaskGroup([task], period=2)))
    assert capsys.readouterr().err.splitlines()[-1].startswith("|" + "#" * 30 + "| 100% step 6/6")
    events = [str(p) for p in tmp_path.rglob("events.out.tfevents*")]
    tags = [v.tag for path in events for e in tf.compat.v1.train.summary_iterator(path) for v in e.summary.value]
    assert tags.count("variance") == 4  # steps 0 (before training), 2, 4, 6


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_fit_result_repr_is_a_short_summary(data):
    """print(fit(...)) shows counts and the final loss, not every loss; the losses stay an attribute."""
    (X, Y), _ = data
    m = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), Probit(), X[:10].copy(), num_data=len(X))
    result = fit(m, (X, Y), batch_size=10, epochs=2)
    assert result.steps == 80 and len(result.losses) == 80
    text = repr(result)
    assert "\n" not in text and len(text) < 250, text
    assert text.startswith("FitResult(steps=80, epochs=2, ") and "losses=<80 values>" in text
    assert f"final_loss={result.losses[-1]:.6g}" in text and result.final_loss == result.losses[-1]
    assert str(result) == text


class _RecordSteps(gpflow.monitor.MonitorTask):
    def __init__(self):
        super().__init__()
        self.steps = []

    def run(self, **unused_kwargs):
        self.steps.append(self.current_step)


def test_fit_writes_step_0_as_scipy_does(data):
    """A MonitorTaskGroup of period p writes steps 0, p, 2p, ... under fit, as under Scipy's step_callback."""
    from gpflow.monitor import Monitor, MonitorTaskGroup

    (X, Y), _ = data
    X, Y = X[:60], Y[:60]
    m = gpflow.models.VGP((X, Y), gpflow.kernels.SquaredExponential(), Probit())
    task = _RecordSteps()
    gpflow.optimizers.Scipy().minimize(
        m.training_loss,
        m.trainable_variables,
        step_callback=Monitor(MonitorTaskGroup(task, period=2)),
        options=dict(maxiter=5),
    )
    scipy_steps = task.steps
    assert scipy_steps[0] == 0 and scipy_steps == list(range(0, 2 * len(scipy_steps), 2))
    task = _RecordSteps()
    fit(m, (X, Y), iterations=6, monitor=Monitor(MonitorTaskGroup(task, period=2)))
    assert task.steps == [0, 2, 4, 6]


def test_a_monitor_whose_period_exceeds_the_run_warns(data, tmp_path):
    """ep_monitor(period=20) on a 10-step run writes only step 0: fit says so."""
    from gpflow_ep.monitor import ep_monitor

    (X, Y), _ = data
    m = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), Probit(), X[:10].copy(), num_data=len(X))
    monitor = ep_monitor(str(tmp_path), m, period=20)
    with pytest.warns(UserWarning, match=r"monitor: its period \(20 steps\) is longer than this run \(steps 1 to 10\)"):
        fit(m, (X, Y), batch_size=40, epochs=1, monitor=monitor)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit(m, (X, Y), batch_size=20, epochs=1, monitor=monitor)  # 20 steps: writes steps 0 and 20


@pytest.mark.parametrize("stream", [_Terminal, io.StringIO], ids=["terminal", "log file"])
def test_progress_is_shown_by_default_on_a_terminal_only(data, monkeypatch, stream):
    """progress=None (default): a bar when stderr is a terminal (as Keras), nothing in logs and CI."""
    (X, Y), _ = data
    m = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), Probit(), X[:10].copy(), num_data=len(X))
    err = stream()
    monkeypatch.setattr(sys, "stderr", err)
    fit(m, (X, Y), batch_size=100, iterations=3)
    if stream is _Terminal:
        assert err.getvalue().split("\r")[-1].startswith("|" + "#" * 30 + "| 100% step 3/3")
        assert err.getvalue().endswith("\n") and err.getvalue().count("\n") == 1
    else:
        assert err.getvalue() == ""
    forced = stream()
    monkeypatch.setattr(sys, "stderr", forced)
    fit(m, (X, Y), batch_size=100, iterations=3, progress=stream is not _Terminal)  # True/False override
    assert (forced.getvalue() == "") == (stream is _Terminal)


ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)]


def readme_snippet(containing: str) -> str:
    """The one ```python block of the README or the docs' pages that contains ``containing``."""
    found = {b for page in PAGES for b in re.findall(r"```python\n(.*?)```", page.read_text(), re.S) if containing in b}
    assert len(found) == 1, f"{len(found)} different blocks of README.md and docs/ contain {containing!r}"
    return found.pop()


def event_steps(log_dir: Path):
    paths = [str(p) for p in log_dir.rglob("events.out.tfevents*")]
    return sorted({e.step for path in paths for e in tf.compat.v1.train.summary_iterator(path) if e.summary.value})


@pytest.mark.slow
def test_readme_monitor_snippet_runs_as_written(tmp_path, monkeypatch):
    """
    The README's TensorBoard snippet, executed as written on the data it names (breast cancer's 398
    training points, the SEPGPC of the README's first snippet): 10 epochs of 2 steps (200 + 198
    points), so the run writes steps 0 and 20 and fit gives no warning (issue 27: 1 step per epoch
    and no step 0 made this an empty run).
    """
    from gpflow_ep.datasets import breast_cancer_split

    split = breast_cancer_split()
    X, Y, X_test, Y_test = split.X_train, split.Y_train, split.X_test, split.Y_test
    assert len(X) == 398
    kernel = gpflow.kernels.SquaredExponential(lengthscales=[1.0] * X.shape[1])
    model = SEPGPC(kernel, Probit(), X[::20].copy(), num_data=len(X))
    monkeypatch.chdir(tmp_path)
    namespace = dict(model=model, X=X, Y=Y, X_test=X_test, Y_test=Y_test)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(readme_snippet('ep_monitor("runs/sepgpc"'), namespace)
    assert not [w for w in caught if "fit" in str(w.message) or "monitor" in str(w.message)]
    assert event_steps(tmp_path / "runs" / "sepgpc") == [0, 20]


@pytest.mark.slow
def test_readme_multiclass_snippet_runs_as_written():
    """The README's SEPMGPC snippet on iris (105 training points, batch_size=128 > 105: full batches)."""
    from gpflow_ep.datasets import sklearn_multiclass_split

    split = sklearn_multiclass_split("iris", test_fraction=0.3)
    X, Y, X_test = split.X_train, split.Y_train.astype(np.int64), split.X_test
    assert len(X) == 105
    namespace = dict(gpflow=gpflow, X=X, Y=Y, X_test=X_test, Z=X[::7].copy(), D=X.shape[1], C=3)
    exec(readme_snippet("fit(model, (X, Y), batch_size=128, epochs=20)"), namespace)
    p = namespace["p"].numpy()
    assert p.shape == (len(X_test), 3) and np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)  # 40-node quadrature (README: sums to 1 to 1e-5)


def test_fit_called_again_traces_its_step_once_and_never_warns_of_retracing():
    """
    Each ``fit`` compiles its step for the batches' element spec, so an epoch's last, smaller batch uses
    the same trace; three calls in a row (as when training in stages) do not read to TensorFlow as
    frequent retracing (its warning goes to the "tensorflow" logger).
    """
    X, Y = two_dimensional(105, seed=3)
    model = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:6].copy(), num_data=len(X))
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    logging.getLogger("tensorflow").addHandler(handler)
    try:
        for _ in range(3):
            fit(model, (X, Y), batch_size=20, epochs=1, progress=False)  # 5 batches of 20, one of 5
    finally:
        logging.getLogger("tensorflow").removeHandler(handler)
    assert not [m for m in messages if "retracing" in m], messages
    step = make_train_step(model, tf_keras.optimizers.Adam(0.01), batch_spec=make_dataset((X, Y), 20).element_spec)
    for batch in make_dataset((X, Y), 20).take(6):
        step(batch)
    assert step.experimental_get_tracing_count() == 1
