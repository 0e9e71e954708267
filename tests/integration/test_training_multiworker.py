"""
``fit`` under ``tf.distribute.MultiWorkerMirroredStrategy`` with two worker processes on this
machine (``TF_CONFIG`` with 127.0.0.1 ports; each worker one CPU replica): the same losses, sites,
q(u) and parameters as one process to float64 round-off (:func:`assert_same_run`), for SEPGPC
(minibatch EP: the replicas' refreshes are gathered across the workers), SEPGPC with tied sites (the
average site's update an all-reduced sum) and SVGP; a worker killed
mid-run is reported to the other one as a ``WorkerFailedError`` naming the checkpoint, and
restarting both workers with the same call resumes from it and ends where an uninterrupted run
ends. Each test starts its processes itself, bounds them in time and kills what is left.
"""

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).parent.parent / "scripts" / "multiworker_fit.py"
TIMEOUT = 240  # seconds for one group of processes (start-up ≈ 5 s each, 2 cores shared)


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def environment(tf_config):
    """A worker's environment: this one without proxies, quiet TensorFlow on the CPU, ``TF_CONFIG`` set."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="-1", TF_CONFIG=json.dumps(tf_config))
    return env


def run_processes(commands_and_envs, logs_dir):
    """Start the processes together, wait for all (bounded), kill what is left; return the exit codes."""
    processes = []
    for i, (command, env) in enumerate(commands_and_envs):
        log = open(logs_dir / f"process{i}.log", "w")
        processes.append((subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    codes = []
    try:
        for process, _ in processes:
            codes.append(process.wait(timeout=TIMEOUT))
    finally:
        for process, log in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
            log.close()
    return codes


def run(tmp_path, tag, models, iterations, workers=2, **options):
    """``workers`` MWMS worker processes; the JSON report of each (by model), None for a worker that wrote none."""
    args = [f"--models={models}", f"--iterations={iterations}"]
    args += [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(workers)]}
    jobs = [
        (
            [sys.executable, str(SCRIPT), *args, f"--out={tmp_path / f'{tag}{i}.json'}"],
            environment({"cluster": cluster, "task": {"type": "worker", "index": i}}),
        )
        for i in range(workers)
    ]
    codes = run_processes(jobs, tmp_path)
    paths = [tmp_path / f"{tag}{i}.json" for i in range(workers)]
    reports = [json.loads(path.read_text()) if path.exists() else None for path in paths]
    logs = "\n".join((tmp_path / f"process{i}.log").read_text()[-2000:] for i in range(len(jobs)))
    return codes, reports, logs


def assert_same_run(reference, other):
    """
    Equal to float64 round-off relative to each quantity's scale (max |value| of the losses, of each
    variable): the workers sum the same terms in another order (all-reduce), which Cholesky solves
    amplify to at most (3M + 1) ε κ relative (Higham, 2002, "Accuracy and Stability of Numerical
    Algorithms", Theorem 10.4; κ the larger condition number of K_uu and q(u)'s covariance of either
    run), and each of the k steps adds its own: r = k (3M + 1) ε κ.
    """
    assert other["steps"] == reference["steps"]
    kappa = max(reference["kappa"], other["kappa"])
    r = reference["steps"] * (3 * reference["inducing"] + 1) * np.finfo(np.float64).eps * kappa
    losses = reference["losses"][-len(other["losses"]) :]
    np.testing.assert_allclose(other["losses"], losses, rtol=0, atol=r * np.max(np.abs(losses)))
    assert len(other["variables"]) == len(reference["variables"])
    for a, b in zip(reference["variables"], other["variables"]):
        np.testing.assert_allclose(b, a, rtol=0, atol=r * np.max(np.abs(a), initial=0.0))


@pytest.fixture(scope="module")
def reference():
    """
    The single-process runs: 10 steps of SEPGPC (per-point and tied sites) and SVGP (Adam, batch 24 of 96,
    seed 5), the script's own ``train`` without a strategy, in this process (a third process would only add
    TensorFlow's start-up).
    """
    spec = importlib.util.spec_from_file_location("multiworker_fit", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    X, Y = script.two_dimensional(96, seed=4)
    args = argparse.Namespace(iterations=10, checkpoint_dir=None, checkpoint_every=None, die_at=None)
    return {kind: script.train(kind, X, Y, None, None, args) for kind in ("SEPGPC", "SEPGPC-tied", "SVGP")}


def test_two_workers_match_one_process(tmp_path, reference):
    codes, reports, logs = run(tmp_path, "mwms", "SEPGPC,SEPGPC-tied,SVGP", iterations=10)
    assert codes == [0, 0], logs
    for report in reports:  # both workers hold the same models, equal to the one-process models
        for model in ("SEPGPC", "SEPGPC-tied", "SVGP"):
            assert report[model]["replicas"] == 2
            assert_same_run(reference[model], report[model])


@pytest.mark.slow
def test_a_killed_worker_is_reported_and_training_resumes_from_the_checkpoint(tmp_path, reference):
    checkpoints = tmp_path / "checkpoints"
    # worker 1 dies after step 5; checkpoints every 2 steps: the last one is step 4
    codes, (survivor, dead), logs = run(
        tmp_path, "killed", "SEPGPC", iterations=10, checkpoint_dir=checkpoints, checkpoint_every=2, die_at=5
    )
    assert codes[1] == 17 and dead is None, logs
    assert codes[0] == 0 and survivor is not None, logs
    error = survivor["SEPGPC"]["error"]
    assert "another worker stopped answering during step 6" in error
    assert "ckpt-4" in error and "restart every worker" in error
    codes, reports, logs = run(tmp_path, "resumed", "SEPGPC", iterations=10, checkpoint_dir=checkpoints)
    assert codes == [0, 0], logs
    for report in reports:  # steps 5 … 10 again: nothing lost, nothing different
        assert report["SEPGPC"]["initial_step"] == 4 and len(report["SEPGPC"]["losses"]) == 6
        assert_same_run(reference["SEPGPC"], report["SEPGPC"])
