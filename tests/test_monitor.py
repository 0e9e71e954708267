"""gpflow_ep.monitor: the tasks write what TensorBoard reads back (event files, and a served TensorBoard)."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import warnings

import gpflow
import numpy as np
import pytest
from gpflow.monitor import Monitor, MonitorTaskGroup
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.evaluation import held_out_metrics
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC, SEPGPC, RelaxedEP, SpikeSlabRegression
from gpflow_ep.monitor import (
    EP_REFRESH_TAGS,
    EP_RUN_TAGS,
    EP_SCALAR_TAGS,
    EPDiagnosticsToTensorBoard,
    HeldOutToTensorBoard,
    ep_monitor,
)
from gpflow_ep.optimizers import MinibatchEP
from gpflow_ep.training import fit, make_dataset


@pytest.fixture(scope="module")
def data():
    X, Y = two_dimensional(80, seed=3)
    return (X[:60], Y[:60]), (X[60:], Y[60:])


def _tensor_value(event) -> float:
    from tensorboard.util import tensor_util

    return float(tensor_util.make_ndarray(event.tensor_proto))


def _read(log_dir) -> dict:
    acc = EventAccumulator(str(log_dir), size_guidance={"tensors": 0})
    acc.Reload()
    return {
        tag: [(e.step, _tensor_value(e)) for e in acc.Tensors(tag)]
        for tag in acc.Tags()["tensors"]
        if not tag.endswith(("site_precision", "site_natural_mean", "relaxation"))
    } | {"_tags": set(acc.Tags()["tensors"])}


def test_epgpc_fit_writes_ep_tags_with_the_logged_values(tmp_path, data):
    """fit + ep_monitor on EPGPC: test/error and test/nlpd at steps 0 (before training), 2 and 4;
    the EP tags from step 2 on (no EP had run at step 0: nested EP runs inside the loss); the
    logged evidence is log Z_EP at the stored sites and the hyper-parameters of the moment (at step 4,
    the model's after training; the summaries are float32, so 1e-6 relative), as is the logged test NLPD."""
    (X, Y), test = data
    model = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit())
    monitor = ep_monitor(str(tmp_path), model, test_data=test, period=2)
    result = fit(model, (X, Y), iterations=4, monitor=monitor)
    written = _read(tmp_path)
    for tag in EP_SCALAR_TAGS + ("test/error", "test/nlpd"):
        assert tag in written["_tags"], tag
    assert {"ep/site_precision", "ep/site_natural_mean"} <= written["_tags"]
    assert [s for s, _ in written["ep/sweeps"]] == [2, 4]
    assert [s for s, _ in written["test/error"]] == [0, 2, 4]
    logged = [v for s, v in written["ep/log_marginal_likelihood"] if s > 0]
    np.testing.assert_allclose(logged[-1], float(model.log_marginal_likelihood()), rtol=1e-6)
    assert len(logged) == 2 and logged[0] < logged[1] and len(result.losses) == 4  # training raised it
    expected = held_out_metrics(model, *test)
    np.testing.assert_allclose(written["test/nlpd"][-1][1], expected["nlpd"], rtol=1e-6)
    assert written["ep/converged"][-1][1] == 1.0 and written["ep/power"][-1][1] == 1.0


def test_sepgpc_minibatch_records_refreshes(tmp_path, data):
    """The minibatch path records its refreshes: ep/refreshes counts the steps (3 batches × 2 epochs),
    from the first refresh on (fit's step 0 is before any refresh, so no refresh tag is written there)."""
    (X, Y), _ = data
    model = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:8].copy(), num_data=len(X))
    task = EPDiagnosticsToTensorBoard(str(tmp_path), model, data=(X, Y))
    fit(model, (X, Y), batch_size=20, epochs=2, monitor=Monitor(MonitorTaskGroup([task], period=1)))
    written = _read(tmp_path)
    assert written["ep/refreshes"] == [(step, float(step)) for step in range(1, 7)]
    assert written["ep/refresh_max_change"][0][1] > 0.0  # the first refresh moves the sites from 0
    assert written["ep/minibatch_damping"][-1][1] == pytest.approx(0.99)
    assert model.ep_diagnostics.as_dict()["refreshes"] == 6


def test_minibatch_training_writes_no_full_run_tags_until_a_run_happens(tmp_path, data):
    """The README's minibatch loop (MinibatchEP().loss_closure over make_dataset batches, Adam): no full EP
    run was attempted, so ep/converged, ep/sweeps, ... are not written (not 0, not NaN) and the refresh
    tags are; once run_ep happened, its outcome is written at the next call."""
    (X, Y), _ = data
    model = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:8].copy(), num_data=len(X))
    task = EPDiagnosticsToTensorBoard(str(tmp_path), model, data=(X, Y))
    loss = MinibatchEP().loss_closure(model, iter(make_dataset((X, Y), batch_size=20, seed=0)))
    optimizer = gpflow.keras.tf_keras.optimizers.Adam(0.01)
    task(0)  # before training: neither a run nor a refresh
    for step in range(1, 4):
        optimizer.minimize(loss, model.trainable_variables)
        task(step)
    written = _read(tmp_path)
    assert not set(EP_RUN_TAGS) & written["_tags"]
    assert [s for s, _ in written["ep/refreshes"]] == [1, 2, 3] and set(EP_REFRESH_TAGS) <= written["_tags"]
    assert all(np.isfinite(v) for _, v in written["ep/log_marginal_likelihood"])
    model.run_ep((X, Y))
    task(4)
    written = _read(tmp_path)
    assert written["ep/converged"] == [(4, 1.0)] and [s for s, _ in written["ep/sweeps"]] == [4]


def test_ep_damping_is_the_damping_in_force(tmp_path, data):
    """damping=None is the schedule's default: 0.8 for the parallel schedule, 1 for the sequential one."""
    (X, Y), _ = data
    for name, options, expected in [
        ("default", {}, 0.8),
        ("sequential", dict(schedule="sequential"), 1.0),
        ("given", dict(damping=0.3), 0.3),
    ]:
        model = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit(), **options)
        EPDiagnosticsToTensorBoard(str(tmp_path / name), model)(0)
        written = _read(tmp_path / name)
        assert written["ep/damping"] == [(0, pytest.approx(expected, rel=1e-7))], name  # float32 summaries
        assert not set(EP_RUN_TAGS) & written["_tags"]  # no run yet


@pytest.mark.slow
def test_relaxed_ep_writes_its_relaxation_histogram_and_spike_slab_its_evidence(tmp_path, data):
    (X, Y), _ = data
    relaxed = RelaxedEP((X, Y), gpflow.kernels.SquaredExponential(), Probit())
    relaxed.run_ep()
    EPDiagnosticsToTensorBoard(str(tmp_path / "rep"), relaxed)(0)
    assert "ep/relaxation" in _read(tmp_path / "rep")["_tags"]
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(20, 5))
    ss = SpikeSlabRegression((Xs, Xs[:, :1] + 0.1 * rng.normal(size=(20, 1))), 0.01, 1.0, 0.3)
    ss.run_ep()
    EPDiagnosticsToTensorBoard(str(tmp_path / "ss"), ss)(3)
    written = _read(tmp_path / "ss")
    assert written["ep/log_marginal_likelihood"] == [(3, pytest.approx(float(ss.log_marginal_likelihood()), rel=1e-6))]


def test_held_out_task_works_for_plain_gpflow_models_and_refuses_ep_tags_for_them(tmp_path, data):
    (X, Y), test = data
    svgp = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), Probit(), X[:5].copy(), num_data=len(X))
    HeldOutToTensorBoard(str(tmp_path), svgp, test, name="held")(7)
    written = _read(tmp_path)
    assert written["held/error"][0][0] == 7 and 0.0 <= written["held/error"][0][1] <= 1.0
    with pytest.raises(ValueError, match="model"):
        EPDiagnosticsToTensorBoard(str(tmp_path), svgp)


def test_held_out_task_evaluates_an_unfitted_ep_model_as_it_stands_without_warning(tmp_path, data):
    """Step 0 of a run: the prior's prediction, p = Φ(0) = 1/2 at every point, so the NLPD is log 2."""
    (X, Y), test = data
    model = SEPGPC(gpflow.kernels.SquaredExponential(), Probit(), X[:5].copy(), num_data=len(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HeldOutToTensorBoard(str(tmp_path), model, test, name="held")(0)
    # TensorBoard stores scalars in float32: rounding is within 2⁻²⁴ relative
    assert _read(tmp_path)["held/nlpd"] == [(0, pytest.approx(np.log(2.0), rel=2.0**-24))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get_json(url: str, deadline: float):
    last = None
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.loads(response.read().decode())
        except Exception as error:  # not up yet, or its reload has not seen the files yet
            last = error
            time.sleep(1.0)
    raise AssertionError(f"TensorBoard did not answer {url} in time: {last}")


def test_a_served_tensorboard_shows_the_ep_scalars(tmp_path, data):
    """Start `tensorboard --logdir DIR --port P --host 127.0.0.1` (at most 90 s, then stopped) and read
    the scalar tags and values back over HTTP from its data API."""
    (X, Y), test = data
    model = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), Probit())
    run_dir = tmp_path / "epgpc"
    fit(model, (X, Y), iterations=3, monitor=ep_monitor(str(run_dir), model, test_data=test, period=1))
    expected = _read(run_dir)
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "tensorboard.main",
        "--logdir",
        str(tmp_path),
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--reload_interval",
        "1",
    ]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + 90
        base = f"http://127.0.0.1:{port}/data/plugin/scalars"
        tags = {}
        while time.time() < deadline and "ep/log_marginal_likelihood" not in tags.get("epgpc", {}):
            tags = _get_json(f"{base}/tags", deadline)
            time.sleep(0.5)
        for tag in EP_SCALAR_TAGS + ("test/error", "test/nlpd"):
            assert tag in tags["epgpc"], tag
            query = urllib.parse.urlencode({"run": "epgpc", "tag": tag})
            served = _get_json(f"{base}/scalars?{query}", deadline)  # [[wall_time, step, value], ...]
            assert [(s, v) for _, s, v in served] == [(s, pytest.approx(v, rel=1e-6)) for s, v in expected[tag]]
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
