"""One step's PLD on a loss grid, fine where its mass is and coarse in its light tails,
for many pairs at once: what a composition of many phases discretises (phase_spectra.py).

discretise.py puts every bucket of width h on the grid, out to the tails that hold τ/T of
mass. Most of those buckets are light: the loss grid of a step at σ = 0.8 runs to ℓ ≈ 6
(60 000 points at h = 1e-4) while all but 1e-12 of its mass lies below ℓ ≈ 3. Here the
buckets are h wide where the tails are heavy and widen where they are light
(:func:`tail_edges`), every bucket edge a grid point, so the pmf still lives on the grid of
step h (sparse in the tails). Both constructions of discretise.py hold for buckets of any
widths:

* upper — connect-the-dots (Doroshenko et al. 2022, §3: the construction and its
  dominance hold for any finite set of loss values): each bucket's mass is split between
  its two ends preserving P_k and Q_k, the split at the top of its float error
  (discretise._loss_error); a wide bucket's split dominates its content as a narrow one's
  does, its excess over the true δ being second order in its width times its (light) mass.
* lower — the pair bucketed (a post-processing, so dominated by the true pair) and each
  bucket's exact loss ℓ_k = ln(P_k/Q_k) moved onto the grid: the unit buckets, centred on
  their grid points, round to that point (|error| ≤ h/2, O(h²) where the PLD is smooth, as
  discretise.centred_rounding); a wide bucket rounds DOWN to the grid point at or below ℓ_k
  (an error in (−h, 0], recorded as 0: the slack's MGF stays an upper bound,
  chernoff.rounding_slack, and equals that of an exact loss there).

The pairs are discretised together: their bucket masses by the pair class's
``_log_bucket_masses_many`` where it has one (one pass of the normal-mass kernels, whose
per-call cost dominates a pair's few wide buckets), the splits over all buckets at once.
The result is a list of :class:`CompactPld`: DiscretePlds holding their non-zero entries,
the dense pmf built only when asked for.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.numerics.log_masses import bucket_masses
from dpcalc.pld.discretise import _loss_error, _pair_log_error, entry_error
from dpcalc.pld.pld import LOWER, UPPER, DiscretePld

# The tails are sampled at this many grid points to size the buckets.
_CUT_SAMPLES = 192


class CompactPld(DiscretePld):
    """A DiscretePld held as its non-zero entries: masses ``values`` at grid indices
    ``index`` (increasing, relative to ``offset``) over a grid of ``size`` points; ``pmf``
    is the dense array, built on first use. ``rounding`` (lower bound only): (masses,
    errors) per bucket, as DiscretePld's rounding_masses/rounding_errors."""

    def __init__(self, grid_step: float, offset: int, size: int, index: np.ndarray,
                 values: np.ndarray, infinity_mass: float, rounding=None,
                 entry_error: float = 0.0):
        self.grid_step, self.offset, self.size = grid_step, offset, size
        self.index, self.values = index, values
        self.infinity_mass = infinity_mass
        self.rounding_masses, self.rounding_errors = rounding if rounding else (None, None)
        self.entry_error = entry_error

    @property
    def pmf(self) -> np.ndarray:
        dense = self.__dict__.get("_dense")
        if dense is None:
            dense = np.zeros(self.size)
            dense[self.index] = self.values
            self.__dict__["_dense"] = dense
        return dense

    @property
    def points(self) -> int:
        return self.size

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """(grid indices relative to offset, masses) of the non-zero entries."""
        return self.index, self.values

    def _batch(self):
        from dpcalc.pld.phase_batch import PhaseBatch  # the batch of this pld alone (a local import)

        found = self.__dict__.get("_alone")
        if found is None:
            found = self.__dict__["_alone"] = PhaseBatch([(self, 1)])
        return found

    def loss_variance(self) -> float:
        """Σ p_i (ℓ_i − Σ p ℓ)² (DiscretePld.loss_variance) from the non-zero entries."""
        losses = (self.offset + self.index) * self.grid_step
        return float(np.sum(self.values * (losses - np.sum(self.values * losses)) ** 2))

    def log_mgf(self, lambdas) -> np.ndarray:
        """An upper bound on ln E[e^{λL}; L finite] per λ (phase_batch.PhaseBatch.cumulant)."""
        return self._batch().cumulant(np.atleast_1d(np.asarray(lambdas, dtype=float)))

    def rounding_log_mgf(self, lambdas) -> np.ndarray:
        """An upper bound on ln E[e^{λE}] of one step's rounding error E."""
        return self._batch().rounding_cumulant(np.atleast_1d(np.asarray(lambdas, dtype=float)))

    def __repr__(self) -> str:
        return (f"CompactPld(grid_step={self.grid_step!r}, offset={self.offset}, size={self.size}, "
                f"entries={self.index.size})")


def tail_edges(samples: np.ndarray, p_above: np.ndarray, p_below: np.ndarray, step: float,
               last: int, light: float, tilt: float, margin: float = 2.0) -> np.ndarray:
    """Integer bucket edges from samples[0] to ``last``, given the log tails P(L > e),
    P(L ≤ e) at the grid points ``samples``: unit buckets where the tilted tail beyond an
    edge, t(e) = P(L > e)·w(e) above the bulk and P(L ≤ e)·w(e) below it, exceeds
    ``light``; elsewhere buckets of width ⌊√(light/t)⌋ (t read at the heavy end of each
    stretch between two samples, so no bucket is wider than the rule allows inside it).
    The weight w(e) = e^{mθe} for e ≥ 0 (m = ``margin``) and e^{θe/2} below (θ = ``tilt``).

    Why: a bucket's connect-the-dots excess, and the information its bucketing loses for
    the lower bound, are second order in its width times its mass. Where the composition's
    δ is decided, one step's loss is weighted by e^{θℓ}, θ the saddle point of the composed
    loss at ε (Chernoff's tilt; taken steeper above 0 and half as steep below, for margin),
    so a bucket's share of the grid's own error is about t·width², at most ``light`` per
    stretch (the lower bound's wide buckets round down: first order in h, hence its finer
    ``light``; pb/direction_pass.py)."""
    if samples.size < 2:
        return np.arange(samples[0], last + 1, dtype=np.int64)
    return _tail_edges_many(samples[None, :], p_above[None, :], p_below[None, :], step,
                            np.array([last]), light, np.array([tilt], dtype=float), margin)[0]


def _tail_edges_many(samples: np.ndarray, p_above: np.ndarray, p_below: np.ndarray, step: float,
                     lasts: np.ndarray, light: float, tilts: np.ndarray, margin: float) -> list:
    """tail_edges for many pairs at once, each with the same number of samples (rows of
    ``samples``, ``p_above``, ``p_below``; ``lasts``, ``tilts`` per row): the same
    element-wise operations, the rows' edges built in one flat array and split."""
    losses = samples * step
    weight = np.where(losses >= 0.0, (margin * tilts)[:, None], (0.5 * tilts)[:, None]) * losses
    with np.errstate(over="ignore", invalid="ignore"):
        above = np.sqrt(light * np.exp(-(p_above[:, :-1] + weight[:, :-1])))
        below = np.sqrt(light * np.exp(-(p_below[:, 1:] + weight[:, 1:])))
    width = np.floor(np.nan_to_num(np.minimum(np.maximum(above, below), 1e15), nan=1.0))
    width = np.maximum(width, 1.0).astype(np.int64).ravel()
    lengths = np.diff(samples, axis=1)
    counts = (-(-lengths.ravel() // width))  # buckets per stretch (the last one shorter)
    starts = np.repeat(samples[:, :-1].ravel(), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    inner = starts + offsets * np.repeat(width, counts)
    per_row = counts.reshape(samples.shape[0], -1).sum(axis=1)  # edges of a row but its last
    ends = np.cumsum(per_row + 1) - 1  # where each row's last edge goes
    out = np.empty(inner.size + per_row.size, dtype=np.int64)
    keep = np.ones(out.size, dtype=bool)
    keep[ends] = False
    out[keep] = inner
    out[ends] = lasts
    return np.split(out, ends[:-1] + 1)


def _many(pairs, name: str, direction: str, grids: list) -> list:
    """The pair class's batched ``name`` over all pairs where they share a class that has
    it, else each pair's own (``log_tails`` / bucket_masses)."""
    kind = type(pairs[0])
    batched = getattr(kind, "_" + name + "_many", None)  # internal, not checked
    if batched is not None and all(type(pair) is kind for pair in pairs):
        return batched(pairs, direction, grids)
    if name == "log_tails":
        return [pair.log_tails(direction, grid) for pair, grid in zip(pairs, grids)]
    return [bucket_masses(pair, direction, grid) for pair, grid in zip(pairs, grids)]


def discretise_compact(pair, direction: str, step: float, half_width: float, bound: str,
                       light: float, tilt: float = 0.0, margin: float = 2.0) -> CompactPld:
    """discretise_many for one pair."""
    return discretise_many([pair], direction, step, half_width, bound, light, tilt, margin)[0]


def discretise_many(pairs, direction: str, step: float, half_width: float, bound: str,
                    light: float, tilt: float = 0.0, margin: float = 2.0) -> list[CompactPld]:
    """One step of each pair in ``direction`` on the grid of step ``step`` (the grid of
    discretise.discretise: outputs in [−Kσ, k + Kσ], K = ``half_width``), with unit
    buckets where the tilted tails exceed ``light`` and wider ones beyond (module doc;
    ``tilt``: one θ, or one per pair)."""
    if bound not in (UPPER, LOWER):
        raise ValueError(f"bound must be {UPPER!r} or {LOWER!r}")
    firsts, lasts = [], []
    for pair in pairs:
        low, high = pair.loss_range(direction, half_width)
        first = math.floor(low / step)
        firsts.append(first)
        lasts.append(max(math.ceil(high / step), first + 1))
    tops = [last + (bound == LOWER) for last in lasts]  # lower: edges to last + ½
    # the tails sampled at _CUT_SAMPLES points (np.linspace's values, rounded: at least 4
    # apart, so distinct) where a pair's grid is long enough to have light tails
    sampled = [i for i, (first, top) in enumerate(zip(firsts, tops))
               if top - first >= 4 * _CUT_SAMPLES and light > 0]
    edges: list = [None] * len(pairs)
    if sampled:
        low = np.array([firsts[i] for i in sampled], dtype=float)
        span = np.array([tops[i] for i in sampled], dtype=float) - low
        samples = np.arange(_CUT_SAMPLES) * (span / (_CUT_SAMPLES - 1))[:, None] + low[:, None]
        samples[:, -1] = low + span
        samples = samples.round().astype(np.int64)
        found = _many([pairs[i] for i in sampled], "log_tails", direction, list(samples * step))
        tilts = np.broadcast_to(np.asarray(tilt, dtype=float), (len(pairs),))[sampled]
        for i, edge in zip(sampled, _tail_edges_many(
                samples, np.array([tails[0] for tails in found]),
                np.array([tails[1] for tails in found]), step,
                np.array([tops[i] for i in sampled]), light, tilts, margin)):
            edges[i] = edge
    for i, (first, top) in enumerate(zip(firsts, tops)):
        if edges[i] is None:
            edges[i] = np.arange(first, top + 1, dtype=np.int64)
    shift = 0.5 if bound == LOWER else 0.0
    grids = [(edge - shift) * step for edge in edges]
    plds = []
    for group in _groups([edge.size for edge in edges]):
        chosen = [pairs[i] for i in group]
        masses = _many(chosen, "log_bucket_masses", direction, [grids[i] for i in group])
        build = _upper if bound == UPPER else _lower
        plds += build(chosen, direction, step, [firsts[i] for i in group],
                      [lasts[i] for i in group], [edges[i] for i in group],
                      [grids[i] for i in group], masses)
    return plds


# Pairs are discretised together in groups of about this many buckets: enough to share
# NumPy's per-call cost, few enough that the temporaries stay in cache (fresh large ones
# cost page faults).
_GROUP_BUCKETS = 1 << 17


def _groups(sizes: list[int]) -> list[list[int]]:
    """Consecutive indices grouped to about _GROUP_BUCKETS buckets each."""
    groups, current, total = [], [], 0
    for index, size in enumerate(sizes):
        if current and total + size > _GROUP_BUCKETS:
            groups.append(current)
            current, total = [], 0
        current.append(index)
        total += size
    return groups + [current] if current else groups


class _Buckets:
    """Every pair's buckets in one flat array: the bucket k of a pair lies between its
    edges k and k + 1 (flat indices ``start`` and ``start + 1`` of the edges)."""

    def __init__(self, pairs, direction, edges, grids, masses):
        self.sizes = np.array([edge.size for edge in edges])
        self.edges, self.grid = np.concatenate(edges), np.concatenate(grids)
        ends = np.cumsum(self.sizes) - 1
        keep = np.ones(self.edges.size, dtype=bool)
        keep[ends] = False
        self.start = np.flatnonzero(keep)
        self.pair_of_edge = np.repeat(np.arange(len(edges)), self.sizes)
        self.log_p = np.concatenate([found[0] for found in masses])
        self.log_q = np.concatenate([found[1] for found in masses])
        self.below = np.array([math.exp(found[2]) for found in masses])
        self.above = np.array([math.exp(found[3]) for found in masses])
        own = [_pair_log_error(pair, direction, grid) for pair, grid in zip(pairs, grids)]
        self.log_error = (np.concatenate([np.broadcast_to(value, (grid.size - 1,))
                                          for value, grid in zip(own, grids)])
                          if any(np.any(value) for value in own) else 0.0)
        self.own = [entry_error(pair, direction, grid) if np.any(value) else 0.0
                    for pair, grid, value in zip(pairs, grids, own)]


def _upper(pairs, direction, step, firsts, lasts, edges, grids, masses) -> list[CompactPld]:
    """Connect-the-dots on every pair's buckets (module doc)."""
    buckets = _Buckets(pairs, direction, edges, grids, masses)
    low = buckets.grid[buckets.start]
    width = buckets.grid[buckets.start + 1] - low
    log_p, log_q = buckets.log_p, buckets.log_q
    mass = np.exp(log_p)
    # discretise.connect_the_dots with a bucket's own width in place of h
    float_error = _loss_error(log_p, log_q, low, width, buckets.log_error)
    with np.errstate(invalid="ignore"):
        offset_in_bucket = np.clip(log_p - log_q - low + float_error, 0.0, width)
    offset_in_bucket = np.where(np.isfinite(offset_in_bucket), offset_in_bucket, width)
    to_right = np.minimum(mass * (-np.expm1(-offset_in_bucket)) / (-np.expm1(-width)), mass)
    values = np.zeros(buckets.edges.size)
    values[buckets.start] += mass - to_right
    values[buckets.start + 1] += to_right
    firsts_flat = np.cumsum(buckets.sizes) - buckets.sizes
    values[firsts_flat] += buckets.below  # loss below the grid, rounded up to its first point
    pieces = np.split(np.column_stack([buckets.edges, values]), np.cumsum(buckets.sizes)[:-1])
    return [CompactPld(step, first, last - first + 1, piece[:, 0].astype(np.int64) - first,
                       piece[:, 1], float(above), entry_error=own)
            for first, last, piece, above, own in zip(firsts, lasts, pieces, buckets.above,
                                                       buckets.own)]


def _lower(pairs, direction, step, firsts, lasts, edges, grids, masses) -> list[CompactPld]:
    """Every pair's buckets rounded onto the grid (module doc). Edges are integers e for
    the loss (e − ½)h, from first to last + 1: a unit bucket is centred on e."""
    buckets = _Buckets(pairs, direction, edges, grids, masses)
    log_p, log_q = buckets.log_p, buckets.log_q
    mass = np.exp(log_p)
    start = buckets.start
    unit = buckets.edges[start + 1] - buckets.edges[start] == 1
    centre = buckets.edges[start]
    pair = buckets.pair_of_edge[start]
    first = np.array(firsts)[pair]
    last = np.array(lasts)[pair]
    with np.errstate(invalid="ignore"):
        exact = log_p - log_q  # each bucket's loss
        down = np.floor(exact / step)
    point = np.where(unit, centre, np.clip(np.where(np.isfinite(down), down, centre),
                                           first, last)).astype(np.int64)
    float_error = _loss_error(log_p, log_q, point * step, step, buckets.log_error)
    with np.errstate(invalid="ignore"):
        errors = point * step - exact
        # a unit bucket's error within ±h/2 (discretise.centred_rounding); a wide bucket's
        # (≤ 0, rounded down) recorded as 0: e^{λ·0} ≥ e^{λE} for the slack's λ > 0
        errors = np.where(unit, np.clip(errors, -0.5 * step, 0.5 * step),
                          np.maximum(errors, 0.0)) + float_error
    errors = np.where(np.isfinite(errors), errors, 0.0)
    # the top bucket rounded down (error ≤ 0: bounded by 0), the bottom one dropped
    count = len(pairs)
    bucket_ends = np.cumsum(buckets.sizes - 1)
    key_pair = np.insert(pair, bucket_ends, np.arange(count))
    key_point = np.insert(point, bucket_ends, lasts)
    key_value = np.insert(mass, bucket_ends, buckets.above)
    step_back = (np.diff(key_point) < 0) & (np.diff(key_pair) == 0)
    if np.any(step_back):  # a wide bucket's loss a rounding off its bucket: sort
        order = np.lexsort((key_point, key_pair))
        key_pair, key_point, key_value = key_pair[order], key_point[order], key_value[order]
    new = np.r_[True, (np.diff(key_pair) != 0) | (np.diff(key_point) != 0)]
    starts = np.flatnonzero(new)
    merged = np.add.reduceat(key_value, starts)
    merged_pair, merged_point = key_pair[starts], key_point[starts]
    per_pair = np.bincount(merged_pair, minlength=count)
    cuts = np.cumsum(per_pair)[:-1]
    bucket_cuts = np.cumsum(buckets.sizes - 1)[:-1]
    plds = []
    for i, (index, values, bucket_mass, bucket_error) in enumerate(zip(
            np.split(merged_point, cuts), np.split(merged, cuts), np.split(mass, bucket_cuts),
            np.split(errors, bucket_cuts))):
        rounding = (np.append(bucket_mass, buckets.above[i] + buckets.below[i]),
                    np.append(bucket_error, 0.0))
        plds.append(CompactPld(step, firsts[i], lasts[i] - firsts[i] + 1, index - firsts[i],
                               values, 0.0, rounding, buckets.own[i]))
    return plds
