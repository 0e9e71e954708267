# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Sparse EP: SEPGPC and SEPMGPC
#
# `SEPGPC` is scalable EP classification with inducing points (Hernández-Lobato & Hernández-Lobato,
# 2016): one Gaussian site per data point on u = f(Z) under the FITC prior, refreshed on each minibatch,
# with the hyper-parameters and Z trained by gradient steps on the paper's EP objective. It stands where
# GPflow's `SVGP` stands (same kernel, inducing points, `num_data`, training loop). `SEPMGPC`
# (Villacampa-Calvo & Hernández-Lobato, 2017) is its multi-class version. This page trains SEPGPC and
# SVGP for the same number of minibatch steps on breast cancer, and compares their calibration and
# held-out NLPD against training time.

# %%
import time

import gpflow
import matplotlib.pyplot as plt
import numpy as np

from gpflow_ep.datasets import breast_cancer_split
from gpflow_ep.evaluation import held_out_metrics
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import SEPGPC
from gpflow_ep.training import fit

X, Y, X_test, Y_test = breast_cancer_split()[:4]  # 398 × 30 training points, Y in {0, 1} [N, 1]
Z = X[:30].copy()


def kernel():
    return gpflow.kernels.SquaredExponential(lengthscales=[np.sqrt(X.shape[1])] * X.shape[1])


# %% [markdown]
# `fit` is one training loop for every model (GPflow's SVGP included): it draws minibatches with the
# points' indices, refreshes the batch's EP sites and takes an Adam step. A monitor, called with the
# step number, records the held-out NLPD against training time (the evaluations' own time left out).

# %%
models = {
    "SEPGPC (Probit)": SEPGPC(kernel(), Probit(), Z, num_data=len(X)),
    "SVGP (Bernoulli)": gpflow.models.SVGP(kernel(), gpflow.likelihoods.Bernoulli(), Z, num_data=len(X)),
}
curves = {}
for name, model in models.items():
    trace, clock = [], dict(start=time.perf_counter(), paused=0.0)

    def record(step, model=model, trace=trace, clock=clock):
        if step % 10 == 0:
            now = time.perf_counter()
            trace.append((now - clock["start"] - clock["paused"], held_out_metrics(model, X_test, Y_test)["nlpd"]))
            clock["paused"] += time.perf_counter() - now

    fit(model, (X, Y), batch_size=100, epochs=30, monitor=record, progress=False)
    curves[name] = tuple(zip(*trace))
    print(name, {k: round(v, 4) for k, v in held_out_metrics(model, X_test, Y_test).items()})

# %% [markdown]
# Left: a reliability diagram (the fraction of positive test labels among the test points whose
# predicted p(y = 1) falls in each bin; a calibrated model lies on the diagonal). Right: held-out NLPD
# against training time (the first step includes compiling the training step).

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
bins = np.linspace(0, 1, 6)
for name, model in models.items():
    p = model.predict_y(X_test)[0].numpy().ravel()
    which = np.clip(np.digitize(p, bins) - 1, 0, len(bins) - 2)
    full = [b for b in range(len(bins) - 1) if np.any(which == b)]
    left.plot([p[which == b].mean() for b in full], [Y_test[which == b].mean() for b in full], "o-", label=name)
    right.plot(*curves[name], "o-", label=name)
left.plot([0, 1], [0, 1], "k:", lw=1)
left.set(xlabel="predicted p(y = 1)", ylabel="observed frequency", title="calibration (test)")
right.set(xlabel="training time [s]", ylabel="test NLPD", title="NLPD against time")
left.legend()
fig.tight_layout()

# %% [markdown]
# ## Several classes: SEPMGPC
#
# C latent GPs with the noisy argmax likelihood `MultiClassStep(C)`; labels are integer classes
# `[N, 1]` as for GPflow's `MultiClass`.

# %%
from gpflow_ep.datasets import sklearn_multiclass_split
from gpflow_ep.likelihoods import MultiClassStep
from gpflow_ep.models import SEPMGPC

iris = sklearn_multiclass_split("iris")
Xc, Yc = iris.X_train, iris.Y_train.astype(np.int64)
sepmgpc = SEPMGPC(
    gpflow.kernels.SquaredExponential(lengthscales=[2.0] * Xc.shape[1]),
    MultiClassStep(3),
    Xc[::8].copy(),
    num_data=len(Xc),
)
fit(sepmgpc, (Xc, Yc), batch_size=60, epochs=20, progress=False)
p, _ = sepmgpc.predict_y(iris.X_test)
print("iris test error:", np.mean(np.argmax(p, 1) != iris.Y_test.ravel()))

# %% [markdown]
# ```{include} ../_details/sepgpc.md
# ```
