"""Run several accountants on one schedule; one failing accountant is reported, not fatal.

An accountant that fails inside — any exception but DpcalcError (bad input, raised as it
is), or an InvalidResult (a NaN it computed) — gives an :class:`EpsilonResult` with ``error`` set ("Type: message"), ε None,
``certified`` False and a note "internal error: …": never a number, never labelled
certified. The CLI shows it as kind "error" and exits with its internal-error code when
it is the accountant whose ε the command reports (cli/app.py, cli/output/records.py).
"""
from __future__ import annotations

import logging
from typing import Callable

from dpcalc.accountants.registry import get_accountant
from dpcalc.accountants.result import EpsilonResult
from dpcalc.models.schedule import Schedule
from dpcalc.errors import DpcalcError, InconsistentBounds, InvalidResult
from dpcalc.params import check_callable, check_items, check_positive, shown

# Constructor options each accountant understands.
_OPTIONS = {"pb": ("tolerance", "start_tolerance", "upper_only")}


def make_accountant(name: str, **options):
    """The accountant ``name`` with the options it takes (the others are ignored)."""
    if not isinstance(name, str):
        return get_accountant(name)  # raises the one-line error naming the valid names
    wanted = {key: value for key, value in options.items()
              if key in _OPTIONS.get(name, ()) and value is not None}
    return get_accountant(name, **wanted)


def epsilon_results(names: list[str], schedule: Schedule, delta: float,
                    **options) -> list[EpsilonResult]:
    """ε from each named accountant, in order."""
    return epsilon_curves(names, [schedule], delta, **options)[0]


def _check_names(names) -> list[str]:
    names = check_items(names, "names", "accountant names")
    for name in names:
        if not isinstance(name, str):
            raise DpcalcError(f"names must be accountant names (text); got {shown(name)}")
    return names


def _check_options(options: dict) -> dict:
    for key in ("tolerance", "start_tolerance"):
        if options.get(key) is not None:
            options[key] = check_positive(options[key], key)
    return options


def epsilon_curves(names: list[str], schedules: list[Schedule], delta: float,
                   on_done: Callable[[int], None] | None = None,
                   map_points: Callable | None = None,
                   **options) -> list[list[EpsilonResult]]:
    """Per schedule, ε from each named accountant, in order; each accountant answers all
    schedules at once (Accountant.epsilon_curve: one composition for a curve over T).
    ``on_done(n)``: called as n more (accountant, schedule) answers are in, of
    len(names)·len(schedules) (a progress bar's count). ``map_points``: as
    Accountant.epsilon_curve's (e.g. a process pool's map)."""
    names = _check_names(names)
    schedules = check_items(schedules, "schedules", "dpcalc Schedules", empty=True)
    check_callable(on_done, "on_done", optional=True)
    check_callable(map_points, "map_points", optional=True)
    options = _check_options(dict(options))
    accountants = [make_accountant(name, **options) for name in names]  # bad names first
    columns = []
    for name, accountant in zip(names, accountants):
        try:
            columns.append(accountant.epsilon_curve(schedules, delta, on_done, map_points))
        except InvalidResult:  # the accountant computed a non-result (NaN ε): point by point
            columns.append([_one(accountant, name, schedule, delta) for schedule in schedules])
        except DpcalcError:
            raise
        except InconsistentBounds as error:  # a bug: shown on every point, never papered over
            columns.append([failed_result(name, error) for _ in schedules])
        except Exception:  # e.g. one point too large: one by one, each failure its own row
            columns.append([_one(accountant, name, schedule, delta) for schedule in schedules])
    return [list(row) for row in zip(*columns)]


def failed_result(name: str, error: BaseException) -> EpsilonResult:
    """The row of an accountant that failed inside: no value, not certified, the error."""
    what = f"{type(error).__name__}: {' '.join(str(error).split())}"[:300]
    # the traceback, for whoever reads the "dpcalc" logger (the CLI's --debug does)
    logging.getLogger("dpcalc").debug("accountant %s failed inside", name, exc_info=error)
    return EpsilonResult(name, None, False, notes=(f"internal error: {what}",), error=what)


def _one(accountant, name: str, schedule: Schedule, delta: float) -> EpsilonResult:
    """One schedule's result, or the failure as a row of its own."""
    try:
        return accountant.epsilon(schedule, delta)
    except InvalidResult as error:  # computed, not given: a failure inside
        return failed_result(name, error)
    except DpcalcError:
        raise
    except Exception as error:
        return failed_result(name, error)
