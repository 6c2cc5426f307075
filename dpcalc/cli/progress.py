"""Progress on stderr for commands that take more than about a second (issue 13).

Counted work (sweep points, values of k) reports each finished item; the bar appears only
once the work has run SHOW_AFTER_SECONDS and items remain. One long computation (a point
at tiny q, a σ calibration) shows a spinner from a timer thread after SHOW_AFTER_SECONDS.
Both only on a terminal, both erased when the work ends, so stdout (tables, JSON, CSV) is
never touched. Where stderr is not a terminal nothing is imported, started or drawn.
Both state the work's size up front (issue 30 §3): the bar its item count, the spinner the
run's steps, phases and accountants (``run_size``), with the time elapsed.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

SHOW_AFTER_SECONDS = 1.0

Advance = Callable[..., None]


class _LazyBar:
    """Counts finished items; draws a Rich bar once ``show_after`` seconds have passed."""

    def __init__(self, description: str, total: int, console, clock, show_after: float):
        self.description, self.total, self.done = description, max(int(total), 1), 0
        self._console, self._clock, self._show_after = console, clock, show_after
        self._started = clock()
        self._progress = self._task = None

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self._progress is None:
            if self._clock() - self._started < self._show_after or self.done >= self.total:
                return
            self._open()
        else:
            self._progress.update(self._task, completed=min(self.done, self.total))

    def _open(self) -> None:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeRemainingColumn)

        self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeRemainingColumn(),
                                  console=self._console or _stderr_console(), transient=True)
        self._task = self._progress.add_task(self.description, total=self.total,
                                             completed=min(self.done, self.total))
        self._progress.start()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def run_size(schedule, names=None) -> str:
    """The size of one run's work, for a progress line: '1,000,000 steps, 2 phases, pb + rdp'."""
    phases = len(getattr(schedule, "phases", ()) or ())
    steps = getattr(schedule, "total_steps", None)
    parts = [] if steps is None else [f"{steps:,} step{'s' * (steps != 1)}"]
    if phases > 1:
        parts.append(f"{phases} phases")
    if names:
        parts.append(" + ".join(names) if len(names) <= 3 else f"{len(names)} accountants")
    return ", ".join(parts)


def _say_nothing(text: str) -> None:
    """waiting's ``say`` where nothing is drawn."""


def _ignore(count: int = 1) -> None:
    """Where no bar is drawn."""


def _stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


@contextmanager
def counted_progress(description: str, total: int, console=None, clock=time.monotonic,
                     show_after: float | None = None) -> Iterator[Advance]:
    """Yields ``advance(count=1)``, to call as items finish. ``console``: a Rich console to
    draw on (tests); by default stderr, and only when it is a terminal. ``show_after``:
    seconds before the bar appears (default SHOW_AFTER_SECONDS)."""
    if console is None and not _stderr_is_terminal():
        yield _ignore
        return
    wait = SHOW_AFTER_SECONDS if show_after is None else show_after
    bar = _LazyBar(description, total, console, clock, wait)
    try:
        yield bar.advance
    finally:
        bar.close()


@contextmanager
def waiting(description: str, console=None,
            show_after: float | None = None) -> Iterator[Callable[[str], None]]:
    """A spinner while the body runs, shown only if it runs longer than ``show_after``
    seconds (default SHOW_AFTER_SECONDS), only on a terminal. Yields ``say(text)``: the
    spinner then reads "description · text" (e.g. a search's trial count)."""
    if console is None and not _stderr_is_terminal():
        yield _say_nothing
        return
    lock, shown, finished, latest = threading.Lock(), [], [], [description]

    def label() -> str:
        return latest[0].replace("[", "\\[")

    def show() -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with lock:
            if finished:
                return
            spinner = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                               TimeElapsedColumn(),
                               console=console or _stderr_console(), transient=True)
            task = spinner.add_task(label(), total=None)
            spinner.start()
            shown.append((spinner, task))

    def say(text: str) -> None:
        with lock:
            latest[0] = f"{description} · {text}"
            for spinner, task in shown:
                spinner.update(task, description=label())

    timer = threading.Timer(SHOW_AFTER_SECONDS if show_after is None else show_after, show)
    timer.daemon = True
    timer.start()
    try:
        yield say
    finally:
        with lock:
            finished.append(True)
            timer.cancel()
            for spinner, _ in shown:
                spinner.stop()
