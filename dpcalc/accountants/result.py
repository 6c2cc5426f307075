"""What every accountant returns."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EpsilonResult:
    """ε for a target δ from one accountant.

    ``epsilon`` is the value a user may report: for a certified accountant an
    upper bound on the true ε. ``None`` means the accountant does not apply to
    the configuration; ``notes`` then says why. ``epsilon_lower`` is a certified
    lower bound on the true ε where the accountant computes one. ``math.inf``
    means no finite ε exists at this δ.
    """

    accountant: str
    epsilon: float | None
    certified: bool
    epsilon_lower: float | None = None
    order: float | None = None
    notes: tuple[str, ...] = ()
    details: dict = field(default_factory=dict)

    @property
    def epsilon_upper(self) -> float | None:
        """The certified upper bound (equal to ``epsilon``) where certified."""
        return self.epsilon if self.certified else None


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


def interval_text(lower: float | None, upper: float | None, digits: int = 5) -> str:
    """'[lower, upper]' with the lower bound rounded down and the upper bound up."""
    return f"[{_outward(lower, digits, up=False)}, {_outward(upper, digits, up=True)}]"
