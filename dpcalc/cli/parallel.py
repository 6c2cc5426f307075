"""Sweeps over σ or q on every core (issue 13): one point-path answer per worker process.

A sweep over steps is one composition (curve.py) and gains nothing here; a sweep over σ
or q is one independent answer per point. Where there are at least MIN_POINTS of them
and more than one core, they go to a pool of processes started by a fork server that has
imported the accounting core once (a fork of this process could inherit a lock held by
one of its threads; spawning each worker would import NumPy again). The answers are the
same numbers in the same order; a pool that cannot start or breaks falls back to this
process.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

# ~0.05-0.3 s a point; the pool costs ~0.3 s of start-up on another core
MIN_POINTS = 12
MAX_WORKERS = 8
_PRELOAD = ["dpcalc.accountants.pb", "dpcalc.accountants.rdp_accountants", "dpcalc.cli.allocator"]


def _worker_start() -> None:
    from dpcalc.cli.allocator import keep_freed_memory

    keep_freed_memory()  # as in the command itself


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _PoolMap:
    """map(function, items), on a process pool when it pays (module doc)."""

    def __init__(self, min_items: int | None = None) -> None:
        self._executor, self._min_items = None, min_items

    def __call__(self, function: Callable, items) -> Iterator:
        items = list(items)
        workers = min(_cores(), MAX_WORKERS, len(items))
        if len(items) < (self._min_items or MIN_POINTS) or workers < 2:
            return map(function, items)
        from concurrent.futures import BrokenExecutor

        with _sigint_deferred():  # every worker is known before a Ctrl-C can stop them
            try:
                executor = self._start(workers)
            except (OSError, ImportError, ValueError):  # no fork server here: this process
                return map(function, items)
            try:  # submitted now: the caller may do other work while the workers compute
                futures = [executor.submit(function, item) for item in items]
            except BrokenExecutor:  # its workers could not start (e.g. a __main__ they cannot load)
                return map(function, items)
        return self._gather(futures, function, items)

    @staticmethod
    def _gather(futures: list, function: Callable, items: list) -> Iterator:
        """The answers in order, each as soon as it is in (a progress bar counts them)."""
        from concurrent.futures import BrokenExecutor

        for index, future in enumerate(futures):
            try:
                yield future.result()  # a worker's error (e.g. DpcalcError) is raised here
            except BrokenExecutor:  # a worker died: the rest in this process
                for item in items[index:]:
                    yield function(item)
                return

    def _start(self, workers: int):
        if self._executor is None:
            # workers load __main__ from its file: none to load (stdin), no pool
            main_path = getattr(sys.modules.get("__main__"), "__file__", None)
            if main_path is not None and not os.path.exists(main_path):
                raise OSError(f"workers cannot load __main__ from {main_path}")
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(_PRELOAD)
            _start_server_without_sigint()
            self._executor = ProcessPoolExecutor(workers, mp_context=context,
                                                 initializer=_worker_start)
        return self._executor

    def close(self, abort: bool = False) -> None:
        """Shut the pool down: after the work, wait for it; on an error or Ctrl-C
        (``abort``), stop the workers at once — waiting let them finish their points, 1-3 s
        after Ctrl-C (issue 30)."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if not abort:
            executor.shutdown(wait=True, cancel_futures=True)
            return
        processes = list((getattr(executor, "_processes", None) or {}).values())
        manager = getattr(executor, "_executor_manager_thread", None)
        executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=2.0)
        # Let the pool's manager thread finish closing its wake-up pipe before the exit
        # handler writes to it: Python 3.11's concurrent.futures races there and prints
        # "Exception ignored … Bad file descriptor" after Ctrl-C.
        if manager is not None:
            manager.join(timeout=2.0)


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """A Ctrl-C while the pool starts its workers is held back until they are all known
    (then raised as usual): one in the middle of a worker's start left that worker running,
    unknown to the pool, to print a traceback once this process had gone. Python runs
    signal handlers in the main thread only, so a handler that records the signal defers
    it whichever thread the kernel delivers it to (blocking it would not: a progress bar's
    thread takes it)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)  # now, to the handler restored


def _start_server_without_sigint() -> None:
    """Start the fork server with SIGINT ignored (an ignored signal stays ignored through
    exec, Python then installs no handler of its own, and the server hands that on to the
    workers it forks): Ctrl-C at the terminal then stops this process alone, which stops
    the workers (``close(abort=True)``), instead of the server printing a KeyboardInterrupt
    traceback from its imports and each worker one from its point. A Ctrl-C in the few
    milliseconds of the server's spawn itself is lost (press it again)."""
    import signal
    import threading
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, handler)


@contextmanager
def points_map(min_items: int | None = None) -> Iterator[Callable]:
    """A map for Accountant.epsilon_curve's ``map_points``; the pool (if one was started)
    is shut down on exit, its workers stopped at once on an error or Ctrl-C.
    ``min_items``: the fewest items worth a pool (default MIN_POINTS; fewer for items that
    each cost a whole curve)."""
    pool = _PoolMap(min_items)
    try:
        yield pool
    except BaseException:
        pool.close(abort=True)
        raise
    pool.close()
