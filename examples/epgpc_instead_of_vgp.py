"""
Put EPGPC where VGP stood: same kernel, same likelihood, same optimiser, one table.

    python examples/epgpc_instead_of_vgp.py
"""

import gpflow
import numpy as np

from gpflow_ep.datasets import breast_cancer_split
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import EPGPC

split = breast_cancer_split()
data = (split.X_train, split.Y_train)
D = split.X_train.shape[1]

models = {
    "VGP": gpflow.models.VGP(data, gpflow.kernels.SquaredExponential(lengthscales=[np.sqrt(D)] * D), Probit()),
    "EPGPC": EPGPC(data, gpflow.kernels.SquaredExponential(lengthscales=[np.sqrt(D)] * D), Probit()),
}
print("| model | test error | test NLPD |\n|---|---|---|")
for name, model in models.items():
    gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables, options=dict(maxiter=200))
    p, _ = model.predict_y(split.X_test)
    error = np.mean((p.numpy() > 0.5) != split.Y_test)
    nlpd = -np.mean(model.predict_log_density((split.X_test, split.Y_test)))
    print(f"| {name} | {error:.4f} | {nlpd:.4f} |")

gpflow.utilities.print_summary(models["EPGPC"])  # the parameters, as for VGP
gpflow.utilities.print_summary(models["EPGPC"].ep_state)  # the EP state: sites and diagnostics, not trainable
