"""One pass of pb on one grid for one direction: discretise, compose and read certified
bounds, plainly (:func:`direction_bounds`), tilted towards a target ε
(:func:`tilted_direction_bounds`) or split into a body and rare jumps
(:func:`split_direction_bounds`). grid_passes.py decides which pass runs when; buckets.py
drives the grids.
"""
from __future__ import annotations

import math

from dpcalc.pld.chernoff import rounding_slack
from dpcalc.pld.compact import discretise_many
from dpcalc.pld.phase_batch import PhasePlds
from dpcalc.pld.discretise import discretise
from dpcalc.pld.phase_spectra import MIN_PHASES, compose_many
from dpcalc.pld.jumps import split_bounds
from dpcalc.pld.pld import LOWER, MAX_FFT_POINTS, UPPER, GridTooLarge, PrecisionLost
from dpcalc.pld.tilt import compose_tilted, saddle_tilt

from dpcalc.pb.first_grid import TAIL_FRACTION, PhaseList
from dpcalc.models.mixture import REMOVE

# |ε_upper − ε_lower| below this is "no gap" whatever ε is.
_ABSOLUTE_GAP = 1e-6


# Many phases: buckets widen where the tilted tails are below _LIGHT (compact.tail_edges):
# the lower bound's wide buckets round down (a first-order loss), the upper's split
# (second order), so the lower needs the finer rule. Measured (100 phases, δ = 1e-5): the
# bounds move by ~1e-10 (upper) and ~5e-9 (lower) relative against h-wide buckets.
_LIGHT = {UPPER: (1e-5, 1.0), LOWER: (1e-6, 2.0)}  # (light, tilt margin above 0)


def lower_allowance(phases: PhaseList, direction: str):
    """ε ↦ the δ a lower composition of ``phases`` must leave to their pairs' pruning: 0
    unless a pair moved its top mixture components (weight w) to an atom
    (mixture.GaussianMixturePair ``prune``). The true run's δ(ε) is then at least the pruned
    one's minus Σ T·w in the remove direction (only B has the atom: drop the atom's outcomes)
    and minus e^ε·Σ T·w in the add direction (B loses at most that much mass where A keeps
    its own), so a lower bound read at δ + f + allowance(E) holds for ε ≤ E; E is the
    certified upper bound in hand, at or above every lower bound the checks let through."""
    pruned = math.fsum(steps * getattr(pair, "dropped", 0.0) for pair, steps in phases)
    if pruned == 0.0:
        return lambda _epsilon: 0.0
    pruned *= 1.0 + 1e-12  # the sum's round-off, upwards
    if direction == REMOVE:
        return lambda _epsilon: pruned
    log_pruned = math.log(pruned)

    def add(epsilon: float) -> float:
        # e^ε·Σ T·w in log space: math.exp overflows past ε ≈ 709.78 (an add-direction upper
        # bound that large, or ∞ where a pass has none); from 1 on there is no lower bound.
        exponent = log_pruned + epsilon
        return math.exp(exponent) * (1.0 + 1e-12) if exponent < 0.0 else math.inf
    return add


def lower_quantile(composed, delta: float, failure: float, allowance: float):
    """A lower composition's loss quantile at δ + f + ``allowance`` (−∞, no bound, where
    that is 1 or more)."""
    read = delta + failure + allowance
    return composed.loss_quantile(read, LOWER) if read < 1.0 else -math.inf


def saddle_estimate(phases: PhaseList, direction: str, delta: float) -> float:
    """θ ≈ √(2 ln(1/δ))/s, s² = Σ T·Var(L): the Chernoff tilt of the composed loss at the
    δ-quantile of its Gaussian approximation (where to weight one step's tails)."""
    variance = sum(steps * pair.loss_moments(direction)[1] ** 2 for pair, steps in phases)
    return math.sqrt(2.0 * math.log(1.0 / delta) / variance) if variance > 0 else 0.0


def discretise_phases(phases: PhaseList, direction: str, step: float, half_width: float,
                      bound: str, tail_mass: float) -> list:
    """Every phase's one-step PLD on the grid ``step``: discretise.discretise for one
    phase, compact.discretise_compact for many (phase_spectra.compose_many composes those
    without a full-circle transform each)."""
    if len(phases) < MIN_PHASES:
        return [(discretise(pair, direction, step, half_width, bound), steps)
                for pair, steps in phases]
    tilt = saddle_estimate(phases, direction, min(0.5, tail_mass / TAIL_FRACTION))
    light, margin = _LIGHT[bound]
    plds = discretise_many([pair for pair, _ in phases], direction, step, half_width, bound,
                           light, tilt, margin)
    return PhasePlds(zip(plds, [steps for _, steps in phases]))


def compose_fitting(phases: PhaseList, direction: str, step: float, bound: str,
                     half_width: float, tail_mass: float, max_points: int = MAX_FFT_POINTS,
                     discretised=None):
    """Discretise and compose, coarsening the grid until the FFT window fits ``max_points``.
    ``discretised``: the single-step PLDs on the grid ``step``, when already computed.

    Returns (composed PLD, single-step PLDs with their steps, grid step used)."""
    while True:
        try:
            plds = discretised or discretise_phases(phases, direction, step, half_width, bound,
                                                    tail_mass)
            discretised = None
            return compose_many(plds, tail_mass, max_points), plds, step
        except GridTooLarge as too_large:
            step *= 1.05 * too_large.points_needed / max_points


def direction_bounds(phases: PhaseList, direction: str, step: float, delta: float,
                      half_width: float, tail_mass: float, failure: float, discretised=None,
                      settled_below: float = -math.inf, allowance=None):
    """(upper, lower, step used, FFT points, single-step PLDs, estimate) for one direction;
    ``estimate`` is the upper composition read without its float-error bound (not a bound:
    where to aim a tilted pass). ``discretised``: the upper single-step PLDs on ``step``.
    ``settled_below``: another direction's certified lower bound on ε; where this
    direction's upper bound is at or below it, its own lower bound cannot matter (the
    reported lower bound is the largest) and is not composed: 0, with no lower PLDs.
    ``allowance``: ε ↦ the δ pruned pairs leave (lower_allowance; default: from ``phases``)."""
    upper_pld, upper_steps, step = compose_fitting(phases, direction, step, UPPER, half_width,
                                                    tail_mass, discretised=discretised)
    upper = upper_pld.epsilon(delta, UPPER)
    if upper <= settled_below:
        return (upper, 0.0, step, upper_pld.pmf.size, (upper_steps, None, None),
                upper_pld.raw_epsilon(delta))
    lower_pld, lower_steps, _ = compose_fitting(phases, direction, step, LOWER, half_width,
                                                 tail_mass)
    slack = rounding_slack(lower_steps, failure)
    # δ_true(ε) ≥ δ_rounded(ε + η) − f for every real ε, so ε_true ≥ x − η with x the
    # UNCLAMPED read-out at δ + f (x may be negative or −∞; η may be negative too).
    allowance = allowance or lower_allowance(phases, direction)
    lower = max(0.0, lower_quantile(lower_pld, delta, failure, allowance(upper)) - slack)
    points = max(upper_pld.pmf.size, lower_pld.pmf.size)
    estimate = upper_pld.raw_epsilon(delta)
    return upper, lower, step, points, (upper_steps, lower_steps, slack), estimate


# A tilted lower composition is skipped where the upper one needed this many times the
# points allowed (the two windows differ by well under 1%).
_TWIN_WINDOW_MARGIN = 1.1


def tilted_direction_bounds(plds, delta: float, tail_mass: float, failure: float,
                             upper: float, lower: float, target: float,
                             max_points: int = MAX_FFT_POINTS, windows: dict | None = None,
                             bounds=(UPPER, LOWER),
                             allowance=lambda _epsilon: 0.0) -> tuple[float, float]:
    """Tighter bounds for one direction from compositions tilted towards ε ≈ ``target``
    (see tilt.compose_tilted); each is kept only where valid (ε ≥ the certified lower bound
    already found). The lower composition's losses are shifted by the rounding slack on
    average, so its tilt aims at ``target`` + slack. Only the compositions of ``bounds`` are
    tried, each within ``max_points``; ``windows`` (if given) receives the points each
    needed, composed or not (GridTooLarge). ``allowance``: as lower_allowance's."""
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
            raw = lower_quantile(composed, delta, failure, allowance(upper))
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
                             single_steps, target, valid_from, tolerance, loose_aim,
                             lower_allowance(phases, direction))
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
