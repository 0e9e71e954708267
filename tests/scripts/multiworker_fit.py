"""
One worker of a ``MultiWorkerMirroredStrategy`` run of ``gpflow_ep.training.fit`` (started by
tests/test_multiworker.py with ``TF_CONFIG`` set), or, without ``TF_CONFIG``, the single-process
reference. Writes JSON to ``--out``: for each model, the losses of this call, the steps, the
model's variables, the condition number κ of K_uu and q(u)'s covariance (the larger at the start
and the end) and their size M, and the error, if ``fit`` raised one.

    python multiworker_fit.py --models SEPGPC,SVGP --iterations 10 --out out.json [--checkpoint-dir D]
                              [--checkpoint-every 3] [--die-at 5]

(one strategy and one process for all models: TensorFlow's start-up is paid once; with a
checkpoint directory each model gets a subdirectory).

``--die-at k`` makes worker 1 exit abruptly (``os._exit``) after its k-th step: a killed worker.
"""

import argparse
import json
import os
import sys

import gpflow  # noqa: E402  (after TensorFlow: the order of a user's script)
import numpy as np  # noqa: E402
import tensorflow as tf
from gpflow.keras import tf_keras  # noqa: E402

from gpflow_ep.datasets import two_dimensional  # noqa: E402
from gpflow_ep.likelihoods import Probit  # noqa: E402
from gpflow_ep.models import SEPGPC  # noqa: E402
from gpflow_ep.training import WorkerFailedError, fit  # noqa: E402

#: a peer that stops answering is reported after this many seconds at the latest (TF's default
#: waits for the gRPC keep-alive, 8 s for a dead process, a minute or more for a hung one)
COLLECTIVE_TIMEOUT = 20.0


def build(kind, X):
    kernel = gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=[0.9, 1.1])
    if kind == "SEPGPC":
        return SEPGPC(kernel, Probit(), X[::8].copy(), num_data=len(X))
    if kind == "SEPGPC-tied":
        return SEPGPC(kernel, Probit(), X[::8].copy(), num_data=len(X), sites="tied")
    return gpflow.models.SVGP(kernel, Probit(), X[::8].copy(), num_data=len(X))


def conditioning(model):
    """max κ₂ of K_uu (with GPflow's jitter) and of q(u)'s covariance, and M (the test's round-off bound)."""
    K = gpflow.covariances.Kuu(model.inducing_variable, model.kernel, jitter=gpflow.config.default_jitter()).numpy()
    q_sqrt = model.q_sqrt.numpy()
    S = q_sqrt @ np.swapaxes(q_sqrt, -1, -2)
    return max(float(np.linalg.cond(K)), float(np.max(np.linalg.cond(S)))), K.shape[-1]


def train(kind, X, Y, strategy, worker, args):
    with strategy.scope() if strategy is not None else tf.name_scope("single"):
        model = build(kind, X)
        optimizer = tf_keras.optimizers.Adam(0.01)

    def monitor(step):
        if worker == 1 and step == args.die_at:
            os._exit(17)  # killed: no clean-up, no goodbye to the other worker

    report = {"worker": worker, "replicas": strategy.num_replicas_in_sync if strategy else 1}
    kappa, report["inducing"] = conditioning(model)
    try:
        result = fit(
            model,
            (X, Y),
            batch_size=24,
            iterations=args.iterations,
            optimizer=optimizer,
            strategy=strategy,
            checkpoint_dir=None if args.checkpoint_dir is None else os.path.join(args.checkpoint_dir, kind),
            checkpoint_every=args.checkpoint_every,
            monitor=monitor,
            seed=5,
        )
        report.update(losses=result.losses, steps=result.steps, initial_step=result.initial_step)
        report["variables"] = [np.asarray(v.numpy(), np.float64).ravel().tolist() for v in model.variables]
        report["kappa"] = max(kappa, conditioning(model)[0])  # at the start and the end of the run
    except WorkerFailedError as error:
        report["error"] = str(error)
    return report


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", required=True, help="comma-separated: SEPGPC, SEPGPC-tied, SVGP")
    parser.add_argument("--iterations", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoint-dir", default=None)
    parser.add_argument("--checkpoint-every", type=int, default=None)
    parser.add_argument("--die-at", type=int, default=None)
    args = parser.parse_args()

    X, Y = two_dimensional(96, seed=4)
    worker = json.loads(os.environ["TF_CONFIG"])["task"]["index"] if "TF_CONFIG" in os.environ else None
    strategy = None
    if worker is not None:
        options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=COLLECTIVE_TIMEOUT)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    reports = {}
    for kind in args.models.split(","):
        reports[kind] = train(kind, X, Y, strategy, worker, args)
    with open(args.out, "w") as f:
        json.dump(reports, f)
    sys.stdout.flush()
    os._exit(0)  # a surviving worker must not wait for its dead peer at interpreter exit


if __name__ == "__main__":
    main()
