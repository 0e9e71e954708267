"""
Benchmarks and paper reproductions of ``gpflow_ep`` (not part of the installed package).

Run each from the repository root, after ``pip install -e ".[bench]"``, as
``python -m benchmarks.<name> [--quick] [--out-dir DIR]`` (or ``gpflow-ep bench <name>``; ``gpflow-ep bench``
lists them, ``--help`` gives each one's options). Each writes its results as JSON and Markdown; the commands
and tables are in docs/benchmarks/. The modules of :data:`HELPERS` are not benchmarks: they hold what the
benchmarks share (outputs, command lines and the runner of data sets × splits, statistics, claims, models,
minibatch training).
"""

#: the modules of this folder that are shared helpers, not benchmarks (``gpflow-ep bench`` leaves them out)
HELPERS = ("claims", "minibatch", "models", "report", "runner", "stats")
