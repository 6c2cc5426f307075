"""Noise calibration: the smallest σ whose certified ε meets a target.

ε falls as the noise multiplier σ grows (accounting-methods.md §5). The search works
in log σ on ln ε − ln ε*, which is close to linear for the subsampled Gaussian
(ε ≈ c/σ for moderate ε), so a safeguarded interpolation converges in a handful of
evaluations:

1. bracket: start from cheap guesses (the GDP/CLT σ as the low side, the RDP σ as
   the safe side), widen geometrically until the two ends straddle the target;
2. shrink: inverse quadratic / secant steps inside the bracket with a bisection
   fallback (Brent-style safeguards), every trial point kept inside the bracket;
3. return the bracket end on the safe side: a σ at which the accountant's own ε is
   ≤ the target, within relative ``precision`` of the smallest such σ.

Every loop is bounded, so an unreachable target gives a clear error, never a hang.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from dpcalc.accountants.result import upper_text
from dpcalc.errors import DpcalcError, InvalidResult
from dpcalc.params import (check_callable, check_nonnegative_or_inf, check_positive, check_range,
                           shown)

DEFAULT_PRECISION = 1e-3
DEFAULT_MAX_SIGMA = 1e4
DEFAULT_MIN_SIGMA = 1e-4
_MAX_EXPANSIONS = 64   # bracket widenings (factor 2, 4, 8, ...: covers any σ range)
_MAX_SHRINKS = 200     # interpolation/bisection steps (worst case ~3 per halving)
_MAX_BUMPS = 60        # safe-side nudges after a final check at finer settings


@dataclass(frozen=True)
class CalibrationResult:
    """``sigma``: the calibrated noise multiplier (safe side); ``epsilon``: the value of
    ``epsilon_at(sigma)`` (≤ the target); ``evaluations``: calls of ``epsilon_at``;
    ``at_floor``: the target is met even at the smallest σ searched (``min_sigma``)."""

    sigma: float
    epsilon: float
    evaluations: int
    at_floor: bool = False


def _check_target(target_epsilon: float, flag: str = "--epsilon") -> float:
    return check_positive(target_epsilon, flag, what="target ε")


def _check_precision(precision: float) -> float:
    return check_range(precision, "--precision", 0.0, 0.1, high_open=False)


def _check_guess(guess, flag: str) -> float | None:
    """None, or a σ guess >= 0 (0 and inf are ignored as guesses)."""
    return None if guess is None else check_nonnegative_or_inf(guess, flag)


def _answer(value, sigma: float) -> float | None:
    """What ``epsilon_at`` returned, as a float (None: does not apply), else a DpcalcError."""
    if value is None:
        return None
    try:
        return check_nonnegative_or_inf(value, "epsilon_at's answer")
    except DpcalcError:
        nan = isinstance(value, float) and math.isnan(value)
        raise InvalidResult(f"epsilon_at returned {'NaN' if nan else shown(value)} at noise "
                            f"multiplier σ = {sigma:.6g}; it must return ε >= 0 (or inf, or "
                            f"None where it does not apply)") from None


class _Objective:
    """g(x) = ln ε(e^x) − ln ε*: positive where σ = e^x is too small (unsafe)."""

    def __init__(self, epsilon_at: Callable[[float], float | None], target: float,
                 flag: str = "--epsilon",
                 side_of_target: Callable[[float], float | None] | None = None):
        self.epsilon_at = epsilon_at
        # while bracketing: a cheaper stand-in for epsilon_at (see calibrate_noise_multiplier)
        self.side_of_target = side_of_target
        self.flag = flag  # the CLI flag that holds the target, for error messages
        self.log_target = math.log(target)
        self.target = target
        self.evaluations = 0
        self.epsilons: dict[float, float] = {}
        self.stand_ins: set[float] = set()  # log σ whose value came from side_of_target

    def epsilon(self, log_sigma: float) -> float:
        """The accountant's own ε at σ = e^x (evaluated now if only a stand-in is known)."""
        if log_sigma in self.stand_ins:
            self.side_of_target = None
            self(log_sigma)
        return self.epsilons[log_sigma]

    def sigma(self, log_sigma: float) -> float:
        return math.exp(log_sigma)

    def __call__(self, log_sigma: float) -> float:
        sigma = self.sigma(log_sigma)
        value = None if self.side_of_target is None else self.side_of_target(sigma)
        if value is None:
            value = self.epsilon_at(sigma)
            self.stand_ins.discard(log_sigma)
        else:
            self.stand_ins.add(log_sigma)
        self.evaluations += 1
        value = _answer(value, sigma)
        if value is None:
            raise DpcalcError(f"the accountant does not apply at noise multiplier σ = {sigma:.6g}")
        self.epsilons[log_sigma] = value
        if value <= 0.0:
            return -math.inf
        # Compare ε with the target directly so that ln rounding cannot flip the sign.
        if value <= self.target:
            return min(0.0, math.log(value) - self.log_target)
        return max(math.log(value) - self.log_target, 5e-324)


def _unreachable(objective: "_Objective", max_sigma: float, epsilon: float) -> DpcalcError:
    flag = objective.flag
    return DpcalcError(
        f"{flag} {objective.target:g} cannot be reached: even noise multiplier σ = {max_sigma:g} "
        f"(the largest searched) gives ε = {upper_text(epsilon)}; raise {flag} or --delta, "
        "or use fewer steps or a lower sampling rate"
    )


def _clamp(value: float | None, low: float, high: float) -> float | None:
    if value is None:
        return None
    value = float(value)
    if not (value > 0.0 and math.isfinite(value)):
        return None
    return min(max(value, low), high)


def _initial_points(low_guess, high_guess, min_sigma, max_sigma) -> tuple[float, float | None]:
    """(first log σ to evaluate, optional second log σ) from the callers' guesses."""
    low = _clamp(low_guess, min_sigma, max_sigma)
    high = _clamp(high_guess, min_sigma, max_sigma)
    if low is None and high is None:
        return 0.0, None  # σ = 1
    if low is None or high is None or low >= high:
        start = low if low is not None else high
        return math.log(start), None
    return math.log(low), math.log(high)


def _bracket(objective: _Objective, first: float, second: float | None,
             log_min: float, log_max: float, target: float, max_sigma: float):
    """Widen geometrically until g(low) > 0 ≥ g(high). Returns (low, g_low, high, g_high),
    or (None, None, high, g_high) when even σ = min_sigma meets the target."""
    points = {first: objective(first)}
    if second is not None:
        points[second] = objective(second)
    unsafe = [x for x, g in points.items() if g > 0.0]
    safe = [x for x, g in points.items() if g <= 0.0]
    if safe and unsafe and max(unsafe) < min(safe):
        low, high = max(unsafe), min(safe)
        return low, points[low], high, points[high]
    step = math.log(2.0)
    if not safe:  # every point is unsafe: move up
        low = max(unsafe)
        if low >= log_max:
            raise _unreachable(objective, max_sigma, objective.epsilon(low))
        for _ in range(_MAX_EXPANSIONS):
            high = min(low + step, log_max)
            value = objective(high)
            if value <= 0.0:
                return low, points[low], high, value
            if high >= log_max:
                raise _unreachable(objective, max_sigma, objective.epsilon(high))
            low, points[high] = high, value
            step *= 2.0
        raise _unreachable(objective, max_sigma, objective.epsilon(low))
    # every point is safe (or the guesses are out of order): move down
    high = min(safe)
    if high <= log_min:
        return None, None, high, points[high]
    for _ in range(_MAX_EXPANSIONS):
        low = max(high - step, log_min)
        value = objective(low)
        if value > 0.0:
            return low, value, high, points[high]
        points[low] = value
        high = low
        if low <= log_min:
            return None, None, high, value
        step *= 2.0
    return None, None, high, points[high]


def _interpolate(points: list[tuple[float, float]], low: float, high: float) -> float | None:
    """Inverse quadratic interpolation through the last three points, else secant through
    the bracket ends; None when the values are not usable (infinite or repeated)."""
    finite = [(x, g) for x, g in points if math.isfinite(g)]
    if len(finite) >= 3:
        (x0, g0), (x1, g1), (x2, g2) = finite[-3:]
        if g0 != g1 and g1 != g2 and g0 != g2:
            # Inverse quadratic interpolation (Brent 1973, ch. 4): x as a quadratic in g at g = 0.
            return (x0 * g1 * g2 / ((g0 - g1) * (g0 - g2))
                    + x1 * g0 * g2 / ((g1 - g0) * (g1 - g2))
                    + x2 * g0 * g1 / ((g2 - g0) * (g2 - g1)))
    ends = [(x, g) for x, g in finite if x in (low, high)]
    if len(ends) == 2 and ends[0][1] != ends[1][1]:
        (x0, g0), (x1, g1) = ends
        return x0 - g0 * (x1 - x0) / (g1 - g0)
    return None


def _shrink(objective: _Objective, low: float, g_low: float, high: float, g_high: float,
            tolerance: float) -> float:
    """Shrink [low, high] (g(low) > 0 ≥ g(high)) to width ≤ tolerance; return ``high``."""
    history = [(low, g_low), (high, g_high)]
    widths = [high - low]
    for _ in range(_MAX_SHRINKS):
        width = high - low
        if width <= tolerance:
            break
        trial = _interpolate(history, low, high)
        # Bisection safeguard: if two steps did not halve the bracket, bisect.
        if trial is None or not math.isfinite(trial) or (len(widths) >= 3 and width > 0.5 * widths[-3]):
            trial = 0.5 * (low + high)
        # Keep trials a tenth of the bracket from its ends: on a strongly convex g (small q,
        # tiny δ) interpolation otherwise creeps along one end, an evaluation a step.
        margin = min(max(0.5 * tolerance, 0.1 * width), 0.25 * width)
        trial = min(max(trial, low + margin), high - margin)
        value = objective(trial)
        history.append((trial, value))
        if value > 0.0:
            low = trial
        else:
            high = trial
        widths.append(high - low)
    return high


def calibrate_noise_multiplier(
    epsilon_at: Callable[[float], float | None],
    target_epsilon: float,
    *,
    low_guess: float | None = None,
    high_guess: float | None = None,
    precision: float = DEFAULT_PRECISION,
    max_sigma: float = DEFAULT_MAX_SIGMA,
    min_sigma: float = DEFAULT_MIN_SIGMA,
    target_flag: str = "--epsilon",
    side_of_target: Callable[[float], float | None] | None = None,
) -> CalibrationResult:
    """The smallest σ (to relative ``precision``) with ``epsilon_at(σ) ≤ target_epsilon``.

    ``epsilon_at`` must return the certified ε (an upper bound) at noise multiplier σ,
    non-increasing in σ (None if the accountant does not apply). The returned σ is
    always on the safe side: ``epsilon_at(result.sigma) == result.epsilon ≤ target``.
    ``low_guess`` (e.g. the GDP/CLT σ) and ``high_guess`` (e.g. the RDP σ) seed the
    bracket; they need not bracket the root.

    ``side_of_target`` (optional) stands in for ``epsilon_at`` while the bracket is sought:
    a cheaper function that returns a value on the same side of the target as the
    accountant's ε at σ (e.g. a certified lower bound above the target, or a certified upper
    bound at or below it), or None when it cannot tell; the bracket's far guesses are then
    classified cheaply, and only the shrinking steps call ``epsilon_at``.

    Raises DpcalcError, naming ``target_flag``, when the target is not positive or not
    reachable with σ ≤ ``max_sigma``.
    """
    check_callable(epsilon_at, "epsilon_at")
    check_callable(side_of_target, "side_of_target", optional=True)
    if not isinstance(target_flag, str):
        raise DpcalcError(f"target_flag must be text; got {shown(target_flag)}")
    target = _check_target(target_epsilon, target_flag)
    precision = _check_precision(precision)
    min_sigma = check_range(min_sigma, "min_sigma", 0.0, 1e300, high_open=False)
    max_sigma = check_range(max_sigma, "max_sigma", 0.0, 1e300, high_open=False)
    low_guess, high_guess = _check_guess(low_guess, "low_guess"), _check_guess(high_guess, "high_guess")
    if not min_sigma < max_sigma:
        raise DpcalcError(f"max_sigma must exceed min_sigma ({min_sigma:g}); got {shown(max_sigma)}")
    objective = _Objective(epsilon_at, target, target_flag, side_of_target)
    log_min, log_max = math.log(min_sigma), math.log(max_sigma)
    first, second = _initial_points(low_guess, high_guess, min_sigma, max_sigma)
    low, g_low, high, g_high = _bracket(objective, first, second, log_min, log_max, target, max_sigma)
    objective.side_of_target = None
    if low is None:
        return CalibrationResult(math.exp(high), objective.epsilon(high), objective.evaluations,
                                 at_floor=True)
    # High and low differ by at most a factor (1 + precision) at the end.
    high = _shrink(objective, low, g_low, high, g_high, math.log1p(precision))
    return CalibrationResult(math.exp(high), objective.epsilon(high), objective.evaluations)
