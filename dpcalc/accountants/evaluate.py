"""Run several accountants on one schedule; one failing accountant is reported, not fatal."""
from __future__ import annotations

from typing import Callable

from dpcalc.accountants.registry import get_accountant
from dpcalc.accountants.result import EpsilonResult
from dpcalc.models.schedule import Schedule
from dpcalc.errors import DpcalcError, InconsistentBounds

# Constructor options each accountant understands.
_OPTIONS = {"pb": ("tolerance", "start_tolerance")}


def make_accountant(name: str, **options):
    """The accountant ``name`` with the options it takes (the others are ignored)."""
    wanted = {key: value for key, value in options.items()
              if key in _OPTIONS.get(name, ()) and value is not None}
    return get_accountant(name, **wanted)


def epsilon_results(names: list[str], schedule: Schedule, delta: float,
                    **options) -> list[EpsilonResult]:
    """ε from each named accountant, in order."""
    return epsilon_curves(names, [schedule], delta, **options)[0]


def epsilon_curves(names: list[str], schedules: list[Schedule], delta: float,
                   on_done: Callable[[int], None] | None = None,
                   map_points: Callable | None = None,
                   **options) -> list[list[EpsilonResult]]:
    """Per schedule, ε from each named accountant, in order; each accountant answers all
    schedules at once (Accountant.epsilon_curve: one composition for a curve over T).
    ``on_done(n)``: called as n more (accountant, schedule) answers are in, of
    len(names)·len(schedules) (a progress bar's count). ``map_points``: as
    Accountant.epsilon_curve's (e.g. a process pool's map)."""
    columns = []
    for name in names:
        accountant = make_accountant(name, **options)
        try:
            columns.append(accountant.epsilon_curve(schedules, delta, on_done, map_points))
        except DpcalcError:
            raise
        except InconsistentBounds as error:  # a bug: shown on every point, never papered over
            columns.append([_failed(accountant, name, error) for _ in schedules])
        except (ArithmeticError, ValueError, MemoryError):  # e.g. one point too large: one by one
            columns.append([_one(accountant, name, schedule, delta) for schedule in schedules])
    return [list(row) for row in zip(*columns)]


def _failed(accountant, name: str, error: Exception) -> EpsilonResult:
    """No value, and the failure as a note."""
    return EpsilonResult(name, None, accountant.certified,
                         notes=(f"failed: {type(error).__name__}: {error}",))


def _one(accountant, name: str, schedule: Schedule, delta: float) -> EpsilonResult:
    """One schedule's result, or the failure as a note."""
    try:
        return accountant.epsilon(schedule, delta)
    except DpcalcError:
        raise
    except (ArithmeticError, ValueError, MemoryError) as error:
        return _failed(accountant, name, error)
