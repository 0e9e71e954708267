"""log_ndtr against SciPy's special.log_ndtr: values to 1e-13 relative, gradients φ/Φ finite everywhere."""

import numpy as np
import tensorflow as tf
from scipy import special

from gpflow_ep.numerics import log_ndtr

#: from x = -1e6 (log Φ ≈ -5e11) through the series' switch at -20 to x = 30 (log Φ ≈ -5e-198)
X = np.concatenate(
    [-np.geomspace(1e-10, 1e6, 3000), np.geomspace(1e-10, 30.0, 2000), [0.0, -20.0, -20.0 - 1e-9, -20.0 + 1e-9]]
)


def test_values_equal_scipy_to_float64_precision():
    """The cancellation-free forms on each side leave a relative error of a few ulps times the branch's error."""
    np.testing.assert_allclose(log_ndtr(tf.constant(X)).numpy(), special.log_ndtr(X), rtol=1e-13, atol=0)


def test_without_the_series_branch_values_and_gradients_equal_scipy():
    """When no element is below -20 the series is not computed; the erfc branches alone are exact."""
    x = tf.constant(X[X >= -20.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        value = log_ndtr(x)
    np.testing.assert_allclose(value.numpy(), special.log_ndtr(x.numpy()), rtol=1e-13, atol=0)
    expected = np.sqrt(2.0 / np.pi) / special.erfcx(-x.numpy() / np.sqrt(2.0))
    np.testing.assert_allclose(tape.gradient(value, x).numpy(), expected, rtol=1e-12, atol=0)


def test_gradient_is_the_inverse_mills_ratio_and_finite_everywhere():
    x = tf.constant(np.concatenate([X, [-1e150, 1e150, 40.0, 60.0]]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        value = log_ndtr(x)
    gradient = tape.gradient(value, x).numpy()
    assert np.all(np.isfinite(gradient))
    # φ(x)/Φ(x) = √(2/π) / erfcx(-x/√2), without cancellation for x ≪ 0 (SciPy's scaled erfc)
    expected = np.sqrt(2.0 / np.pi) / special.erfcx(-X / np.sqrt(2.0))
    np.testing.assert_allclose(gradient[: len(X)], expected, rtol=1e-12, atol=0)


def test_second_derivative_is_that_of_the_mills_ratio():
    """d²/dx² log Φ(x) = -r(x + r), r = φ/Φ (differentiating the gradient itself), on both sides of x = -20."""
    x = tf.constant(np.concatenate([np.linspace(-60.0, 8.0, 681), [-20.0, 30.0, 40.0, 60.0, -1e3]]))
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            value = log_ndtr(x)
        gradient = inner.gradient(value, x)
    second = outer.gradient(gradient, x).numpy()
    r = np.sqrt(2.0 / np.pi) / special.erfcx(-x.numpy() / np.sqrt(2.0))
    # -r(x + r) cancels for x ≪ 0 (≈ -1 + 2/x²): r is accurate to ~1e-15, so the difference to |x|·r·1e-14
    np.testing.assert_allclose(second, -r * (x.numpy() + r), rtol=0, atol=1e-14 * np.max(np.abs(x.numpy()) * r))
