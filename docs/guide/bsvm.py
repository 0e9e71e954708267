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
# # Bayesian SVM: hinge likelihoods and the hybrid deep kernel
#
# The Bayesian SVM of Wistuba & Rawat (2018) is a GP classifier whose "likelihood" is the hinge
# pseudo-likelihood L(y | f) = exp(−2 max(0, 1 − y f)) (Polson & Scott, 2011). `BinaryHinge` and
# `MultiClassHinge(C)` are GPflow likelihoods: they go into GPflow's `SVGP`/`VGP` (the paper's
# variational bound) and, through their closed-form tilted moments, into every EP model of this
# package. `DeepKernel` puts a GPflow kernel on the features of a `tf_keras` network (the paper's hybrid
# model). This page trains SVGP with the hinge and with GPflow's Bernoulli on 2-D data, and shows the
# decision boundary and the hinge's uncertainty score, the variation ratio.

# %%
import gpflow
import matplotlib.pyplot as plt
import numpy as np

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import BinaryHinge
from gpflow_ep.models import EPGPC
from gpflow_ep.training import fit

X, Y = two_dimensional(200, seed=0)  # y = 1[sin(2 x₁) + x₂/2 + noise > 0], Y in {0, 1} [N, 1]
Z = X[::10].copy()


def kernel():
    return gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0])


models = {
    "SVGP (hinge)": gpflow.models.SVGP(kernel(), BinaryHinge(), Z, num_data=len(X)),
    "SVGP (Bernoulli)": gpflow.models.SVGP(kernel(), gpflow.likelihoods.Bernoulli(), Z, num_data=len(X)),
}
for model in models.values():
    fit(model, (X, Y), batch_size=100, epochs=100, progress=False)
hinge_ep = EPGPC((X, Y), kernel(), BinaryHinge())  # the same likelihood with EP sites
print("EPGPC with hinge sites:", hinge_ep.run_ep())
models["EPGPC (hinge)"] = hinge_ep

# %% [markdown]
# The hinge's `predict_y` is P(f > 0) = Φ(μ/√v), the paper's vote rule in the many-sample limit; its
# `variation_ratio` 1 − max(P, 1 − P) is the paper's uncertainty score (largest on the boundary).

# %%
g = np.linspace(-3, 3, 60)
G1, G2 = np.meshgrid(g, g)
grid = np.column_stack([G1.ravel(), G2.ravel()])
fig, axes = plt.subplots(1, 4, figsize=(15, 3.6), sharex=True, sharey=True)
for ax, (name, model) in zip(axes, models.items()):
    p = model.predict_y(grid)[0].numpy().reshape(G1.shape)
    ax.contourf(G1, G2, p, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.7)
    ax.contour(G1, G2, p, levels=[0.5], colors="k")
    ax.scatter(X[:, 0], X[:, 1], c=Y[:, 0], cmap="RdBu_r", edgecolors="k", s=10)
    ax.set_title(name)
svgp = models["SVGP (hinge)"]
vr = svgp.likelihood.variation_ratio(*svgp.predict_f(grid)).numpy().reshape(G1.shape)
image = axes[3].contourf(G1, G2, vr, levels=10, cmap="viridis")
axes[3].set_title("variation ratio (SVGP hinge)")
fig.colorbar(image, ax=axes[3])
fig.tight_layout()

# %% [markdown]
# ```{include} ../_details/bsvm.md
# ```
