"""Numbers as dpcalc prints them: upper bounds rounded up, lower bounds rounded down, and
the plain-format word for a figure that does not apply. Used by every output path."""
from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal


def _round(value: float, digits: int, up: bool) -> float:
    """``value`` to ``digits`` significant digits, rounded up (or down) exactly: the float's
    exact binary value is rounded in decimal, so an upper bound is never shown smaller."""
    if value == 0 or not math.isfinite(value):
        return value
    exact = Decimal(value)
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    rounded = exact.quantize(quantum, rounding=ROUND_CEILING if up else ROUND_FLOOR)
    shown = float(rounded)
    # float(rounded) is the nearest double; step one ulp outward if it crossed the bound
    if up and shown < value:
        shown = math.nextafter(shown, math.inf)
    if not up and shown > value:
        shown = math.nextafter(shown, -math.inf)
    return shown


def show_upper(value: float | None, digits: int = 5) -> str:
    """An upper bound, rounded up (never shows less than the bound)."""
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "inf"
    return f"{_round(value, digits, up=True):.{digits}g}"


def show_lower(value: float | None, digits: int = 5) -> str:
    """A lower bound, rounded down."""
    if value is None:
        return "—"
    if math.isinf(value):
        return "inf"
    return f"{_round(value, digits, up=False):.{digits}g}"


def show_number(value: float | None, digits: int = 5) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}g}"


# What --format plain prints for an accountant that does not apply: not a number to any
# parser that checks (float('n/a') and jq's tonumber fail), and the table's word for it.
NOT_APPLICABLE = "n/a"
# The kind of a result row whose ε is an approximation, not a bound (records.row_kind).
APPROXIMATION = "approximation"


def plain_upper(value: float | None) -> str:
    """An upper bound for scripts: 6 significant digits rounded up; ``n/a`` if it does not
    apply; ``inf`` if no finite bound exists."""
    return NOT_APPLICABLE if value is None else show_upper(value, 6)


def plain_lower(value: float | None) -> str:
    return NOT_APPLICABLE if value is None else show_lower(value, 6)
