"""
The outputs of the benchmarks: the time and machine of a run (:class:`RunClock`, :func:`timed_report`), JSON and
Markdown files (:func:`write_report`, :func:`rerender_report`) and Markdown headers and sections.
"""

import datetime as _dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import gpflow
import numpy as np
import tensorflow as tf


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (for the outputs' headers)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def load_average() -> Optional[List[float]]:
    """1/5/15-minute load averages (other processes on the machine skew timings)."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _cpu_model() -> Optional[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_info() -> Dict:
    """Python, platform, CPU, thread settings and the versions of TensorFlow, GPflow and NumPy."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "tensorflow": tf.__version__,
        "gpflow": gpflow.__version__,
        "numpy": np.__version__,
        "tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "tf_inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
        "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
    }


def timed_report(command: str, run: Callable[[], Dict]) -> Dict:
    """``run()``'s report stamped by a :class:`RunClock` started before it."""
    return RunClock().stamp(run(), command)


class RunClock:
    """Started with a run; :meth:`stamp` adds the command, start, finish (now), wall time and machine to a report."""

    def __init__(self):
        self.started, self.t0, self.load_start = utc_now(), time.perf_counter(), load_average()

    def stamp(self, body: Dict, command: str) -> Dict:
        return dict(
            body,
            command=command,
            started=self.started,
            finished=utc_now(),
            wall_time_s=time.perf_counter() - self.t0,
            machine=dict(machine_info(), load_average_start=self.load_start, load_average_end=load_average()),
        )


def json_default(obj):
    """``json.dumps`` ``default`` for NumPy scalars."""
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        return obj.item()
    raise TypeError(type(obj))


def write_json(path: Path, report: Dict, indent: int = 2) -> Path:
    """Write ``report`` as JSON (NumPy scalars allowed) to ``path``, creating its directory."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=indent, default=json_default) + "\n")
    return path


def write_report(prefix: Path, report: Dict, markdown: str, indent: int = 2) -> Tuple[Path, Path]:
    """Write ``<prefix>.json`` (the report) and ``<prefix>.md`` (its Markdown); return the two paths."""
    prefix = Path(prefix)
    json_path = write_json(prefix.with_name(prefix.name + ".json"), report, indent)
    md_path = prefix.with_name(prefix.name + ".md")
    md_path.write_text(markdown)
    return json_path, md_path


def markdown_section(title: str, items: Iterable[str], bullet: str = "-", blank_before: bool = True) -> List[str]:
    """A ``## title`` section of Markdown list items (after a blank line when ``blank_before``)."""
    return ([""] if blank_before else []) + [f"## {title}", ""] + [f"{bullet} {item}" for item in items]


def rerender_report(prefix: Path, reanalyse: Callable, markdown: Callable, log: Callable, indent: int = 2) -> int:
    """
    ``--rerender``: rewrite ``<prefix>.json`` (at its benchmark's ``indent``, so that the diff is the analysis
    only) and ``<prefix>.md`` from ``reanalyse(report)`` of the stored report, stamped ``rerendered``.
    """
    prefix = Path(prefix)
    report = reanalyse(json.loads(prefix.with_name(prefix.name + ".json").read_text()))
    report["rerendered"] = utc_now()
    json_path, md_path = write_report(prefix, report, markdown(report), indent=indent)
    log(f"re-rendered {json_path} and {md_path}")
    return 0


def markdown_header(title: str, report: Dict, note: Optional[str] = None) -> List[str]:
    """
    Title, command, times and machine of a :func:`timed_report` (``note`` in brackets after the load averages);
    for a merged report whose runs ran on several CPUs, the runs per CPU.
    """
    mach, cpus = report["machine"], report.get("cpu_models") or {}
    merged = ""
    if len(cpus) > 1:
        merged = f"  \nThe merged runs ran on {len(cpus)} CPUs (the machine above is the first report's): "
        merged += ", ".join(f"{cpu} {n} runs" for cpu, n in cpus.items()) + "."
    return [
        f"# {title}",
        "",
        f"Command: `{report['command']}`  ",
        f"Started {report['started']}, finished {report['finished']}, wall time {report['wall_time_s']:.0f} s.  ",
        f"Machine: {mach['cpu_model']}, {mach['cpu_count']} CPUs (affinity {mach['cpu_affinity']}), "
        f"TensorFlow {mach['tensorflow']}, GPflow {mach['gpflow']}, NumPy {mach['numpy']}, Python {mach['python']}; "
        f"load average (1/5/15 min) {mach['load_average_start']} at start, {mach['load_average_end']} at end"
        + (f" ({note})" if note else "")
        + f".{merged}",
        "",
    ]
