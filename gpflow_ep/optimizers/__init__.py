"""Optimisers for EP state."""

from .ep import EP, EPConvergenceWarning, EPResult

__all__ = ["EP", "EPResult", "EPConvergenceWarning"]
