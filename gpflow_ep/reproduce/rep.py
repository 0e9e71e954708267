"""
``gpflow-ep reproduce rep``: the experiments of Qi & Guo (2012), *Message passing with relaxed
moment matching* (rep spec §9), claim by claim:

* C1 — the 5-point linear toy: EP vs PEP(u) vs REP(c) against the exact posterior (2-D grid);
* C2 — synthetic data with 10 % / 20 % flipped labels: divergences, sweeps, test error, R curves;
* C3 — the UCI benchmarks of ``shared/datasets``: test error and NLPD of EP, PEP, REP (and VGP).

Each part writes ``<out-dir>/<part>.json`` and ``<out-dir>/<part>.md``; options after ``--parts``
and ``--out-dir`` are passed to every part (``--quick`` gives a short smoke configuration).
"""

import argparse
import importlib
from typing import List, Optional

PARTS = {
    "C1": "gpflow_ep.reproduce.rep_toy",
    "C2": "gpflow_ep.reproduce.rep_synthetic",
    "C3": "gpflow_ep.reproduce.rep_uci",
}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="gpflow-ep reproduce rep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="C1,C2,C3", help="comma-separated parts (default C1,C2,C3)")
    parser.add_argument("--out-dir", default="results/rep", help="output directory (default results/rep)")
    args, rest = parser.parse_known_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise ValueError(f"parts must be among {sorted(PARTS)}; got {unknown}")
    for part in parts:
        status = importlib.import_module(PARTS[part]).main(["--out-dir", args.out_dir, *rest])
        if status:
            return int(status)
    return 0
