"""--max-epsilon: the budget gate of every command that reports ε.

The gate checks the ε the command reports (its first accountant or method; every row of
it in a sweep or over k) against the budget. The JSON output carries
``"budget": {"max_epsilon", "epsilon", "accountant", "passed"}``; a failed gate prints
one line on stderr and exits 1, the only exit code 1 dpcalc uses. A reader that closes
stdout early (``| head -1``) does not change the verdict.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import typer

from dpcalc.cli.output.numbers import APPROXIMATION
from dpcalc.errors import DpcalcError
from dpcalc.params import check_nonnegative

MAX_EPSILON = typer.Option(None, "--max-epsilon", metavar="FLOAT",
                           help="Budget gate: exit 1 if the reported ε (first accountant; every "
                                "row of it) exceeds this. JSON adds \"budget\".")


@dataclass(frozen=True)
class Budget:
    """The verdict: the largest ε checked (None if one could not be computed)."""

    max_epsilon: float
    epsilon: float | None
    accountant: str
    passed: bool

    def record(self) -> dict:
        return {"max_epsilon": self.max_epsilon, "epsilon": self.epsilon,
                "accountant": self.accountant, "passed": self.passed}

    def line(self) -> str:
        from dpcalc.cli.output.numbers import show_upper

        shown = "n/a" if self.epsilon is None else show_upper(self.epsilon)
        verdict = "passed" if self.passed else "FAILED"
        relation = "≤" if self.passed else ">"
        if self.epsilon is None:
            return (f"Budget --max-epsilon {self.max_epsilon:g}: FAILED, {self.accountant} "
                    "gives no ε here, so it cannot be checked")
        return (f"Budget: ε = {shown} ({self.accountant}) {relation} --max-epsilon "
                f"{self.max_epsilon:g}: {verdict}")


def parse_max_epsilon(text) -> float | None:
    """--max-epsilon as a number ≥ 0 (None when not given)."""
    return None if text is None else check_nonnegative(text, "--max-epsilon")


def approximation_gated(accountant: str) -> DpcalcError:
    """The refusal of a gate on an approximation (gdp, abadi): its ε may be below the truth."""
    return DpcalcError(f"--max-epsilon gates a certified bound, and {accountant}'s ε is an "
                       "approximation (not a bound, possibly below the true ε): gate a certified "
                       "accountant (pb, the default, or rdp) by naming it first in --accountant")


def check_budget(max_epsilon: float | None, accountant: str,
                 values: Iterable[float | None], records: Iterable[dict] = ()) -> Budget | None:
    """The gate over every reported ``values`` of ``accountant`` (None without a budget).
    A gate is a guarantee for the run: DpcalcError (exit 2) when one of the gated
    ``records`` holds an approximation (kind) or a value for another model (applies false,
    group's seed pair)."""
    if max_epsilon is None:
        return None
    for record in records:
        if record.get("kind") == APPROXIMATION:
            raise approximation_gated(accountant)
        if record.get("applies") is False:
            raise DpcalcError(f"--max-epsilon gates a certified bound for the run's model, and "
                              f"{accountant}'s ε holds for another model (not a certificate for "
                              "this run): gate a method that certifies it (pb, the default)")
    values = list(values)
    if not values or any(value is None for value in values):
        return Budget(max_epsilon, None, accountant, False)
    worst = max(values, key=lambda value: math.inf if math.isnan(value) else value)
    return Budget(max_epsilon, worst, accountant, bool(worst <= max_epsilon))


def enforce(budget: Budget | None) -> None:
    """Exit 1 with one line on stderr when the gate failed."""
    if budget is None or budget.passed:
        return
    if budget.epsilon is None:
        sys.stderr.write(f"budget cannot be checked: {budget.accountant} gives no ε here "
                         f"(--max-epsilon {budget.max_epsilon:g})\n")
    else:
        from dpcalc.cli.output.numbers import show_upper

        sys.stderr.write(f"budget exceeded: ε = {show_upper(budget.epsilon)} "
                         f"({budget.accountant}) > --max-epsilon {budget.max_epsilon:g}\n")
    raise typer.Exit(1)


def _discard_stdout() -> None:
    """Point stdout at /dev/null so later writes and the final flush cannot fail."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (e.g. a test runner's buffer)
        pass


@contextmanager
def output_may_close() -> Iterator[None]:
    """A reader that closed stdout (`| head -1`) ends the output, not the command: what
    follows (the budget gate) still decides the exit code."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
    except SystemExit as stop:  # Rich turns a closed stdout (EPIPE) into SystemExit(1)
        if not isinstance(stop.__context__, BrokenPipeError):
            raise
        _discard_stdout()
