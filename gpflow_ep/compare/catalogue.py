r"""
What ``gpflow-ep compare`` offers, as plain data: the data sets, the models of each task with the
name a reader knows them by, the default models and the hyper-priors. This module imports nothing
(no TensorFlow, GPflow or scikit-learn), so that the command line's ``--help`` is instant; the
models themselves are built in :mod:`.models`, which must offer exactly these names.
"""

from typing import Dict, Tuple

__all__ = ["SKLEARN_SETS", "MODEL_LABELS", "DEFAULT_MODELS", "PRIORS", "model_label"]

#: scikit-learn's bundled sets and their tasks
SKLEARN_SETS: Dict[str, str] = {
    "breast_cancer": "binary",
    "iris": "multiclass",
    "wine": "multiclass",
    "digits": "multiclass",
    "diabetes": "regression",
}

#: task → compare's model name → the model's real name (class and likelihood), as figures label it
MODEL_LABELS: Dict[str, Dict[str, str]] = {
    "binary": {
        "epgpc": "EPGPC (probit)",
        "pep": "PowerEP (probit)",
        "rep": "RelaxedEP (probit)",
        "sepgpc": "SEPGPC (probit)",
        "svgp": "SVGP (probit)",
        "vgp": "VGP (probit)",
        "epgpc-hinge": "EPGPC (hinge)",
        "svgp-hinge": "SVGP (hinge)",
    },
    "multiclass": {
        "bsvm": "SVGP (multi-class hinge)",
        "svgp": "SVGP (RobustMax)",
        "svgp-softmax": "SVGP (Softmax)",
        "vgp": "VGP (RobustMax)",
        "sepmgpc": "SEPMGPC (step)",
    },
    "regression": {
        "gpr": "GPR",
        "sgpr": "SGPR",
        "svgp": "SVGP (Gaussian)",
        "dgpaep": "DGPAEP (2 layers)",
        "spikeslab": "SpikeSlabRegression",
        "epgp-t": "EPGP (Student-t, robust EP)",
        "sepgp-t": "SEPGP (Student-t, robust EP)",
        "svgp-t": "SVGP (Student-t)",
    },
}

#: what a run without ``--models`` trains
DEFAULT_MODELS: Dict[str, Tuple[str, ...]] = {
    "binary": ("epgpc", "svgp", "vgp"),
    "multiclass": ("bsvm", "svgp", "svgp-softmax"),
    "regression": ("gpr", "sgpr", "svgp"),
}

#: the hyper-priors of ``--prior`` (GPML-style): "lognormal" (default) puts LogNormal(0, 1) on the
#: kernel variance and LogNormal(log √D, 1) on every lengthscale, i.e. the start ± a factor e;
#: "none" is type-II maximum likelihood, which lets EP's evidence run away on separable data
PRIORS = ("lognormal", "none")


def model_label(task: str, name: str) -> str:
    """The real name of compare's model ``name`` for ``task``, e.g. ``"SVGP (RobustMax)"`` for multi-class ``svgp``."""
    return MODEL_LABELS[task][name]
