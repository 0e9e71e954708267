r"""
The posterior algebra a model gives the EP engine: the one thing that differs between models.

An EP model's approximation is a Gaussian q(x) ∝ p₀(x) Π_i t̃_i(h_i) over some vector x (f for a
full GP, the whitened inducing values v for a sparse GP, the weights w for a linear model), whose
sites act on scalar site variables h_i = w_iᵀx + o_i. The engine needs, for given site natural
parameters (τ, ν):

* :meth:`SiteAlgebra.marginals`: the marginal means and variances of all h_i under q (parallel
  schedules, the energy), and whether q is proper;
* :meth:`SiteAlgebra.log_normaliser` (optional): log ∫ p₀ Π t̃_i, for the convergent double loop;
* :meth:`SiteAlgebra.joint`: q itself as (Σ, μ) over x, with the rows w_i
  (:attr:`SiteAlgebra.site_rows`, identity when ``None``) and offsets o_i
  (:attr:`SiteAlgebra.site_offsets`), for schedules that visit one site at a time; a site change
  (Δτ, Δν) then updates q by :meth:`SiteAlgebra.update_joint` (a rank-one Sherman–Morrison step,
  Minka 2001; rep spec §3.2 eq. 17).

Everything else (cavities, tilted moments, site updates, damping, relaxation, clipping, skip
counts, convergence) is the engine's, written once in :mod:`gpflow_ep.ep`.
"""

import abc
from typing import NamedTuple, Optional

import tensorflow as tf
from check_shapes import check_shapes

__all__ = ["SiteAlgebra", "SiteMarginals", "JointPosterior"]


class SiteMarginals(NamedTuple):
    mean: tf.Tensor  # [N, 1]
    var: tf.Tensor  # [N, 1]
    proper: tf.Tensor  # [] bool: q is a proper Gaussian (otherwise the moments are finite but meaningless)


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

    @abc.abstractmethod
    @check_shapes(
        "precision: [N, 1]",
        "natural_mean: [N, 1]",
        "return.mean: [N, 1]",
        "return.var: [N, 1]",
        "return.proper: []",
    )
    def marginals(self, precision: tf.Tensor, natural_mean: tf.Tensor) -> SiteMarginals:
        """Means and variances of every site variable under q, [N, 1] each."""

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
        """log ∫ p₀(x) Π_i exp(ν_i h_i - ½ τ_i h_i²) dx, the normaliser of q (needed by the convergent
        double loop, :mod:`gpflow_ep.ep.double_loop`)."""
        raise ValueError(f"{type(self).__name__} has no log normaliser, so the convergent schedule cannot use it")

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
