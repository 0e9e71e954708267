"""Optimisers for EP state and the SEP paper's batch learning-rate rule."""

from .ep import EP, EPConvergenceWarning, EPResult
from .sign_adaptive import SignAdaptive

__all__ = ["EP", "EPResult", "EPConvergenceWarning", "SignAdaptive"]
