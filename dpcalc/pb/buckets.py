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

from dpcalc.errors import DpcalcError, InconsistentBounds  # noqa: F401 (re-exported)
from dpcalc.models.revealed_mixture import align_directions
from dpcalc.models.schedule import MAX_STEPS, Schedule
from dpcalc.models.truncated import BASE_DIRECTION
from dpcalc.models.worst_case import worst_case
from dpcalc.pb.first_grid import (  # noqa: F401 (re-exported)
    _HINT_ABOVE_POINTS, _MAX_STEP_POINTS, DEFAULT_GRID_STEP, TAIL_FRACTION, LazyHint,
    PhaseList, _check_grid_step, _hinted_step, _window_points, initial_grid_step,
    moment_estimate, resolve, tail_half_width)
from dpcalc.pb.grid_passes import GridPasses, plain_pass
from dpcalc.pb.direction_pass import (  # noqa: F401 (re-exported)
    _ABSOLUTE_GAP, compose_fitting, lower_allowance, settled, tighter)
from dpcalc.pld.chernoff import rounding_slack
from dpcalc.pld.pld import LOWER, UPPER, GridTooLarge  # noqa: F401 (re-exported)
from dpcalc.params import (check_count, check_delta, check_nonnegative, check_nonnegative_or_inf,
                           check_positive)

DEFAULT_TOLERANCE = 0.01
# Chance that the summed rounding errors of the lower bound exceed η, relative to δ.
_LOWER_FAILURE = 1e-3
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


def _check_phase_list(phases) -> PhaseList:
    """A non-empty list of (pair, steps ≥ 1) with a common neighbouring relation."""
    if isinstance(phases, (str, bytes, dict)):
        raise DpcalcError("phases must be a list of (dominating pair, steps) tuples")
    try:
        checked = [(pair, check_count(steps, "--steps", maximum=MAX_STEPS)) for pair, steps in phases]
    except DpcalcError:
        raise
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
    max_refined_points = check_count(max_refined_points, "max_refined_points")
    if epsilon_hint is not None and not isinstance(epsilon_hint, LazyHint):
        epsilon_hint = check_nonnegative_or_inf(epsilon_hint, "epsilon_hint")
    total_steps = sum(steps for _, steps in phases)
    half_width = tail_half_width(total_steps, delta)
    tail_mass = TAIL_FRACTION * delta
    failure = _LOWER_FAILURE * delta
    grid_step = _check_grid_step(phases, grid_step, half_width)
    directions = phase_directions(phases)
    # each direction on its own grid: their losses can have very different spreads
    if coarse_start and epsilon_hint is None:
        epsilon_hint = moment_estimate(phases, delta)
    steps = {d: initial_grid_step(phases, grid_step, half_width, d) for d in directions}
    if isinstance(epsilon_hint, LazyHint) and (coarse_start or any(
            _window_points(phases, d, step) > _HINT_ABOVE_POINTS
            and _hinted_step(epsilon_hint.high, tolerance, total_steps, failure) > step
            for d, step in steps.items())):
        epsilon_hint.value()  # its exact value may move a first grid
    first_hint = epsilon_hint.high if isinstance(epsilon_hint, LazyHint) else epsilon_hint
    hinted = _hinted_step(first_hint, tolerance, total_steps, failure)
    start = (hinted if start_tolerance is None else
             _hinted_step(first_hint, check_positive(start_tolerance, "start_tolerance"),
                          total_steps, failure))
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
        # pruned pairs: the true δ is lower by at most the allowance (direction_pass)
        allowance = lower_allowance(phases, direction)(epsilon)
        lowers[direction] = max(0.0, composed.delta(epsilon + slack, LOWER) - failure - allowance)
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
