"""pb's engine: numeric PLD composition with certified upper and lower bounds.

For each adjacency direction (remove, add) the worst-case pair of every phase is
discretised twice (pld.py): connect-the-dots for a certified upper bound and
mean-preserving rounding of the bucketed pair for a certified lower bound. Both are
composed by FFT and ε is the larger of the two directions (accounting-methods.md §2).

The grid adapts: it starts at h = 1e-4 (finer when one step's loss is narrower than
that, coarser when the composed window would not fit the FFT cap) and halves until
upper − lower ≤ tolerance·ε or the window would exceed REFINE_POINTS_LIMIT points;
then the honest wider gap is reported. The limit is a count, so results are the same
on every machine whatever its load. On each grid an open direction gets a tilted pass
(tilt.py) and once a split pass (jumps.py), the split first where tilting would widen
the window many times (grid_passes.py); a direction no finer grid is expected to help is
not refined.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from dpcalc.accounting.chernoff import rounding_slack
from dpcalc.accounting.discretise import discretise
from dpcalc.accounting.first_grid import (  # noqa: F401 (re-exported)
    _HINT_ABOVE_POINTS, _MAX_STEP_POINTS, DEFAULT_GRID_STEP, TAIL_FRACTION, PhaseList,
    _check_grid_step, _hinted_step, _window_points, initial_grid_step, moment_estimate,
    tail_half_width)
from dpcalc.accounting.fft_compose import compose
from dpcalc.accounting.grid_passes import GridPasses, plain_pass
from dpcalc.accounting.jumps import split_bounds
from dpcalc.accounting.pld import LOWER, MAX_FFT_POINTS, UPPER, GridTooLarge
from dpcalc.accounting.tilt import compose_tilted, saddle_tilt
from dpcalc.accounting.schedule import MAX_STEPS, Schedule
from dpcalc.accounting.revealed_mixture import align_directions
from dpcalc.accounting.truncated import BASE_DIRECTION
from dpcalc.accounting.worst_case import worst_case
from dpcalc.errors import DpcalcError, InconsistentBounds  # noqa: F401 (re-exported)
from dpcalc.params import check_count, check_delta, check_nonnegative, check_positive

DEFAULT_TOLERANCE = 0.01
# Chance that the summed rounding errors of the lower bound exceed η, relative to δ.
_LOWER_FAILURE = 1e-3
# |ε_upper − ε_lower| below this is "no gap" whatever ε is.
_ABSOLUTE_GAP = 1e-6
# A refinement that keeps more than this fraction of the gap has stalled (epsilon_bounds).
_STALL_RATIO = 0.9
# The grid is halved only while the FFT window stays within this many points.
REFINE_POINTS_LIMIT = 1 << 20
# ... and while it stays above this step (the point count is the usual limit). Below it the
# float error of a bucket's loss ln(P_k/Q_k) is no longer small against the step (measured
# against mpmath: ~2e-3·h at h = 1e-9, ~0.3·h at 1e-10), which the bounds do not allow for.
_FINEST_STEP = 1e-9

# Two certified bounds of one quantity may differ by float round-off only.
_CONSISTENCY_SLACK = 1e-9


def check_consistent(upper: float, lower: float, what: str) -> None:
    """Raise InconsistentBounds when ``lower`` exceeds ``upper`` beyond float round-off."""
    if lower > upper + _CONSISTENCY_SLACK * (1.0 + abs(upper)):
        raise InconsistentBounds(f"pb: certified lower bound {lower!r} on {what} exceeds the "
                                 f"certified upper bound {upper!r}; this is a bug, please report it")


@dataclass
class PldBounds:
    """Certified bounds on ε (or δ) with the grids that produced them."""

    upper: float
    lower: float
    by_direction: dict = field(default_factory=dict)
    grid_step: float = math.nan
    lower_grid_step: float = math.nan
    fft_points: int = 0
    converged: bool = True
    stalled: bool = False  # halving the grid no longer narrowed the gap: it is not the grid's


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


def _direction_bounds(phases: PhaseList, direction: str, step: float, delta: float,
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


def _tilted_direction_bounds(plds, delta: float, tail_mass: float, failure: float,
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
    return upper, lower


def _split_direction_bounds(phases: PhaseList, direction: str, delta: float, failure: float,
                            tail_mass: float, half_width: float, single_steps, target: float,
                            valid_from: float, tolerance: float,
                            loose_aim: float = 0.0) -> tuple[float, float]:
    """jumps.split_bounds, or no information (∞, 0) where it does not apply."""
    try:
        split = split_bounds(phases, direction, delta, failure, tail_mass, half_width,
                             single_steps, target, valid_from, tolerance, loose_aim)
    except GridTooLarge:
        split = None
    return split if split is not None else (math.inf, 0.0)


def _tilt_target(upper: float, lower: float, estimate: float, hint: float | None) -> float:
    """Where to aim the tilted pass: the float read-out of the plain composition, kept
    between the certified bounds in hand (the hint, e.g. rdp, is one of them)."""
    high = min(upper, hint) if hint is not None and hint > 0 else upper
    if not math.isfinite(estimate):
        estimate = high
    return min(max(estimate, lower), high)


def _check_phase_list(phases) -> PhaseList:
    """A non-empty list of (pair, steps ≥ 1) with a common neighbouring relation."""
    try:
        checked = [(pair, check_count(steps, "--steps", maximum=MAX_STEPS)) for pair, steps in phases]
    except (TypeError, ValueError):
        raise DpcalcError("phases must be a list of (dominating pair, steps) tuples") from None
    if not checked:
        raise DpcalcError("pb needs at least one phase")
    if any(not hasattr(pair, "log_tails") for pair, _ in checked):
        raise DpcalcError("each phase needs a dominating pair (e.g. GaussianMixturePair)")
    if sum(steps for _, steps in checked) > MAX_STEPS:
        raise DpcalcError("pb composes at most 1e9 steps in all")
    phase_directions(checked)
    return checked


def epsilon_bounds(phases: PhaseList, delta: float, tolerance: float = DEFAULT_TOLERANCE,
                   grid_step: float | None = None,
                   max_refined_points: int = REFINE_POINTS_LIMIT,
                   epsilon_hint: float | None = None, coarse_start: bool = False,
                   start_tolerance: float | None = None) -> PldBounds:
    """Certified (upper, lower) ε at ``delta`` for the phases composed in order.

    ``epsilon_hint`` (e.g. an rdp bound) lets large answers start on a coarser grid: the
    tolerance is relative, so a large ε needs no fine grid; refinement follows if needed.
    ``coarse_start``: always start there (from the hint or a moment estimate), not only
    where the fine grid would be large; ``start_tolerance``: where the fine grid would not
    be large, size that coarse start for this tolerance instead (a loose search that wants
    upper bounds as tight as a stricter tolerance's first grid gives)."""
    phases = _check_phase_list(phases)
    delta = check_delta(delta)
    tolerance = check_positive(tolerance, "--tolerance")
    total_steps = sum(steps for _, steps in phases)
    half_width = tail_half_width(total_steps, delta)
    tail_mass = TAIL_FRACTION * delta
    failure = _LOWER_FAILURE * delta
    grid_step = _check_grid_step(phases, grid_step, half_width)
    directions = phase_directions(phases)
    # each direction on its own grid: their losses can have very different spreads
    if coarse_start and epsilon_hint is None:
        epsilon_hint = moment_estimate(phases, delta)
    hinted = _hinted_step(epsilon_hint, tolerance, total_steps, failure)
    start = (hinted if start_tolerance is None else
             _hinted_step(epsilon_hint, check_positive(start_tolerance, "start_tolerance"),
                          total_steps, failure))
    steps = {d: initial_grid_step(phases, grid_step, half_width, d) for d in directions}
    if grid_step is None:  # coarser first grids only where the fine one would be large
        steps = {d: max(step, hinted) if _window_points(phases, d, step) > _HINT_ABOVE_POINTS
                 else max(step, start) if coarse_start else step for d, step in steps.items()}
    # Per direction, the tightest certified (upper, lower) found on any grid so far, and
    # where a tilted pass should aim (the best estimate of ε so far).
    best = {d: (math.inf, 0.0) for d in directions}
    aims: dict[str, float] = {}
    points, step = 0, max(steps.values())
    pending = list(directions)
    split_tried: dict[str, bool] = {}  # direction -> whether its split pass gave bounds
    grid_passes: dict[str, GridPasses] = {}  # per direction, its latest grid's passes
    gaps: dict[str, float] = {}
    while True:
        composed = {}
        for direction in pending:
            context = (phases, direction, delta, tail_mass, failure, half_width, tolerance,
                       epsilon_hint)
            composed[direction] = grid_passes[direction] = plain_pass(
                context, steps, best, aims, grid_passes.get(direction), split_tried)
            points = max(points, composed[direction].plain_points)
        # Tilted and split passes on this grid while a direction has one left: the tilted
        # pass for every direction open before the first pass or now, and (if any was open)
        # for the one holding the reported (largest) upper bound; the others only while the
        # direction is open (asked again after every pass).
        first_open = _open_directions(best, tolerance)
        while first_open:
            now_open = _open_directions(best, tolerance)
            largest = max(directions, key=lambda d: best[d][0])
            runnable = [d for d in directions if d in composed and (d in now_open or (
                composed[d].stage == 0 and (d in first_open or d == largest)))]
            if not any(composed[d].next_pass(best, aims, split_tried) for d in runnable):
                break
        for direction in directions:
            check_consistent(*best[direction], f"ε ({direction})")
        step = max(steps.values())
        upper = max(u for u, _ in best.values())
        lower = max(low for _, low in best.values())
        pending = _open_directions(best, tolerance)
        done = not pending
        # The grid's share of a gap halves with h; a gap that halving narrowed by less than
        # 10% in every open direction is another term's (the lower bound's failure
        # allowance, float round-off): refining further would only spend work.
        stalled = bool(gaps) and all(best[d][0] - best[d][1] > _STALL_RATIO * gaps[d]
                                     for d in pending if d in gaps)
        gaps = {d: best[d][0] - best[d][1] for d in directions}
        # ... and a direction no pass on a finer grid is expected to narrow is not refined
        refine = [d for d in pending
                  if d not in grid_passes or grid_passes[d].worth_refining(best[d], split_tried)]
        stalled = stalled or not refine
        result = PldBounds(upper, lower, dict(best), step, step, points, done, stalled and not done)
        # Halving h doubles the window: refine only while that stays within the work limit
        # (a count, not a clock, so the answer never depends on the machine's load).
        if (done or stalled or grid_step is not None or step < _FINEST_STEP
                or 2 * points > max_refined_points):
            return result
        pending = refine
        steps = {d: value / 2.0 for d, value in steps.items()}


def _tighter(first: tuple[float, float], second: tuple[float, float]) -> tuple[float, float]:
    """The tighter of two certified (upper, lower) pairs of one quantity, side by side."""
    return min(first[0], second[0]), max(first[1], second[1])


def settled(bounds: tuple[float, float], tolerance: float) -> bool:
    """Whether one direction's own bounds are within the tolerated gap; such a direction is
    never open (_open_directions measures against the overall lower bound, ≥ its own)."""
    upper, lower = bounds
    return math.isfinite(upper) and upper <= lower + max(tolerance * upper, _ABSOLUTE_GAP)


def _open_directions(best: dict, tolerance: float) -> list[str]:
    """Directions whose bounds still decide whether the gap is met: the overall ε is the
    largest upper bound, certified from below by the largest lower bound, so a direction
    whose upper bound is within the tolerated gap of that lower bound is settled."""
    upper = max(u for u, _ in best.values())
    lower = max(low for _, low in best.values())
    if not math.isfinite(upper):  # p_∞ > δ somewhere: no finer grid changes that
        return []
    allowed = lower + max(tolerance * upper, _ABSOLUTE_GAP)
    return [d for d, (u, _) in best.items() if u > allowed]


def delta_bounds(phases: PhaseList, epsilon: float, grid_step: float | None = None) -> PldBounds:
    """Certified (upper, lower) δ at ``epsilon``."""
    phases = _check_phase_list(phases)
    epsilon = check_nonnegative(epsilon, "--epsilon")
    total_steps = sum(steps for _, steps in phases)
    # δ is unknown before we compute it; size the tails for δ down to 1e-15.
    half_width = tail_half_width(total_steps, 1e-15)
    grid_step = _check_grid_step(phases, grid_step, half_width)
    step = initial_grid_step(phases, grid_step, half_width)
    tail_mass = 1e-24
    uppers, lowers = {}, {}
    directions = phase_directions(phases)
    for direction in directions:
        composed, _, step = compose_fitting(phases, direction, step, UPPER, half_width, tail_mass)
        uppers[direction] = composed.delta(epsilon, UPPER)
    upper = max(uppers.values())
    failure = max(_LOWER_FAILURE * upper, 1e-300)
    for direction in directions:
        composed, plds, lower_step = compose_fitting(phases, direction, step, LOWER, half_width,
                                                      tail_mass)
        slack = rounding_slack(plds, failure)
        lowers[direction] = max(0.0, composed.delta(epsilon + slack, LOWER) - failure)
    for direction in directions:
        check_consistent(uppers[direction], lowers[direction], f"δ ({direction})")
    lower = max(lowers.values())
    return PldBounds(upper, lower, {d: (uppers[d], lowers[d]) for d in directions}, step, lower_step)


def phase_directions(phases: PhaseList) -> tuple[str, ...]:
    """The neighbouring instances every pair of the run is composed in (one per direction)."""
    if not phases:
        raise DpcalcError("pb needs at least one phase")
    directions = tuple(phases[0][0].directions)
    if any(tuple(pair.directions) != directions for pair, _ in phases):
        raise DpcalcError("every phase of a run must have the same neighbouring relation")
    return directions


def schedule_phases(schedule: Schedule) -> PhaseList:
    """The dominating pair of one step of each phase, under its sampler and adjacency."""
    pairs = align_directions([worst_case(phase).pair for phase in schedule.phases], BASE_DIRECTION)
    return [(pair, phase.steps) for pair, phase in zip(pairs, schedule.phases)]
