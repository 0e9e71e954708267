r"""
One training loop for every model: EP models and GPflow's own SVGP/VGP alike.

    result = gpflow_ep.training.fit(model, (X, Y), batch_size=200, epochs=10)

An epoch is one pass over a fresh permutation of the data in batches of ``batch_size``; the last
batch of an epoch holds the remainder (as in Keras and ``tf.data``), so every point is seen once
per epoch and no batch holds a site twice. Per step, for a minibatch M:

* models with minibatch EP (:class:`~gpflow_ep.models.MinibatchEPModel`: :class:`~gpflow_ep.models.SEPGPC`,
  :class:`~gpflow_ep.models.SEPMGPC`) first refresh the sites of M (the optimiser step
  :class:`~gpflow_ep.optimizers.MinibatchEP`, damped by the model's ``minibatch_damping``),
  then take a gradient step on the minibatch surrogate -F_M at the refreshed q of
  Hernández-Lobato & Hernández-Lobato (2016), "Scalable Gaussian process classification via
  expectation propagation", AISTATS, Sec. 2.3, on the same frame of the batch (kernel matrices and
  chol(K_uu) once per step). With the full batch, ``minibatch_damping=0.5`` and
  :class:`~gpflow_ep.optimizers.SignAdaptive` this is that paper's batch SEP with "inner" updates;
  with minibatches it is its stochastic SEP;
* EP models that hold their data (:class:`~gpflow_ep.models.EPModel` with GPflow's internal-data
  loss: :class:`~gpflow_ep.models.EPGPC` and subclasses, ``SpikeSlabRegression``) follow their
  ``ep_mode``: in ``"nested"`` (the default) every gradient step is on ``training_loss()``, which
  itself runs EP to convergence warm-started from the stored sites, so ``fit`` never calls
  ``run_ep`` (``ep_every`` does not apply and is refused); in ``"alternated"`` the loss uses the
  stored sites and ``fit`` runs EP to convergence (``run_ep``) every ``ep_every`` steps (default
  50, and before the first step), with gradient steps on ``training_loss()`` between;
* any other GPflow model takes the gradient step only: ``training_loss()`` for models that hold
  their data (``VGP``), ``training_loss((X, Y))`` otherwise (``SVGP``).

Only public methods of the models are called.

``strategy=`` a ``tf.distribute`` strategy (build the model and the optimiser under
``strategy.scope()``) splits every batch over the replicas; the step is the same function with or
without one (TensorFlow's default strategy then). Each replica computes its part of the site
refresh from the same q(u); the refreshes are merged (``merge_call``: rows gathered, changes of q(u)
summed) and written once in cross-replica context, so the run gives the same numbers as on one
device. Each replica differentiates F_{M_r}/R (or SVGP's loss / R); the optimiser sums the
gradients, which equals the single-device gradient of F_M when the replicas get equal batch
shares. The refreshes are gathered with ``strategy.gather``/``reduce``, so this holds across
processes too (``MultiWorkerMirroredStrategy``); a worker that stops answering is a
:class:`WorkerFailedError`.

Reliability: array data are validated before anything is compiled; a step whose loss or new
parameters are not finite is undone (the trainable variables and the optimiser's state, as built
before the step, are restored) and counted; ``checkpoint_dir`` saves and resumes the run exactly.

The package, by concern: :mod:`~gpflow_ep.training.data` (the batches and the checks of data
against the model), :mod:`~gpflow_ep.training.step` (the compiled step and its finite guard),
:mod:`~gpflow_ep.training.callbacks` (what ``fit`` does around the step: alternated EP,
checkpoints, monitoring, the progress bar, the report of undone steps; users add their own with
``fit(..., callbacks=[...])``), :mod:`~gpflow_ep.training.loop` (``fit``).

**What the loss reports.** For a sparse EP model the gradient step follows -F_M, whose *value* is
not an evidence (it can read far below zero for binary labels). The loss a step returns — in
``FitResult.losses``, on the progress bar, from ``MinibatchEP().loss_closure`` — is instead the
minibatch estimate of -log Z_EP - log p(θ) on the scale of the full data
(:meth:`~gpflow_ep.models.SEPGPC.minibatch_log_marginal_likelihood`), readable next to SVGP's
-ELBO; its gradient is still F_M's (:meth:`~gpflow_ep.optimizers.MinibatchEP.refreshed_loss`).
"""

from ..progress import ProgressBar
from .callbacks import (
    AlternatedEP,
    Callback,
    CallbackList,
    Checkpointing,
    Monitoring,
    NonFiniteStepReport,
    NonFiniteStepWarning,
    ProgressDisplay,
)
from .checkpoint import TrainingCheckpoint
from .data import make_dataset
from .loop import fit
from .state import FitResult, TrainingState
from .step import StepResult, WorkerFailedError, make_train_step, paper_adadelta

__all__ = [
    "fit",
    "FitResult",
    "NonFiniteStepWarning",
    "WorkerFailedError",
    "ProgressBar",
    "StepResult",
    "make_dataset",
    "make_train_step",
    "paper_adadelta",
    "AlternatedEP",
    "Callback",
    "CallbackList",
    "Checkpointing",
    "Monitoring",
    "NonFiniteStepReport",
    "ProgressDisplay",
    "TrainingCheckpoint",
    "TrainingState",
]
