"""
Benchmarks and paper reproductions of ``gpflow_ep`` (not part of the installed package).

Run each from the repository root, after ``pip install -e ".[bench]"``, as ``python -m benchmarks.<name>
[--quick] [--out-dir DIR]`` (or ``gpflow-ep bench <name>``); each writes JSON and Markdown, shown with the commands
in docs/benchmarks/. The modules of :data:`HELPERS` hold what the benchmarks share.
"""

#: the modules of this folder that are shared helpers, not benchmarks (``gpflow-ep bench`` leaves them out)
HELPERS = ("claims", "minibatch", "models", "report", "runner", "stats")
