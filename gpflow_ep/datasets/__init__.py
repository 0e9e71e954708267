"""
Datasets for benchmarks and tests. Nothing is downloaded: data come from the benchmark layout of
``shared/datasets`` (a directory argument), scikit-learn's bundled sets, or synthetic generators.
"""

from .benchmark import Split, available_benchmarks, benchmark_dir, load_benchmark
from .bundled import breast_cancer_split
from .synthetic import noisy_mixture, two_dimensional

__all__ = [
    "Split",
    "load_benchmark",
    "available_benchmarks",
    "benchmark_dir",
    "breast_cancer_split",
    "two_dimensional",
    "noisy_mixture",
]
