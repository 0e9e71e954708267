"""
The ``gpflow-ep`` command line (also ``python -m gpflow_ep``).

    gpflow-ep compare [--dataset NAME | --csv FILE --target COLUMN] [--models a,b,c] [--json FILE]
                      [--log-dir DIR] [--plot PNG] ...
    gpflow-ep bench [NAME [ARGS ...]]      # the repository's benchmarks/, from the repository root
    gpflow-ep --version

Errors a user can cause (unknown dataset or model, a bad CSV, a bad split) are printed as one line
``gpflow-ep: error: ...`` on stderr with exit status 2, like argparse's own usage errors.
"""

import argparse
import importlib
import os
import pkgutil
import sys
from typing import List, Optional

from . import __version__
from .compare import DEFAULT_MODELS, MODELS, PRIORS, SKLEARN_SETS, format_table, run_compare, write_json, write_results

PROG = "gpflow-ep"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text}")
    return value


def _model_help() -> str:
    return "; ".join(
        f"{task}: {', '.join(names)} (default {','.join(DEFAULT_MODELS[task])})" for task, names in MODELS.items()
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gpflow-ep`` and its subcommands."""
    parser = argparse.ArgumentParser(prog=PROG, description="Expectation propagation for GPflow 2.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    compare = commands.add_parser(
        "compare",
        help="train EP models against GPflow's SVGP/VGP on one split and print a table",
        description=(
            "Train the package's models and GPflow's on one train/test split (SE-ARD kernel, the same "
            "inducing inputs and hyper-priors, L-BFGS-B to each model's own convergence) and print test "
            "error or RMSE, test NLPD, training time, the objective, convergence and the learned kernel. "
            "Without arguments: scikit-learn's breast cancer (398 training points), epgpc, svgp and vgp; "
            "under a minute on two cores."
        ),
    )
    source = compare.add_argument_group("data (one of)")
    source.add_argument(
        "--dataset",
        metavar="NAME",
        default=None,
        help=f"scikit-learn's bundled {', '.join(SKLEARN_SETS)}, or a data set of the benchmark layout "
        "(binary/, multiclass/ or regression/ of --data-dir), e.g. Pima; default breast_cancer",
    )
    source.add_argument("--csv", metavar="FILE", default=None, help="a CSV file with a header row")
    source.add_argument("--target", metavar="COLUMN", default=None, help="the CSV column to predict")
    source.add_argument(
        "--task",
        choices=("binary", "multiclass", "regression"),
        default=None,
        help="the CSV target's task (default: 2 integer values binary, 3-20 multiclass, else regression)",
    )
    compare.add_argument("--split", metavar="K", type=int, default=0, help="split index or seed (default 0)")
    compare.add_argument("--test-fraction", type=float, default=0.3, help="test part of a seeded split (default 0.3)")
    compare.add_argument("--max-train", type=_positive_int, default=None, help="subsample the training part")
    compare.add_argument(
        "--data-dir",
        metavar="PATH",
        default=None,
        help="benchmark directory (default: $GPFLOW_EP_DATA, then ../shared/datasets)",
    )
    compare.add_argument("--models", default=None, help=f"comma-separated, by task: {_model_help()}")
    compare.add_argument("--num-inducing", type=_positive_int, default=50, help="inducing inputs (default 50)")
    compare.add_argument("--maxiter", type=_positive_int, default=1000, help="L-BFGS-B cap per model (default 1000)")
    compare.add_argument(
        "--prior",
        choices=PRIORS,
        default="lognormal",
        help="hyper-priors: lognormal (default; LogNormal(0, 1) on the kernel variance, LogNormal(log √D, 1) "
        "on each lengthscale) or none (type-II maximum likelihood)",
    )
    compare.add_argument("--seed", type=int, default=0, help="seed of the k-means inducing inputs (default 0)")
    compare.add_argument("--json", metavar="FILE", default=None, help="write one JSON record per model")
    compare.add_argument("--out", metavar="PREFIX", default=None, help="write PREFIX.json and PREFIX.md")
    compare.add_argument("--log-dir", metavar="DIR", default=None, help="TensorBoard runs, one per model: DIR/<model>")
    compare.add_argument("--plot", metavar="PNG", default=None, help="save a figure of the predictions (PNG)")
    compare.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")

    bench = commands.add_parser(
        "bench",
        help="run a benchmark of the repository's benchmarks/ folder (from the repository root)",
        description="Run benchmarks.NAME with ARGS (e.g. --quick); without NAME, list the benchmarks.",
    )
    bench.add_argument("name", nargs="?", default=None, help="the benchmark, e.g. sepgpc_table1")
    bench.add_argument("args", nargs=argparse.REMAINDER, help="its arguments (see gpflow-ep bench NAME --help)")
    return parser


def _compare(args: argparse.Namespace) -> int:
    rows = run_compare(
        dataset=args.dataset,
        split=args.split,
        data_dir=args.data_dir,
        models=args.models,
        csv_file=args.csv,
        target=args.target,
        task=args.task,
        test_fraction=args.test_fraction,
        max_train=args.max_train,
        num_inducing=args.num_inducing,
        maxiter=args.maxiter,
        prior=args.prior,
        seed=args.seed,
        log_dir=args.log_dir,
        plot=args.plot,
        progress=not args.no_progress,
    )
    first = rows[0]
    print(
        f"{first['dataset']} ({first['task']}, {first['source']}): {first['num_train']} training and "
        f"{first['num_test']} test points, {first['input_dim']} inputs; split {args.split}; prior {args.prior}; "
        f"L-BFGS-B to convergence or {args.maxiter} iterations; train time includes compilation"
    )
    print(format_table(rows))
    outputs = []
    if args.json is not None:
        outputs.append(write_json(rows, args.json))
    if args.out is not None:
        outputs.extend(write_results(rows, args.out))
    if args.log_dir is not None:
        outputs.append(f"{args.log_dir} (tensorboard --logdir {args.log_dir})")
    if args.plot is not None:
        outputs.append(args.plot)
    for path in outputs:
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _benchmarks() -> List[str]:
    if os.path.isfile(os.path.join("benchmarks", "__init__.py")) and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the repository root (console scripts do not put it on the path)
    try:
        package = importlib.import_module("benchmarks")
    except ImportError:
        return []
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name != "common")


def _bench(args: argparse.Namespace) -> int:
    names = _benchmarks()
    if not names:
        raise ValueError("bench: the benchmarks/ folder is not importable; run gpflow-ep from the repository root")
    if args.name is None:
        print("benchmarks (gpflow-ep bench NAME [--quick] ...; or python -m benchmarks.NAME):")
        for name in names:
            print(f"  {name}")
        return 0
    if args.name not in names:
        raise ValueError(f"bench: unknown benchmark {args.name!r}; choose among {', '.join(names)}")
    module = importlib.import_module(f"benchmarks.{args.name}")
    return int(module.main(args.args) or 0)


def main(argv: Optional[List[str]] = None) -> int:
    """
    Run ``gpflow-ep`` with ``argv`` (default ``sys.argv[1:]``).

    :return: the exit status: 0 on success, 2 on a usage error (message on stderr).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version (0) or an argparse usage error (2)
        return 0 if exit_.code is None else int(exit_.code)
    try:
        return _compare(args) if args.command == "compare" else _bench(args)
    except ValueError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
