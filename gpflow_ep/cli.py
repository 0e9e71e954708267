"""
The ``gpflow-ep`` command line (also ``python -m gpflow_ep``).

    gpflow-ep compare [--dataset NAME] [--split K] [--models EPGPC,VGP,SVGP] [--out PREFIX] ...

Benchmarks and paper reproductions are not subcommands: they live in the repository's top-level
``benchmarks/`` folder and run from the repository root as ``python -m benchmarks.<name>``.

Errors a user can cause (unknown dataset or model, bad split) are printed as
``gpflow-ep: error: ...`` on stderr with exit status 2, like argparse's own usage errors.
"""

import argparse
import sys
from typing import List, Optional

from .compare import format_table, run_compare, write_results

PROG = "gpflow-ep"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gpflow-ep`` and its subcommands."""
    parser = argparse.ArgumentParser(prog=PROG, description="Expectation propagation for GPflow 2: comparisons.")
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
        help="comma-separated models, among EPGPC, VGP, SVGP, EPGPC-hinge, SVGP-hinge (default: EPGPC,VGP,SVGP)",
    )
    compare.add_argument("--num-inducing", type=_positive_int, default=50, help="SVGP inducing points (default 50)")
    compare.add_argument("--maxiter", type=_positive_int, default=1000, help="L-BFGS iteration cap (default 1000)")
    compare.add_argument("--seed", type=int, default=0, help="seed of the SVGP k-means (default 0)")
    compare.add_argument("--out", metavar="PREFIX", default=None, help="also write PREFIX.json and PREFIX.md")
    compare.add_argument("--log-dir", metavar="PATH", default=None, help="write TensorBoard scalars to PATH/<model>")
    compare.add_argument("--plot", metavar="PNG", default=None, help="save a bar chart of error and NLPD (PNG)")
    return parser


def _compare(args: argparse.Namespace) -> int:
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
        return _compare(args)
    except ValueError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
