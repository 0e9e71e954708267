"""
:class:`EPSettings`: every option of the one EP engine, in one place.

A model holds one ``EPSettings`` (``model.ep_settings``); its constructor keywords build it, and
``model.run_ep(**overrides)`` runs with ``model.ep_settings.updated(**overrides)``. They are the
options of an EP run only; how a model uses EP in training (``ep_mode``, and a sparse model's
``minibatch_damping``) is the model's own. Settings are
passed explicitly to everything that is compiled, and a ``tf.function`` traces them by value (two
equal settings share one trace), so no compiled path reads options from anywhere else.
"""

from dataclasses import dataclass, field, fields
from typing import Optional, Tuple

from tensorflow.core.function.trace_type import default_types

from .checks import check_choice, check_positive_int, check_range
from .relaxation import Relaxation

__all__ = ["EPSettings", "DEFAULT_DAMPING", "CAVITY_CHOICES", "CRITERIA"]

#: "fractional": the cavity removes the fraction α of the site (standard power EP); "full": it
#: removes the whole site (the literal reading of Qi & Guo 2012, App. C).
CAVITY_CHOICES = ("fractional", "full")
#: convergence statistics, see :mod:`gpflow_ep.ep.schedules`
CRITERIA = ("sites", "alpha", "moments")
#: the damping of a batch EP run when ``damping=None``: parallel updates need some (0.8 as in
#: GPstuff), sequential EP is classically undamped; a schedule not listed here is undamped (1).
DEFAULT_DAMPING = {"parallel": 0.8, "sequential": 1.0, "robust": 0.8}


@dataclass(frozen=True, kw_only=True)
class EPSettings:
    """
    The options of an EP run, keyword-only and validated once, at construction.

    :param power: α ∈ (0, 1]; 1 is EP, α < 1 power EP (the tilted distribution uses p(y|f)^α).
    :param cavity: "fractional" (default; q / t̃^α) or "full" (q / t̃), see :data:`CAVITY_CHOICES`.
    :param schedule: the name of a registered schedule: "parallel" (default), "sequential",
        "double_loop" (the convergent double loop, :mod:`gpflow_ep.ep.double_loop`), "convergent" (the
        same with PC-EP's box constraints), "robust" (parallel EP falling back to the double loop), or
        one registered by the user; the name is checked where the schedule is
        looked up (:func:`gpflow_ep.ep.get_schedule`: a model's constructor and ``run_ep``).
    :param damping: ρ ∈ (0, 1], the weight of the new site in a batch EP run; ``None`` (default)
        takes the schedule's :data:`DEFAULT_DAMPING` (0.8 parallel and robust, 1 sequential). The settings hold
        the number in force (``EPSettings().damping == 0.8``), and a defaulted damping follows the
        schedule: ``EPSettings().updated(schedule="sequential").damping == 1.0``, while a damping
        given by the user is kept.
    :param max_sweeps: the cap on sweeps of one EP run (default 100).
    :param tol: the tolerance of ``criterion`` (default 1e-6); what it bounds per schedule is the run's
        measure (``EPRun.measure``, :data:`gpflow_ep.ep.run.MEASURES`): a site change per sweep ("sites"),
        R ("alpha"), the change of q's marginal moments per iteration ("moments"), or for the double loop
        with the default criterion the fixed-point mismatch ("mismatch", :mod:`gpflow_ep.ep.double_loop`).
    :param criterion: "sites" (default: no site natural parameter moved by more than ``tol`` in a
        sweep and none was skipped) or "alpha" (Qi & Guo's R = ‖a_t - a_{t-1}‖₂ ≤ ``tol`` over the
        per-site statistics a_i = ∂log Z_i/∂(cavity mean), called ``dual`` in this package; the
        option keeps the paper's name) or "moments" (no marginal mean or variance of q moved by more
        than ``tol`` in a sweep and none was skipped; the rule of Hernández-Lobato & Hernández-Lobato
        2011; the change is after damping, so strong damping makes it easier to meet).
    :param relaxation: relaxed-EP settings (:class:`~gpflow_ep.ep.Relaxation`), or ``None``
        (default) for (power) EP; relaxation needs ``power=1``.
    :param min_precision: site clipping: a proposed site precision below this value is raised to it,
        keeping the tilted mean (the constraints (13) of Hernández-Lobato & Hernández-Lobato 2011);
        ``None`` (default) allows any precision, negative ones included. Not with ``relaxation``.
    """

    power: float = 1.0
    cavity: str = "fractional"
    schedule: str = "parallel"
    damping: Optional[float] = None
    max_sweeps: int = 100
    tol: float = 1e-6
    criterion: str = "sites"
    relaxation: Optional[Relaxation] = None
    min_precision: Optional[float] = None
    #: True when ``damping`` was not given and holds the schedule's default (followed by :meth:`updated`);
    #: not an option: two settings that run the same EP compare (and trace) equal.
    _damping_is_default: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "power", check_range(self.power, "power", 0.0, 1.0))
        check_choice(self.cavity, "cavity", CAVITY_CHOICES)
        if not isinstance(self.schedule, str) or not self.schedule:
            raise ValueError(f"schedule must be the name of a registered schedule; got {self.schedule!r}")
        if self.damping is None:
            set_(self, "damping", DEFAULT_DAMPING.get(self.schedule, 1.0))
            set_(self, "_damping_is_default", True)
        else:
            set_(self, "damping", check_range(self.damping, "damping", 0.0, 1.0))
        set_(self, "max_sweeps", check_positive_int(self.max_sweeps, "max_sweeps"))
        set_(self, "tol", check_range(self.tol, "tol", 0.0, float("inf"), high_open=True))
        check_choice(self.criterion, "criterion", CRITERIA)
        if self.relaxation is not None:
            if not isinstance(self.relaxation, Relaxation):
                raise ValueError(f"relaxation must be a gpflow_ep.ep.Relaxation or None; got {self.relaxation!r}")
            if self.power != 1.0:
                raise ValueError("power: relaxed EP moment-matches the full likelihood; power must be 1")
            if self.min_precision is not None:
                raise ValueError("min_precision: site clipping is not defined for relaxed EP; leave it None")
        if self.min_precision is not None:
            set_(
                self,
                "min_precision",
                check_range(self.min_precision, "min_precision", 0.0, float("inf"), high_open=True),
            )

    @classmethod
    def option_names(cls) -> Tuple[str, ...]:
        """The names of the options (the constructor's keywords)."""
        return tuple(f.name for f in fields(cls) if f.init)

    @property
    def removed_fraction(self) -> float:
        """β, the fraction of a site the cavity removes: α for "fractional", 1 for "full"."""
        return self.power if self.cavity == "fractional" else 1.0

    def updated(self, **changes) -> "EPSettings":
        """
        A validated copy with the given options changed; ``None`` values leave an option as it is.
        A damping that was defaulted stays defaulted, so it follows a changed ``schedule``.
        """
        names = self.option_names()
        unknown = set(changes) - set(names)
        if unknown:
            raise ValueError(f"unknown EP option(s) {sorted(unknown)}; the options are {sorted(names)}")
        options = {name: getattr(self, name) for name in names}
        if self._damping_is_default:
            options["damping"] = None
        options.update({k: v for k, v in changes.items() if v is not None})
        return type(self)(**options)

    def __tf_tracing_type__(self, context):
        # a tf.function traces settings by value: equal settings share one concrete function
        return default_types.Literal(self)
