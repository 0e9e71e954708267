"""
The experiments of Qi & Guo (2012), *Message passing with relaxed moment matching*: C1, the 5-point toy
(:mod:`benchmarks.rep_toy`), C2, synthetic flipped labels (:mod:`benchmarks.rep_synthetic`), and C3, UCI
binary sets (:mod:`benchmarks.rep_uci`), in turn; see ``docs/benchmarks/rep.md``.

    python -m benchmarks.rep [--parts C1,C2,C3] [--out-dir results/rep] [--quick] [options ...]

Every other option is passed to each part, which ignores the options of the others. This module also
holds what the three parts share: the method specs and the model slots of EP, PEP and REP.
"""

import sys
from typing import Callable, Dict, Optional

from .models import ModelSlot, build_ep_model, fixed_noisy_step
from .runner import run_parts

PARTS = {"C1": "benchmarks.rep_toy", "C2": "benchmarks.rep_synthetic", "C3": "benchmarks.rep_uci"}

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


def model_slot(spec: Dict, X, Y, eps: float, kernel, options: Optional[Dict] = None) -> ModelSlot:
    """The model of ``spec`` on (X, Y) with ``NoisyStep(eps)`` fixed, in a slot for data sets of X's shape."""
    model = build_ep_model(spec, (X, Y), kernel, fixed_noisy_step(eps), EP_OPTIONS if options is None else options)
    return ModelSlot(model, X, Y, spec=spec)


def cached_slot(slots: Dict[str, ModelSlot], spec: Dict, X, Y, eps: float, kernel: Callable) -> ModelSlot:
    """The slot of ``spec`` in ``slots``, built (with ``kernel()``) on first use or when X's shape changes."""
    if spec["name"] not in slots or slots[spec["name"]].shape != X.shape:
        slots[spec["name"]] = model_slot(spec, X, Y, eps, kernel())
    return slots[spec["name"]]


def main(argv=None) -> int:
    description = "Qi & Guo (2012), relaxed moment matching: C1 (toy), C2 (synthetic), C3 (UCI) in turn."
    return run_parts("benchmarks.rep", description, PARTS, "results/rep", argv)


if __name__ == "__main__":
    sys.exit(main())
