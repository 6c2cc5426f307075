"""One pass of pb on one grid for one direction: discretise, compose and read certified
bounds, plainly (:func:`direction_bounds`), tilted towards a target ε
(:func:`tilted_direction_bounds`) or split into a body and rare jumps
(:func:`split_direction_bounds`). grid_passes.py decides which pass runs when; buckets.py
drives the grids.
"""
from __future__ import annotations

import math

from dpcalc.pld.chernoff import rounding_slack
from dpcalc.pld.discretise import discretise
from dpcalc.pld.fft_compose import compose
from dpcalc.pld.jumps import split_bounds
from dpcalc.pld.pld import LOWER, MAX_FFT_POINTS, UPPER, GridTooLarge, PrecisionLost
from dpcalc.pld.tilt import compose_tilted, saddle_tilt

from dpcalc.pb.first_grid import PhaseList

# |ε_upper − ε_lower| below this is "no gap" whatever ε is.
_ABSOLUTE_GAP = 1e-6


def compose_fitting(phases: PhaseList, direction: str, step: float, bound: str,
                     half_width: float, tail_mass: float, max_points: int = MAX_FFT_POINTS,
                     discretised=None):
    """Discretise and compose, coarsening the grid until the FFT window fits ``max_points``.
    ``discretised``: the single-step PLDs on the grid ``step``, when already computed.

    Returns (composed PLD, single-step PLDs with their steps, grid step used)."""
    while True:
        plds = discretised or [(discretise(pair, direction, step, half_width, bound), steps)
                               for pair, steps in phases]
        discretised = None
        try:
            return compose(plds, tail_mass, max_points), plds, step
        except GridTooLarge as too_large:
            step *= 1.05 * too_large.points_needed / max_points


def direction_bounds(phases: PhaseList, direction: str, step: float, delta: float,
                      half_width: float, tail_mass: float, failure: float, discretised=None):
    """(upper, lower, step used, FFT points, single-step PLDs, estimate) for one direction;
    ``estimate`` is the upper composition read without its float-error bound (not a bound:
    where to aim a tilted pass). ``discretised``: the upper single-step PLDs on ``step``."""
    upper_pld, upper_steps, step = compose_fitting(phases, direction, step, UPPER, half_width,
                                                    tail_mass, discretised=discretised)
    lower_pld, lower_steps, _ = compose_fitting(phases, direction, step, LOWER, half_width,
                                                 tail_mass)
    upper = upper_pld.epsilon(delta, UPPER)
    slack = rounding_slack(lower_steps, failure)
    # δ_true(ε) ≥ δ_rounded(ε + η) − f for every real ε, so ε_true ≥ x − η with x the
    # UNCLAMPED read-out at δ + f (x may be negative or −∞; η may be negative too).
    lower = max(0.0, lower_pld.loss_quantile(delta + failure, LOWER) - slack)
    points = max(upper_pld.pmf.size, lower_pld.pmf.size)
    estimate = upper_pld.raw_epsilon(delta)
    return upper, lower, step, points, (upper_steps, lower_steps, slack), estimate


# A tilted lower composition is skipped where the upper one needed this many times the
# points allowed (the two windows differ by well under 1%).
_TWIN_WINDOW_MARGIN = 1.1


def tilted_direction_bounds(plds, delta: float, tail_mass: float, failure: float,
                             upper: float, lower: float, target: float,
                             max_points: int = MAX_FFT_POINTS, windows: dict | None = None,
                             bounds=(UPPER, LOWER)) -> tuple[float, float]:
    """Tighter bounds for one direction from compositions tilted towards ε ≈ ``target``
    (see tilt.compose_tilted); each is kept only where valid (ε ≥ the certified lower bound
    already found). The lower composition's losses are shifted by the rounding slack on
    average, so its tilt aims at ``target`` + slack. Only the compositions of ``bounds`` are
    tried, each within ``max_points``; ``windows`` (if given) receives the points each
    needed, composed or not (GridTooLarge)."""
    upper_steps, lower_steps, slack = plds
    valid_from = lower
    windows = {} if windows is None else windows
    if UPPER in bounds:
        try:
            theta = saddle_tilt(upper_steps, target)
            composed = compose_tilted(upper_steps, theta, tail_mass, valid_from, max_points)
            windows[UPPER] = composed.pmf.size
            tilted_upper = composed.epsilon(delta, UPPER)
            if valid_from <= tilted_upper < upper:
                upper = tilted_upper
        except GridTooLarge as too_large:
            windows[UPPER] = too_large.points_needed
        except PrecisionLost:  # this tilt certifies nothing: the bounds in hand stand
            pass
    # The lower composition is read at raw = ε + slack (the slack only shifts the result),
    # so its window guarantee must hold from valid_from + slack on.
    lower_valid_from = valid_from + slack
    upper_needed = windows.get(UPPER, 0) if UPPER in bounds else 0
    if LOWER in bounds and upper_needed > _TWIN_WINDOW_MARGIN * max_points:
        # The lower composition is the same one-step PLD rounded the other way: its window
        # is the upper one's to a fraction of a percent, so it would not fit either. Its
        # size is recorded as the upper one's (a deferred pass recomputes it).
        windows[LOWER] = upper_needed
        return upper, lower
    if LOWER in bounds:
        try:
            theta = saddle_tilt(lower_steps, target + slack)
            composed = compose_tilted(lower_steps, theta, tail_mass, lower_valid_from, max_points)
            windows[LOWER] = composed.pmf.size
            raw = composed.loss_quantile(delta + failure, LOWER)
            if raw >= lower_valid_from and raw - slack > lower:
                lower = raw - slack
        except GridTooLarge as too_large:
            windows[LOWER] = too_large.points_needed
        except PrecisionLost:
            pass
    return upper, lower


def split_direction_bounds(phases: PhaseList, direction: str, delta: float, failure: float,
                            tail_mass: float, half_width: float, single_steps, target: float,
                            valid_from: float, tolerance: float,
                            loose_aim: float = 0.0) -> tuple[float, float]:
    """jumps.split_bounds, or no information (∞, 0) where it does not apply."""
    try:
        split = split_bounds(phases, direction, delta, failure, tail_mass, half_width,
                             single_steps, target, valid_from, tolerance, loose_aim)
    except (GridTooLarge, PrecisionLost):
        split = None
    return split if split is not None else (math.inf, 0.0)


def tilt_target(upper: float, lower: float, estimate: float, hint: float | None) -> float:
    """Where to aim the tilted pass: the float read-out of the plain composition, kept
    between the certified bounds in hand (the hint, e.g. rdp, is one of them)."""
    high = min(upper, hint) if hint is not None and hint > 0 else upper
    if not math.isfinite(estimate):
        estimate = high
    return min(max(estimate, lower), high)


def tighter(first: tuple[float, float], second: tuple[float, float]) -> tuple[float, float]:
    """The tighter of two certified (upper, lower) pairs of one quantity, side by side."""
    return min(first[0], second[0]), max(first[1], second[1])


def settled(bounds: tuple[float, float], tolerance: float) -> bool:
    """Whether one direction's own bounds are within the tolerated gap; such a direction is
    never open (_open_directions measures against the overall lower bound, ≥ its own)."""
    upper, lower = bounds
    return math.isfinite(upper) and upper <= lower + max(tolerance * upper, _ABSOLUTE_GAP)
