"""What every accountant returns."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from dpcalc.errors import InvalidResult
from dpcalc.params import shown


def _bound(value, name: str) -> float | None:
    """None, or a number ≥ 0 (∞ allowed): never NaN, a bool or text."""
    if value is None:
        return None
    try:
        number = float(value) if not isinstance(value, (bool, str, bytes)) else math.nan
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not number >= 0.0:  # NaN and negatives alike
        raise InvalidResult(f"EpsilonResult {name} must be None or a number >= 0 (inf allowed); "
                          f"got {shown(value)}")
    return number


@dataclass(frozen=True)
class EpsilonResult:
    """ε for a target δ from one accountant.

    ``epsilon`` is the value a user may report: for a certified accountant an
    upper bound on the true ε. ``None`` means the accountant does not apply to
    the configuration; ``notes`` then says why. ``epsilon_lower`` is a certified
    lower bound on the true ε where the accountant computes one. ``math.inf``
    means no finite ε exists at this δ.

    ``error`` ("ExceptionType: message") marks an accountant that failed inside
    (a bug, never an answer): ``epsilon`` is then None and ``certified`` False, and
    the CLI shows the row as kind "error" (accountants/evaluate.py).
    """

    accountant: str
    epsilon: float | None
    certified: bool
    epsilon_lower: float | None = None
    order: float | None = None
    notes: tuple[str, ...] = ()
    details: dict = field(default_factory=dict)
    error: str | None = None

    def __post_init__(self) -> None:
        set_field = object.__setattr__
        if not isinstance(self.accountant, str) or not self.accountant:
            raise InvalidResult(f"EpsilonResult accountant must be a name; got {shown(self.accountant)}")
        set_field(self, "epsilon", _bound(self.epsilon, "epsilon"))
        set_field(self, "epsilon_lower", _bound(self.epsilon_lower, "epsilon_lower"))
        if not isinstance(self.certified, bool):
            if type(self.certified).__name__ != "bool_":  # numpy's
                raise InvalidResult(f"EpsilonResult certified must be True or False; got "
                                  f"{shown(self.certified)}")
            set_field(self, "certified", bool(self.certified))
        if self.order is not None:
            order = _bound(self.order, "order")
            set_field(self, "order", order)
        if isinstance(self.notes, str) or not isinstance(self.notes, (tuple, list)) or not all(
                isinstance(note, str) for note in self.notes):
            raise InvalidResult(f"EpsilonResult notes must be a tuple of text lines; got "
                              f"{shown(self.notes)}")
        set_field(self, "notes", tuple(self.notes))
        if not isinstance(self.details, dict):
            raise InvalidResult(f"EpsilonResult details must be a dict; got {shown(self.details)}")
        if self.error is not None and (not isinstance(self.error, str) or self.epsilon is not None
                                       or self.certified):
            raise InvalidResult("EpsilonResult error must be text, with epsilon None and "
                              "certified False")

    @property
    def epsilon_upper(self) -> float | None:
        """The certified upper bound (equal to ``epsilon``) where certified."""
        return self.epsilon if self.certified else None

    @property
    def failed(self) -> bool:
        """The accountant failed inside (``error``): no answer, and a bug to report."""
        return self.error is not None

def _outward(value: float, digits: int, up: bool) -> str:
    """``value`` to ``digits`` significant digits, rounded up (or down) exactly in decimal:
    a bound quoted in a note is never shown on its unsafe side."""
    import math
    from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

    if value is None:
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if value == 0:
        return "0"
    exact = Decimal(value)
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    rounded = exact.quantize(quantum, rounding=ROUND_CEILING if up else ROUND_FLOOR)
    return f"{rounded.normalize():f}" if abs(exact.adjusted()) < 6 else f"{rounded:.{digits - 1}e}"


def _shown(value: float | None, digits: int, up: bool) -> str:
    """As the tables show a bound (cli/output/numbers.py): ``digits`` significant digits
    rounded outward exactly, in %g form (9.0426e-05, 2.3819, inf)."""
    import math

    if value is None:
        return "—"
    if math.isinf(value) or value == 0:
        return f"{value:g}"
    # the decimal string has ``digits`` digits, so %g of its nearest double prints it back
    return f"{float(_outward(value, digits, up)):.{digits}g}"


def upper_text(value: float | None, digits: int = 5) -> str:
    """An upper bound quoted in a note: rounded up, as the tables show it (2.3819, never
    2.3818 for 2.381807)."""
    return _shown(value, digits, up=True)


def lower_text(value: float | None, digits: int = 5) -> str:
    """A lower bound quoted in a note: rounded down, as the tables show it."""
    return _shown(value, digits, up=False)


def interval_text(lower: float | None, upper: float | None, digits: int = 5) -> str:
    """'[lower, upper]' with the lower bound rounded down and the upper bound up."""
    return f"[{_outward(lower, digits, up=False)}, {_outward(upper, digits, up=True)}]"
