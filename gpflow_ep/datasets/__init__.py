"""
Data sets of ``gpflow-ep compare`` and the documentation's tutorials. Nothing is downloaded: the data
come from scikit-learn's bundled sets or from seeded synthetic generators. (The loaders of the
benchmarks' data live with the benchmarks, in the repository's ``benchmarks/data.py``.)
"""

from .bundled import breast_cancer_split, sklearn_multiclass_split
from .split import Split, standardise
from .synthetic import noisy_mixture, spike_slab_problem, two_dimensional

__all__ = [
    "Split",
    "standardise",
    "breast_cancer_split",
    "sklearn_multiclass_split",
    "two_dimensional",
    "noisy_mixture",
    "spike_slab_problem",
]
