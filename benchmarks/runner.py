"""
Command lines of the benchmarks (:func:`benchmark_parser`, :func:`parse_command_line`, :func:`run_parts`) and the
runner of data sets × splits (:func:`run_split_grid`; :func:`merge_split_reports` joins the reports of several runs).
"""

import argparse
import importlib
import json
import shlex
import sys
import time
from collections import Counter
from itertools import groupby
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import gpflow
import numpy as np
import tensorflow as tf

from .data import available_benchmarks
from .report import RunClock, write_report


def run_split_grid(
    datasets: Sequence[str],
    splits: Union[int, Mapping[str, int]],
    run_split: Callable[[str, int], Dict],
    summarise: Callable[[List[Dict]], Dict],
    *,
    config: Dict,
    command: str,
    prefix: Path,
    markdown: Callable[[Dict], str],
    log: Callable[[str], None],
    describe: Optional[Callable[[Dict], str]] = None,
    first_split: int = 0,
) -> int:
    """
    ``run_split(name, split)`` for every data set and each of its splits ``first_split`` …
    ``first_split + splits - 1`` (``splits``: a number, or a number per data set); after each split
    the report so far is written, marked ``partial`` (a stopped run leaves its finished splits
    behind, timed from the start of the run), at the end the whole one, as
    ``{config, runs, summary: summarise(runs)}`` with :func:`timed_report`'s fields.
    ``describe(run)``, if given, is logged after each split. Runs over different data sets or
    splits are joined by :func:`merge_split_reports`. Returns 0.
    """

    def body(runs: List[Dict]) -> Dict:
        return dict(config=dict(config, first_split=first_split), runs=runs, summary=summarise(runs))

    clock, runs = RunClock(), []
    for name in datasets:
        for split in range(first_split, first_split + (splits[name] if isinstance(splits, Mapping) else splits)):
            runs.append(run_split(name, split))
            if describe is not None:
                log(describe(runs[-1]))
            partial = clock.stamp(dict(body(runs), partial=True), command)
            write_report(prefix, partial, markdown(partial))
    report = clock.stamp(body(runs), command)
    json_path, md_path = write_report(prefix, report, markdown(report))
    log(f"wrote {json_path} and {md_path}")
    return 0


#: the settings of a split-grid report that may differ between the reports :func:`merge_split_reports` joins
GRID_KEYS = ("datasets", "splits", "first_split", "large_splits", "splits_per_dataset")


def add_split_grid_options(parser: argparse.ArgumentParser) -> None:
    """``--first-split`` and ``--merge`` for a benchmark over data sets × fixed splits."""
    parser.add_argument("--first-split", type=int, default=0, help="the first split to run (to add to an earlier run)")
    parser.add_argument(
        "--merge", help="comma-separated JSON reports of runs with the same settings: write their union"
    )


def merge_split_reports(paths, prefix, command: str, summarise: Callable, markdown: Callable, log: Callable) -> int:
    """
    ``--merge``: one report of the union by (data set, split) of reports with the same settings but
    :data:`GRID_KEYS` (the first report's run where two hold one), summarised again; ``splits_per_dataset``
    counts each set's splits, ``command`` lists the splits kept from each report, and every run keeps its
    ``cpu_model`` (``cpu_models`` counts them: timings of different machines are not pooled). ``paths`` may be
    comma-separated text, ``prefix`` a function of the merged config; ``summarise(runs, methods)``. Returns 0.
    """
    if isinstance(paths, str):
        paths = parse_list(paths)
    reports = [json.loads(Path(p).read_text()) for p in paths]
    settings = [{k: v for k, v in r["config"].items() if k not in GRID_KEYS} for r in reports]
    if any(s != settings[0] for s in settings):
        raise ValueError(f"--merge: the reports have different settings: {settings}")
    runs, seen, commands = [], set(), []
    for r in reports:
        kept = [run for run in r["runs"] if (run["dataset"], run["split"]) not in seen]
        seen.update((run["dataset"], run["split"]) for run in kept)
        for run in kept:
            run.setdefault("cpu_model", r["machine"]["cpu_model"])
        runs += kept
        commands.append(f"{r['command']} [kept: {_split_ranges(kept) or 'nothing'}]")
    datasets = list(dict.fromkeys(run["dataset"] for run in runs))
    runs.sort(key=lambda run: (datasets.index(run["dataset"]), run["split"]))
    counts = [sum(run["dataset"] == name for run in runs) for name in datasets]
    config = dict(reports[0]["config"], datasets=datasets, splits=max(counts), first_split=0)
    config["splits_per_dataset"] = dict(zip(datasets, counts))
    merged = dict(
        config=config,
        runs=runs,
        summary=summarise(runs, config["methods"]),
        command=" + ".join(commands) + f" (merged by `{command}`)",
        started=min(r["started"] for r in reports),
        finished=max(r["finished"] or r["started"] for r in reports),
        wall_time_s=sum(r["wall_time_s"] for r in reports),
        machine=reports[0]["machine"],
        cpu_models=dict(Counter(run["cpu_model"] for run in runs)),
    )
    json_path, md_path = write_report(prefix(config) if callable(prefix) else prefix, merged, markdown(merged))
    log(f"wrote {json_path} and {md_path}")
    return 0


def _split_ranges(runs: Sequence[Dict]) -> str:
    """``"wine 3–19; iris 3–8, 10"``: the splits of each data set among ``runs`` (the runs a report gave a merge)."""
    parts = []
    for name in dict.fromkeys(run["dataset"] for run in runs):
        splits = enumerate(sorted(run["split"] for run in runs if run["dataset"] == name))
        ranges = [[split for _, split in run] for _, run in groupby(splits, lambda pair: pair[1] - pair[0])]
        parts.append(f"{name} " + ", ".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in ranges))
    return "; ".join(parts)


def benchmark_parser(
    module: str, doc: str, default_out_dir: str, quick: str, *, data_dir: bool = False, optimizer: bool = False
) -> argparse.ArgumentParser:
    """
    The parser of ``python -m <module>``, described by the first paragraph of ``doc``: ``--out-dir``, ``--quick``
    (``quick`` says what it runs) and, if asked, ``--data-dir`` and ``--optimizer`` (default ``adam:0.01``).
    """
    description = " ".join(doc.strip().split("\n\n")[0].split())
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument("--out-dir", default=default_out_dir, help=f"output directory (default {default_out_dir})")
    parser.add_argument("--quick", action="store_true", help=f"smoke configuration: {quick}")
    if data_dir:
        parser.add_argument("--data-dir", help="data directory (default: $GPFLOW_EP_DATA, ../shared/datasets)")
    if optimizer:
        parser.add_argument("--optimizer", default="adam:0.01", help="minibatch optimiser: adam[:lr] or adadelta")
    return parser


def check_choices(parser: argparse.ArgumentParser, option: str, values: Sequence, allowed: Sequence) -> None:
    """A usage error (``parser.error``) naming ``option`` unless every one of ``values`` is in ``allowed``."""
    unknown = sorted(set(values) - set(allowed))
    if unknown:
        parser.error(f"{option}: unknown {unknown}; choose among {list(allowed)}")


def check_datasets(parser: argparse.ArgumentParser, datasets: Sequence[str], kind: str, data_dir) -> None:
    """A usage error unless every one of ``datasets`` is a ``kind`` benchmark set in ``data_dir`` (which must exist)."""
    try:
        missing = sorted(set(datasets) - set(available_benchmarks(kind, data_dir)))
    except ValueError as error:
        parser.error(f"--data-dir: {error}")
    if missing:
        parser.error(f"--datasets: not found {missing}")


def parse_list(text: str, kind: Callable = str) -> List:
    """``"a, b,c"`` → ``[kind("a"), kind("b"), kind("c")]`` (empty items dropped)."""
    return [kind(t.strip()) for t in text.split(",") if t.strip()]


def parse_command_line(
    parser, argv, *, shared: bool = False, log: Optional[Callable] = None
) -> Tuple[argparse.Namespace, str]:
    """
    The options in ``argv`` (default ``sys.argv[1:]``) and the command ``"<prog> <argv>"``; sets float64 and
    TensorFlow's logger to errors. With ``shared`` (:func:`run_parts`), other parts' options are logged and ignored.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if shared:
        args, ignored = parser.parse_known_args(argv)
        if ignored and log is not None:
            log(f"ignoring options meant for other parts: {ignored}")
    else:
        args = parser.parse_args(argv)
    gpflow.config.set_default_float(np.float64)
    tf.get_logger().setLevel("ERROR")
    return args, f"{parser.prog} {shlex.join(argv)}".strip()


def progress_logger(name: str) -> Callable[[str], None]:
    """A function printing ``[name HH:MM:SS] message`` to stderr."""

    def log(message: str) -> None:
        print(f"[{name} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    return log


def run_parts(module: str, description: str, parts: Mapping[str, str], default_out_dir: str, argv=None) -> int:
    """
    Run the ``--parts`` (names of ``parts``, modules with ``main(argv, shared=True)``) in turn, passing every
    other option to each; 0, or the first non-zero status of a part.
    """
    epilog = "Other options are passed to every part; see python -m <part module> --help."
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description, epilog=epilog)
    parser.add_argument("--parts", default=",".join(parts), help=f"comma separated (default {','.join(parts)})")
    parser.add_argument("--out-dir", default=default_out_dir, help=f"output directory (default {default_out_dir})")
    args, rest = parser.parse_known_args(argv)
    names = parse_list(args.parts)
    if not names or set(names) - set(parts):
        parser.error(f"--parts must be among {list(parts)}; got {names}")
    for name in names:
        status = importlib.import_module(parts[name]).main(["--out-dir", args.out_dir, *rest], shared=True)
        if status:
            return int(status)
    return 0
