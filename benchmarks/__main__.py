"""``python -m benchmarks``: the benchmarks, a line on each."""

from . import BENCHMARKS

if __name__ == "__main__":
    print("python -m benchmarks.NAME [--quick] [--out-dir DIR] (NAME --help for its options):")
    width = max(map(len, BENCHMARKS))
    for name, description in BENCHMARKS.items():
        print(f"  {name:<{width}}  {description}")
