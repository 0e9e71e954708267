r"""
The SEP minibatch step of two versions of the package in one process (an A/B comparison): SEPGPC of this
tree, a copy of it (the A/A control), SEPGPC of ``--baseline-src`` (imported under another package name)
and GPflow's SVGP, timed in interleaved rounds on the same synthetic data; per-step medians and per-round
ratios. Results: docs/benchmarks/one_engine.md. Run ``python -m benchmarks.sep_step_ab --baseline-src
/tmp/base [--quick] [--out-dir results/engine]`` after ``git worktree add /tmp/base <commit>``.
"""

import importlib
import inspect
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Dict, Optional

import gpflow
import numpy as np

from gpflow_ep.likelihoods import Probit
from gpflow_ep.models import SEPGPC
from gpflow_ep.training import make_dataset, make_train_step

from .minibatch import MINIBATCH_DAMPING, TimedSteps, interleaved_rounds, make_optimizer, random_subset
from .models import se_ard_kernel
from .report import markdown_header, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, progress_logger
from .stats import markdown_table
from .step_speed import data

log = progress_logger("sep_step_ab")
QUICK_HELP = "n=2000, M=20, B=50, 3 rounds of 5 steps"
BASELINE_PACKAGE = "gpflow_ep_baseline"


def import_baseline(src: str, workdir: Path):
    """
    The ``gpflow_ep`` package of the source tree ``src``, copied into ``workdir`` as
    ``gpflow_ep_baseline`` (its absolute self-imports renamed) so that it imports beside this one.
    """
    target = workdir / BASELINE_PACKAGE
    shutil.copytree(Path(src) / "gpflow_ep", target, ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*.py"):
        text = path.read_text()
        renamed = re.sub(r"\bgpflow_ep\b", BASELINE_PACKAGE, text)
        if renamed != text:
            path.write_text(renamed)
    sys.path.insert(0, str(workdir))
    for module in ("models", "likelihoods", "training"):
        importlib.import_module(f"{BASELINE_PACKAGE}.{module}")
    return sys.modules[BASELINE_PACKAGE]


def _stepper(model, make_step, X, Y, batch_size: int, make_batches=make_dataset) -> TimedSteps:
    """A model's compiled Adam step (``make_step`` of its version) and batch iterator, timed in chunks."""
    optimizer = make_optimizer("adam:0.01")
    if "damping" in inspect.signature(make_step).parameters:  # versions before EPSettings carried it
        step = make_step(model, optimizer, damping=MINIBATCH_DAMPING)
    else:
        step = make_step(model, optimizer)
    return TimedSteps(step, iter(make_batches((X, Y), batch_size, seed=0)))


def _summary(values) -> Dict:
    values = np.asarray(values, dtype=float)
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return dict(median=float(median), q1=float(q1), q3=float(q3), rounds=int(values.size))


def run_ab(baseline_src: Optional[str], baseline_name: str, n: int, M: int, batch_size: int, **timing) -> Dict:
    """Every model's per-step times over ``timing``'s rounds (``rounds``, ``steps``, ``warmup``) and their ratios."""
    D = 8
    X, Y = data(n, D, 2, seed=0)
    Z = random_subset(X, M, seed=1)

    def sep(package, make_batches=make_dataset):
        model = package.models.SEPGPC(se_ard_kernel(D), package.likelihoods.Probit(), Z.copy(), num_data=n)
        return _stepper(model, package.training.make_train_step, X, Y, batch_size, make_batches)

    svgp = gpflow.models.SVGP(se_ard_kernel(D), Probit(), Z.copy(), num_data=n)
    this = sys.modules["gpflow_ep"]
    steppers = {"this": sep(this), "this (copy)": sep(this), "SVGP": _stepper(svgp, make_train_step, X, Y, batch_size)}
    with tempfile.TemporaryDirectory() as workdir:
        if baseline_src:
            baseline = import_baseline(baseline_src, Path(workdir))
            steppers[baseline_name] = sep(baseline, baseline.training.make_dataset)
        for stepper in steppers.values():
            stepper.run(timing["warmup"])
        times = interleaved_rounds(steppers, timing["rounds"], timing["steps"], log)
    ratios = {f"{name} / SVGP": _summary(times[name] / times["SVGP"]) for name in steppers if name != "SVGP"}
    ratios["this / this (copy)"] = _summary(times["this"] / times["this (copy)"])
    if baseline_src:
        ratios[f"this / {baseline_name}"] = _summary(times["this"] / times[baseline_name])
    return dict(
        config=dict(n=n, D=D, M=M, batch_size=batch_size, **timing),
        baseline_src=baseline_src,
        baseline_name=baseline_name if baseline_src else None,
        per_step_ms={name: _summary(1e3 * t) for name, t in times.items()},
        ratios=ratios,
        sep_class=f"{SEPGPC.__module__}.{SEPGPC.__qualname__}",
    )


def ab_markdown(report: Dict) -> str:
    c = report["config"]
    lines = markdown_header("SEP minibatch step: A/B in one process", report)
    lines += [
        f"n = {c['n']}, D = {c['D']}, M = {c['M']}, batch {c['batch_size']}, Adam 0.01; {c['rounds']} rounds of "
        f"{c['steps']} steps per model (alternating order, {c['warmup']} warm-up steps, compilation excluded).",
        "",
    ]
    tables = (
        (("model", "per-step median (ms)", "IQR (ms)"), "per_step_ms", 2),
        (("per-round ratio", "median", "IQR"), "ratios", 3),
    )
    for head, key, d in tables:
        rows = [[name, f"{s['median']:.{d}f}", f"{s['q1']:.{d}f}–{s['q3']:.{d}f}"] for name, s in report[key].items()]
        lines += markdown_table(head, rows) + [""]
    lines += [
        "*this / this (copy)* is the A/A control: two identical models in the same process; its spread is "
        "the resolution of this comparison.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = benchmark_parser("benchmarks.sep_step_ab", __doc__, "results/engine", QUICK_HELP)
    parser.add_argument("--baseline-src", default=None, help="source tree of the baseline version (a git worktree)")
    parser.add_argument("--baseline-name", default="baseline", help="its name in the table")
    parser.add_argument("--n", type=int, default=40000)
    parser.add_argument("--M", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--steps", type=int, default=40)
    args, command = parse_command_line(parser, argv)
    if args.quick:
        args.n, args.M, args.batch_size, args.rounds, args.steps = 2000, 20, 50, 3, 5
    settings = dict(n=args.n, M=args.M, batch_size=args.batch_size, rounds=args.rounds, steps=args.steps)
    run = lambda: run_ab(args.baseline_src, args.baseline_name, **settings, warmup=5 if args.quick else 20)  # noqa: E731
    report = timed_report(command, run)
    stem = "sep_step_ab_quick" if args.quick else "sep_step_ab"
    json_path, md_path = write_report(Path(args.out_dir) / stem, report, ab_markdown(report))
    log(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
