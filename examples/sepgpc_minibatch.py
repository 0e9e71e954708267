"""
SEPGPC and SVGP trained by the same minibatch loop; optionally on several devices.

    python examples/sepgpc_minibatch.py
"""

import gpflow
import numpy as np

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import SEPGPC
from gpflow_ep.training import fit, paper_adadelta

X, Y = two_dimensional(20000, seed=0)
X_test, Y_test = two_dimensional(5000, seed=1)
Z = X[np.random.default_rng(0).choice(len(X), 100, replace=False)]

for name, cls in [("SEPGPC", SEPGPC), ("SVGP", gpflow.models.SVGP)]:
    model = cls(gpflow.kernels.SquaredExponential(), Probit(), Z.copy(), num_data=len(X))
    result = fit(model, (X, Y), batch_size=200, epochs=2, optimizer=paper_adadelta())
    p, _ = model.predict_y(X_test)
    nlpd = -np.mean(model.predict_log_density((X_test, Y_test)))
    print(
        f"{name}: {result.steps} steps in {result.seconds:.1f} s, test error "
        f"{np.mean((p.numpy() > 0.5) != Y_test):.4f}, test NLPD {nlpd:.4f}"
    )
