"""gpflow_ep.progress: status lines and progress bars on terminals and log files."""

import io

import pytest

from gpflow_ep.progress import ProgressBar, StatusLine, is_terminal


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_is_terminal_asks_the_stream():
    assert is_terminal(_Terminal()) and not is_terminal(io.StringIO()) and not is_terminal(object())


def test_a_status_line_is_due_once_per_interval():
    line = StatusLine(io.StringIO(), interval=0.2, log_interval=30.0)  # a log file: every 30 s
    assert [line.due(t) for t in (0.0, 10.0, 30.0, 59.0, 60.0)] == [True, False, True, False, True]


@pytest.mark.parametrize("stream", [_Terminal, io.StringIO], ids=["terminal", "log file"])
def test_progress_bar_redraws_on_a_terminal_and_writes_lines_elsewhere(stream):
    """A terminal gets one line redrawn with carriage returns; a file gets one line per log interval."""
    out = stream()
    bar = ProgressBar(total=100, time_budget=None, stream=out, width=4, interval=0.2, log_interval=30.0)
    for step, elapsed in enumerate([0.0, 0.1, 0.3, 10.0, 31.0, 45.0], start=1):
        bar.update(step, 1.0, elapsed)
    bar.close(6, 1.0, 50.0)
    text = out.getvalue()
    if stream is _Terminal:
        assert text.count("\r") == 6 and text.count("\n") == 1  # elapsed 0, 0.3, 10, 31, 45 and the close
        assert text.split("\r")[-1] == "|....|   6% step 6/100    50.0 s  loss 1\n"
    else:
        assert "\r" not in text
        assert [line.split()[3] for line in text.splitlines()] == ["1/100", "5/100", "6/100"]  # 0 s, 31 s, close


def test_progress_bar_follows_the_larger_of_steps_and_time():
    bar = ProgressBar(total=float("inf"), time_budget=10.0, width=10)
    assert bar.render(3, 0.5, 2.5).startswith("|##........|  25% step 3 ")
    bar = ProgressBar(total=8, time_budget=100.0, width=8)
    assert bar.render(6, 0.5, 1.0).startswith("|######..|  75% step 6/8 ")
