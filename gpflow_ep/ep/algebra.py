r"""
The posterior algebra a model gives the EP engine: the one thing that differs between models.

An EP model's approximation is a Gaussian q(x) ∝ p₀(x) Π_i t̃_i(h_i) over some vector x (f for a
full GP, the whitened inducing values v for a sparse GP, the weights w for a linear model), whose
sites act on scalar site variables h_i = w_iᵀx + o_i. The engine needs, for given site natural
parameters (τ, ν):

* :meth:`SiteAlgebra.posterior`: q itself for the sites, as a :class:`SitePosterior` — the
  marginal means and variances of all h_i, whether q is proper, the log normaliser of q that the EP
  energy needs (:func:`gpflow_ep.ep.ep_log_marginal_likelihood`) and the algebra's factorisation
  for predictions; :meth:`SiteAlgebra.marginals` (parallel schedules) and
  :meth:`SiteAlgebra.log_normaliser` (the convergent double loop) are read off it;
* :meth:`SiteAlgebra.joint`: q itself as (Σ, μ) over x, with the rows w_i
  (:attr:`SiteAlgebra.site_rows`, identity when ``None``) and offsets o_i
  (:attr:`SiteAlgebra.site_offsets`), for schedules that visit one site at a time; a site change
  (Δτ, Δν) then updates q by :meth:`SiteAlgebra.update_joint` (a rank-one Sherman–Morrison step,
  Minka 2001, Sec. 3.2; Rasmussen & Williams 2006, eq. 3.70 for the GP case).

The algebra each implementation shares is written here once: the centring of the sites on the
prior mean (:func:`centred_natural_mean`), the Cholesky factor with its success flag
(:func:`safe_cholesky`; a matrix that may be indefinite is first tested, :func:`is_positive_definite`,
so that TensorFlow never logs a failed factorisation) and the natural parameters Λ = A T Aᵀ,
η = A ν that sites on projections h = Aᵀx add to a Gaussian (:func:`project_sites`).

Everything else (cavities, tilted moments, site updates, damping, relaxation, clipping, skip
counts, convergence) is the engine's, written once in :mod:`gpflow_ep.ep`.
"""

import abc
from typing import Any, Callable, NamedTuple, Optional

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes

__all__ = [
    "shape_of",
    "SiteAlgebra",
    "SiteMarginals",
    "SitePosterior",
    "JointPosterior",
    "centred_natural_mean",
    "safe_cholesky",
    "is_positive_definite",
    "project_sites",
    "eye_like",
]


def shape_of(tensor: tf.Tensor) -> list:
    """
    The shape of ``tensor`` as a list: the dimensions known when tracing as Python ints (no graph
    op), the others as scalar tensors. Reshapes built from it cost no shape ops in a compiled step
    whose shapes are static.
    """
    if tensor.shape.rank is None:
        return tf.unstack(tf.shape(tensor))
    dynamic = None
    dims = []
    for i, d in enumerate(tensor.shape):
        if d is None:
            dynamic = tf.shape(tensor) if dynamic is None else dynamic
            d = dynamic[i]
        dims.append(d)
    return dims


def eye_like(square: tf.Tensor) -> tf.Tensor:
    """The identity of the shape of ``square`` [..., M, M]."""
    shape = shape_of(square)
    return tf.eye(shape[-1], batch_shape=shape[:-2], dtype=square.dtype)


def safe_cholesky(matrix: tf.Tensor, maybe_indefinite=False, sufficient: Optional[Callable[[], tf.Tensor]] = None):
    """
    (L, ok): the Cholesky factor of ``matrix`` [..., M, M] and whether every factor succeeded
    (finite, positive diagonal). TensorFlow fills a failed factor with NaNs; it is replaced by the
    identity, so nothing downstream sees a NaN, and ``ok`` [] says whether to trust the result
    (for the site algebras: whether q is a proper Gaussian). The diagonal is enough to test: on
    failure TensorFlow fills the whole lower triangle with NaNs, and a NaN in ``matrix`` reaches
    the diagonal (L_jj² = M_jj - Σ_k L_jk²). The replacement is a ``tf.cond``, so a successful
    factor costs no O(M²) pass beyond the factorisation.

    ``maybe_indefinite`` (a Python bool or a [] bool tensor): the caller cannot rule out that
    ``matrix`` is indefinite (e.g. some site precision is negative). TensorFlow's CPU Cholesky
    writes a warning to stderr every time it fails, so such a matrix is not handed to it blindly:
    when ``maybe_indefinite`` holds, definiteness is decided first (:func:`~gpflow_ep.ep.algebra.is_positive_definite`:
    Gershgorin's discs or the caller's cheap ``sufficient`` test, a callable returning a [] bool,
    else the eigenvalues), and a matrix found not positive definite never reaches the Cholesky (the
    identity is factorised in its place; the outcome is the failed one, ``ok`` False and L the
    identity, as when the factorisation fails). When it does not hold (``False``, the default, for
    matrices positive definite by construction; or a tensor that is False at run time, one
    ``tf.cond`` more) the factorisation is the plain Cholesky with no test before it.
    """
    if maybe_indefinite is not False:

        def checked():  # the identity in place of a matrix that is not positive definite
            definite = is_positive_definite(matrix, sufficient)
            return tf.where(definite, matrix, eye_like(matrix)), definite

        matrix, definite = _cond(maybe_indefinite, checked, lambda: (matrix, tf.constant(True)))
    chol = tf.linalg.cholesky(matrix)
    diag = tf.linalg.diag_part(chol)
    ok = tf.reduce_all(tf.math.is_finite(diag)) & tf.reduce_all(diag > 0.0)
    if maybe_indefinite is not False:
        ok = ok & definite
    return tf.cond(ok, lambda: chol, lambda: eye_like(matrix)), ok


def _cond(pred, true_fn, false_fn):
    """``tf.cond``, or the branch itself when ``pred`` is known when the graph is built (a constant
    predicate would leave Grappler a dead branch to prune, which it reports on stderr)."""
    value = tf.get_static_value(pred)
    if value is not None:
        return true_fn() if bool(value) else false_fn()
    return tf.cond(pred, true_fn, false_fn)


#: relative margin of the cheap sufficient tests of definiteness (a matrix within it goes to the eigenvalues)
SUFFICIENT_MARGIN = 1e-6


def is_positive_definite(matrix: tf.Tensor, sufficient: Optional[Callable[[], tf.Tensor]] = None) -> tf.Tensor:
    r"""
    [] bool: every block of the symmetric ``matrix`` [..., M, M] is positive definite (its lower
    triangle is read, as by the Cholesky), decided without a Cholesky factorisation that could fail.

    First the cheap sufficient tests, O(M²): Gershgorin's discs (every row diagonally dominant,
    A_ii > Σ_{j≠i} abs(A_ij), with a relative margin of 1e-6) or the caller's ``sufficient`` (a
    callable returning a [] bool). Only when both fail are the eigenvalues computed (O(M³), a few
    times a Cholesky factorisation): positive definite when the smallest exceeds M ε times the
    largest in magnitude, the rounding level below which a Cholesky factorisation may fail (a
    numerically singular matrix counts as not positive definite). A matrix with a non-finite entry is
    not positive definite (and never reaches the eigensolver, which raises on it).
    """
    lower = tf.linalg.band_part(matrix, -1, 0)
    diag = tf.linalg.diag_part(matrix)
    lower_abs = tf.abs(lower)
    off = (
        tf.reduce_sum(lower_abs, axis=-1) + tf.reduce_sum(lower_abs, axis=-2) - 2.0 * tf.abs(diag)
    )  # Σ_{j≠i} |A_ij| from the lower triangle
    quick = tf.reduce_all(diag > 0.0) & tf.reduce_all(off < (1.0 - SUFFICIENT_MARGIN) * diag)
    if sufficient is not None:
        quick = quick | sufficient()

    def eigenvalues():
        finite = tf.reduce_all(tf.math.is_finite(lower))
        safe = tf.where(finite, matrix, eye_like(matrix))
        eig = tf.linalg.eigvalsh(safe)
        size = tf.cast(tf.shape(matrix)[-1], matrix.dtype)
        eps = tf.constant(np.finfo(matrix.dtype.as_numpy_dtype).eps, matrix.dtype)
        scale = tf.reduce_max(tf.abs(eig), axis=-1, keepdims=True)
        return finite & tf.reduce_all(eig > size * eps * scale)

    return _cond(quick, lambda: tf.constant(True), eigenvalues)


def centred_natural_mean(precision: tf.Tensor, natural_mean: tf.Tensor, offset) -> tf.Tensor:
    r"""
    ν - τ o: the natural mean of a site exp(νh - ½τh²) on h = g + o as a site on g (the site
    variable with its prior mean o removed), up to the constant factor exp(νo - ½τo²).
    """
    return natural_mean - precision * offset


@check_shapes(
    "A: [broadcast batch..., M, N]",
    "precision: [batch..., N, 1]",
    "natural_mean: [batch..., N, 1]",
    "return[0]: [batch..., M, M]",
    "return[1]: [batch..., M, 1]",
)
def project_sites(A: tf.Tensor, precision: tf.Tensor, natural_mean: tf.Tensor):
    r"""
    (Λ, η) = (A T Aᵀ, A ν), T = diag(τ): the natural parameters that sites exp(ν_i h_i - ½τ_i h_i²)
    on the projections h = Aᵀx add to a Gaussian in x (one site per column of A; leading
    dimensions are independent blocks, and one block of A may serve them all).
    """
    return tf.matmul(A * tf.linalg.matrix_transpose(precision), A, transpose_b=True), A @ natural_mean


class SiteMarginals(NamedTuple):
    mean: tf.Tensor  # [N, 1]
    var: tf.Tensor  # [N, 1]
    proper: tf.Tensor  # [] bool: q is a proper Gaussian (otherwise the moments are finite but meaningless)


class SitePosterior(NamedTuple):
    r"""
    q for given sites (τ, ν), in the algebra's centred coordinates g_i = h_i - o_i (the offsets
    o_i are usually the prior means; for algebras without offsets o = 0 and g = h):

    * ``mean``, ``var`` [N, 1]: the marginal means of g_i and variances of h_i under q;
    * ``precision`` [N, 1]: τ;  ``natural_mean`` [N, 1]: the centred ν - τ o;  ``offset``: o;
    * ``log_normaliser`` []: log ∫ p₀(g) Π_i exp(ν_i g_i - ½τ_i g_i²) dg with the centred ν, which
      for Gaussian log-normalisers g(·) is g(q) - g(p₀) (the first term of the EP energy,
      Minka 2004; Rasmussen & Williams 2006, eq. 3.65); ``None`` when the algebra has none;
    * ``proper`` []: q is a proper Gaussian (otherwise the rest is finite but meaningless);
    * ``factorisation``: the algebra's own factorisation of q, for predictions (or ``None``).
    """

    mean: tf.Tensor
    var: tf.Tensor
    precision: tf.Tensor
    natural_mean: tf.Tensor
    offset: tf.Tensor
    log_normaliser: Optional[tf.Tensor]
    proper: tf.Tensor
    factorisation: Any = None

    @property
    def marginals(self) -> SiteMarginals:
        """The marginals of the site variables h_i = g_i + o_i."""
        return SiteMarginals(self.mean + self.offset, self.var, self.proper)


class JointPosterior(NamedTuple):
    cov: tf.Tensor  # [D, D]
    mean: tf.Tensor  # [D, 1]
    proper: tf.Tensor  # [] bool


class SiteAlgebra(abc.ABC):
    """q(x) for site natural parameters (τ, ν), each [N, 1] (module docstring)."""

    #: [N, D] rows w_i of the site variables h_i = w_iᵀx + o_i; ``None``: h_i = x_i + o_i
    site_rows: Optional[tf.Tensor] = None
    #: [N, 1] offsets o_i; ``None``: 0
    site_offsets: Optional[tf.Tensor] = None

    @check_shapes(
        "precision: [N, 1]",
        "natural_mean: [N, 1]",
        "return.mean: [N, 1]",
        "return.var: [N, 1]",
        "return.precision: [N, 1]",
        "return.natural_mean: [N, 1]",
        "return.proper: []",
    )
    def posterior(self, precision: tf.Tensor, natural_mean: tf.Tensor) -> SitePosterior:
        """
        q for the sites (:class:`SitePosterior`). The default reads the marginals off
        :meth:`marginals` with no offset and no log normaliser; the package's algebras override it
        (and derive :meth:`marginals` from it).
        """
        q = self.marginals(precision, natural_mean)
        return SitePosterior(q.mean, q.var, precision, natural_mean, tf.zeros_like(q.mean), None, q.proper)

    @check_shapes(
        "precision: [N, 1]",
        "natural_mean: [N, 1]",
        "return.mean: [N, 1]",
        "return.var: [N, 1]",
        "return.proper: []",
    )
    def marginals(self, precision: tf.Tensor, natural_mean: tf.Tensor) -> SiteMarginals:
        """Means and variances of every site variable under q, [N, 1] each (from :meth:`posterior`)."""
        if type(self).posterior is SiteAlgebra.posterior:
            raise NotImplementedError(f"{type(self).__name__} must implement posterior or marginals")
        return self.posterior(precision, natural_mean).marginals

    @abc.abstractmethod
    @check_shapes(
        "precision: [N, 1]",
        "natural_mean: [N, 1]",
        "return.cov: [D, D]",
        "return.mean: [D, 1]",
        "return.proper: []",
    )
    def joint(self, precision: tf.Tensor, natural_mean: tf.Tensor) -> JointPosterior:
        """q(x) = N(μ, Σ)."""

    def log_normaliser(self, precision: tf.Tensor, natural_mean: tf.Tensor) -> tf.Tensor:
        """
        log ∫ p₀(x) Π_i exp(ν_i h_i - ½ τ_i h_i²) dx, the normaliser of q with the sites on h (not
        on the centred g; needed by the convergent double loop, :mod:`gpflow_ep.ep.double_loop`):
        the centred :attr:`SitePosterior.log_normaliser` plus Σ_i (ν_i o_i - ½τ_i o_i²).
        """
        q = self.posterior(precision, natural_mean)
        if q.log_normaliser is None:
            raise ValueError(f"{type(self).__name__} has no log normaliser, so the convergent schedule cannot use it")
        o = q.offset
        return q.log_normaliser + tf.reduce_sum(natural_mean * o - 0.5 * precision * tf.square(o))

    def prior_marginals(self, precision: tf.Tensor) -> SiteMarginals:
        """:meth:`marginals` at flat sites (q = prior; ``precision`` gives the shape). Override with
        the prior's moments to spare schedules a factorisation (and its trace) at a cold start."""
        zeros = tf.zeros_like(precision)
        return self.marginals(zeros, zeros)

    def prior_joint(self, precision: tf.Tensor) -> JointPosterior:
        """:meth:`joint` at flat sites (q = prior); override like :meth:`prior_marginals`."""
        zeros = tf.zeros_like(precision)
        return self.joint(zeros, zeros)

    @check_shapes("joint.cov: [D, D]", "joint.mean: [D, 1]", "return[0]: [1, 1]", "return[1]: [1, 1]", "return[2]: [D]")
    def site_marginal(self, joint: JointPosterior, index):
        """(mean [1, 1], variance [1, 1], Σw_i [D]) of the site variable h_``index`` under ``joint``."""
        if self.site_rows is None:
            column = joint.cov[:, index]
            mean, var = joint.mean[index, 0], column[index]
        else:
            row = self.site_rows[index]
            column = tf.linalg.matvec(joint.cov, row)
            mean, var = tf.reduce_sum(row * joint.mean[:, 0]), tf.reduce_sum(row * column)
        if self.site_offsets is not None:
            mean = mean + self.site_offsets[index, 0]
        return tf.reshape(mean, [1, 1]), tf.reshape(var, [1, 1]), column

    def site_moments(self, joint: JointPosterior):
        """(means [N, 1], variances [N, 1]) of all site variables under ``joint``."""
        if self.site_rows is None:
            mean, var = joint.mean, tf.linalg.diag_part(joint.cov)[:, None]
        else:
            mean = tf.matmul(self.site_rows, joint.mean)
            var = tf.reduce_sum(tf.matmul(self.site_rows, joint.cov) * self.site_rows, axis=1, keepdims=True)
        return (mean if self.site_offsets is None else mean + self.site_offsets), var

    @staticmethod
    def update_joint(joint: JointPosterior, column, mean, var, d_precision, d_natural_mean):
        """
        q after site i changes by (Δτ, Δν), from h_i's moments (``mean``, ``var``) and
        ``column`` = Σw_i: Σ ← Σ - Δτ/(1 + Δτσ²) ssᵀ, μ ← μ + (Δν - Δτ m)/(1 + Δτσ²) s. The
        caller guarantees 1 + Δτσ² > 0 (q stays proper).
        """
        den = 1.0 + d_precision * var
        c = tf.reshape(d_precision / den, [])
        shift = tf.reshape((d_natural_mean - d_precision * mean) / den, [])
        return JointPosterior(
            joint.cov - c * column[:, None] * column[None, :], joint.mean + shift * column[:, None], joint.proper
        )
