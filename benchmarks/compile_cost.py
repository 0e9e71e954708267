r"""
The compile cost a user pays per EP model: a fresh ``EPGPC``'s first log Z against its compiled EP run.

Every repetition is a fresh Python process (:data:`WORKER`: probit EPGPC, SE kernel with fixed
hyper-parameters, ``gpflow_ep.datasets.two_dimensional``); columns and results in
``docs/benchmarks/one_engine.md``. Run ``python -m benchmarks.compile_cost [--quick] [--out-dir results]``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from .report import markdown_header, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger
from .stats import cell, markdown_table

log = progress_logger("compile_cost")
QUICK_HELP = "--sizes 200 --repeats 1 --further 1"

WORKER = r"""
import json, sys, time
import gpflow, numpy as np, tensorflow as tf
gpflow.config.set_default_float(np.float64)
tf.get_logger().setLevel("ERROR")
from gpflow_ep.compare import make_model
from gpflow_ep.datasets import two_dimensional
import gpflow_ep
n, further = int(sys.argv[1]), int(sys.argv[2])
X, Y = two_dimensional(n, seed=0)

def fresh():
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=[2 ** 0.5] * 2)
    return make_model("epgpc", data=(X, Y), kernel=kernel)  # probit

def seconds(f):
    t0 = time.perf_counter(); out = f(); return time.perf_counter() - t0, out

first_model, _ = seconds(lambda: fresh().training_loss().numpy())
firsts, splits = [], []
for _ in range(further):
    firsts.append(seconds(lambda: fresh().training_loss().numpy())[0])
    m = fresh()
    t_first_run, run = seconds(lambda: m.run_ep())
    sweeps = int(run.sweeps)
    t_lz, _ = seconds(lambda: m.log_marginal_likelihood().numpy())
    compiled = []
    for _ in range(3):
        m.sites.reset()
        compiled.append(seconds(lambda: m.run_ep())[0])
    m.run_ep(max_sweeps=1)  # its own trace
    one = []
    for _ in range(3):
        m.sites.reset()
        one.append(seconds(lambda: m.run_ep(max_sweeps=1))[0])
    t_run, t_one = float(np.median(compiled)), float(np.median(one))
    splits.append(dict(sweeps=sweeps, trace_graph=t_first_run - t_run, first_sweep=t_one, rest=t_run - t_one,
                       compiled_run=t_run, log_z=t_lz))
print(json.dumps(dict(source=gpflow_ep.__file__, first_model=first_model, first_log_z=firsts, splits=splits)))
"""


def run_worker(n: int, further: int) -> Dict:
    """The worker in a fresh process that imports ``gpflow_ep`` from this source tree."""
    src = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = [sys.executable, "-c", WORKER, str(n), str(further)]
    out = subprocess.run(command, capture_output=True, text=True, env=env, cwd=src, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarise(results: List[Dict]) -> Dict:
    """One row of the table: medians over the fresh models of ``results`` (the processes of one version and n)."""
    splits = [s for r in results for s in r["splits"]]
    keys = ("trace_graph", "first_sweep", "rest", "compiled_run", "log_z")
    row = {k: float(np.median([s[k] for s in splits])) for k in keys}
    row["first_model"] = float(np.median([r["first_model"] for r in results]))
    row["first_log_z"] = float(np.median([t for r in results for t in r["first_log_z"]]))
    row.update(sweeps=int(np.median([s["sweeps"] for s in splits])), runs=len(splits))
    row["ratio"] = row["first_log_z"] / row["compiled_run"]
    return row


def markdown(report: Dict) -> str:
    lines = markdown_header("Compile cost of a fresh EPGPC", report)
    lines += [
        "Times in seconds, medians over the fresh models of all repetitions (each repetition a fresh process). "
        "*first model* includes TensorFlow's start-up; *first log Z* is a further fresh model's "
        "`training_loss()`; it splits into *trace + graph* (first `run_ep()` minus the compiled run), the "
        "compiled run's *first sweep* and *rest*, and the evidence (*log Z*). *ratio* = first log Z / "
        "compiled run (target ≤ 2).",
        "",
    ]
    head = ["version", "n", "sweeps", "first model", "first log Z", "trace + graph", "first sweep", "rest"]
    digits = dict(first_model=2, first_log_z=2, trace_graph=2, first_sweep=3, rest=2, compiled_run=2, log_z=2, ratio=2)
    rows = [
        [row["version"], row["n"], row["sweeps"]] + [cell(row[k], d) for k, d in digits.items()] + [row["runs"]]
        for row in report["rows"]
    ]
    return "\n".join(lines + markdown_table(head + ["compiled run", "log Z", "ratio", "models"], rows)) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = benchmark_parser("benchmarks.compile_cost", __doc__, "results", QUICK_HELP)
    parser.add_argument("--sizes", default="1000", help="training sizes n (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per version and n (default 3)")
    parser.add_argument("--further", type=int, default=3, help="further fresh models per process (default 3)")
    args, command = parse_command_line(parser, argv)
    if args.quick:
        args.sizes, args.repeats, args.further = "200", 1, 1

    def run() -> Dict:
        rows = []
        for n in parse_list(args.sizes, int):
            log(f"n={n}: {args.repeats} fresh processes")
            results = [run_worker(n, args.further) for _ in range(args.repeats)]
            rows.append(dict(summarise(results), version="this tree", n=n, raw=results))
        return dict(rows=rows, settings=vars(args))

    report = timed_report(command, run)
    log("wrote {} and {}".format(*write_report(Path(args.out_dir) / "compile_cost", report, markdown(report))))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
