"""
EP, power EP and relaxed EP on noisy labels (Qi & Guo 2012's synthetic set), one engine.

    python examples/power_and_relaxed_ep.py
"""

import gpflow
import numpy as np

from gpflow_ep.datasets import noisy_mixture
from gpflow_ep.likelihoods import NoisyStep
from gpflow_ep.models import EPGPC, PowerEP, RelaxedEP
from gpflow_ep.optimizers import EP

X, Y, clean = noisy_mixture(200, flip_rate=0.2, seed=0)
X_test, _, Y_test = noisy_mixture(2000, flip_rate=0.0, seed=1)


def kernel():
    return gpflow.kernels.SquaredExponential(lengthscales=1.0)


models = {
    "EP": EPGPC((X, Y), kernel(), NoisyStep(0.2), schedule="sequential"),
    "PEP(0.8)": PowerEP((X, Y), kernel(), NoisyStep(0.2), power=0.8, schedule="sequential"),
    "REP(c=1)": RelaxedEP((X, Y), kernel(), NoisyStep(0.2), penalty=1.0),
}
for name, model in models.items():
    result = EP(criterion="alpha", tol=1e-3, warn=False).minimize(model)  # the paper's R < 1e-3
    p, _ = model.predict_y(X_test)
    error = np.mean((p.numpy() > 0.5) != Y_test)
    line = (
        f"{name:9s} converged={result.converged} sweeps={result.sweeps:3d} skipped={result.num_skipped:4d} "
        f"test error={error:.3f}"
    )
    if model.ep_settings.relaxation is not None:  # relaxed EP: which sites did it relax (b > 0)?
        relaxed = model.sites.relaxation.numpy()[:, 0] > 0
        flipped = f", {np.mean((Y != clean)[relaxed, 0]):.0%} of them flipped labels" if relaxed.any() else ""
        line += f" relaxed sites={relaxed.sum()}{flipped}"
    print(line)
