r"""
Before/after table of a benchmark's cost ratios, from the JSON reports of two versions.

The ratios the issues set goals for, each taken within one report (so both sides of a ratio were
measured in the same window), medians over the reports given for a version:

* ``epgpc_scaling``: time per parallel/sequential sweep ÷ one Cholesky, per (dataset, n, schedule);
* ``sepgpc_scaling``: SEP minibatch step ÷ SVGP step, per n;
* ``sepgpc_airline``: SEP epoch time ÷ SVGP epoch time.

Run ``python -m benchmarks.before_after --kind KIND --before A.json [B.json ...] --after C.json
[D.json ...] --out-dir results/engine`` (reports of the earlier version's own command and of this
tree's, run back to back); it writes ``<out-dir>/<kind>_before_after.{json,md}``.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from .report import utc_now, write_report


def _epgpc(report: Dict) -> Dict:
    return {
        f"{r['dataset']} n={r['n']} {r['schedule']}": r["sweep_over_cholesky"]
        for r in report["results"]
        if r.get("sweep_over_cholesky") is not None
    }


def _sep_scaling(report: Dict) -> Dict:
    return {f"n={r['n']}": r["SEP minibatch"]["per_step_s"] / r["SVGP"]["per_step_s"] for r in report["rows"]}


def _airline(report: Dict) -> Dict:
    return {"airline epoch": report["epoch_time_ratio"]}


KINDS = {
    "epgpc_scaling": (_epgpc, "sweep / Cholesky"),
    "sepgpc_scaling": (_sep_scaling, "SEP step / SVGP step"),
    "sepgpc_airline": (_airline, "SEP epoch / SVGP epoch"),
}


def ratios(kind: str, paths: Sequence[str]) -> Dict[str, Dict]:
    """Per row: the ratio of every report and their median."""
    extract = KINDS[kind][0]
    per_report = [extract(json.loads(Path(p).read_text())) for p in paths]
    keys = [k for k in per_report[0] if all(k in r for r in per_report)]
    return {
        k: dict(values=[r[k] for r in per_report], median=float(np.median([r[k] for r in per_report]))) for k in keys
    }


def markdown(report: Dict) -> str:
    label = KINDS[report["kind"]][1]
    lines = [
        f"# {report['kind']}: {label}, before and after",
        "",
        f"Command: `{report['command']}`  ",
        f"Before: {', '.join(report['before_files'])}  ",
        f"After: {', '.join(report['after_files'])}",
        "",
        f"| row | before ({label}) | after ({label}) | after / before | before runs | after runs |",
        "|---|---|---|---|---|---|",
    ]
    for key, row in report["rows"].items():
        b, a = row["before"], row["after"]
        lines.append(
            f"| {key} | {b['median']:.3g} | {a['median']:.3g} | {a['median'] / b['median']:.2f} "
            f"| {', '.join(f'{v:.3g}' for v in b['values'])} | {', '.join(f'{v:.3g}' for v in a['values'])} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.before_after", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=sorted(KINDS), required=True)
    parser.add_argument("--before", nargs="+", required=True, help="reports of the earlier version")
    parser.add_argument("--after", nargs="+", required=True, help="reports of this version")
    parser.add_argument("--out-dir", default="results/engine")
    args = parser.parse_args(argv)
    before, after = ratios(args.kind, args.before), ratios(args.kind, args.after)
    rows: Dict[str, Dict] = {k: dict(before=before[k], after=after[k]) for k in before if k in after}
    argv_list: List[str] = sys.argv[1:] if argv is None else list(argv)
    report = dict(
        kind=args.kind,
        rows=rows,
        before_files=args.before,
        after_files=args.after,
        command=f"python -m benchmarks.before_after {' '.join(argv_list)}",
        made=utc_now(),
    )
    json_path, md_path = write_report(Path(args.out_dir) / f"{args.kind}_before_after", report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
