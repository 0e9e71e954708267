"""
The ``gpflow-ep`` command line (also ``python -m gpflow_ep``).

    gpflow-ep compare [--dataset NAME] [--split K] [--models EPGPC,VGP,SVGP] [--out PREFIX] ...
    gpflow-ep bench epgpc [benchmark options ...]
    gpflow-ep reproduce rep [--parts C1,C2,C3] [options ...]

Errors a user can cause (unknown dataset or model, bad split) are printed as
``gpflow-ep: error: ...`` on stderr with exit status 2, like argparse's own usage errors.
"""

import argparse
import sys
from typing import List, Optional

PROG = "gpflow-ep"
#: command → {name: module with ``main(argv) -> int``}
RUNNABLES = {
    "bench": {"epgpc": "gpflow_ep.bench.epgpc"},
    "reproduce": {"rep": "gpflow_ep.reproduce.rep"},
}


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gpflow-ep`` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Expectation propagation for GPflow 2: comparisons and benchmarks."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    compare = commands.add_parser(
        "compare",
        help="train EPGPC, VGP and SVGP on one split and print a Markdown table",
        description=(
            "Train EPGPC, VGP and SVGP (SE-ARD kernel, exact probit likelihood, scipy L-BFGS) on "
            "one train/test split and print test error, test NLPD, training time (compilation "
            "included), log Z_EP or ELBO, and iteration counts as a Markdown table."
        ),
    )
    compare.add_argument(
        "--dataset",
        metavar="NAME",
        default=None,
        help="binary benchmark of the shared/datasets layout (e.g. Pima); "
        "default: scikit-learn's bundled breast cancer",
    )
    compare.add_argument("--split", metavar="K", type=int, default=0, help="split index (default 0)")
    compare.add_argument(
        "--data-dir",
        metavar="PATH",
        default=None,
        help="benchmark directory (default: $GPFLOW_EP_DATA, then ../shared/datasets)",
    )
    compare.add_argument(
        "--models",
        default="EPGPC,VGP,SVGP",
        help="comma-separated models to train (default: EPGPC,VGP,SVGP)",
    )
    compare.add_argument("--num-inducing", type=_positive_int, default=50, help="SVGP inducing points (default 50)")
    compare.add_argument("--maxiter", type=_positive_int, default=1000, help="L-BFGS iteration cap (default 1000)")
    compare.add_argument("--seed", type=int, default=0, help="seed of the SVGP k-means (default 0)")
    compare.add_argument("--out", metavar="PREFIX", default=None, help="also write PREFIX.json and PREFIX.md")
    compare.add_argument("--log-dir", metavar="PATH", default=None, help="write TensorBoard scalars to PATH/<model>")
    compare.add_argument("--plot", metavar="PNG", default=None, help="save a bar chart of error and NLPD (PNG)")

    for command, help_text in [
        ("bench", "run a benchmark (options after the name are passed to it)"),
        ("reproduce", "reproduce a paper's experiments (options after the name are passed to it)"),
    ]:
        sub = commands.add_parser(command, help=help_text, description=help_text)
        sub.add_argument("name", choices=tuple(RUNNABLES[command]), help=f"what to {command}")
        sub.add_argument("args", nargs=argparse.REMAINDER, help="its own arguments")
    return parser


def _compare(args: argparse.Namespace) -> int:
    from .compare import format_table, run_compare, write_results

    rows = run_compare(
        dataset=args.dataset,
        split=args.split,
        data_dir=args.data_dir,
        models=args.models,
        num_inducing=args.num_inducing,
        maxiter=args.maxiter,
        seed=args.seed,
        log_dir=args.log_dir,
        plot=args.plot,
    )
    print(format_table(rows))
    if args.out is not None:
        for path in write_results(rows, args.out):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def _run_module(command: str, args: argparse.Namespace) -> int:
    """Run the ``main(argv)`` of the benchmark or reproduction named on the command line."""
    import importlib

    module = importlib.import_module(RUNNABLES[command][args.name])
    try:
        status = module.main(args.args)
    except SystemExit as exit_:  # the module's own argparse (--help, usage errors)
        status = exit_.code
    return 0 if status is None else int(status)


def main(argv: Optional[List[str]] = None) -> int:
    """
    Run ``gpflow-ep`` with ``argv`` (default ``sys.argv[1:]``).

    :return: the exit status: 0 on success, 2 on a usage error (message on stderr).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or an argparse usage error (2)
        return 0 if exit_.code is None else int(exit_.code)
    try:
        if args.command == "compare":
            return _compare(args)
        return _run_module(args.command, args)
    except ValueError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
