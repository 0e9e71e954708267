"""Reproductions of the papers' experiments (``gpflow-ep reproduce <paper>``)."""
