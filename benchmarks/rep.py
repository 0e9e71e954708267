"""
The experiments of Qi & Guo (2012), *Message passing with relaxed moment matching*, in three
parts (C1, C2, C3: this runner's part names), on one command line:

* C1 — the 5-point linear toy (§6.1, Fig. 1): EP vs PEP(u) vs REP(c) against the exact posterior
  (:mod:`benchmarks.rep_toy`);
* C2 — synthetic data with 10 % / 20 % flipped labels (§6.2, Figs. 2–4): divergences, sweeps, test error, R curves
  (:mod:`benchmarks.rep_synthetic`);
* C3 — the UCI benchmarks of ``shared/datasets`` (the paper's §6.3, Figs. 5–6, used others): test error and NLPD of EP, PEP, REP (and VGP)
  (:mod:`benchmarks.rep_uci`).

    python -m benchmarks.rep [--parts C1,C2,C3] [--out-dir results/rep] [--quick] [options ...]

Each part writes ``<out-dir>/<part>.json`` and ``<out-dir>/<part>.md``; every other option is
passed to each part, which ignores the options of the others (``--quick`` gives a short smoke
configuration).
"""

import sys

from .runner import run_parts

PARTS = {"C1": "benchmarks.rep_toy", "C2": "benchmarks.rep_synthetic", "C3": "benchmarks.rep_uci"}


def main(argv=None) -> int:
    description = "Qi & Guo (2012), relaxed moment matching: C1 (toy), C2 (synthetic), C3 (UCI) in turn."
    return run_parts("benchmarks.rep", description, PARTS, "results/rep", argv)


if __name__ == "__main__":
    sys.exit(main())
