"""
The ``robust_settings`` preset (Jylänki, Vanhatalo & Vehtari 2011): damped fractional parallel EP with
the double-loop fallback, through ``run_ep`` and through hyper-parameter learning (kernel, Student-t
scale and degrees of freedom ν) with the nested training loss.
"""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from neal_data import neal_outlier_data, student_t_epgp

from gpflow_ep.ep import EPSettings, robust_settings

#: undamped EP (α = 1, ρ = 1) as the parallel phase: it does not converge on the data below
PLAIN = dict(power=1.0, damping=1.0, max_sweeps=300)


def test_preset_options():
    settings = EPSettings().updated(**robust_settings())
    assert (settings.schedule, settings.power, settings.damping, settings.max_sweeps) == ("robust", 0.5, 0.5, 1000)
    assert robust_settings(fallback=False)["schedule"] == "parallel"
    with pytest.raises(ValueError, match="fallback"):
        robust_settings(fallback="yes")


def _fallback_used(model) -> bool:
    """Whether the double loop took over in any EP run so far (recorded by every run in ep_diagnostics)."""
    return int(model.ep_diagnostics.fallbacks.numpy()) > 0


def _check_learning(model, losses, converged, fell_back, start):
    assert losses and np.all(np.isfinite(losses))
    assert all(converged), converged
    assert any(fell_back), "the fallback was never needed: the test does not exercise it"
    assert losses[-1] < start  # the evidence improved
    df = model.likelihood.df.numpy()
    assert np.isfinite(df) and df != 2.0  # ν was learned


@pytest.mark.slow
def test_learning_with_scipy_converges_where_plain_parallel_ep_does_not():
    """
    gpflow.optimizers.Scipy on the nested (compiled) training loss, learning the kernel, the Student-t
    scale and ν: undamped parallel EP alone does not converge on these data; with the fallback, EP
    converges at the first loss evaluation and at every step (recorded by the step callback), and every
    loss is finite. (Once the hyper-parameters have moved, undamped parallel EP may converge on its own.)
    """
    data = neal_outlier_data()
    plain = student_t_epgp(data, **robust_settings(**PLAIN, fallback=False))
    with pytest.warns(Warning):
        assert not bool(plain.run_ep().converged)
    model = student_t_epgp(data, **robust_settings(**PLAIN))
    start = float(model.training_loss())  # at the initial hyper-parameters parallel EP fails: the fallback runs
    losses, converged, fell_back = [], [bool(model.ep_diagnostics.converged.numpy())], [_fallback_used(model)]

    def callback(*_):
        losses.append(float(model.log_marginal_likelihood()) * -1.0)  # at the last evaluation's sites
        converged.append(bool(model.ep_diagnostics.converged.numpy()))
        fell_back.append(_fallback_used(model))

    gpflow.optimizers.Scipy().minimize(
        model.training_loss, model.trainable_variables, options=dict(maxiter=10), step_callback=callback
    )
    _check_learning(model, losses, converged, fell_back, start)


@pytest.mark.slow
def test_learning_with_adam_converges_where_plain_parallel_ep_does_not():
    """Adam on the compiled nested training loss: as with Scipy (the data are the same)."""
    model = student_t_epgp(neal_outlier_data(), **robust_settings(**PLAIN))
    variables = model.trainable_variables
    optimizer = tf.optimizers.Adam(0.05)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = model.training_loss()
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    losses, converged, fell_back = [], [], []
    for _ in range(8):
        losses.append(float(step()))
        converged.append(bool(model.ep_diagnostics.converged.numpy()))
        fell_back.append(_fallback_used(model))
    _check_learning(model, losses, converged, fell_back, losses[0])
