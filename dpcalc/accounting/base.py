"""The contract every accountant meets: ε for δ and δ for ε on a :class:`Schedule`."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

from dpcalc.accounting.result import EpsilonResult
from dpcalc.accounting.schedule import Schedule


class Accountant(ABC):
    """Bounds the privacy of a DP-SGD :class:`Schedule`.

    ``certified`` accountants return upper bounds on the true ε (and lower bounds
    on nothing unless ``epsilon_lower`` is set); the others are approximations and
    say so.
    """

    name: ClassVar[str]
    certified: ClassVar[bool]
    summary: ClassVar[str]

    @abstractmethod
    def epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        """ε at target ``delta``."""

    def delta(self, schedule: Schedule, epsilon: float) -> float | None:
        """δ at ``epsilon``: the smallest δ this accountant certifies.

        Default: bisection in log δ on :meth:`epsilon`, which is monotone in δ.
        Returns ``None`` where the accountant does not apply.
        """
        low, high = -700.0, 0.0  # log δ; δ = 1 always holds
        top = self.epsilon(schedule, math.exp(-1e-12)).epsilon
        if top is None:
            return None
        if top > epsilon:
            return 1.0
        for _ in range(200):
            mid = 0.5 * (low + high)
            value = self.epsilon(schedule, math.exp(mid)).epsilon
            if value is None:
                return None
            if value <= epsilon:
                high = mid
            else:
                low = mid
            if high - low < 1e-6:
                break
        return math.exp(high)
