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
# # Sparse linear regression: SpikeSlabRegression
#
# `SpikeSlabRegression` is linear regression y = Xw + ε with a spike-and-slab prior on every weight,
# w_j ~ p₀ N(w_j; 0, v_s) + (1 − p₀) δ(w_j), approximated by EP (Hernández-Lobato & Hernández-Lobato,
# 2011). `method="ep"` is damped EP (R-EP); `method="convergent"` is their provably convergent double
# loop (PC-EP), a schedule of the same EP engine. This page draws a problem of the paper's kind
# (inputs on the unit sphere, 20 % of the weights non-zero, fewer observations than weights) small
# enough (12 weights) for the exact posterior to be computed by enumerating all 2¹² inclusion
# patterns, and compares both methods' posterior inclusion probabilities and weight means with it.
# PC-EP is much slower than damped EP (its inner loop is an optimisation), so here it is capped at 40
# outer iterations.

# %%
import matplotlib.pyplot as plt
import numpy as np

from gpflow_ep.datasets import spike_slab_problem
from gpflow_ep.models import SpikeSlabRegression, exact_spike_slab_posterior

X, y, X_test, y_test, w = spike_slab_problem(seed=3, n_train=8, d=12)
print(X.shape, y.shape, "non-zero weights:", np.flatnonzero(w))

# %%
settings = dict(noise_variance=0.005**2, slab_variance=1.0, prior_inclusion=0.2)
fits = {}
options = {"ep": dict(damping=0.5), "convergent": dict(max_sweeps=40, tol=1e-6)}  # PC-EP: 40 outer iterations
for method in ("ep", "convergent"):
    model = SpikeSlabRegression((X, y), method=method, **options[method], **settings)
    print(method, model.run_ep())
    fits[method] = model
log_evidence, exact_mean, exact_var, exact_inclusion = exact_spike_slab_posterior(X, y, **settings)
print(
    "exact log p(y):",
    round(float(log_evidence), 3),
    " EP:",
    {k: round(float(m.log_marginal_likelihood()), 3) for k, m in fits.items()},
)

# %% [markdown]
# The posterior probability that each weight is non-zero (left) and its posterior mean (right), against
# the truth and the exact posterior.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
j = np.arange(len(w))
left.bar(j - 0.2, np.asarray(exact_inclusion), 0.2, label="exact", color="0.6")
right.plot(j, w, "k*", ms=10, label="true w")
right.plot(j, np.asarray(exact_mean), "s", mfc="none", mec="0.4", ms=9, label="exact")
for offset, (method, model) in zip((0.0, 0.2), fits.items()):
    left.bar(j + offset, np.asarray(model.inclusion_probabilities()).ravel(), 0.2, label=method)
    right.plot(j, np.asarray(model.weight_moments()[0]).ravel(), "o", ms=4, label=method)
left.set(xlabel="weight j", ylabel="P(w_j ≠ 0 | y)", title="inclusion probabilities")
right.set(xlabel="weight j", title="posterior means")
left.legend()
right.legend()
fig.tight_layout()

# %% [markdown]
# ```{include} ../_details/spike_slab.md
# ```
