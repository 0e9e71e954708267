"""
Run by tests/training/test_step.py in a subprocess: TensorFlow must see 2 logical CPU devices before it
initialises. Prints one JSON line per model named on the command line (one process for all:
TensorFlow's start-up is paid once): the largest differences between two training steps under
MirroredStrategy over 2 devices and the same steps on one device (losses, parameter updates, all
variables), the scale of each of these quantities on one device, and what the round-off of a
float64 computation over these quantities is amplified by: the largest condition number κ of the
matrices the steps factorise (K_uu and q(u)'s covariance, at the start of either step) and
their size M (see the test's docstring).
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
    "SEPGPC-tied": (Probit, dict(sites="tied", power=0.8)),
}


#: SGD learning rates: lr 1 makes the optimiser's update the summed gradient; DGP-AEP's energy is
#: O(N) in the tied factors, so its step is scaled down to stay in the region where F is finite; the
#: hinge's first step at lr 1 shrinks a lengthscale 20-fold (0.9 to 0.04), where the kernel's
#: exponents r²/2 reach 4.7e3 and its entries lose r²/2 ulps, beyond the test's round-off bound
LEARNING_RATE = {"DGPAEP": 1e-3, "SEPGPC-hinge": 0.1}


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
    if kind.startswith("SEPMGPC"):  # three classes: paired sites, gathered across replicas like SEPGPC's
        sites = "tied" if kind.endswith("tied") else "per_point"  # tied: q's changes summed across replicas
        return SEPMGPC(kernel, MultiClassStep(3, noise_variance=0.1), Z.copy(), num_data=len(X), sites=sites)
    if kind in VARIANTS:
        likelihood, options = VARIANTS[kind]
        return SEPGPC(kernel, likelihood(), Z.copy(), num_data=len(X), **options)
    return gpflow.models.SVGP(kernel, Probit(), Z.copy(), num_data=len(X))


def state(model):
    return [v.numpy().copy() for v in model.variables]


def factorised_matrices(model):
    """Every K_uu the model factorises (with GPflow's jitter, as the models do) and q(u)'s covariance."""
    jitter = gpflow.config.default_jitter()
    if type(model).__name__ == "DGPAEP":
        pairs = [(k, z) for layer in model.layers for k, z in zip(layer.kernels, layer.inducing_variables)]
        return [gpflow.covariances.Kuu(z, k, jitter=jitter).numpy() for k, z in pairs]
    q_sqrt = model.q_sqrt.numpy()
    covariance = q_sqrt @ np.swapaxes(q_sqrt, -1, -2)
    return [gpflow.covariances.Kuu(model.inducing_variable, model.kernel, jitter=jitter).numpy(), covariance]


def conditioning(model):
    """max κ₂ over the model's K_uu and q(u) covariance blocks, and the largest block size M."""
    blocks = [K[None] if K.ndim == 2 else K for K in factorised_matrices(model)]
    return max(float(np.max(np.linalg.cond(K))) for K in blocks), max(K.shape[-1] for K in blocks)


def main(kind):
    X, Y = two_dimensional(64, seed=4)
    if kind.startswith("SEPMGPC"):
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
        kappa, size = conditioning(model)
        trainable = [v.ref() for v in model.trainable_variables]
        before = state(model)
        # two steps: the second sees the sites and q(u) written by the first
        losses = [float(step(dist_batch)[0])]
        first = [v.numpy() - b for v, b in zip(model.variables, before) if v.ref() in trainable]
        kappa = max(kappa, conditioning(model)[0])  # the state the second step starts from
        losses.append(float(step(dist_batch)[0]))
        after = state(model)
        results[label] = (losses, [a - b for a, b in zip(after, before)], after, first, kappa, size)
    (l1, d1, s1, first, kappa, size), (l2, d2, s2, *_) = results["single"], results["mirrored"]
    gradient_l1 = sum(float(np.sum(np.abs(u))) for u in first) / LEARNING_RATE.get(kind, 1.0)  # SGD: Δθ = -lr g
    first_update = max(float(np.max(np.abs(u))) for u in first)
    report = {
        "loss": max(abs(a - b) for a, b in zip(l1, l2)),
        "updates": max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(d1, d2)),
        "state": max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(s1, s2)),
        # |L| and how far the second loss moves when every parameter moves by the first step's largest update
        "loss_scale": max(abs(v) for v in l1) + gradient_l1 * first_update,
        "update_scale": max(float(np.max(np.abs(a), initial=0.0)) for a in d1),
        "state_scale": max(float(np.max(np.abs(a), initial=0.0)) for a in s1),
        "kappa": kappa,
        "inducing": size,
        "replicas": 2,
    }
    print(json.dumps({"model": kind, **report}))


if __name__ == "__main__":
    for name in sys.argv[1:]:
        main(name)
