"""
The experiments of Qi & Guo (2012), *Message passing with relaxed moment matching*: C1, the 5-point toy
(:mod:`benchmarks.rep_toy`), C2, synthetic flipped labels (:mod:`benchmarks.rep_synthetic`), and C3, UCI
binary sets (:mod:`benchmarks.rep_uci`), in turn; see ``docs/benchmarks/rep.md``.

Options other than ``--parts`` and ``--out-dir`` go to each part, which ignores those of the others. This
module also holds what the three parts share: the method specs, the EP fit of one spec in its model slot,
the test metrics, the command line, the run and the Markdown page of a part.
"""

import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from gpflow_ep.compare import make_model
from gpflow_ep.models import EPGP

from .claims import claim_items
from .models import ModelSlot, ep_fit, evaluate, fixed_noisy_step
from .report import machine_info, markdown_section, rerender_report, utc_now, write_report
from .runner import benchmark_parser, parse_command_line, run_parts
from .stats import cell, finite_or_none, markdown_table

PARTS = {"C1": "benchmarks.rep_toy", "C2": "benchmarks.rep_synthetic", "C3": "benchmarks.rep_uci"}
PAPER = "Qi & Guo (2012), Message passing with relaxed moment matching"

#: the paper's EP settings (sequential, Minka's R = ‖α_t − α_{t−1}‖₂ < 1e-3 within 100 sweeps), C1 and C2
EP_OPTIONS = dict(schedule="sequential", criterion="alpha", tol=1e-3, max_sweeps=100, ep_mode="alternated")

EP_SPEC = {"name": "EP", "family": "EP"}


def pep_spec(u: float, cavity: str, name: Optional[str] = None) -> Dict:
    """Power EP with power ``u`` and the "full" (the paper's literal) or "fractional" cavity."""
    return {"name": name or f"PEP(u={u:g},{cavity})", "family": "PEP", "u": u, "cavity": cavity}


def rep_spec(c: float, family: str = "REP") -> Dict:
    """Relaxed EP with penalty ``c``: "REP" (message update A), "REP-B" (update B) or "REP-exact" (exact objective)."""
    update, objective = ("B" if family == "REP-B" else "A"), ("exact" if family == "REP-exact" else "paper")
    return {"name": f"{family}(c={c:g})", "family": family, "c": c, "message_update": update, "objective": objective}


def spec_model(spec: Dict, data, kernel, likelihood, options: Dict):
    """
    A fresh model of ``spec`` on ``data`` (``gpflow_ep.compare.make_model``) with the EP settings ``options``:
    ``EPGPC`` (family "EP"), ``PowerEP`` ("PEP": power ``u``, ``cavity``) or ``RelaxedEP`` (the REP families:
    penalty ``c``, ``message_update``, ``objective``).
    """
    if spec["family"] == "EP":
        return make_model("epgpc", data=data, kernel=kernel, likelihood=likelihood, **options)
    if spec["family"] == "PEP":
        method = dict(power=spec["u"], cavity=spec["cavity"])
        return make_model("pep", data=data, kernel=kernel, likelihood=likelihood, **method, **options)
    method = dict(penalty=spec["c"], message_update=spec["message_update"], objective=spec["objective"])
    return make_model("rep", data=data, kernel=kernel, likelihood=likelihood, **method, **options)


def cached(slots: Dict, key, X, Y, build: Callable) -> ModelSlot:
    """The slot ``key`` of ``slots``, a ``ModelSlot`` of ``build()`` made on first use or when X's shape changes."""
    if key not in slots or slots[key].shape != np.shape(X):
        slots[key] = ModelSlot(build(), X, Y)
    return slots[key]


def fit(slots: Dict, spec: Dict, X, Y, kernel: Callable, values: Dict, options=EP_OPTIONS, **fields) -> Tuple:
    """
    EP from flat sites with ``spec`` on (X, Y) in its slot (``kernel()``, a fixed ``NoisyStep``, ``values`` assigned):
    the model, its row (``fields``, the method's spec, :func:`~benchmarks.models.ep_fit`, sites with b > 0) and REP's b.
    """
    likelihood = fixed_noisy_step(values["likelihood.epsilon"])
    slot = cached(slots, spec["name"], X, Y, lambda: spec_model(spec, (X, Y), kernel(), likelihood, options))
    model = slot.load(X, Y, values)
    row = dict(fields, method=spec["name"], **{k: v for k, v in spec.items() if k != "name"}, **ep_fit(model))
    b = model.sites.relaxation.numpy()[:, 0]
    row.update(num_b_positive=int(np.sum(b > 0)), frac_b_positive=float(np.mean(b > 0)))
    return model, row, b


def test_scores(model, X, Y, chunk: Optional[int] = None) -> Dict:
    """Test error and NLPD (EP models: also with Minka's α predictor) of :func:`~benchmarks.models.evaluate`."""
    ev = evaluate(model, X, Y, dual=isinstance(model, EPGP), chunk=chunk)
    out = dict(test_error=ev["error"] if ev["mean_finite"] else None, test_nlpd=finite_or_none(ev["nlpd"]))
    out["predictions_finite"] = ev["finite"]
    if "error_dual" in ev:
        out.update(test_error_alpha=ev["error_dual"], test_nlpd_alpha=finite_or_none(ev["nlpd_dual"]))
    return out


def table(columns: Sequence[Tuple[str, Callable]], rows) -> List[str]:
    """The Markdown table of ``rows``, one column per (header, function of a row) pair."""
    return markdown_table([head for head, _ in columns], [[value(r) for _, value in columns] for r in rows])


def dash(value, digits: int, **kwargs) -> str:
    """A table cell (:func:`~benchmarks.stats.cell`) with "–" for a missing value."""
    return cell(value, digits, missing="–", **kwargs)


def pct(value, digits: int = 2, signed: bool = False) -> str:
    """A proportion (or a difference of two) in percent (points), "–" when missing."""
    return dash(value, digits, signed=signed, scale=100.0)


def part_parser(module: str, doc: str, part: str, quick: str, **kwargs):
    """The command line of a part: the benchmark options and ``--rerender``."""
    parser = benchmark_parser(module, doc, "results/rep", quick, **kwargs)
    help_ = f"summaries, claims and Markdown again from <out-dir>/{part}.json"
    parser.add_argument("--rerender", action="store_true", help=help_)
    return parser


def run_part(part: str, parser, argv, shared: bool, log, run: Callable, reanalyse: Callable, markdown: Callable) -> int:
    """A part's ``main``: ``--rerender`` of ``<out-dir>/<part>.json``, or ``run(args, report, save)`` and its report."""
    args, command = parse_command_line(parser, argv, shared=shared, log=log)
    prefix = Path(args.out_dir) / part
    if args.rerender:
        return rerender_report(prefix, lambda r: reanalyse(r, args), markdown, log, indent=1)
    t0, report = time.perf_counter(), dict(claim=part, paper=PAPER, machine=machine_info(), started=utc_now())
    report.update(config=dict(command=command, quick=bool(args.quick)), finished=None, complete=False, timing={})

    def save(final: bool = False) -> None:
        report["timing"]["total_s"] = time.perf_counter() - t0
        if final:
            report.update(complete=True, finished=utc_now())
        write_report(prefix, report, markdown(report), indent=1)

    run(args, report, save)
    save(final=True)
    log(f"wrote {prefix}.json and {prefix}.md ({report['timing']['total_s']:.0f} s)")
    return 0


def page(title: str, report: Dict, details: str, body: List[str]) -> str:
    """A part's Markdown: the title, the command and time of the run, ``details``, ``body`` and the claims."""
    seconds = report["timing"].get("total_s", report.get("wall_time_s", 0.0))
    done = report["finished"] or "INCOMPLETE: partial results"
    head = [f"# {title}", "", f"Generated by `{report['config']['command']}` ({done}; {seconds:.0f} s){details}"]
    return "\n".join(head + body + markdown_section("Claims", claim_items(report["claims"]), "*")) + "\n"


def main(argv=None) -> int:
    description = "Qi & Guo (2012), relaxed moment matching: C1 (toy), C2 (synthetic), C3 (UCI) in turn."
    return run_parts("benchmarks.rep", description, PARTS, "results/rep", argv)


if __name__ == "__main__":
    sys.exit(main())
