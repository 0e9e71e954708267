r"""
The models ``gpflow-ep compare`` trains, by task. Every model gets the same kernel family (one
squared-exponential kernel with a lengthscale per input, variance 1 and lengthscales √D at the
start, shared by the latent functions of a multi-class model), the same inducing inputs (k-means
centres) where it is sparse, and the same hyper-priors (:data:`PRIORS`); each is trained to its own
convergence by ``gpflow.optimizers.Scipy`` on its training loss.

====================  ==========  ===============================================================
name                  task        model
====================  ==========  ===============================================================
``epgpc``             binary      :class:`~gpflow_ep.models.EPGPC`, probit (EP; :cite:t:`Minka2001`)
``pep``               binary      :class:`~gpflow_ep.models.PowerEP`, probit, α = 0.8
``rep``               binary      :class:`~gpflow_ep.models.RelaxedEP`, probit
``sepgpc``            binary      :class:`~gpflow_ep.models.SEPGPC`, probit, M inducing inputs
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
    "check_models",
    "make_kernel",
    "inducing_inputs",
    "sparse_classifier",
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


def _internal(model):
    return model, model.training_loss


def _external(model, data):
    return model, model.training_loss_closure(data, compile=False)


#: the sparse classifiers of :func:`sparse_classifier`, by compare's name: (class, default likelihood)
_SPARSE_CLASSIFIERS = {
    "sepgpc": (SEPGPC, lambda C: Probit()),
    "svgp": (
        gpflow.models.SVGP,
        lambda C: gpflow.likelihoods.Bernoulli() if C is None else gpflow.likelihoods.MultiClass(C),
    ),
    "svgp-softmax": (gpflow.models.SVGP, lambda C: gpflow.likelihoods.Softmax(C)),
    "bsvm": (gpflow.models.SVGP, lambda C: MultiClassHinge(C)),
    "sepmgpc": (SEPMGPC, lambda C: MultiClassStep(C)),
}


def sparse_classifier(
    name: str,
    kernel,
    Z: np.ndarray,
    num_data: Optional[int],
    num_classes: Optional[int] = None,
    likelihood=None,
    **options,
):
    """
    A sparse classifier on the inducing inputs ``Z``, untrained: ``"sepgpc"`` (:class:`~gpflow_ep.models.SEPGPC`,
    probit), ``"svgp"`` (GPflow's whitened SVGP: probit with one latent GP when ``num_classes`` is ``None``,
    else ``MultiClass`` robust-max with C latent GPs), ``"svgp-softmax"``, ``"bsvm"`` (SVGP with
    ``MultiClassHinge``) or ``"sepmgpc"`` (:class:`~gpflow_ep.models.SEPMGPC`).

    :param likelihood: replaces the default likelihood of ``name``.
    :param options: the EP models' settings (e.g. ``damping``), passed to SEPGPC/SEPMGPC.
    """
    model_class, default_likelihood = _SPARSE_CLASSIFIERS[check_choice(name, "name", tuple(_SPARSE_CLASSIFIERS))]
    likelihood = default_likelihood(num_classes) if likelihood is None else likelihood
    if model_class is gpflow.models.SVGP:
        latent = {} if num_classes is None else {"num_latent_gps": num_classes}
        return gpflow.models.SVGP(kernel, likelihood, Z, num_data=num_data, **latent, **options)
    return model_class(kernel, likelihood, Z, num_data=num_data, **options)


def _binary(likelihood_class, gpflow_likelihood_class=None):
    """
    Builders of the binary models: the EP models with ``likelihood_class``; GPflow's VGP and SVGP with
    ``gpflow_likelihood_class`` when given (what a GPflow user writes: stock ``Bernoulli()`` for the probit).
    """

    def build(name):
        def builder(td: TaskData, num_inducing: int, seed: int):
            s = td.split
            baseline = name in ("vgp", "svgp") and gpflow_likelihood_class is not None
            likelihood = (gpflow_likelihood_class if baseline else likelihood_class)()
            data, kernel = (s.X_train, s.Y_train), make_kernel(s.X_train.shape[1])
            if name == "epgpc":
                return _internal(EPGPC(data, kernel, likelihood))
            if name == "pep":
                return _internal(PowerEP(data, kernel, likelihood))
            if name == "rep":
                return _internal(RelaxedEP(data, kernel, likelihood))
            if name == "vgp":
                return _internal(gpflow.models.VGP(data, kernel, likelihood))
            Z = inducing_inputs(s.X_train, num_inducing, seed)
            return _external(sparse_classifier(name, kernel, Z, len(s.X_train), likelihood=likelihood), data)

        return builder

    return build


def _multiclass(name):
    def builder(td: TaskData, num_inducing: int, seed: int):
        s, C = td.split, td.num_classes
        data, kernel = (s.X_train, td.labels(s.Y_train)), make_kernel(s.X_train.shape[1])
        if name == "vgp":
            return _internal(gpflow.models.VGP(data, kernel, gpflow.likelihoods.MultiClass(C), num_latent_gps=C))
        Z = inducing_inputs(s.X_train, num_inducing, seed)
        return _external(sparse_classifier(name, kernel, Z, len(s.X_train), C), data)

    return builder


def student_t_likelihood(df: float = 4.0, scale: float = 0.3):
    """GPflow's ``StudentT`` with the degrees of freedom ν a trainable (positive) parameter."""
    likelihood = gpflow.likelihoods.StudentT(scale=scale, df=df)
    likelihood.df = gpflow.Parameter(df, transform=gpflow.utilities.positive())
    return likelihood


def _counts(name):
    def builder(td: TaskData, num_inducing: int, seed: int):
        s = td.split
        data, kernel, likelihood = (s.X_train, s.Y_train), make_kernel(s.X_train.shape[1]), gpflow.likelihoods.Poisson()
        mean = gpflow.mean_functions.Constant(math.log(max(float(s.Y_train.mean()), 1e-3)))
        if name == "epgp":
            return _internal(EPGP(data, kernel, likelihood, mean_function=mean))
        if name == "vgp":
            return _internal(gpflow.models.VGP(data, kernel, likelihood, mean_function=mean))
        Z = inducing_inputs(s.X_train, num_inducing, seed)
        if name == "sepgp":
            return _external(SEPGP(kernel, likelihood, Z, len(s.X_train), mean_function=mean), data)
        return _external(gpflow.models.SVGP(kernel, likelihood, Z, mean_function=mean, num_data=len(s.X_train)), data)

    return builder


def _regression(name):
    def builder(td: TaskData, num_inducing: int, seed: int):
        s = td.split
        data, kernel = (s.X_train, s.Y_train), make_kernel(s.X_train.shape[1])
        if name == "gpr":
            return _internal(gpflow.models.GPR(data, kernel, noise_variance=0.1))
        if name == "spikeslab":
            return _internal(SpikeSlabRegression(data, noise_variance=0.1, slab_variance=1.0, prior_inclusion=0.5))
        if name == "dgpaep":
            model = DGPAEP.from_data(s.X_train, s.Y_train, [s.X_train.shape[1], 2, 1], num_inducing, seed=seed)
            return _external(model, data)
        if name == "epgp-t":
            return _internal(EPGP(data, kernel, student_t_likelihood(), **robust_settings()))
        Z = inducing_inputs(s.X_train, num_inducing, seed)
        if name == "sepgp-t":
            options = robust_settings(fallback=False)  # the double loop needs the full GP's normaliser
            return _external(SEPGP(kernel, student_t_likelihood(), Z, len(s.X_train), **options), data)
        if name == "svgp-t":
            return _external(gpflow.models.SVGP(kernel, student_t_likelihood(), Z, num_data=len(s.X_train)), data)
        if name == "sgpr":
            return _internal(gpflow.models.SGPR(data, kernel, Z, noise_variance=0.1))
        return _external(gpflow.models.SVGP(kernel, gpflow.likelihoods.Gaussian(0.1), Z, num_data=len(s.X_train)), data)

    return builder


_probit, _hinge = _binary(Probit, gpflow.likelihoods.Bernoulli), _binary(BinaryHinge)

#: task → name → (builder, objective kind); the names are those of :data:`.catalogue.MODEL_LABELS`
MODELS: Dict[str, Dict[str, ModelSpec]] = {
    "binary": {
        "epgpc": ModelSpec(_probit("epgpc"), "log Z_EP"),
        "pep": ModelSpec(_probit("pep"), "log Z_PEP"),
        "rep": ModelSpec(_probit("rep"), "log Z_REP"),
        "sepgpc": ModelSpec(_probit("sepgpc"), "log Z_EP"),
        "svgp": ModelSpec(_probit("svgp"), "ELBO"),
        "vgp": ModelSpec(_probit("vgp"), "ELBO"),
        "epgpc-hinge": ModelSpec(_hinge("epgpc"), "log Z_EP (pseudo)"),
        "svgp-hinge": ModelSpec(_hinge("svgp"), "ELBO (pseudo)"),
    },
    "multiclass": {
        "bsvm": ModelSpec(_multiclass("bsvm"), "ELBO (pseudo, quad_max bound)"),
        "svgp": ModelSpec(_multiclass("svgp"), "ELBO"),
        "svgp-softmax": ModelSpec(_multiclass("svgp-softmax"), "ELBO"),
        "vgp": ModelSpec(_multiclass("vgp"), "ELBO"),
        "sepmgpc": ModelSpec(_multiclass("sepmgpc"), "log Z_EP"),
    },
    "regression": {
        "gpr": ModelSpec(_regression("gpr"), "log ML"),
        "sgpr": ModelSpec(_regression("sgpr"), "ELBO"),
        "svgp": ModelSpec(_regression("svgp"), "ELBO"),
        "dgpaep": ModelSpec(_regression("dgpaep"), "-AEP energy"),
        "spikeslab": ModelSpec(_regression("spikeslab"), "log Z_EP"),
        "epgp-t": ModelSpec(_regression("epgp-t"), "log Z_PEP (α = 0.5)"),
        "sepgp-t": ModelSpec(_regression("sepgp-t"), "log Z_PEP (α = 0.5)"),
        "svgp-t": ModelSpec(_regression("svgp-t"), "ELBO"),
    },
    "counts": {
        "epgp": ModelSpec(_counts("epgp"), "log Z_EP"),
        "sepgp": ModelSpec(_counts("sepgp"), "log Z_EP"),
        "svgp": ModelSpec(_counts("svgp"), "ELBO"),
        "vgp": ModelSpec(_counts("vgp"), "ELBO"),
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
