"""ε of one repeated step at many step counts from one transform (ε over epochs).

The point path (buckets.epsilon_bounds) discretises, bounds a window and an FFT per
point. Along a curve T_1 < … < T_n of one step's pair nothing but T changes, so each
direction is discretised once per grid (with the tails sized for the group's largest T,
which is valid for every smaller T), transformed once, and each T costs a pointwise
power, one inverse transform of a length that fits its own window (curve_compose.py) and
one read-out. The Chernoff windows and the lower bound's rounding slacks minimise over
one table of λ for all T (every λ gives a valid bound, so the minimum over a grid is one).

The reported ε is the largest direction's upper bound, certified from below by the
largest lower bound: each T first gets every direction's upper bound, then the lower
bound of the direction with the largest upper bound only; the other directions' lower
bounds are composed only where that leaves the gap above the tolerance (a skipped one is
reported as the trivial certified lower bound 0). A point whose gap stays above the
tolerance is recomputed by the point path.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.pb.buckets import (_LOWER_FAILURE, _hinted_step, _open_directions, _window_points,
                               _HINT_ABOVE_POINTS, DEFAULT_TOLERANCE, TAIL_FRACTION, PldBounds,
                               check_consistent, epsilon_bounds, initial_grid_step, tail_half_width)
from dpcalc.pld.curve_compose import Spectral, composed_powers, tabulated_slacks  # noqa: F401
from dpcalc.pld.discretise import discretise
from dpcalc.pld.pld import LOWER, UPPER, ComposedPld, GridTooLarge
from dpcalc.pld.tail_readout import tail_quantile


def _point_step(pair, direction: str, count: int, hint, tolerance: float, delta: float) -> float:
    """The first grid the point path (buckets.epsilon_bounds) takes at ``count`` steps."""
    phases = [(pair, count)]
    step = initial_grid_step(phases, None, tail_half_width(count, delta), direction)
    if _window_points(phases, direction, step) > _HINT_ABOVE_POINTS:
        step = max(step, _hinted_step(hint, tolerance, count, _LOWER_FAILURE * delta))
    return step


def _groups(steps: list[float]) -> list[list[int]]:
    """Indices of consecutive points whose grids differ by less than a factor 2: each
    group shares one transform on its finest grid (so no point gets a coarser grid than
    the point path gives it)."""
    groups: list[list[int]] = []
    low = high = math.nan
    for index, step in enumerate(steps):
        if groups and max(high, step) < 2.0 * min(low, step):
            groups[-1].append(index)
            low, high = min(low, step), max(high, step)
        else:
            groups.append([index])
            low = high = step
    return groups


_NOISE_SHARE = 0.01


def _noise_mass(composed: ComposedPld) -> float:
    """The float-error allowance summed over the window."""
    floor = composed.noise_floor
    return float(np.sum(floor)) if np.ndim(floor) else float(floor) * composed.pmf.size


def _read(composition, delta: float, bound: str, points: list, index: int,
          noise_delta: float | None = None, hint: float | None = None) -> float | None:
    """The unclamped read-out (ComposedPld.loss_quantile) of one composition, from its
    spectrum where it can be; None where float noise calls for the point path (noise
    mass above _NOISE_SHARE·δ). Records the window's points."""
    noise_delta = delta if noise_delta is None else noise_delta
    if isinstance(composition, Spectral):
        tail = composition.tail
        points[index] = max(points[index], tail.points)
        if tail.noise_mass() > _NOISE_SHARE * noise_delta:
            return None
        value = tail.quantile(delta, bound, hint)
        if value is not None:
            return value
        composition = composition.composed()
    points[index] = max(points[index], composition.pmf.size)
    if _noise_mass(composition) > _NOISE_SHARE * noise_delta:
        return None
    return tail_quantile(composition, delta, bound)


def _extrapolated(found: list[tuple[int, float]], count: int) -> float | None:
    """Where ε at ``count`` steps is likely: the line through the last two (T, ε) found (ε
    grows with T; a search start only, any value gives the same answer)."""
    if len(found) < 2:
        return found[-1][1] if found else None
    (t0, e0), (t1, e1) = found[-2:]
    return e1 + (e1 - e0) * (count - t1) / (t1 - t0) if t1 != t0 else e1


class _MomentsMemo:
    """The pair, its loss moments computed once per direction (the grid of every T asks)."""

    def __init__(self, pair):
        self._pair, self._moments = pair, {}

    def __getattr__(self, name):
        return getattr(self._pair, name)

    def loss_moments(self, direction: str):
        if direction not in self._moments:
            self._moments[direction] = self._pair.loss_moments(direction)
        return self._moments[direction]


class _Direction:
    """One direction of the pair along the curve: its grid per T and the groups of T that
    share a discretisation (tails sized for the group's largest T)."""

    def __init__(self, pair, direction: str, steps: np.ndarray, hints, delta: float,
                 tolerance: float):
        self.pair, self.direction, self.steps, self.delta = pair, direction, steps, delta
        memo = _MomentsMemo(pair)
        self.grids = [_point_step(memo, direction, int(count), None if hints is None else hints[i],
                                  tolerance, delta) for i, count in enumerate(steps.tolist())]
        self.groups = _groups(self.grids)
        self._group_grid = [0.0] * steps.size
        for group in self.groups:
            finest = min(self.grids[j] for j in group)
            for i in group:
                self._group_grid[i] = finest
        self.points = [0] * steps.size
        self._plds: dict = {}
        self._near: dict[int, float] = {}  # where each T's ε was found (search hints)

    def _pld(self, number: int, bound: str):
        key = (number, bound)
        if key not in self._plds:
            group = self.groups[number]
            grid = min(self.grids[i] for i in group)
            half_width = tail_half_width(int(self.steps[group[-1]]), self.delta)
            self._plds[key] = discretise(self.pair, self.direction, grid, half_width, bound)
        return self._plds[key]

    def span(self, number: int) -> tuple[int, int]:
        """The smallest and the largest T of group ``number`` (its plds serve only these)."""
        group = self.groups[number]
        return int(self.steps[group[0]]), int(self.steps[group[-1]])

    def grid(self, index: int) -> float:
        return self._group_grid[index]

    def uppers(self, wanted: list[int]) -> dict[int, float | None]:
        """Certified upper ε at the T of indices ``wanted`` (None: float noise calls for
        the point path)."""
        tail_mass = TAIL_FRACTION * self.delta
        out: dict[int, float | None] = {}
        wanted = set(wanted)
        for number, group in enumerate(self.groups):
            chosen = [i for i in group if i in wanted]
            if not chosen:
                continue
            found: list[tuple[int, float]] = []  # (T, ε) read so far: the next search's start
            for position, up in composed_powers(self._pld(number, UPPER), self.steps[chosen],
                                                tail_mass, span=self.span(number)):
                index = chosen[position]
                count = int(self.steps[index])
                value = _read(up, self.delta, UPPER, self.points, index,
                              hint=_extrapolated(found, count))
                out[index] = None if value is None else max(0.0, value)
                if value is not None and math.isfinite(value):
                    found.append((count, value))
                self._near[index] = found[-1][1] if found else None
        return out

    def lowers(self, wanted: list[int]) -> dict[int, float | None]:
        """Certified lower ε at the T of indices ``wanted`` (None: float noise)."""
        tail_mass, failure = TAIL_FRACTION * self.delta, _LOWER_FAILURE * self.delta
        out: dict[int, float | None] = {}
        wanted = set(wanted)
        for number, group in enumerate(self.groups):
            chosen = [i for i in group if i in wanted]
            if not chosen:
                continue
            pld = self._pld(number, LOWER)
            counts = self.steps[chosen]
            slacks = tabulated_slacks(pld, counts, failure).tolist()
            hint, below_upper = None, 0.0  # search start; how far below the upper the last was
            for position, low in composed_powers(pld, counts, tail_mass,
                                                 span=self.span(number)):
                index = chosen[position]
                near = self._near.get(index)
                hint = hint if near is None else near - below_upper
                value = _read(low, self.delta + failure, LOWER, self.points, index, self.delta, hint)
                if value is not None and math.isfinite(value):
                    below_upper = 0.0 if near is None else near - value
                    hint = value
                # as buckets._direction_bounds: the UNCLAMPED read-out shifted by η
                out[index] = None if value is None else max(0.0, value - slacks[position])
        return out


_SPACING = 0.8  # a round's step counts, each at most this fraction of the one before
_ROUNDS = 4


def _covering_uppers(direction: _Direction, leading: list, live: list[int],
                     known: dict[int, float | None]) -> dict[int, float | None]:
    """Per live T: a certified upper ε of ``direction`` that lies at or below the leading
    direction's upper bound ``leading`` wherever one is found, composing as few T as it can.

    ε_d(δ) of T repetitions is non-decreasing in T (the first T steps of T' ≥ T are a
    post-processing of all T': the hockey-stick divergence cannot grow), so an upper
    bound at T' certifies every T ≤ T'. Where it is already below the leading direction's
    upper bound, the maximum over directions, hence the reported ε, is what composing
    this direction at T itself would give. The others are composed in a few rounds, from
    the largest T down, the step counts of a round spaced by a factor _SPACING."""
    known = dict(known)
    rounds = 0
    while True:
        found, best = {}, math.inf  # best: min of the known bounds at T' ≥ T
        uncovered = []
        for i in reversed(live):
            if i in known:
                found[i] = known[i]
                best = best if known[i] is None else min(best, known[i])
                continue
            if best <= leading[i]:
                found[i] = best
            else:
                uncovered.append(i)  # largest T first
        if not uncovered:
            return found
        rounds += 1
        picked, ceiling = [], math.inf
        for i in uncovered:
            if rounds >= _ROUNDS or direction.steps[i] <= ceiling:
                picked.append(i)
                ceiling = _SPACING * float(direction.steps[i])
        known.update(direction.uppers(picked))


def _curve_bounds(pair, steps: np.ndarray, hints, delta: float, tolerance: float):
    """Per T (sorted): {direction: (upper, lower)} or None (the point path decides), the
    grid and the FFT points."""
    count = steps.size
    directions = [_Direction(pair, d, steps, hints, delta, tolerance) for d in pair.directions]
    # the direction with the largest upper bound at the largest T leads: every T of it
    tops = {d.direction: d.uppers([count - 1])[count - 1] for d in directions}
    lead = max(directions, key=lambda d: -1.0 if tops[d.direction] is None else tops[d.direction])
    leading = lead.uppers(list(range(count - 1)))
    leading[count - 1] = tops[lead.direction]
    leading = [leading[i] for i in range(count)]
    live = [i for i in range(count) if leading[i] is not None]
    uppers = {lead.direction: leading}
    for direction in directions:
        if direction is not lead:
            covering = _covering_uppers(direction, leading, live,
                                        {count - 1: tops[direction.direction]})
            uppers[direction.direction] = [covering.get(i) for i in range(count)]
    bounds: list[dict | None] = [None] * count
    live = [i for i in live if all(uppers[d][i] is not None for d in uppers)]
    for i in live:
        bounds[i] = {d: (uppers[d][i], 0.0) for d in uppers}
    # the lower bound of the direction with the largest upper bound first
    first = {i: max(uppers, key=lambda d: uppers[d][i]) for i in live}
    pending = {d.direction: [i for i in live if first[i] == d.direction] for d in directions}
    for _ in range(2):
        for direction in directions:
            found = direction.lowers(pending[direction.direction]) if pending[direction.direction] else {}
            for i, lower in found.items():
                if bounds[i] is None:
                    continue
                if lower is None:
                    bounds[i] = None
                else:
                    bounds[i][direction.direction] = (bounds[i][direction.direction][0], lower)
        # then the others' lower bounds, only where the gap is still open
        still = [i for i in live if bounds[i] is not None and _open_directions(bounds[i], tolerance)]
        pending = {d.direction: [i for i in still if d.direction != first[i]] for d in directions}
        if not any(pending.values()):
            break
    grids = [max(d.grid(i) for d in directions) for i in range(count)]
    points = [max(d.points[i] for d in directions) for i in range(count)]
    return bounds, grids, points


def epsilon_curve(pair, steps_list, delta: float, tolerance: float = DEFAULT_TOLERANCE,
                  hints=None) -> list[PldBounds]:
    """Certified (upper, lower) ε at ``delta`` after each T of ``steps_list`` repetitions
    of ``pair``, in the order given; ``hints`` (e.g. rdp's ε per T) as in epsilon_bounds.
    A pruned pair (mixture.py ``prune``) is composed point by point (its lower bounds leave
    an allowance: direction_pass.lower_allowance)."""
    if getattr(pair, "dropped", 0.0):
        return [epsilon_bounds([(pair, count)], delta, tolerance,
                               epsilon_hint=None if hints is None else hints[index])
                for index, count in enumerate(steps_list)]
    order = np.argsort(np.asarray(steps_list, dtype=np.int64), kind="stable")
    steps = np.asarray(steps_list, dtype=np.int64)[order]
    sorted_hints = None if hints is None else [hints[i] for i in order]
    try:
        per_point, grids, points = _curve_bounds(pair, steps, sorted_hints, delta, tolerance)
    except GridTooLarge:
        per_point, grids, points = [None] * steps.size, None, None
    results = [None] * len(steps)
    for index, count in enumerate(steps.tolist()):
        bounds = per_point[index]
        if bounds is None or _open_directions(bounds, tolerance):
            hint = None if sorted_hints is None else sorted_hints[index]
            results[order[index]] = epsilon_bounds([(pair, count)], delta, tolerance,
                                                    epsilon_hint=hint)
            continue
        for direction, pair_bounds in bounds.items():
            check_consistent(*pair_bounds, f"ε ({direction})")
        results[order[index]] = PldBounds(max(u for u, _ in bounds.values()),
                                          max(low for _, low in bounds.values()), dict(bounds),
                                          grids[index], grids[index], points[index], True)
    return results
