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
# # EP for any GPflow likelihood
#
# The EP engine needs one thing from a likelihood: the tilted moments, log Z and its first two
# derivatives in the cavity mean m, of Z(m, v) = ∫ p(y | f)^α N(f; m, v) df (Minka, 2001; Rasmussen &
# Williams, 2006, eqs. 3.56–3.58). Likelihoods of this package register closed forms; every other
# GPflow `ScalarLikelihood` (logistic `Bernoulli`, `StudentT`, `Poisson`, ...) gets them by adaptive
# quadrature (`gpflow_ep.ep.tilted_moments`), so it works in every EP model unchanged. This page does
# robust regression with GPflow's `StudentT` in `EPGP` (full-GP EP for any likelihood; EP with a
# non-log-concave likelihood, run with the damped fractional updates of `robust_settings()`, after
# Jylänki, Vanhatalo & Vehtari, 2011) and compares it with GPflow's `GPR` on data with outliers.
# The reference page for `EPGP`, `SEPGP` and the robust setting is [EPGP and SEPGP](epgp).

# %%
import gpflow
import matplotlib.pyplot as plt
import numpy as np

from gpflow_ep.ep import robust_settings, tilted_moments
from gpflow_ep.models import EPGP

rng = np.random.default_rng(1)
X = np.sort(rng.uniform(0, 10, size=(60, 1)), axis=0)
Y = np.sin(X) + 0.1 * rng.normal(size=X.shape)
outliers = rng.choice(len(X), size=6, replace=False)
Y[outliers] += rng.choice([-3.0, 3.0], size=(6, 1))  # 10 % gross outliers

# %% [markdown]
# The tilted moments the engine will use, here for the Student-t at one cavity, checked against a
# direct quadrature of the integral:

# %%
student = gpflow.likelihoods.StudentT(scale=0.1, df=3.0)
m, v, y = np.array([[0.2]]), np.array([[0.5]]), np.array([[1.5]])
log_Z, dlogZ, d2logZ = (float(a) for a in tilted_moments(student, None, y, m, v, 1.0))
f = np.linspace(-12, 12, 200001)
integrand = (
    np.exp(student.log_prob(None, f[:, None], np.full((len(f), 1), 1.5)).numpy().ravel())
    * np.exp(-0.5 * (f - 0.2) ** 2 / 0.5)
    / np.sqrt(2 * np.pi * 0.5)
)
print(f"log Z by the engine {log_Z:.10f}, by the trapezoidal rule on a fine grid {np.log(np.trapz(integrand, f)):.10f}")

# %%
ep = EPGP(
    (X, Y), gpflow.kernels.SquaredExponential(), gpflow.likelihoods.StudentT(scale=0.1, df=3.0), **robust_settings()
)
gpr = gpflow.models.GPR((X, Y), gpflow.kernels.SquaredExponential())
for model in (ep, gpr):
    gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables, options=dict(maxiter=50))
print(ep.ep_diagnostics)

X_test = np.linspace(-0.5, 10.5, 200)[:, None]
fig, ax = plt.subplots(figsize=(8, 3.6))
for name, model, colour in (("EPGP (Student-t)", ep, "C0"), ("GPR (Gaussian)", gpr, "C1")):
    mean, var = (np.asarray(a).ravel() for a in model.predict_f(X_test))
    ax.plot(X_test, mean, colour, label=name)
    ax.fill_between(X_test.ravel(), mean - 2 * np.sqrt(var), mean + 2 * np.sqrt(var), color=colour, alpha=0.2)
ax.plot(X, Y, "k.", ms=4)
ax.plot(X[outliers], Y[outliers], "rx", label="outliers")
ax.plot(X_test, np.sin(X_test), "k:", lw=1, label="sin(x)")
ax.set(ylim=(-4.5, 4.5), title="latent mean ± 2 sd")
ax.legend(ncol=2, fontsize=8)
fig.tight_layout()

# %% [markdown]
# To give your own likelihood closed-form moments instead, register them next to it; see
# [extending the engine](../engine/extending).
