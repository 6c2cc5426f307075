"""Progress bars on stderr for slow commands (issue 13): drawn only on a terminal, only once
the work has run a second, never on stdout; the answers are the same with or without."""
from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from dpcalc.cli import progress
from dpcalc.cli.app import app
from tests.conftest import cli_runner


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def terminal() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=True, width=100), buffer


def test_nothing_is_drawn_or_imported_where_stderr_is_not_a_terminal(capsys):
    with progress.counted_progress("work", 10) as advance:
        assert advance is progress._ignore
        for _ in range(10):
            advance()
    assert capsys.readouterr().err == ""


def test_the_bar_waits_a_second_then_counts_and_is_cleared():
    console, buffer = terminal()
    clock = Clock()
    with progress.counted_progress("sweep", 8, console=console, clock=clock) as advance:
        advance(2)  # fast work: no bar yet
        assert buffer.getvalue() == ""
        clock.now = 1.5
        advance()
        drawn = buffer.getvalue()
        assert "sweep" in drawn and "3/8" in drawn
        advance(5)
    assert "8/8" in buffer.getvalue()
    assert buffer.getvalue().endswith("\x1b[1A\x1b[2K")  # transient: its line erased at the end


def test_work_done_within_the_second_draws_nothing():
    console, buffer = terminal()
    clock = Clock()
    with progress.counted_progress("quick", 3, console=console, clock=clock) as advance:
        advance(2)
        clock.now = 2.0
        advance()  # the last item: nothing left to show
    assert buffer.getvalue() == ""


@pytest.mark.parametrize("argv,label,total", [
    (["group", "--k", "1:3", "--batch-size", "64", "--dataset-size", "1000", "--sigma", "1",
      "--steps", "30", "--method", "pb,rdp-group"], "group", 6),
    (["group", "--k", "1,2", "--batch-size", "64", "--dataset-size", "1000", "--steps", "30",
      "--target-epsilon", "8"], "group: σ per k", 2),
    (["compare", "--q", "0.01", "--sigma", "1,2,4", "--steps", "100", "-a", "pb,rdp"],
     "compare: 3 points × 2 accountants", 6),
])
def test_commands_draw_on_stderr_and_print_the_same_answer(monkeypatch, argv, label, total):
    monkeypatch.setattr(progress, "SHOW_AFTER_SECONDS", 0.0)
    drawn = drawn_on_a_terminal(monkeypatch, argv)
    assert label in drawn and f"/{total}" in drawn


def drawn_on_a_terminal(monkeypatch, argv: list[str]) -> str:
    """What the command draws on a (stand-in) terminal stderr, after checking that its
    stdout is the same as without one."""
    runner = cli_runner()
    plain = runner.invoke(app, [*argv, "-f", "json"])
    assert plain.exit_code == 0, plain.output
    console, buffer = terminal()
    monkeypatch.setattr(progress, "_stderr_is_terminal", lambda: True)
    monkeypatch.setattr(progress, "_stderr_console", lambda: console)
    drawn = runner.invoke(app, [*argv, "-f", "json"])
    assert drawn.exit_code == 0, drawn.output
    assert drawn.stdout == plain.stdout
    return buffer.getvalue()


class ImmediateTimer:
    """threading.Timer that fires at start(): the spinner's appearance without a race."""

    def __init__(self, seconds, function):
        self.function, self.daemon = function, False

    def start(self):
        self.function()

    def cancel(self):
        pass


def test_the_spinner_shows_only_for_work_longer_than_the_wait():
    console, buffer = terminal()
    with progress.waiting("quick", console=console, show_after=5.0):
        pass
    assert buffer.getvalue() == ""
    with progress.waiting("slow work", console=console, show_after=0.05):
        time.sleep(0.5)
    drawn = buffer.getvalue()
    assert "slow work" in drawn and drawn.endswith("\x1b[1A\x1b[2K")  # shown, then erased


def test_no_spinner_thread_where_stderr_is_not_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(progress.threading, "Timer", None)  # would fail if one were made
    with progress.waiting("work"):
        pass
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv,label", [
    (["epsilon", "--q", "0.01", "--sigma", "1", "--steps", "1000"],
     "epsilon: composing 1,000 steps"),
    (["delta", "--q", "0.01", "--sigma", "1", "--steps", "1000", "--epsilon", "1"],
     "delta: composing 1,000 steps"),
    (["sigma", "--q", "0.01", "--steps", "1000", "--epsilon", "2", "-a", "rdp"],
     "sigma: calibrating σ (each trial 1,000 steps, rdp)"),
    (["risk", "--q", "0.01", "--sigma", "1", "--steps", "1000"],
     "risk: composing 1,000 steps, pb"),
    (["report", "--q", "0.01", "--sigma", "1", "--steps", "1000"],
     "report: composing 1,000 steps, pb"),
])
def test_single_answers_spin_on_stderr_and_print_the_same(monkeypatch, argv, label):
    monkeypatch.setattr(progress.threading, "Timer", ImmediateTimer)
    assert label in drawn_on_a_terminal(monkeypatch, argv)


def test_the_run_size_names_steps_phases_and_accountants():
    from dpcalc import Phase, Schedule

    assert progress.run_size(Schedule.single(0.01, 1.0, 1_000_000), ["pb", "rdp"]) == \
        "1,000,000 steps, pb + rdp"
    two = Schedule([Phase(0.01, 1.0, 10), Phase(0.02, 2.0, 1)])
    assert progress.run_size(two, ["pb", "rdp", "gdp", "naive"]) == "11 steps, 2 phases, 4 accountants"
    assert progress.run_size(Schedule.single(0.5, 1.0, 1)) == "1 step"


def test_the_sigma_spinner_counts_the_search_trials(monkeypatch):
    monkeypatch.setattr(progress.threading, "Timer", ImmediateTimer)
    drawn = drawn_on_a_terminal(monkeypatch, ["sigma", "--q", "0.01", "--steps", "1000",
                                              "--epsilon", "2"])
    assert "sigma: calibrating σ (each trial 1,000 steps, pb) · pb: trial" in drawn


def test_waiting_says_the_latest_text_and_nothing_off_a_terminal(monkeypatch, capsys):
    console, buffer = terminal()
    monkeypatch.setattr(progress.threading, "Timer", ImmediateTimer)
    with progress.waiting("search", console=console) as say:
        say("trial 1")
        time.sleep(0.3)  # rich refreshes the line ~10 times a second
        say("trial 2")
        time.sleep(0.3)
    assert "search · trial 2" in buffer.getvalue()
    monkeypatch.setattr(progress, "_stderr_is_terminal", lambda: False)
    with progress.waiting("work") as say:
        say("trial 1")  # a no-op
    assert capsys.readouterr().err == ""


def test_dpsgd_sigma_reports_each_trial():
    from dpcalc.calibration.dpsgd import dpsgd_sigma
    from dpcalc.errors import DpcalcError

    trials = []
    found = dpsgd_sigma("pb", 2.0, 1e-5, 0.01, 1000, on_trial=lambda n, s: trials.append((n, s)))
    assert [n for n, _ in trials] == list(range(1, len(trials) + 1)) and len(trials) >= 2
    assert all(s > 0 for _, s in trials) and found.sigma > 0
    with pytest.raises(DpcalcError, match="on_trial"):
        dpsgd_sigma("pb", 2.0, 1e-5, 0.01, 1000, on_trial=3)
