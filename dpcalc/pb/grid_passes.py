"""The order of pb's passes on one grid (buckets.epsilon_bounds) and which directions to refine.

On each grid a direction gets its plain pass (direction_pass.direction_bounds: connect-the-dots
and rounded compositions), then, while it is open (its upper bound not yet within the
tolerated gap of the overall lower bound):

1. a tilted pass (tilt.py): the compositions tilted onto ε, where the plain ones are
   float round-off;
2. once per run, a split pass (jumps.py): body and rare large losses composed apart.

On the first grid, where the plain composition is round-off bound (T·u ≥ δ), a tilt onto
the ε hint would widen the window _SPLIT_FIRST_SPREAD times (the tilted spread over the
plain one) and the hint is a close aim (_CLOSE_HINT_RATE), the split pass runs before any
plain composition, and a direction it settles is not composed plainly at all
(_split_first). Otherwise, where tilting would widen the plain window many times
(_SPLIT_FIRST_RATIO), the tilt has made the rare large losses common: the split pass, built
for them and far cheaper there, goes first, and once it has given bounds a tilted
composition runs only within _TILT_AFTER_SPLIT_POINTS points. Each pass gives certified
bounds on its own (its module's argument) and the reported ones are the tightest of them,
so the order and which passes run decide only how tight the interval gets and what it
costs.

On a finer grid, a direction whose plain pass was far from its best bounds (more than
_REFINE_GAIN times the gap) is only discretised, not composed plainly: its tilted pass
needs the one-step PLDs only. A direction is not refined at all when no pass on the finer
grid is expected to narrow its gap (GridPasses.worth_refining).
"""
from __future__ import annotations

import math

from dpcalc.pld.chernoff import rounding_slack
from dpcalc.pld.fft_compose import window_points
from dpcalc.pld.fft_error import UNIT_ROUNDOFF
from dpcalc.pld.pld import LOWER, MAX_FFT_POINTS, UPPER
from dpcalc.pld.tilt import tilt_onto

from dpcalc.pb import direction_pass
from dpcalc.pb.first_grid import resolve

# The split pass goes first where tilting widens the plain window this many times (and
# beyond _SPLIT_FIRST_MIN_POINTS).
_SPLIT_FIRST_RATIO = 4.0
_SPLIT_FIRST_MIN_POINTS = 1 << 19
# Once a split pass has given bounds, a tilted composition runs only within this many points.
_TILT_AFTER_SPLIT_POINTS = 1 << 21
# The split pass goes before the plain one (_split_first) where a tilt onto the ε hint
# would widen the window this many times (the tilted spread over the plain one).
_SPLIT_FIRST_SPREAD = 8.0
# ... only where the hint is a close aim: the Chernoff rate of the tilt onto it at most
# this many times ln(1/δ) (a Chernoff bound is loose by a polynomial factor only, so the
# rate at the answer is about ln(1/δ); measured 0.87–0.99 where the split settled, 1.2–8 000
# where the hint was far above the answer: rdp at small ε, where the split did not settle).
_CLOSE_HINT_RATE = 1.1
# ... and stops after its first upper composition where that lands below this share of
# the hint: the hint is too loose an aim (rdp at small ε) for the split to settle the
# direction, and the plain-first order (whose split aims at the plain estimate) is cheaper.
_LOOSE_HINT = 0.25
# GridPasses.stage once no pass is left on its grid (next_pass returns False).
_NO_PASS_LEFT = 3
# Halving h narrows a plain pass's gap at most about this much (its discretisation errors
# are of order h² at best, its float round-off does not shrink).
_REFINE_GAIN = 4.0


class GridPasses:
    """One direction's passes on one grid. ``context``: (phases, direction, δ, τ, f, K,
    tolerance, ε hint); ``plds``: (upper one-step PLDs, lower ones, rounding slack) with
    their steps; ``plain``: the plain pass's bounds; ``plain_points``: its window."""

    def __init__(self, context, plds, aim: float, plain: tuple[float, float], plain_points: int):
        self.context, self.plds, self.aim = context, plds, aim
        self.plain, self.plain_points = plain, plain_points
        self.windows: dict[str, int] = {}  # points each tilted composition needed
        self.stage, self.first_limit = 0, 0

    def tilt_limit(self, split_tried: dict) -> int:
        """Points a tilted composition may take: the split-first limit before the split pass,
        _TILT_AFTER_SPLIT_POINTS after one that gave bounds, else MAX_FFT_POINTS."""
        direction = self.context[1]
        if direction not in split_tried:
            return min(MAX_FFT_POINTS, max(_SPLIT_FIRST_MIN_POINTS,
                                           int(_SPLIT_FIRST_RATIO * self.plain_points)))
        return _TILT_AFTER_SPLIT_POINTS if split_tried[direction] else MAX_FFT_POINTS

    def next_pass(self, best: dict, aims: dict, split_tried: dict) -> bool:
        """Run this direction's next pass, tightening ``best``; False when none is left.
        ``split_tried``: direction → whether its split pass gave bounds."""

        phases, direction, delta, tail_mass, failure, half_width, tolerance, hint = self.context
        hint = resolve(hint)
        if self.plds is not None and self.plds[1] is None:  # its lower bound was skipped
            upper_steps = self.plds[0]
            lower_steps = direction_pass.discretise_phases(
                phases, direction, upper_steps[0][0].grid_step, half_width, LOWER, tail_mass)
            self.plds = (upper_steps, lower_steps, rounding_slack(lower_steps, failure))
        target = direction_pass.tilt_target(*best[direction], self.aim, hint)
        allowance = direction_pass.lower_allowance(phases, direction)
        self.stage += 1
        tilted = True
        if self.stage == 1:  # round-off grows like T·2^-52 of the peak: tilt onto the answer
            self.first_limit = self.tilt_limit(split_tried)
            found = direction_pass.tilted_direction_bounds(self.plds, delta, tail_mass, failure,
                                                     *best[direction], target, self.first_limit,
                                                     self.windows, allowance=allowance)
        elif self.stage == 2 and direction not in split_tried:
            # rare large losses (small q, tiny δ): compose body and jumps apart (jumps.py)
            tilted = False
            found = direction_pass.split_direction_bounds(phases, direction, delta, failure, tail_mass,
                                                    half_width, self.plds[0], target,
                                                    best[direction][1], tolerance)
            split_tried[direction] = found != (math.inf, 0.0)
        else:  # tilted compositions the split-first limit deferred, where allowed now
            limit = self.tilt_limit(split_tried)
            deferred = tuple(bound for bound, points in self.windows.items()
                             if self.first_limit < points <= limit)
            if self.stage > 3 or not deferred:
                return False
            self.stage = 3
            found = direction_pass.tilted_direction_bounds(self.plds, delta, tail_mass, failure,
                                                     *best[direction], target, limit,
                                                     self.windows, deferred, allowance)
        best[direction] = direction_pass.tighter(best[direction], found)
        if tilted:
            aims[direction] = best[direction][0]
        return True

    def plain_is_far(self, bounds: tuple[float, float]) -> bool:
        """Whether the plain pass's gap was more than _REFINE_GAIN times the best one: on a
        grid of half the step it is not expected to narrow the bounds either."""
        return self.plain[0] - self.plain[1] > _REFINE_GAIN * (bounds[0] - bounds[1])

    def worth_refining(self, bounds: tuple[float, float], split_tried: dict) -> bool:
        """Whether a grid of half the step may narrow this direction's gap (a prediction):
        its split pass is still to run, its tilted compositions (twice the points there)
        fit, or its plain pass is not far from the best bounds."""
        if self.context[1] not in split_tried or not self.windows:
            return True
        if 2 * max(self.windows.values()) <= self.tilt_limit(split_tried):
            return True
        return not self.plain_is_far(bounds)


def _round_off_bound(phases, delta: float) -> bool:
    """Whether a plain composition cannot resolve δ: its spectrum's round-off, raised to the
    T-th power, grows like T·u of the peak (fft_error.py, item 2), and T·u ≥ δ."""
    return sum(steps for _, steps in phases) * UNIT_ROUNDOFF >= delta


def _split_first(context, step: float, best: dict, split_tried: dict):
    """On the first grid of a round-off-bound direction (_round_off_bound) whose tilt onto
    the ε hint would widen the window _SPLIT_FIRST_SPREAD times (rare large losses: the
    tilted pass will not fit, the plain one will not resolve δ) and whose hint is a close
    aim (_CLOSE_HINT_RATE), the split pass before any plain composition. Returns (GridPasses
    with no pass left where its bounds settle the direction, else None; the upper
    single-step PLDs on ``step``, for the plain pass). The split's bounds are certified for
    ε ≥ 0 whatever the aim (jumps.split_bounds)."""

    phases, direction, delta, tail_mass, failure, half_width, tolerance, hint = context
    hint = resolve(hint)
    upper_steps = direction_pass.discretise_phases(phases, direction, step, half_width, UPPER,
                                                   tail_mass)
    spread, rate = tilt_onto(upper_steps, hint)
    if spread < _SPLIT_FIRST_SPREAD or rate > _CLOSE_HINT_RATE * math.log(1.0 / delta):
        return None, upper_steps
    found = direction_pass.split_direction_bounds(phases, direction, delta, failure, tail_mass,
                                            half_width, upper_steps, hint, 0.0, tolerance,
                                            _LOOSE_HINT)
    best[direction] = direction_pass.tighter(best[direction], found)
    if not direction_pass.settled(found, tolerance):
        return None, upper_steps  # the plain pass follows; its split pass may aim better
    split_tried[direction] = True
    passes = GridPasses(context, None, found[0], (math.inf, 0.0), 0)
    passes.stage = _NO_PASS_LEFT
    return passes, upper_steps


def plain_pass(context, steps: dict, best: dict, aims: dict,
               previous: GridPasses | None, split_tried: dict) -> GridPasses:
    """The plain pass of one direction on the grid ``steps[direction]`` (which it may
    coarsen to fit the FFT), tightening ``best``. Where the previous grid's plain pass was
    far from the best bounds and a tilted pass had aimed, only the one-step PLDs, their
    rounding slack and the window the compositions would take are computed. On the first
    grid, a round-off-bound direction tries its split pass first (_split_first) and is
    not composed plainly when that settles it."""

    phases, direction, delta, tail_mass, failure, half_width, _, hint = context
    discretised = None
    if (previous is None and direction not in split_tried and hint is not None
            and _round_off_bound(phases, delta) and resolve(hint) > 0
            and math.isfinite(resolve(hint))):
        settled, discretised = _split_first(context, steps[direction], best, split_tried)
        if settled is not None:
            return settled
    if previous is not None and direction in aims and previous.plain_is_far(best[direction]):
        step = steps[direction]
        upper_steps = direction_pass.discretise_phases(phases, direction, step, half_width,
                                                       UPPER, tail_mass)
        lower_steps = direction_pass.discretise_phases(phases, direction, step, half_width,
                                                       LOWER, tail_mass)
        points = max(window_points(upper_steps, tail_mass), window_points(lower_steps, tail_mass))
        if points <= MAX_FFT_POINTS:
            plds = (upper_steps, lower_steps, rounding_slack(lower_steps, failure))
            return GridPasses(context, plds, aims[direction], previous.plain, points)
    # many phases: a direction whose upper bound is below another's certified lower bound
    # skips its own lower bound (direction_bounds; GridPasses composes it if a pass needs it)
    settled_below = (max((low for other, (_, low) in best.items() if other != direction),
                         default=-math.inf)
                     if len(phases) >= direction_pass.MIN_PHASES else -math.inf)
    (upper, lower, steps[direction], points, plds,
     estimate) = direction_pass.direction_bounds(phases, direction, steps[direction], delta,
                                           half_width, tail_mass, failure, discretised,
                                           settled_below)
    best[direction] = direction_pass.tighter(best[direction], (upper, lower))
    return GridPasses(context, plds, aims.get(direction, estimate), (upper, lower), points)
