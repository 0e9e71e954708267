"""Benchmarks of gpflow_ep (run with ``python -m gpflow_ep.bench.<name>``)."""
