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
# # Deep GPs with approximate EP: DGPAEP
#
# `DGPAEP` is the deep GP of Bui et al. (2016): every layer is a sparse (FITC) GP, the N likelihood
# factors of each layer are tied into one factor (stochastic/approximate EP), and the marginal
# likelihood is approximated by propagating Gaussian moments through the layers (their Sec. 3). It
# trains with `fit` and Adam on minibatches, as GPflux's `DeepGP` does. This page fits a 2-layer model
# to a 1-D step function, which a single stationary GP smooths over, and draws the predictive band of
# each layer's output.

# %%
import gpflow
import matplotlib.pyplot as plt
import numpy as np
from gpflow.keras import tf_keras

from gpflow_ep.models import DGPAEP
from gpflow_ep.training import fit

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(-3, 3, size=(150, 1)), axis=0)
Y = np.where(X < 0, -1.0, 1.0) + 0.05 * rng.normal(size=X.shape)
Y = (Y - Y.mean()) / Y.std()  # standardised, as the paper does

# %%
dgp = DGPAEP.from_data(X, Y, widths=[1, 1, 1], num_inducing=20)  # input 1-D, one hidden 1-D layer, output
result = fit(dgp, (X, Y), batch_size=50, iterations=600, optimizer=tf_keras.optimizers.Adam(0.01), progress=False)
print(result)
gpr = gpflow.models.GPR((X, Y), gpflow.kernels.SquaredExponential())
gpflow.optimizers.Scipy().minimize(gpr.training_loss, gpr.trainable_variables, options=dict(maxiter=100))

X_test = np.linspace(-3.5, 3.5, 200)[:, None]
Y_test = np.where(X_test < 0, -1.0, 1.0)
Y_test = (Y_test - np.where(X < 0, -1.0, 1.0).mean()) / np.where(X < 0, -1.0, 1.0).std()
for name, model in {"DGPAEP (2 layers)": dgp, "GPR": gpr}.items():
    print(f"{name}: mean test log density {np.mean(model.predict_log_density((X_test, Y_test))):.3f}")

# %% [markdown]
# Left: the predictive mean ± 2 standard deviations (one moment-matched Gaussian, noise included) of
# the deep GP and of GPflow's GPR. Right: the hidden layer's output h₁(x), which warps the input so that
# the last layer sees two plateaus.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
for name, model, colour in (("DGPAEP", dgp, "C0"), ("GPR", gpr, "C1")):
    mean, var = (np.asarray(a).ravel() for a in model.predict_y(X_test))
    left.plot(X_test, mean, colour, label=name)
    left.fill_between(X_test.ravel(), mean - 2 * np.sqrt(var), mean + 2 * np.sqrt(var), color=colour, alpha=0.2)
left.plot(X, Y, "k.", ms=3)
left.set(title="predictive mean ± 2 sd", xlabel="x")
left.legend()
hidden_mean, hidden_var = (np.asarray(a).ravel() for a in dgp.predict_layers(X_test)[0])
right.plot(X_test, hidden_mean)
right.fill_between(
    X_test.ravel(), hidden_mean - 2 * np.sqrt(hidden_var), hidden_mean + 2 * np.sqrt(hidden_var), alpha=0.2
)
right.set(title="hidden layer h₁(x)", xlabel="x")
fig.tight_layout()

# %% [markdown]
# ```{include} ../_details/dgpaep.md
# ```
