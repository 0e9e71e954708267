"""
Watch EP train in TensorBoard: SEPGPC (minibatch EP) and SVGP side by side, each with its
held-out error and NLPD, SEPGPC with its EP diagnostics and site histograms.

    python examples/tensorboard_monitoring.py [LOG_DIR]     # default runs/tensorboard_example
    tensorboard --logdir runs/tensorboard_example
"""

import sys

import gpflow
import numpy as np

from gpflow_ep.datasets import two_dimensional
from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import SEPGPC
from gpflow_ep.monitor import ep_monitor
from gpflow_ep.training import fit

log_dir = sys.argv[1] if len(sys.argv) > 1 else "runs/tensorboard_example"
X, Y = two_dimensional(4000, seed=0)
X_test, Y_test = two_dimensional(1000, seed=1)
Z = X[np.random.default_rng(0).choice(len(X), 50, replace=False)]

for name, cls in [("SEPGPC", SEPGPC), ("SVGP", gpflow.models.SVGP)]:
    model = cls(gpflow.kernels.SquaredExponential(), Probit(), Z.copy(), num_data=len(X))
    # every 20 steps: EP diagnostics with log Z_EP on all the data (SEPGPC), test/… and train/… error
    # and NLPD, the parameters
    monitor = ep_monitor(f"{log_dir}/{name}", model, test_data=(X_test, Y_test), train_data=(X, Y), period=20)
    result = fit(model, (X, Y), batch_size=100, epochs=3, monitor=monitor)
    print(f"{name}: {result.steps} steps in {result.seconds:.1f} s; wrote {log_dir}/{name}")
print(f"tensorboard --logdir {log_dir}")
