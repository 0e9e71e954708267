r"""
Held-out metrics of any GPflow model (the package's and GPflow's own), as ``gpflow-ep compare``
and the monitor tasks report them:

* binary classification (labels {0, 1}, ``predict_y`` giving p(y = 1 | x*)): the error of the
  ½-threshold rule and the mean negative log predictive density (NLPD) -mean log p(y* | x*);
* multi-class classification (integer labels, ``predict_y`` giving the C class probabilities): the
  error of the most probable class and the NLPD;
* regression: the RMSE of the predictive mean and the NLPD;
* counts (non-negative integers, e.g. a ``Poisson`` likelihood): the RMSE of the predictive mean
  and the NLPD, -mean log P(y* | x*) of the predictive probability mass (so never negative).

The task is read from the likelihood (:func:`infer_task`): a ``gpflow.likelihoods.Gaussian`` is
regression, a ``gpflow.likelihoods.Poisson`` counts, a likelihood with more than one latent function
multi-class, any other binary.
"""

from typing import Dict, Optional

import numpy as np
from gpflow.likelihoods import Gaussian, Poisson

from .validation import check_choice

__all__ = ["TASKS", "infer_task", "held_out_metrics"]

TASKS = ("binary", "multiclass", "regression", "counts")


def infer_task(model) -> str:
    """ "regression", "counts", "multiclass" or "binary" from ``model.likelihood`` (module docstring)."""
    likelihood = getattr(model, "likelihood", None)
    if isinstance(likelihood, Gaussian):
        return "regression"
    if isinstance(likelihood, Poisson):
        return "counts"
    latent = getattr(likelihood, "latent_dim", None) or 1
    return "multiclass" if latent > 1 else "binary"


def held_out_metrics(model, X, Y, task: Optional[str] = None) -> Dict[str, float]:
    """
    ``{"error": …, "nlpd": …}`` (classification) or ``{"rmse": …, "nlpd": …}`` (regression, counts) of
    ``model`` on ``(X, Y)`` (module docstring); ``task`` defaults to :func:`infer_task`.
    """
    task = infer_task(model) if task is None else check_choice(task, "task", TASKS)
    Y = np.asarray(Y)
    mean, _ = model.predict_y(X)
    mean = np.asarray(mean)
    nlpd = float(-np.mean(np.asarray(model.predict_log_density((X, Y)))))
    if task in ("regression", "counts"):
        return {"rmse": float(np.sqrt(np.mean((mean - Y) ** 2))), "nlpd": nlpd}
    if task == "multiclass":
        predicted = np.argmax(mean, axis=1)
        return {"error": float(np.mean(predicted != Y[:, 0].astype(np.int64))), "nlpd": nlpd}
    return {"error": float(np.mean((mean[:, :1] > 0.5) != (Y[:, :1] > 0.5))), "nlpd": nlpd}
