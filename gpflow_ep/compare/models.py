r"""
The models ``gpflow-ep compare`` trains, by task, and the one factory that builds them,
:func:`make_model`, which the repository's benchmarks build their models with too (GPflow's
baselines stay stock GPflow models with stock likelihoods unless given another). Every model of a
comparison gets the same kernel family (one squared-exponential kernel with a lengthscale per
input, variance 1 and lengthscales √D at the start, shared by the latent functions of a
multi-class model), the same inducing inputs (k-means centres) where it is sparse, and the same
hyper-priors (:data:`PRIORS`); each is trained to its own convergence by ``gpflow.optimizers.Scipy``
on its training loss.

====================  ==========  ===============================================================
name                  task        model
====================  ==========  ===============================================================
``epgpc``             binary      :class:`~gpflow_ep.models.EPGPC`, probit (EP; :cite:t:`Minka2001`)
``pep``               binary      :class:`~gpflow_ep.models.PowerEP`, probit, α = 0.8
``rep``               binary      :class:`~gpflow_ep.models.RelaxedEP`, probit
``sepgpc``            binary      :class:`~gpflow_ep.models.SEPGPC`, probit, M inducing inputs
``sepgpc-tied``       binary      the same with tied sites (one average site; stochastic EP,
                                  :cite:t:`Li2015`), batch EP of it in every loss evaluation
``epgpc-hinge``       binary      EPGPC with the Bayesian SVM's ``BinaryHinge``
``svgp``              all         ``gpflow.models.SVGP`` (probit / ``MultiClass`` robust-max /
                                  Gaussian)
``svgp-hinge``        binary      SVGP with ``BinaryHinge``
``vgp``               binary,     ``gpflow.models.VGP`` (probit / robust-max)
                      multiclass
``svgp-softmax``      multiclass  SVGP with ``Softmax``
``bsvm``              multiclass  SVGP with the Bayesian SVM's ``MultiClassHinge``
``sepmgpc``           multiclass  :class:`~gpflow_ep.models.SEPMGPC`, scalable multi-class EP, M
                                  inducing inputs per class
``gpr``               regression  ``gpflow.models.GPR``
``sgpr``              regression  ``gpflow.models.SGPR`` (:cite:t:`Titsias2009`)
``dgpaep``            regression  :class:`~gpflow_ep.models.DGPAEP`, 2 layers [D, 2, 1]
``spikeslab``         regression  :class:`~gpflow_ep.models.SpikeSlabRegression` (linear, EP)
``epgp-t``            regression  :class:`~gpflow_ep.models.EPGP`, Student-t (ν = 4 learned), robust EP
                                  (:func:`~gpflow_ep.ep.robust_settings`; :cite:t:`Jylanki2011`)
``sepgp-t``           regression  :class:`~gpflow_ep.models.SEPGP`, the same, M inducing inputs (without the
                                  double-loop fallback, which needs the full GP's normaliser)
``svgp-t``            regression  ``gpflow.models.SVGP`` with the same Student-t likelihood
``epgp``              counts      :class:`~gpflow_ep.models.EPGP`, ``Poisson`` (exp link), EP by
                                  quadrature of the tilted moments
``sepgp``             counts      :class:`~gpflow_ep.models.SEPGP`, ``Poisson``, M inducing inputs
``vgp``, ``svgp``     counts      ``gpflow.models.VGP`` / ``SVGP`` with ``Poisson``
====================  ==========  ===============================================================

A count model's GP has a constant mean function, trainable, started at the log of the training
counts' mean, so that exp(f) starts at the data's scale (every count model the same).

The objective column is what each model maximises: log Z_EP for the EP models, the ELBO for the
variational ones (a pseudo-likelihood's for the hinge models, comparable only with each other),
the log marginal likelihood for GPR, the negative AEP energy for DGPAEP.
"""

import math
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Union

import gpflow
import numpy as np
import tensorflow_probability as tfp
from gpflow.utilities import to_default_float
from sklearn.cluster import KMeans

from ..ep import robust_settings
from ..likelihoods import BinaryHinge, MultiClassHinge, MultiClassStep, Probit
from ..models import DGPAEP, EPGP, EPGPC, SEPGP, SEPGPC, SEPMGPC, PowerEP, RelaxedEP, SpikeSlabRegression
from ..validation import check_choice
from .catalogue import DEFAULT_MODELS, PRIORS
from .data import TaskData

__all__ = [
    "MODELS",
    "DEFAULT_MODELS",
    "PRIORS",
    "FACTORY_MODELS",
    "check_models",
    "make_kernel",
    "inducing_inputs",
    "make_model",
    "build_model",
    "apply_prior",
    "objective",
    "hyperparameters",
]


class ModelSpec(NamedTuple):
    builder: Callable  # (TaskData, num_inducing, seed) -> (model, loss closure)
    objective_kind: str


def make_kernel(input_dim: int):
    """SE-ARD kernel with variance 1 and every lengthscale √D (the norm of a standardised input)."""
    return gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=np.full(input_dim, math.sqrt(input_dim)))


def inducing_inputs(X: np.ndarray, num_inducing: int, seed: int = 0) -> np.ndarray:
    """``min(num_inducing, N)`` k-means centres of X (``random_state=seed``), or X itself when M ≥ N."""
    num = min(int(num_inducing), X.shape[0])
    if num == X.shape[0]:
        return X.copy()
    return KMeans(n_clusters=num, random_state=seed, n_init=10).fit(X).cluster_centers_.astype(np.float64)


def _classes(num_classes: Optional[int], name: str) -> int:
    if num_classes is None:
        raise ValueError(f"num_classes: {name!r} with its default likelihood needs the number of classes")
    return num_classes


def _bernoulli_or_robust_max(num_classes: Optional[int], name: str):
    """GPflow's probit ``Bernoulli()`` for one latent GP, its robust-max ``MultiClass(C)`` for C classes."""
    return gpflow.likelihoods.Bernoulli() if num_classes is None else gpflow.likelihoods.MultiClass(num_classes)


class _Factory(NamedTuple):
    model_class: type
    #: how the class is called: "data" (data, kernel, likelihood), "sparse" (kernel, likelihood, Z,
    #: num_data=), "gpr" (data, kernel), "sgpr" (data, kernel, Z) or "linear" (data)
    layout: str
    #: the default likelihood, a function of (num_classes, name); None: the likelihood must be given
    likelihood: Optional[Callable] = None


_probit = lambda num_classes, name: Probit()
_SVGP, _VGP = gpflow.models.SVGP, gpflow.models.VGP

#: :func:`make_model`'s models, by name
FACTORY_MODELS: Dict[str, _Factory] = {
    "epgpc": _Factory(EPGPC, "data", _probit),
    "pep": _Factory(PowerEP, "data", _probit),
    "rep": _Factory(RelaxedEP, "data", _probit),
    "epgp": _Factory(EPGP, "data"),
    "vgp": _Factory(_VGP, "data", _bernoulli_or_robust_max),
    "gpr": _Factory(gpflow.models.GPR, "gpr"),
    "sgpr": _Factory(gpflow.models.SGPR, "sgpr"),
    "spikeslab": _Factory(SpikeSlabRegression, "linear"),
    "svgp": _Factory(_SVGP, "sparse", _bernoulli_or_robust_max),
    "svgp-softmax": _Factory(_SVGP, "sparse", lambda C, name: gpflow.likelihoods.Softmax(_classes(C, name))),
    "bsvm": _Factory(_SVGP, "sparse", lambda C, name: MultiClassHinge(_classes(C, name))),
    "sepgpc": _Factory(SEPGPC, "sparse", _probit),
    "sepgp": _Factory(SEPGP, "sparse"),
    "sepmgpc": _Factory(SEPMGPC, "sparse", lambda C, name: MultiClassStep(_classes(C, name))),
}


def _given(value, argument: str, name: str):
    if value is None:
        raise ValueError(f"{argument}: model {name!r} needs one")
    return value


def make_model(
    name: str,
    *,
    data=None,
    kernel=None,
    likelihood=None,
    inducing_variable=None,
    num_data: Optional[int] = None,
    num_classes: Optional[int] = None,
    **options,
):
    """
    A fresh, untrained model ``name`` (:data:`FACTORY_MODELS`), built as a user builds it:

    * full GPs on ``data`` = (X, Y) with ``kernel``: ``"epgpc"``, ``"pep"``, ``"rep"``
      (:class:`~gpflow_ep.models.EPGPC`, :class:`~gpflow_ep.models.PowerEP`,
      :class:`~gpflow_ep.models.RelaxedEP`; probit by default), ``"epgp"``
      (:class:`~gpflow_ep.models.EPGP`, any likelihood), ``"vgp"`` (GPflow's VGP: ``Bernoulli()``,
      or ``MultiClass(C)`` with C latent GPs when ``num_classes`` is C) and ``"gpr"`` (GPflow's
      GPR, no likelihood);
    * sparse models on the inducing variable (or inducing inputs) ``inducing_variable``, trained
      on ``num_data`` points (``None``: the ELBO's data term is the batch's sum): ``"svgp"``
      (GPflow's whitened SVGP, the likelihoods of ``"vgp"``), ``"svgp-softmax"`` (``Softmax(C)``),
      ``"bsvm"`` (``MultiClassHinge(C)``), ``"sepgpc"`` (:class:`~gpflow_ep.models.SEPGPC`,
      probit), ``"sepgp"`` (:class:`~gpflow_ep.models.SEPGP`, any likelihood), ``"sepmgpc"``
      (:class:`~gpflow_ep.models.SEPMGPC`, ``MultiClassStep(C)``); and ``"sgpr"`` (GPflow's SGPR on
      ``data``);
    * ``"spikeslab"``: :class:`~gpflow_ep.models.SpikeSlabRegression` on ``data`` (a linear model).

    :param likelihood: replaces the model's default likelihood (needed where there is none).
    :param num_classes: C, for a multi-class default likelihood; GPflow's SVGP and VGP then have C latent GPs.
    :param options: the model class's other keyword arguments (EP settings, ``mean_function``,
        ``noise_variance``, ...).
    :raises ValueError: naming the argument at fault, for an unknown ``name`` or a missing argument.
    """
    model_class, layout, default_likelihood = FACTORY_MODELS[check_choice(name, "name", tuple(FACTORY_MODELS))]
    if layout in ("gpr", "sgpr", "linear"):
        if likelihood is not None:
            raise ValueError(f"likelihood: model {name!r} has its own Gaussian likelihood (give its noise_variance)")
        if layout == "linear":
            if kernel is not None:
                raise ValueError(f"kernel: model {name!r} is a linear model; it takes none")
            return model_class(_given(data, "data", name), **options)
        if layout == "sgpr":
            options["inducing_variable"] = _given(inducing_variable, "inducing_variable", name)
        return model_class(_given(data, "data", name), _given(kernel, "kernel", name), **options)
    if likelihood is None:
        likelihood = _given(default_likelihood, "likelihood", name)(num_classes, name)
    if num_classes is not None and model_class in (_SVGP, _VGP):
        options["num_latent_gps"] = num_classes
    kernel = _given(kernel, "kernel", name)
    if layout == "data":
        return model_class(_given(data, "data", name), kernel, likelihood, **options)
    inducing_variable = _given(inducing_variable, "inducing_variable", name)
    return model_class(kernel, likelihood, inducing_variable, num_data=num_data, **options)


def _trained_as_in_compare(
    name: str, likelihood: Optional[Callable] = None, options: Optional[Callable[[TaskData], Dict]] = None
) -> Callable:
    """
    The builder of a comparison's model: :func:`make_model` ``name`` on the training data with
    :func:`make_kernel` (and :func:`inducing_inputs` where sparse), ``likelihood()`` (default: the
    factory's) and ``options(td)``; the loss is the model's own (full GPs) or on the training data.
    """

    def builder(td: TaskData, num_inducing: int, seed: int):
        s, layout = td.split, FACTORY_MODELS[name].layout
        data = (s.X_train, td.labels(s.Y_train))
        kwargs = options(td) if options else {}
        if layout != "linear":
            kwargs["kernel"] = make_kernel(s.X_train.shape[1])
        if likelihood is not None:
            kwargs["likelihood"] = likelihood()
        if td.task == "multiclass":
            kwargs["num_classes"] = td.num_classes
        if layout in ("sparse", "sgpr"):
            kwargs["inducing_variable"] = inducing_inputs(s.X_train, num_inducing, seed)
        if layout == "sparse":
            model = make_model(name, num_data=len(s.X_train), **kwargs)
            return model, model.training_loss_closure(data, compile=False)
        model = make_model(name, data=data, **kwargs)
        return model, model.training_loss

    return builder


def student_t_likelihood(df: float = 4.0, scale: float = 0.3):
    """GPflow's ``StudentT`` with the degrees of freedom ν a trainable (positive) parameter."""
    likelihood = gpflow.likelihoods.StudentT(scale=scale, df=df)
    likelihood.df = gpflow.Parameter(df, transform=gpflow.utilities.positive())
    return likelihood


def _dgpaep(td: TaskData, num_inducing: int, seed: int):
    """DGPAEP's own builder (``DGPAEP.from_data``): 2 layers [D, 2, 1]."""
    s = td.split
    model = DGPAEP.from_data(s.X_train, s.Y_train, [s.X_train.shape[1], 2, 1], num_inducing, seed=seed)
    return model, model.training_loss_closure((s.X_train, s.Y_train), compile=False)


def _count_mean(td: TaskData) -> Dict:
    """The count models' constant mean function, started at the log of the training counts' mean."""
    return dict(mean_function=gpflow.mean_functions.Constant(math.log(max(float(td.split.Y_train.mean()), 1e-3))))


_model = _trained_as_in_compare
_regression = dict(options=lambda td: dict(noise_variance=0.1))
_counts = dict(likelihood=gpflow.likelihoods.Poisson, options=_count_mean)

#: task → name → (builder, objective kind); the names are those of :data:`.catalogue.MODEL_LABELS`
MODELS: Dict[str, Dict[str, ModelSpec]] = {
    "binary": {
        "epgpc": ModelSpec(_model("epgpc"), "log Z_EP"),
        "pep": ModelSpec(_model("pep"), "log Z_PEP"),
        "rep": ModelSpec(_model("rep"), "log Z_REP"),
        "sepgpc": ModelSpec(_model("sepgpc"), "log Z_EP"),
        "sepgpc-tied": ModelSpec(_model("sepgpc", options=lambda td: dict(sites="tied", ep_mode="nested")), "log Z_EP"),
        "svgp": ModelSpec(_model("svgp"), "ELBO"),
        "vgp": ModelSpec(_model("vgp"), "ELBO"),
        "epgpc-hinge": ModelSpec(_model("epgpc", BinaryHinge), "log Z_EP (pseudo)"),
        "svgp-hinge": ModelSpec(_model("svgp", BinaryHinge), "ELBO (pseudo)"),
    },
    "multiclass": {
        "bsvm": ModelSpec(_model("bsvm"), "ELBO (pseudo, quad_max bound)"),
        "svgp": ModelSpec(_model("svgp"), "ELBO"),
        "svgp-softmax": ModelSpec(_model("svgp-softmax"), "ELBO"),
        "vgp": ModelSpec(_model("vgp"), "ELBO"),
        "sepmgpc": ModelSpec(_model("sepmgpc"), "log Z_EP"),
    },
    "regression": {
        "gpr": ModelSpec(_model("gpr", **_regression), "log ML"),
        "sgpr": ModelSpec(_model("sgpr", **_regression), "ELBO"),
        "svgp": ModelSpec(_model("svgp", lambda: gpflow.likelihoods.Gaussian(0.1)), "ELBO"),
        "dgpaep": ModelSpec(_dgpaep, "-AEP energy"),
        "spikeslab": ModelSpec(
            _model("spikeslab", options=lambda td: dict(noise_variance=0.1, slab_variance=1.0, prior_inclusion=0.5)),
            "log Z_EP",
        ),
        "epgp-t": ModelSpec(_model("epgp", student_t_likelihood, lambda td: robust_settings()), "log Z_PEP (α = 0.5)"),
        # the double loop needs the full GP's normaliser
        "sepgp-t": ModelSpec(
            _model("sepgp", student_t_likelihood, lambda td: robust_settings(fallback=False)), "log Z_PEP (α = 0.5)"
        ),
        "svgp-t": ModelSpec(_model("svgp", student_t_likelihood), "ELBO"),
    },
    "counts": {
        "epgp": ModelSpec(_model("epgp", **_counts), "log Z_EP"),
        "sepgp": ModelSpec(_model("sepgp", **_counts), "log Z_EP"),
        "svgp": ModelSpec(_model("svgp", **_counts), "ELBO"),
        "vgp": ModelSpec(_model("vgp", **_counts), "ELBO"),
    },
}


def check_models(models: Union[None, str, Sequence[str]], task: str) -> List[str]:
    """
    ``models`` (a sequence or comma-separated string; case-insensitive; ``None`` for the task's
    defaults) as a list of names valid for ``task``.

    :raises ValueError: naming ``models``, listing the valid names, for an empty list, an unknown
        or repeated name, or a model that does not apply to the task.
    """
    if models is None:
        return list(DEFAULT_MODELS[task])
    names = [m.strip().lower() for m in models.split(",")] if isinstance(models, str) else [m.lower() for m in models]
    names = [m for m in names if m]
    valid = list(MODELS[task])
    if not names:
        raise ValueError(f"models must name at least one of {valid} for {task} data")
    for name in names:
        if name not in valid:
            other = [t for t, specs in MODELS.items() if name in specs]
            why = f"applies to {', '.join(other)} data, not {task}" if other else "is not a model of gpflow-ep compare"
            raise ValueError(f"models: {name!r} {why}; for {task} data choose among {', '.join(valid)}")
    if len(set(names)) != len(names):
        raise ValueError(f"models must not repeat a name; got {names}")
    return names


def build_model(name: str, td: TaskData, num_inducing: int = 50, seed: int = 0):
    """A fresh, untrained model ``name`` for ``td``'s task: ``(model, loss closure)``."""
    return MODELS[td.task][name].builder(td, num_inducing, seed)


def _kernels(model) -> List:
    return [m for m in getattr(model, "submodules", ()) if isinstance(m, gpflow.kernels.Stationary)]


def apply_prior(model, prior: str, input_dim: int) -> None:
    """Put the hyper-priors ``prior`` (see :data:`PRIORS`) on every stationary kernel of ``model``."""
    if check_choice(prior, "prior", PRIORS) == "none":
        return
    for kernel in _kernels(model):
        kernel.variance.prior = tfp.distributions.LogNormal(to_default_float(0.0), to_default_float(1.0))
        kernel.lengthscales.prior = tfp.distributions.LogNormal(
            to_default_float(0.5 * math.log(input_dim)), to_default_float(1.0)
        )


def objective(model, td: TaskData) -> float:
    """The model's objective at its current parameters (module docstring)."""
    data = (td.split.X_train, td.labels(td.split.Y_train))
    if isinstance(model, SEPGP):
        return float(model.log_marginal_likelihood(data))
    if isinstance(model, (EPGP, SpikeSlabRegression, gpflow.models.GPR)):
        return float(model.log_marginal_likelihood())
    if isinstance(model, (gpflow.models.VGP, gpflow.models.SGPR)):
        return float(model.elbo())
    if isinstance(model, DGPAEP):
        return float(model.maximum_log_likelihood_objective(data))
    return float(model.elbo(data))


#: parameters that are not hyper-parameters (variational or site state, inducing inputs)
_STATE = ("q_mu", "q_sqrt", "inducing", ".Z", "sites", "site_", "posterior_", "tied", "layers[")


def hyperparameters(model) -> Dict[str, object]:
    """The model's hyper-parameters as ``{path: value}`` (lists for vectors), state excluded."""
    out = {}
    for path, value in gpflow.utilities.parameter_dict(model).items():
        if any(s in path for s in _STATE) and "kernel" not in path:
            continue
        array = np.asarray(value.numpy())
        if array.size <= 64:
            out[path.lstrip(".")] = array.tolist()
    return out


def kernel_summary(model) -> str:
    """
    The model's first stationary kernel in a few words (or "–"): its variance and its lengthscale,
    or the range of its D lengthscales, "σ² 7.82, ℓ 1.96–6.51 (30 dims)".
    """
    kernels = _kernels(model)
    if not kernels:
        return "–"
    k = kernels[0]
    ls = np.atleast_1d(k.lengthscales.numpy())
    span = f"{ls.min():.3g}" if ls.size == 1 else f"{ls.min():.3g}–{ls.max():.3g} ({ls.size} dims)"
    return f"σ² {float(k.variance.numpy()):.3g}, ℓ {span}"
