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
