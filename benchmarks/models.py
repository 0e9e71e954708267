"""
What the benchmarks do with a model (built by the package's one factory, :func:`gpflow_ep.compare.make_model`):
:func:`ep_fit` (EP from its current sites), :class:`ModelSlot` (one model reused across data sets of one shape) and
:func:`evaluate` (test error and NLPD); and :func:`fixed_noisy_step`, a likelihood of the EP benchmarks.
"""

import time
from typing import Callable, Dict, Mapping, Optional

import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ep.likelihoods import NoisyStep
from gpflow_ep.models import EPGP
from gpflow_ep.optimizers import EP

from .stats import finite_or_none

__all__ = ["fixed_noisy_step", "ep_fit", "ModelSlot", "evaluate"]


def fixed_noisy_step(eps: float) -> NoisyStep:
    """``NoisyStep(eps)`` with eps not trained."""
    likelihood = NoisyStep(eps)
    gpflow.set_trainable(likelihood.epsilon, False)
    return likelihood


def ep_fit(model) -> Dict:
    """Run EP from the model's current sites (``gpflow_ep.optimizers.EP``); the outcome as plain numbers."""
    start = time.perf_counter()
    res = EP(warn=False).minimize(model)
    elapsed = time.perf_counter() - start
    tau, nu = (v.numpy() for v in model.sites.read())
    return {
        "converged": bool(res.converged),
        "sweeps": int(res.sweeps),
        "final_R": finite_or_none(res.max_change),
        "num_skipped": int(res.num_skipped),
        "finite": bool(np.all(np.isfinite(tau)) and np.all(np.isfinite(nu))),
        "R_history": [float(f"{h:.4g}") for h in res.history],
        "fit_time_s": elapsed,
    }


def _attribute(obj, path: str):
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


class ModelSlot:
    r"""
    One model reused across data sets of one shape: the data live in non-trainable variables :attr:`X`, :attr:`Y`
    (also the model's ``data`` when ``holds_data``) and :meth:`load` resets every variable of the model to its
    value at construction, so results equal a fresh model's while compiled functions are traced once per slot.
    """

    def __init__(self, model, X, Y, *, holds_data: bool = True, spec: Optional[Dict] = None):
        dtype = gpflow.config.default_float()
        self.X = tf.Variable(np.asarray(X, float), trainable=False, dtype=dtype, name="X")
        self.Y = tf.Variable(np.asarray(Y, float), trainable=False, dtype=dtype, name="Y")
        if holds_data:
            model.data = (self.X, self.Y)
        self.model, self.spec, self.shape = model, spec, np.shape(X)
        self.initial = [(v, v.numpy().copy()) for v in model.variables]  # the variables themselves, not their order
        self._scipy = None

    def load(self, X, Y, values: Optional[Mapping] = None):
        """The model, reset, with (X, Y) loaded and ``values`` (``{"kernel.lengthscales": 2.0, ...}``) assigned."""
        for variable, value in self.initial:
            variable.assign(value)
        self.X.assign(np.asarray(X, float))
        self.Y.assign(np.asarray(Y, float))
        for path, value in (values or {}).items():
            _attribute(self.model, path).assign(value)
        return self.model

    def minimize(self, loss: Callable, maxiter: int, **kwargs):
        """``gpflow.optimizers.Scipy().minimize`` on the model's trainable variables (one Scipy per slot)."""
        if self._scipy is None:
            self._scipy = gpflow.optimizers.Scipy()  # caches the compiled loss and gradient
        options = dict(maxiter=int(maxiter))
        return self._scipy.minimize(loss, self.model.trainable_variables, options=options, **kwargs)


def evaluate(model, X, Y, *, dual: bool = False, chunk: Optional[int] = None) -> Dict:
    r"""
    Test error (sign(E[f*]) ≠ y, Y in {0, 1}) and NLPD (−mean ``likelihood.predict_log_density``) of ``model`` in
    its stored state: EP models predict from their sites through ``posterior()``, others through ``predict_f``.

    :param dual: also ``error_dual``, ``nlpd_dual`` from the mean Σ_j dual_j k(x*, x_j) (``predict_with="dual"``).
    :param chunk: predict at most this many points at a time.
    :return: the errors and NLPDs, ``mean_finite`` (every mean finite) and ``finite`` (also every log density).
    """
    X, Y = np.asarray(X, float), np.asarray(Y, float)
    n = X.shape[0]
    chunk = max(int(chunk or n), 1)
    ep_model = isinstance(model, EPGP)
    predict_f = model.posterior().predict_f if ep_model else model.predict_f
    previous = getattr(model, "predict_with", None)
    out, mean_finite, finite = {}, True, True
    try:
        for mode in ("sites", "dual") if dual else ("sites",):
            if ep_model:
                model.predict_with = mode
            wrong = lpd = 0.0
            for start in range(0, n, chunk):
                Xc, Yc = X[start : start + chunk], Y[start : start + chunk]
                mu, var = predict_f(Xc)
                log_density = model.likelihood.predict_log_density(Xc, mu, var, Yc).numpy()
                mu = mu.numpy()
                mean_finite &= bool(np.all(np.isfinite(mu)))
                finite &= bool(np.all(np.isfinite(mu)) and np.all(np.isfinite(log_density)))
                wrong += float(np.sum((mu > 0) != (Yc > 0.5)))
                lpd += float(np.sum(log_density))
            suffix = "_dual" if mode == "dual" else ""
            out.update({f"error{suffix}": wrong / n, f"nlpd{suffix}": -lpd / n})
    finally:
        if ep_model:
            model.predict_with = previous
    return dict(out, mean_finite=mean_finite, finite=finite)
