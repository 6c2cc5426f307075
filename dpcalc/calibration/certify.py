"""A calibrated σ and its final check: :class:`SigmaResult`, the certified re-check at the
caller's settings (:func:`certify_sigma`, which only ever raises σ), and the one-sided
classification of far guesses that seeds a search (:func:`certain_side`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcalc.accountants.result import EpsilonResult
from dpcalc.calibration.search import _MAX_BUMPS
from dpcalc.errors import DpcalcError

_FAR = 1.25


@dataclass(frozen=True)
class SigmaResult:
    """One accountant's calibration: ``sigma`` (safe side, rounded nowhere) and the
    accountant's full :class:`EpsilonResult` at that σ (``result.epsilon`` ≤ target)."""

    accountant: str
    sigma: float
    epsilon: float
    certified: bool
    evaluations: int
    result: EpsilonResult
    at_floor: bool = False


def certain_side(accountant, schedule, delta: float, target: float):
    """σ ↦ a stand-in for ε(σ) when the accountant's certified interval at σ lies wholly on one
    side of the target and at least a factor _FAR from it (the geometric mean of its ends:
    a value on that side, close in log for interpolation); None near the target, where the
    search needs the accurate value."""

    def classify(sigma: float) -> float | None:
        result = accountant.epsilon(schedule.with_noise_multiplier(sigma), delta)
        upper, lower = result.epsilon, result.epsilon_lower
        if upper is None or lower is None or not math.isfinite(upper):
            return None
        if lower > _FAR * target or upper * _FAR < target:
            return math.sqrt(lower * upper) if lower > 0.0 else upper
        return None

    return classify


def certify_sigma(accountant, sigma: float, target: float, delta: float, schedule, precision: float):
    """The accountant's result at σ with its requested settings; nudge σ up (safe side)
    in the rare case those settings report ε above the target."""
    for attempt in range(1, _MAX_BUMPS + 1):
        result = accountant.epsilon(schedule.with_noise_multiplier(sigma), delta)
        if result.epsilon is not None and result.epsilon <= target:
            return result, sigma, attempt
        sigma *= 1.0 + precision * min(2.0 ** (attempt - 1), 1.0 / precision)
    raise DpcalcError(f"--epsilon {target:g}: could not certify a noise multiplier near σ = {sigma:.6g}")
