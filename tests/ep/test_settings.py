"""EPSettings (gpflow_ep.ep.settings): defaults resolved to the numbers in force, kept by updated, traced by value."""

import pytest
import tensorflow as tf

from gpflow_ep.ep import EPSettings
from gpflow_ep.ep.settings import DEFAULT_DAMPING


def test_a_defaulted_damping_is_the_schedules_number():
    """``damping=None`` means the schedule's default; the settings hold that number, for every reader."""
    assert EPSettings().damping == DEFAULT_DAMPING["parallel"] == 0.8
    assert EPSettings(schedule="sequential").damping == DEFAULT_DAMPING["sequential"] == 1.0
    assert EPSettings(damping=None, schedule="sequential").damping == 1.0
    assert "damping=0.8" in repr(EPSettings())


def test_updated_schedule_follows_a_defaulted_damping_and_keeps_a_given_one():
    defaulted = EPSettings()
    assert defaulted.updated(schedule="sequential").damping == 1.0
    assert defaulted.updated(schedule="sequential").updated(schedule="parallel").damping == 0.8
    assert defaulted.updated(tol=1e-8).updated(schedule="sequential").damping == 1.0  # through other changes too
    assert EPSettings(damping=0.5).updated(schedule="sequential").damping == 0.5
    # given equal to the default is still given: the user asked for 0.8
    assert EPSettings(damping=0.8).updated(schedule="sequential").damping == 0.8
    assert defaulted.updated(damping=0.3).updated(schedule="sequential").damping == 0.3


def test_the_bookkeeping_is_not_an_option():
    """Two settings that run the same EP are equal (and hash equal) whether the damping was given or not;
    the private flag is no option of ``updated`` and not in the repr."""
    assert EPSettings() == EPSettings(damping=0.8) and hash(EPSettings()) == hash(EPSettings(damping=0.8))
    assert EPSettings() != EPSettings(damping=0.5)
    assert "_damping_is_default" not in repr(EPSettings()) and "_damping_is_default" not in EPSettings.option_names()
    with pytest.raises(ValueError, match="_damping_is_default"):
        EPSettings().updated(_damping_is_default=False)


def test_settings_are_traced_by_value_with_the_damping_in_force():
    """A tf.function traces equal settings once and sees the resolved damping as a constant."""

    @tf.function(autograph=False)
    def damping_of(settings):
        return tf.constant(settings.damping, tf.float64)

    assert float(damping_of(EPSettings())) == 0.8
    assert float(damping_of(EPSettings(damping=0.8))) == 0.8
    assert damping_of.experimental_get_tracing_count() == 1
    assert float(damping_of(EPSettings().updated(schedule="sequential"))) == 1.0
    assert float(damping_of(EPSettings(damping=0.5))) == 0.5
    assert damping_of.experimental_get_tracing_count() == 3
