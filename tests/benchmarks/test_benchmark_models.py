"""Models of ``benchmarks/models.py``: a reused model slot equals a fresh model; evaluation."""

import gpflow
import numpy as np
import pytest

from benchmarks import models
from gpflow_ep.compare import make_kernel
from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC


def test_model_slot_equals_a_fresh_model():
    """Reusing a model on a second data set (reset + reload) gives the fresh model's EP fixed point."""
    X1, Y1 = two_dimensional(30, seed=1)
    X2, Y2 = two_dimensional(30, seed=2)
    slot = models.ModelSlot(EPGPC((X1, Y1), make_kernel(2), Probit()), X1, Y1)
    slot.model.kernel.variance.assign(3.0)  # a change that load must undo
    slot.model.run_ep()
    model = slot.load(X2, Y2, {"kernel.lengthscales": [1.0, 2.0]})
    np.testing.assert_array_equal(model.sites.precision.numpy(), 0.0)
    model.run_ep()
    fresh = EPGPC((X2, Y2), gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=[1.0, 2.0]), Probit())
    fresh.run_ep()
    np.testing.assert_allclose(model.sites.precision.numpy(), fresh.sites.precision.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        model.sites.natural_mean.numpy(), fresh.sites.natural_mean.numpy(), rtol=1e-10, atol=1e-12
    )

    ev = models.evaluate(model, X1, Y1, dual=True, chunk=7)
    whole = models.evaluate(model, X1, Y1)
    assert ev["error"] == pytest.approx(whole["error"]) and ev["nlpd"] == pytest.approx(whole["nlpd"])
    assert ev["finite"] and ev["mean_finite"] and 0.0 <= ev["error_dual"] <= 1.0
    assert model.predict_with == "sites"
