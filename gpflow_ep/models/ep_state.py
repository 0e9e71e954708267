"""
Where an EP model keeps its EP state: one :class:`EPState` module (``model.ep_state``), saved with the
model but left out of ``gpflow.utilities.print_summary(model)``.

EP state (the sites, q(u) of a sparse model, the diagnostics, the hyper-parameters of the last run)
is not a hyper-parameter: it is written by EP, never by an optimiser, and a model with n points has
O(n) of it. GPflow's ``print_summary(model)`` lists every ``tf.Variable`` it reaches, so a model
holding these variables as attributes shows its three parameters under twenty internal rows. Here
they sit in one :class:`EPState` held through :class:`OutOfSummary`, a mapping that is a
``tf.Module`` whose attributes GPflow's traversal (``gpflow.utilities.leaf_components``, behind
``print_summary``, ``read_values``, ``parameter_dict`` and ``freeze``) does not enter, while
TensorFlow's module flattening enters it as a ``collections.abc.Mapping`` (``tf.nest``), so the state
still is in ``model.variables`` and ``model.submodules``, and checkpoints follow its tracked
attributes (``tf.train.Checkpoint`` and ``tf.saved_model`` save and restore it bit for bit).
``print_summary(model.ep_state)`` (or :meth:`~gpflow_ep.models.ep_base.EPModel.ep_state_summary`)
shows it.
"""

from collections.abc import Mapping

import numpy as np
import tensorflow as tf
from gpflow.config import default_float

from ..ep.sites import SiteParameters
from .diagnostics import EPDiagnostics

__all__ = ["EPState", "OutOfSummary", "ep_state_attribute"]


class EPState(tf.Module):
    """
    The EP state every EP model has, as non-trainable variables: ``sites`` (τ, ν, dual, relaxation;
    :class:`~gpflow_ep.ep.sites.SiteParameters`), ``diagnostics`` (:class:`EPDiagnostics`),
    ``sites_fitted_for`` (every ``Parameter``'s unconstrained value, flattened, at the last full EP
    run that stored its sites) and ``sites_fitted`` (1 once such a run was stored; an int, as GPflow's
    ``print_summary`` formats no booleans). A model adds its own state as further attributes
    (``SEPGPC``: q(u) and the sites' directions).

    :param num_sites: the number of sites.
    :param num_hyperparameters: the length of the flattened ``Parameter`` values.
    """

    def __init__(self, num_sites: int, num_hyperparameters: int, name: str = "ep_state"):
        super().__init__(name=name)
        self.sites = SiteParameters(num_sites)
        self.diagnostics = EPDiagnostics()
        self.sites_fitted_for = tf.Variable(
            np.zeros(num_hyperparameters), dtype=default_float(), trainable=False, name="sites_fitted_for"
        )
        self.sites_fitted = tf.Variable(0, dtype=tf.int32, trainable=False, name="sites_fitted")


class OutOfSummary(tf.Module, Mapping):
    """
    Read-only mapping of names to modules that TensorFlow flattens and checkpoints as part of its
    owner but GPflow's ``print_summary`` skips (module docstring): GPflow's traversal enters lists,
    tuples, dicts and ``tf.Module`` attributes, and this module's one attribute is in its
    ``_TF_MODULE_IGNORED_PROPERTIES``; TensorFlow's ``tf.Module`` flattening of the owner reads it
    as a ``Mapping`` and enters its values.
    """

    _TF_MODULE_IGNORED_PROPERTIES = tf.Module._TF_MODULE_IGNORED_PROPERTIES | frozenset({"modules"})

    def __init__(self, **modules: tf.Module):
        super().__init__(name="out_of_summary")
        self.modules = dict(modules)  # tracked (tf.Module wraps the dict), so checkpoints hold them

    def __getitem__(self, key: str) -> tf.Module:
        return self.modules[key]

    def __iter__(self):
        return iter(self.modules)

    def __len__(self) -> int:
        return len(self.modules)

    # a module compares and hashes by identity, not as a mapping of its contents
    __eq__ = object.__eq__
    __hash__ = object.__hash__


def ep_state_attribute(name: str, doc: str) -> property:
    """A read-only model attribute that is ``model.ep_state.<name>``."""
    return property(lambda model: getattr(model.ep_state, name), doc=doc)
