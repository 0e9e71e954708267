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
# # Extending the engine: a likelihood's tilted moments, a schedule, an algebra
#
# Three things can be added to the engine without touching it: closed-form tilted moments for a
# likelihood, a schedule (the loop that drives the site updates), and a posterior algebra (what a new
# kind of model contributes). Each is registered or passed in; the cavities, site updates, damping,
# clipping, skip counts and convergence tests stay the engine's.
#
# ## A likelihood's tilted moments
#
# For a cavity N(f; m, v) and a likelihood term p(y | f)^α, EP needs log Z and its first two
# derivatives in m, where Z(m, v) = ∫ p(y | f)^α N(f; m, v) df; the tilted mean and variance follow as
# m + v ∂log Z/∂m and v + v² ∂²log Z/∂m² (Rasmussen & Williams, 2006, eq. 3.58; Seeger, 2005). Take a
# probit with label noise, p(y = 1 | f) = ε + (1 − 2ε)Φ(f) with labels in {0, 1}. At α = 1, with
# s = 2y − 1 and z = s m / √(1 + v), the integral is closed form (R&W eq. 3.82 for the probit part):
#
# $$ Z = ε + (1 − 2ε)\,Φ(z), \qquad \frac{∂\log Z}{∂m} = \frac{(1 − 2ε)\,φ(z)\,s}{Z\sqrt{1 + v}}, \qquad
#    \frac{∂^2\log Z}{∂m^2} = -\frac{(1 − 2ε)\,φ(z)\,z}{Z\,(1 + v)} - \Big(\frac{∂\log Z}{∂m}\Big)^2. $$
#
# The likelihood is an ordinary GPflow `ScalarLikelihood`; its closed form is registered with
# `tilted_moments.register`, next to its own code. Other powers fall back to quadrature.

# %%
import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ep.ep import quadrature_tilted_moments, tilted_moments


def normal_cdf(z):
    return 0.5 * (1 + tf.math.erf(z / np.sqrt(2.0)))


def normal_pdf(z):
    return tf.exp(-0.5 * z**2) / np.sqrt(2 * np.pi)


class NoisyProbit(gpflow.likelihoods.ScalarLikelihood):
    """p(y = 1 | f) = ε + (1 − 2ε) Φ(f), labels y ∈ {0, 1}."""

    def __init__(self, epsilon: float = 0.05, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def _p_one(self, F):
        return self.epsilon + (1 - 2 * self.epsilon) * normal_cdf(F)

    def _scalar_log_prob(self, X, F, Y):
        p = self._p_one(F)
        return tf.math.log(tf.where(Y > 0.5, p, 1 - p))

    def _conditional_mean(self, X, F):
        return self._p_one(F)

    def _conditional_variance(self, X, F):
        p = self._p_one(F)
        return p * (1 - p)


@tilted_moments.register(NoisyProbit)
def _noisy_probit_tilted(likelihood, X, Y, cavity_mean, cavity_var, power):
    if power != 1.0:  # no closed form: the engine's adaptive quadrature
        return quadrature_tilted_moments(likelihood, X, Y, cavity_mean, cavity_var, power)
    s = 2 * Y - 1
    root = tf.sqrt(1 + cavity_var)
    z = s * cavity_mean / root
    scale = 1 - 2 * likelihood.epsilon
    Z = likelihood.epsilon + scale * normal_cdf(z)
    dlog_z = scale * normal_pdf(z) * s / (Z * root)
    d2log_z = -scale * normal_pdf(z) * z / (Z * (1 + cavity_var)) - dlog_z**2
    return tf.math.log(Z), dlog_z, d2log_z


# %% [markdown]
# Check the closed form against the engine's adaptive quadrature of the same likelihood at a few
# cavities (both labels, small and large variances), relative to each quantity's scale:

# %%
likelihood = NoisyProbit(0.05)
Y = np.array([[1.0], [0.0], [1.0], [0.0]])
m = np.array([[0.3], [-2.0], [4.0], [1.0]])
v = np.array([[0.1], [1.0], [10.0], [100.0]])
closed = tilted_moments(likelihood, None, Y, m, v, 1.0)
numeric = quadrature_tilted_moments(likelihood, None, Y, m, v, 1.0)
for name, a, b in zip(("log Z", "dlog Z/dm", "d2log Z/dm2"), closed, numeric):
    print(f"{name:12s} largest relative difference {np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)):.1e}")

# %% [markdown]
# The likelihood now works in every EP model, e.g. full-GP EP classification:

# %%
from gpflow_ep.datasets import two_dimensional
from gpflow_ep.models import EPGPC

X, Y = two_dimensional(100, seed=0)
model = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), NoisyProbit(0.05))
print(model.run_ep())

# %% [markdown]
# ## A schedule
#
# A schedule is a {class}`~gpflow_ep.ep.Schedule`: `run(algebra, factor, precision, natural_mean,
# settings)` drives site updates from warm-start sites until convergence and returns an `EPRun`.
# Registered under a name, it is chosen like the built-in ones with `schedule=` (every model passes its
# options through {class}`~gpflow_ep.ep.EPSettings`). The built-ins are `parallel`, `sequential`,
# `double_loop` and `convergent` (one double loop, the second with the box constraints of Hernández-Lobato
# & Hernández-Lobato, 2011) and `robust` (parallel EP falling back to it). A new schedule may
# reuse the engine's steps (`cavity_distribution`, `propose_sites`, `accept_proposal`); the smallest
# one delegates, here to the parallel schedule, resumed with half the damping while it has not
# converged. Schedules run inside `tf.function` (the models compile their EP runs), so a branch on a
# tensor is a `tf.cond`:

# %%
from gpflow_ep.ep import Schedule, get_schedule, register_schedule


class RestartingParallel(Schedule):
    """Parallel EP; while it has not converged, resume from its last sites with half the damping (3 times)."""

    def run(self, algebra, factor, precision, natural_mean, settings):
        parallel = get_schedule("parallel")
        settings = settings.updated(schedule="parallel")
        run = parallel.run(algebra, factor, precision, natural_mean, settings)
        for halvings in (1, 2, 3):  # schedules run inside tf.function: branch with tf.cond, not Python's if
            resumed = settings.updated(damping=settings.damping / 2**halvings)
            run = tf.cond(
                run.converged,
                lambda run=run: run,
                lambda run=run, resumed=resumed: parallel.run(
                    algebra, factor, run.precision, run.natural_mean, resumed
                ),
            )
        return run


register_schedule("restarting", RestartingParallel())
model = EPGPC((X, Y), gpflow.kernels.SquaredExponential(), NoisyProbit(0.05), schedule="restarting")
print(model.run_ep())

# %% [markdown]
# ## A posterior algebra
#
# The algebra is the one model-specific part: for site natural parameters (τ, ν) on site variables
# h_i = w_iᵀx + o_i it returns the marginals of all h_i under q and whether q is proper
# (`marginals`), and, for schedules that visit one site at a time, q itself (`joint`) and its rank-one
# update after a site change (`update_joint`, the Sherman–Morrison step of Minka, 2001). The convergent
# double loop also needs `log_normaliser`, log ∫ p₀ Π t̃_i. The package's algebras are
# {class}`~gpflow_ep.ep.GPAlgebra` (full GP, with the stable B = I + A K A factorisation of Rasmussen &
# Williams, 2006, Sec. 3.6.3, and negative sites as a Cholesky downdate),
# {class}`~gpflow_ep.ep.WhitenedAlgebra` (inducing points, whitened; SEPGPC, SEPMGPC per class) and
# {class}`~gpflow_ep.ep.LinearGaussianAlgebra` (a Gaussian prior on weights with linear sites; the
# spike-and-slab model). A new model implements {class}`~gpflow_ep.ep.SiteAlgebra` and passes it,
# with its factors ({class}`~gpflow_ep.ep.LikelihoodFactor` for any likelihood, or its own
# {class}`~gpflow_ep.ep.SiteFactor`), to `gpflow_ep.ep.run_ep`; its evidence is the engine's EP energy
# (`gpflow_ep.ep.energy`). `SpikeSlabRegression` is a worked example: a linear-Gaussian algebra
# and its own spike-and-slab prior factors, with every schedule (R-EP and the convergent PC-EP) taken
# from the engine unchanged.
