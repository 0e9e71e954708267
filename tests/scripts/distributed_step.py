"""
Run by tests/test_training.py in a subprocess: TensorFlow must see 2 logical CPU devices before it
initialises. Prints one JSON line: the largest differences between one training step under
MirroredStrategy over 2 devices and the same step on one device, for each model named on the
command line (one process for all: TensorFlow's start-up is paid once).
"""

import json
import sys

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import gpflow  # noqa: E402
import numpy as np  # noqa: E402
from gpflow.keras import tf_keras  # noqa: E402

from gpflow_ep.datasets import two_dimensional  # noqa: E402
from gpflow_ep.ep import Relaxation  # noqa: E402
from gpflow_ep.likelihoods import BinaryHinge, MultiClassStep, NoisyStep, Probit  # noqa: E402
from gpflow_ep.models import DGPAEP, SEPGPC, SEPMGPC  # noqa: E402
from gpflow_ep.training import make_train_step  # noqa: E402

#: the EP options each SEPGPC variant runs with (power and relaxation act in the minibatch refresh too)
VARIANTS = {
    "SEPGPC": (Probit, {}),
    "SEPGPC-power": (lambda: NoisyStep(0.1), dict(power=0.8, minibatch_damping=0.7)),
    "SEPGPC-relaxed": (lambda: NoisyStep(0.2), dict(relaxation=Relaxation(penalty=0.1))),
    "SEPGPC-hinge": (BinaryHinge, dict(power=0.8)),
}


#: SGD learning rates: lr 1 makes the optimiser's update the summed gradient; DGP-AEP's energy is
#: O(N) in the tied factors, so its step is scaled down to stay in the region where F is finite
LEARNING_RATE = {"DGPAEP": 1e-3}


#: one strategy for every model of the process (a second MirroredStrategy reuses collective instance
#: keys of the first, which fails when the models' shapes differ)
STRATEGY = None


def strategy_for_process():
    global STRATEGY
    if STRATEGY is None:
        STRATEGY = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    return STRATEGY


def build(kind, X, Y, Z):
    if kind == "DGPAEP":  # a two-layer deep GP with a probit output (moment propagation through layers)
        return DGPAEP.from_data(X, Y, [2, 2, 1], num_inducing=len(Z), likelihood=Probit(), seed=3)
    kernel = gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=[0.9, 1.1])
    if kind == "SEPMGPC":  # three classes: paired sites, gathered across replicas like SEPGPC's
        return SEPMGPC(kernel, MultiClassStep(3, noise_variance=0.1), Z.copy(), num_data=len(X))
    if kind in VARIANTS:
        likelihood, options = VARIANTS[kind]
        return SEPGPC(kernel, likelihood(), Z.copy(), num_data=len(X), **options)
    return gpflow.models.SVGP(kernel, Probit(), Z.copy(), num_data=len(X))


def state(model):
    return [v.numpy().copy() for v in model.variables]


def main(kind):
    X, Y = two_dimensional(64, seed=4)
    if kind == "SEPMGPC":
        Y = Y + (X[:, 1:] > 0.5)  # classes 0, 1, 2
    Z = X[::8]
    index = np.arange(20, 44, dtype=np.int32)
    batch = (X[index], Y[index], index)
    results = {}
    for label in ["single", "mirrored"]:
        if label == "mirrored":
            strategy = strategy_for_process()
            with strategy.scope():
                model = build(kind, X, Y, Z)
                optimizer = tf_keras.optimizers.SGD(learning_rate=LEARNING_RATE.get(kind, 1.0))
            step = make_train_step(model, optimizer, strategy=strategy)
            ds = tf.data.Dataset.from_tensor_slices(batch).batch(len(index))
            dist_batch = next(iter(strategy.experimental_distribute_dataset(ds)))
        else:
            model = build(kind, X, Y, Z)
            optimizer = tf_keras.optimizers.SGD(learning_rate=LEARNING_RATE.get(kind, 1.0))
            step = make_train_step(model, optimizer)
            dist_batch = batch
        before = state(model)
        # two steps: the second sees the sites and q(u) written by the first
        losses = [float(step(dist_batch)[0]) for _ in range(2)]
        after = state(model)
        results[label] = (losses, [a - b for a, b in zip(after, before)], after)
    (l1, d1, s1), (l2, d2, s2) = results["single"], results["mirrored"]
    report = {
        "loss": max(abs(a - b) for a, b in zip(l1, l2)),
        "updates": max(float(np.max(np.abs(a - b))) for a, b in zip(d1, d2)),
        "state": max(float(np.max(np.abs(a - b))) for a, b in zip(s1, s2)),
        "update_scale": max(float(np.max(np.abs(a))) for a in d1),
        "replicas": 2,
    }
    print(json.dumps({"model": kind, **report}))


if __name__ == "__main__":
    for name in sys.argv[1:]:
        main(name)
