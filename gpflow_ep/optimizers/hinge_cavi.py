r"""
Coordinate ascent (natural-gradient steps) on q(u) of a ``gpflow.models.SVGP`` with a hinge
pseudo-likelihood: the Bayesian SVM's Algorithm 1 (Wistuba & Rawat 2018, App. C), **corrected**
(the sign of the η₁ update and the minibatch scale; see below).

With q(λ_n) = GIG(½, 1, α_n) at its optimum α_n = E_q[b_n²] (where the paper's
Eq. (40) vanishes; Algorithm 1, line 4), point n is a Gaussian
pseudo-observation on d_n = c_nᵀ f(x_n), where b_n = 1 - d_n and

* ``MultiClassHinge``: c_n = e_{y_n} - e_{t_n}, the competitor t_n = argmax_{j≠y_n} E[f_j(x_n)]
  (the paper's t_n = argmax_{t≠y_n} f_t(x_n) below its Eq. (12), at the predictive mean; held fixed
  during the step);
* ``BinaryHinge``: c_n = y_n ∈ {-1, +1} (Wenzel et al. 2017, the one-latent case).

Up to terms free of q(u), the per-point term of the uncollapsed ELBO (E_q[log φ_n] + H[q(λ_n)] for the
augmented factor φ_n = (2πλ_n)^{-½} exp(-(b_n + λ_n)²/(2λ_n)) of the paper's Theorem 1, Eq. (7))
is

    ℓ_n = (1 + r_n) E[d_n] - ½ r_n E[d_n²],     r_n = E[1/λ_n] = α_n^{-1/2},

so with f_j(x_n) = a_nᵀ u_j + μ₀_j(x_n) and q(u) = Π_j N(μ_j, Σ_j), the maximiser over one q(u_j),
with α, t and the other classes fixed, has precision and precision-times-mean

    Λ̂_j = P₀ + s Σ_n r_n c_{nj}² a_n a_nᵀ,
    η̂_j = s Σ_n c_{nj} [1 + r_n (1 - E[d_n] + c_{nj} a_nᵀ μ_j)] a_n,

with s = N / |B| for a minibatch B (the paper's Eqs. (45)–(46) are
written for one point scaled by N), and a_n = K_uu⁻¹ k_u(x_n), P₀ = K_uu⁻¹ when
``whiten=False``, a_n = L⁻¹ k_u(x_n), P₀ = I when ``whiten=True`` (L Lᵀ = K_uu). For the multi-class
likelihood and zero mean function this is the corrected Eqs. (45)–(46) (η̂_{1,j} = η̂_j,
η̂_{2,j} = -½ Λ̂_j):
a_n [1 + r_n (1 + m_{n,t_n})] for j = y_n and -a_n [1 + r_n (1 - m_{n,y_n})] for j = t_n.

A step of size ρ (``step_size``) moves the natural parameters (Λ_j, η_j) a fraction ρ towards
(Λ̂_j, η̂_j): a natural-gradient step of size ρ on the ELBO. With ρ = 1, the full batch and one class
it is the exact coordinate-ascent step; updating every class at once with ρ = 1 can stall or
oscillate as the competitors switch (seen on a 3-class toy), hence the default ρ = 0.5. The paper's
printed η₁ update (App. C, Eq. (45), derived in Eqs. (42)–(44)) converts μ_j = +½η₂⁻¹η₁ (it is
-½η₂⁻¹η₁, since η₂ = -½Σ⁻¹) and adds an overall minus when solving Eq. (44) for η₁; it pushes the
competitor class up and is not offered.

Only q(u) changes. Learn the kernel and inducing inputs by gradient steps on the ELBO between CAVI
steps, with ``q_mu`` and ``q_sqrt`` not trainable (by the envelope theorem the gradient of the
collapsed ELBO is that of the uncollapsed one at α = α*).
"""

from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
from gpflow import covariances
from gpflow.config import default_jitter
from gpflow.inducing_variables import InducingPoints
from gpflow.kernels import MultioutputKernel
from gpflow.models import SVGP

from ..likelihoods.hinge import BinaryHinge
from ..likelihoods.labels import binary_labels_to_sign
from ..likelihoods.multiclass_hinge import MultiClassHinge
from ..validation import check_binary_labels, check_class_labels, check_inputs, check_range

__all__ = ["HingeCAVI"]


class HingeCAVI:
    """
    Corrected coordinate ascent on q(u) of an ``SVGP`` with ``BinaryHinge`` or ``MultiClassHinge``
    (module docstring)::

        cavi = HingeCAVI(step_size=0.5)
        gpflow.set_trainable(model.q_mu, False); gpflow.set_trainable(model.q_sqrt, False)
        adam = tf_keras.optimizers.Adam(0.01)
        for X, Y in batches:
            cavi.step(model, (X, Y))
            adam.minimize(model.training_loss_closure((X, Y)), model.trainable_variables)

    :param step_size: ρ in (0, 1], the fraction of the way to the coordinate-ascent optimum.
    """

    def __init__(self, step_size: float = 0.5):
        self.step_size = check_range(step_size, "step_size", 0.0, 1.0)
        self._compiled = {}

    def step(self, model: SVGP, data, classes: Optional[Sequence[int]] = None) -> None:
        """
        One step on the batch ``data = (X, Y)`` (the scale s = ``model.num_data`` / len(X)).

        :param classes: the latent functions to update (default all); the others keep their q(u_j).
        """
        X, Y = self._check(model, data)
        num_latent = int(model.q_mu.shape[-1])
        mask = np.ones(num_latent) if classes is None else np.zeros(num_latent)
        if classes is not None:
            for j in classes:
                if not 0 <= int(j) < num_latent:
                    raise ValueError(f"classes must lie in [0, {num_latent}); got {list(classes)}")
                mask[int(j)] = 1.0
        key = id(model)
        if key not in self._compiled:
            self._compiled[key] = tf.function(lambda X, Y, mask: self._update(model, X, Y, mask), autograph=False)
        dtype = model.q_mu.dtype
        self._compiled[key](tf.constant(X, dtype), tf.constant(Y, dtype), tf.constant(mask, dtype))

    @staticmethod
    def _check(model, data):
        if not isinstance(model, SVGP):
            raise ValueError(f"model must be a gpflow.models.SVGP; got {type(model).__name__}")
        if not isinstance(model.likelihood, (BinaryHinge, MultiClassHinge)):
            raise ValueError(
                f"model.likelihood must be BinaryHinge or MultiClassHinge; got {type(model.likelihood).__name__}"
            )
        if len(model.q_sqrt.shape) != 3:
            raise ValueError("model must have q_diag=False (the update gives a full covariance)")
        if isinstance(model.kernel, MultioutputKernel) or type(model.inducing_variable) is not InducingPoints:
            raise ValueError("model must have one shared (single-output) kernel and InducingPoints")
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise ValueError("data must be a tuple (X, Y)")
        X = check_inputs(data[0], "data[0] (X)")
        input_dim = int(model.inducing_variable.Z.shape[1])
        if X.shape[1] != input_dim:
            raise ValueError(f"data[0] (X) must have {input_dim} columns, as the inducing inputs; got {X.shape[1]}")
        Y = np.asarray(data[1].numpy() if hasattr(data[1], "numpy") else data[1])
        if isinstance(model.likelihood, BinaryHinge):
            Y = check_binary_labels(Y, "data[1] (Y)")
        else:
            Y = check_class_labels(Y, model.likelihood.num_classes, "data[1] (Y)")
        if Y.shape[0] != X.shape[0] or X.shape[0] == 0:
            raise ValueError(f"data: X has {X.shape[0]} rows and Y has {Y.shape[0]}; they must match and be > 0")
        return X, Y

    def _update(self, model, X, Y, mask):
        dtype = model.q_mu.dtype
        Kuu = covariances.Kuu(model.inducing_variable, model.kernel, jitter=default_jitter())
        Kuf = covariances.Kuf(model.inducing_variable, model.kernel, X)
        L = tf.linalg.cholesky(Kuu)
        A = tf.linalg.triangular_solve(L, Kuf, lower=True)  # [M, N]
        M = tf.shape(Kuu)[0]
        if model.whiten:
            prior_precision = tf.eye(M, dtype=dtype)
        else:
            A = tf.linalg.triangular_solve(L, A, lower=True, adjoint=True)  # K_uu⁻¹ k_u(x_n)
            prior_precision = tf.linalg.cholesky_solve(L, tf.eye(M, dtype=dtype))

        mean, var = model.predict_f(X)  # [N, P]: the marginals of the ELBO
        c = self._directions(model.likelihood, mean, Y)  # [N, P]
        mean_d = tf.reduce_sum(c * mean, -1)  # E[d_n]
        alpha = tf.square(1.0 - mean_d) + tf.reduce_sum(tf.square(c) * var, -1)  # E[b_n²]
        r = tf.math.rsqrt(alpha)  # E[1/λ_n]
        scale = tf.cast(model.num_data, dtype) / tf.cast(tf.shape(X)[0], dtype)

        own = tf.linalg.matmul(A, model.q_mu, transpose_a=True)  # a_nᵀ μ_j, [N, P]
        linear = c * (1.0 + r[:, None] * (1.0 - mean_d[:, None] + c * own))  # [N, P]
        weights = r[:, None] * tf.square(c)  # [N, P]
        eta_hat = scale * tf.linalg.matmul(A, linear)  # [M, P]
        A_weighted = A[None, :, :] * tf.transpose(weights)[:, None, :]  # [P, M, N]
        precision_hat = prior_precision + scale * tf.linalg.matmul(A_weighted, A, transpose_b=True)  # [P, M, M]

        q_sqrt = model.q_sqrt  # [P, M, M], lower triangular
        eye = tf.eye(M, batch_shape=[tf.shape(q_sqrt)[0]], dtype=dtype)
        precision = tf.linalg.cholesky_solve(q_sqrt, eye)  # Σ_j⁻¹
        q_mu_t = tf.transpose(model.q_mu)[:, :, None]  # [P, M, 1]
        eta = tf.linalg.matmul(precision, q_mu_t)
        rho = self.step_size
        precision_new = (1.0 - rho) * precision + rho * precision_hat
        eta_new = (1.0 - rho) * eta + rho * tf.transpose(eta_hat)[:, :, None]
        chol = tf.linalg.cholesky(precision_new)
        mu_new = tf.linalg.cholesky_solve(chol, eta_new)[:, :, 0]  # [P, M]
        cov_new = tf.linalg.cholesky_solve(chol, eye)
        sqrt_new = tf.linalg.cholesky(0.5 * (cov_new + tf.linalg.matrix_transpose(cov_new)))
        keep = tf.equal(mask, 0.0)
        model.q_mu.assign(tf.where(keep[None, :], model.q_mu, tf.transpose(mu_new)))
        model.q_sqrt.assign(tf.where(keep[:, None, None], q_sqrt, sqrt_new))

    @staticmethod
    def _directions(likelihood, mean, Y):
        """c_n: y_n for the binary hinge, e_{y_n} - e_{t_n} for the multi-class hinge, [N, P]."""
        if isinstance(likelihood, BinaryHinge):
            return tf.cast(binary_labels_to_sign(Y), mean.dtype)
        own = tf.one_hot(tf.cast(Y[:, 0], tf.int32), likelihood.num_classes, dtype=mean.dtype)
        masked = tf.where(own > 0, tf.constant(-np.inf, mean.dtype), mean)
        rival = tf.one_hot(tf.argmax(masked, axis=-1, output_type=tf.int32), likelihood.num_classes, dtype=mean.dtype)
        return own - rival
