"""Where pb's adaptive grid starts (buckets.epsilon_bounds): the tails one step's grid must
cover, the first grid step, and the coarser start an ε hint allows."""
from __future__ import annotations

import math

from dpcalc.numerics.special_functions import ndtri

from dpcalc.errors import DpcalcError
from dpcalc.params import check_positive

DEFAULT_GRID_STEP = 1e-4
# Mass allowed outside the output window and the FFT window, relative to δ.
TAIL_FRACTION = 1e-9

# (dominating pair of one step, steps); every pair of a list has the same ``directions``.
PhaseList = list[tuple[object, int]]


def tail_half_width(total_steps: int, delta: float) -> float:
    """K with Φ̄(K) ≤ τ/T: output mass beyond ±Kσ, sent to +∞, adds ≤ τ to δ."""
    per_step = max(TAIL_FRACTION * delta / total_steps, 1e-300)
    return max(8.0, float(-ndtri(per_step)))


_MAX_STEP_POINTS = 1 << 18  # grid points of one step's PLD


def initial_grid_step(phases: PhaseList, requested: float | None, half_width: float,
                      direction: str | None = None) -> float:
    """The first grid step for ``direction`` (every direction of the pairs when None)."""
    if requested is not None:
        return requested
    # At least eight grid points per standard deviation of one step's loss, and 1e-4
    # unless the composed loss is so wide that 5000 points per standard deviation suffice;
    # but never more than _MAX_STEP_POINTS points for one step's loss range.
    chosen = [d for d in phases[0][0].directions if direction in (None, d)]
    spreads = [(pair.loss_moments(d)[1], steps) for pair, steps in phases for d in chosen]
    single = min(spread for spread, _ in spreads)
    composed = math.sqrt(sum(steps * spread**2 for spread, steps in spreads) / len(chosen))
    widest = max(high - low for pair, _ in phases for d in chosen
                 for low, high in [pair.loss_range(d, half_width)])
    step = min(max(DEFAULT_GRID_STEP, composed / 5000.0), single / 8.0)
    return max(step, widest / _MAX_STEP_POINTS, 1e-12)


def _check_grid_step(phases: PhaseList, grid_step, half_width: float) -> float | None:
    """None, or a grid step that keeps one step's loss grid within _MAX_STEP_POINTS points."""
    if grid_step is None:
        return None
    step = check_positive(grid_step, "--grid-step")
    widest = max(high - low for pair, _ in phases for d in pair.directions
                 for low, high in [pair.loss_range(d, half_width)])
    smallest = widest / _MAX_STEP_POINTS
    if step < smallest or step > 1.0:
        raise DpcalcError(f"--grid-step must be in [{smallest:.3g}, 1] for this run (one step's "
                          f"loss range in at most {_MAX_STEP_POINTS} points); got {grid_step!r}")
    return step


_HINT_ABOVE_POINTS = 1 << 18


def _window_points(phases: PhaseList, direction: str, step: float) -> float:
    """A rough size of the composed window on the grid ``step``: ±10 standard deviations
    of the composed loss around its mean."""
    mean = sum(steps * pair.loss_moments(direction)[0] for pair, steps in phases)
    spread = math.sqrt(sum(steps * pair.loss_moments(direction)[1] ** 2 for pair, steps in phases))
    return (abs(mean) + 20.0 * spread) / step


def _hinted_step(hint: float | None, tolerance: float, total_steps: int, failure: float) -> float:
    """A grid step whose rounding slack (η ≈ h·√(T·ln(1/f)/6), chernoff.rounding_slack) is a
    quarter of the tolerated gap at ε ≈ ``hint``: no finer grid is needed to meet it."""
    if hint is None or not (math.isfinite(hint) and hint > 0.0):
        return 0.0
    spread = math.sqrt(total_steps * math.log(1.0 / failure) / 6.0)
    return 0.25 * min(tolerance, 0.1) * hint / spread


class LazyHint:
    """A certified upper bound on ε known to lie in [low, high] at once, its exact value
    computed on first use (e.g. rdp with fractional orders, ~40 ms per distinct phase):
    pb reads it only where the interval cannot decide (resolve)."""

    def __init__(self, low: float, high: float, exact):
        self.low, self.high, self._exact, self._value = low, high, exact, None

    def value(self) -> float:
        if self._value is None:
            self._value = float(self._exact())
            self.low = self.high = self._value
        return self._value


def resolve(hint):
    """The hint's value (a float, None, or a LazyHint's exact value)."""
    return hint.value() if isinstance(hint, LazyHint) else hint


def moment_estimate(phases: PhaseList, delta: float) -> float:
    """A rough ε(δ) from the composed loss's mean and variance (a Gaussian tail; not a
    bound): where to start the grid only."""
    mean = variance = 0.0
    for pair, steps in phases:
        for direction in pair.directions:
            m, s = pair.loss_moments(direction)
            mean, variance = max(mean, steps * m), max(variance, steps * s * s)
    return mean + math.sqrt(2.0 * variance * math.log(1.0 / delta))
