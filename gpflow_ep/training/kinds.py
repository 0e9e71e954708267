"""
Which training path a model takes (the module docstring of :mod:`gpflow_ep.training`), decided from
the public classes it derives from and their interfaces, never from private attributes.
"""

from gpflow.models import InternalDataTrainingLossMixin

from ..models import EPModel, MinibatchEPModel

__all__ = ["holds_data", "needs_site_index", "runs_batch_ep", "uses_minibatch_ep"]


def uses_minibatch_ep(model) -> bool:
    """A model whose sites are refreshed one minibatch at a time (``SEPGPC``, ``SEPMGPC``)."""
    return isinstance(model, MinibatchEPModel)


def needs_site_index(model) -> bool:
    """A minibatch-EP model whose batches are ``(X, Y, index)`` (per-point sites); tied sites take ``(X, Y)``."""
    return uses_minibatch_ep(model) and model.batches_carry_index


def holds_data(model) -> bool:
    """A model with GPflow's internal-data loss (``VGP``, ``EPGPC``): ``training_loss()`` takes no data."""
    return isinstance(model, InternalDataTrainingLossMixin)


def runs_batch_ep(model) -> bool:
    """An EP model that holds its data: its EP runs over all of it (``run_ep()``, or inside its loss)."""
    return isinstance(model, EPModel) and holds_data(model)
