r"""
EP tilted moments of GPflow's ``StudentT`` from its scale-mixture form: a smooth one-dimensional
integral over the mixing precision instead of the kinked integral over f.

With r = y - f, scale σ and ν degrees of freedom, p(y | f)^α = C^α (1 + r²/(νσ²))^(-a) with
a = α(ν + 1)/2 and C = Γ((ν+1)/2) / (Γ(ν/2) √(νπ) σ), and (1 + u)^(-a) = Γ(a)⁻¹ ∫ λ^(a-1) e^(-λ(1+u)) dλ
(the Gamma integral; at α = 1 this is the Student-t as a Gaussian scale mixture, :cite:t:`Geweke1993`;
:cite:t:`Jylanki2011`, §2). Integrating the Gaussian in f first, with s(λ) = νσ²/(2λ)
and d = y - m,

    Z(m, v) = C^α Γ(a)⁻¹ ∫ H(t) dt,   H(t) = exp(a t - eᵗ) √(s / (v + s)) exp(-d² / (2(v + s))),  λ = eᵗ,

and, as each λ contributes a Gaussian N(y; m, v + s) in m, with q = 1/(v + s) and E the average
under the normalised H,

    ∂log Z/∂m = E[d q],   ∂²log Z/∂m² = Var[d q] - E[q].

H is analytic and decays exponentially on both sides (like e^(a t) as t → -∞, like exp(-eᵗ) as t → ∞),
so the trapezoid rule in t converges geometrically (:cite:t:`Trefethen2014`, §5). The rule: log H is
probed at t = -80, -79.5, …, 10 (no likelihood evaluations: a few exponentials); the window is the
probes within 45 nats of the largest, widened by one probe on each side; 128 equispaced trapezoid nodes
span it. The window and nodes are held fixed under differentiation (``tf.stop_gradient``), so gradients
in m, v, σ and ν are those of the quadrature sum.

**Accuracy**: to the same 1e-8 relative in log Z and both derivatives as the generic adaptive rule
(``tests/ep/test_tilted.py``, case ``student_t``; ``tests/likelihoods/test_gpflow_tilted.py`` for
ν ∈ {3, 4, 10, 100} at α ∈ {1, ½} against SciPy), over cavity variances 1e-4…1e3 and means ±50,
**for a = α(ν + 1)/2 ≥ 1.25** (e.g. ν ≥ 1.5 at α = 1, ν ≥ 4 at α = ½). For smaller a the left tail
(e^(a t)) makes the 45-nat window wider than 128 nodes resolve, and the generic adaptive rule of
:mod:`gpflow_ep.ep.quadrature` is used instead. For a ν that is a number (GPflow's default) the rule
is chosen in Python, so the graph holds that rule alone (a ``tf.cond`` on a constant predicate leaves
Grappler a dead branch to prune, which it reports on stderr, and, differentiated, made TensorFlow's
type inference report a failure); for a learned ν it is a ``tf.cond`` whose gradient differentiates
the chosen rule only (:func:`_either_rule`).

**Cost**: 181 probes and 128 nodes of a few exponentials per site, no evaluation of the likelihood
(the generic rule makes ~1,900); timings against the generic rule are in the documentation's
benchmark pages ("Cost of the engine's numerical rules").
"""

import numpy as np
import tensorflow as tf

from ..ep.tilted import quadrature_tilted_moments

__all__ = ["student_t_tilted", "MIN_SHAPE"]

MIN_SHAPE = 1.25  # a = α(ν + 1)/2 below which the generic adaptive rule is used
_PROBES = np.arange(-80.0, 10.0 + 0.25, 0.5)
_DEPTH = 45.0  # nats below the largest probe: e^-45 ≈ 3e-20
_NODES = 128


def _log_h(t, a, c, d2, v):
    """log H(t) of the module docstring, with s = c e^(-t), c = νσ²/2."""
    s = c * tf.exp(-t)
    return a * t - tf.exp(t) - 0.5 * tf.math.log1p(v / s) - 0.5 * d2 / (v + s)


def _window(a, c, d2, v):
    """Ends (L, R) of the probes within ``_DEPTH`` nats of the largest, widened by one probe each side."""
    probes = tf.constant(_PROBES.reshape((-1,) + (1,) * len(v.shape)), v.dtype)
    values = _log_h(probes, a, c, d2, v)
    within = values > tf.reduce_max(values, axis=0) - _DEPTH
    count = len(_PROBES)
    first = tf.argmax(tf.cast(within, tf.int32), axis=0, output_type=tf.int32)
    last = count - 1 - tf.argmax(tf.cast(within[::-1], tf.int32), axis=0, output_type=tf.int32)
    lo = tf.gather(_PROBES, tf.maximum(first - 1, 0))
    hi = tf.gather(_PROBES, tf.minimum(last + 1, count - 1))
    return tf.cast(lo, v.dtype), tf.cast(hi, v.dtype)


def _mixture_rule(Y, m, v, scale, df, power):
    dtype = m.dtype
    df, scale = tf.cast(df, dtype), tf.cast(scale, dtype)
    a = power * (df + 1.0) / 2.0
    c = df * tf.square(scale) / 2.0
    d = Y - m
    d2 = tf.square(d)
    lo, hi = _window(*(tf.stop_gradient(x) for x in (a, c, d2, v)))
    k = tf.constant(np.linspace(0.0, 1.0, _NODES).reshape((-1,) + (1,) * len(v.shape)), dtype)
    t = tf.stop_gradient(lo + (hi - lo) * k)  # [Q, ..., N, 1]
    log_step = tf.math.log((hi - lo) / (_NODES - 1))
    log_terms = _log_h(t, a, c, d2, v)
    log_sum = tf.reduce_logsumexp(log_terms, axis=0)
    log_const = (
        tf.math.lgamma((df + 1.0) / 2.0) - tf.math.lgamma(df / 2.0) - 0.5 * tf.math.log(df * np.pi) - tf.math.log(scale)
    )
    log_z = power * log_const - tf.math.lgamma(a) + log_sum + log_step
    weights = tf.exp(log_terms - log_sum)
    q = 1.0 / (v + c * tf.exp(-t))
    dq = d * q
    mean_dq = tf.reduce_sum(weights * dq, axis=0)
    d2log_z = tf.reduce_sum(weights * tf.square(dq - mean_dq), axis=0) - tf.reduce_sum(weights * q, axis=0)
    return log_z, mean_dq, d2log_z


def student_t_tilted(likelihood, X, Y, m, v, power):
    """log Z, ∂log Z/∂m, ∂²log Z/∂m² of p(y | f)^α N(f; m, v) for GPflow's ``StudentT`` (module docstring)."""
    m = tf.convert_to_tensor(m)
    v = tf.convert_to_tensor(v, dtype=m.dtype)
    Y = tf.cast(Y, m.dtype)
    m, v = m + tf.zeros_like(v), v + tf.zeros_like(m)
    Y = Y + tf.zeros_like(m)

    def mixture(m, v):
        return _mixture_rule(Y, m, v, likelihood.scale, likelihood.df, power)

    def generic(m, v):
        return tuple(quadrature_tilted_moments(likelihood, X, Y, m, v, power))

    df = likelihood.df
    if isinstance(df, (int, float, np.number, np.ndarray)):  # GPflow's default: ν a number, the rule known now
        return mixture(m, v) if power * (float(df) + 1.0) / 2.0 >= MIN_SHAPE else generic(m, v)
    use_mixture = power * (tf.cast(df, m.dtype) + 1.0) / 2.0 >= MIN_SHAPE
    if tf.executing_eagerly():
        return mixture(m, v) if bool(use_mixture) else generic(m, v)
    return _either_rule(use_mixture, mixture, generic, m, v)


def _either_rule(use_mixture, mixture, generic, m, v):
    r"""
    ``tf.cond(use_mixture, mixture, generic)`` of (m, v), for a ν learned as a ``gpflow.Parameter``,
    with a gradient that differentiates the chosen rule alone (recomputing it in the backward pass).
    TensorFlow's own gradient of a ``tf.cond`` has each branch output its intermediates wrapped in
    optionals matched by position only; where the two rules' intermediates differ in type (a bool of
    the generic rule against a float of the mixture) its graph type inference can report a failure on
    stderr (it did for ``EPGP``'s nested training loss). Here no ``tf.cond`` is differentiated.
    """

    @tf.custom_gradient
    def select(m, v):
        values = tf.cond(use_mixture, lambda: mixture(m, v), lambda: generic(m, v))

        def grad(*output_grads, variables=None):
            variables = list(variables or [])
            output_grads = [tf.zeros_like(x) if g is None else g for g, x in zip(output_grads, values)]

            def backward(rule):
                def run():
                    with tf.GradientTape() as tape:
                        tape.watch([m, v])
                        out = rule(m, v)
                    return tape.gradient(
                        out, [m, v] + variables, output_grads, unconnected_gradients=tf.UnconnectedGradients.ZERO
                    )

                return run

            grads = tf.cond(use_mixture, backward(mixture), backward(generic))
            return (grads[:2], grads[2:]) if variables else grads[:2]

        return values, grad

    return select(m, v)
