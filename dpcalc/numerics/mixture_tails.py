"""GaussianMixturePair's loss tails and bucket masses for many pairs at once.

A composition of many phases discretises one pair per phase; each pair's own
log_bucket_masses runs a few hundred NumPy calls, whose fixed cost (not their arithmetic)
dominates a pair's few wide buckets and its tails. Here the pairs of the Poisson-subsampled
Gaussian — two components, weights (p_0, p_1) at shifts 0 and 1 — are done together: the
same formulas, element by element, with each element's σ and weights (the closed-form
inverse of mixture.GaussianMixturePair.inverse_loss, the normal masses of
numerics/gauss_intervals.py, the log-sum-exp of the two components), in chunks that stay in
cache. Other pairs are done one by one. The results equal each pair's own to the last bits
or so (the same operations on the same floats).
"""
from __future__ import annotations

import numpy as np

from dpcalc.numerics.gauss_intervals import (_HALF_NODES, _LOG_SQRT_2PI, _NARROW, _NARROW_CHUNK,
                                             _NODE_WEIGHTS, _SPLITTER, _cosh_small, _exp_small,
                                             log_interval_mass)
from dpcalc.numerics.special_functions import log_ndtr

REMOVE = "remove"  # mixture.REMOVE (this module is below mixture.py, which imports it)


def _two_components(pair) -> bool:
    """Whether GaussianMixturePair.inverse_loss takes its closed form for this pair (two
    components, shifts 0 and 1, nothing pruned)."""
    return (pair.weights.size == 2 and pair.max_shift == 1 and not pair.dropped
            and pair.weights[0] > 0.0)


class _Parameters:
    """Per element: σ, σ², the weights and their logs of its pair."""

    def __init__(self, pairs, sizes):
        repeat = np.repeat
        self.sigma = repeat([p.noise_multiplier for p in pairs], sizes)
        self.sigma2 = self.sigma**2
        self.q = repeat([p.weights[1] for p in pairs], sizes)
        self.floor = repeat([p.loss_floor for p in pairs], sizes)
        self.log_w0 = repeat([p.log_weights[0] for p in pairs], sizes)
        self.log_w1 = repeat([p.log_weights[1] for p in pairs], sizes)


def _inverse(eps: np.ndarray, par: _Parameters) -> np.ndarray:
    """GaussianMixturePair.inverse_loss's closed form, per element."""
    out = np.full(eps.shape, -np.inf)
    valid = eps > par.floor
    e, q = eps[valid], par.q[valid]
    small = e <= 1.0
    log_excess = np.empty_like(e)
    log_excess[small] = np.log(np.expm1(e[small]) + q[small])
    log_excess[~small] = e[~small] + np.log1p(-(1.0 - q[~small]) * np.exp(-e[~small]))
    out[valid] = par.sigma2[valid] * (log_excess - np.log(q)) + 0.5
    return out


def _cdfs(x: np.ndarray, shift: float, sigma: np.ndarray):
    """log Φ̄ and log Φ of (x − shift)/σ (GaussianMixturePair._log_component_cdfs)."""
    z = (x - shift) / sigma
    with np.errstate(invalid="ignore"):
        smaller = log_ndtr(-np.abs(z))
        larger = np.log1p(-np.exp(smaller))
    positive = z > 0
    return np.where(positive, smaller, larger), np.where(positive, larger, smaller)


def _tails(values: np.ndarray, direction: str, par: _Parameters):
    """GaussianMixturePair.log_tails per element (two components)."""
    x = _inverse(values if direction == REMOVE else -values, par)
    upper_0, lower_0 = _cdfs(x, 0.0, par.sigma)
    upper_1, lower_1 = _cdfs(x, 1.0, par.sigma)
    mixture_upper = np.logaddexp(par.log_w0 + upper_0, par.log_w1 + upper_1)
    mixture_lower = np.logaddexp(par.log_w0 + lower_0, par.log_w1 + lower_1)
    if direction == REMOVE:
        return mixture_upper, mixture_lower, upper_0, lower_0
    return lower_0, upper_0, mixture_lower, mixture_upper


def _component_masses(lower_ends: np.ndarray, upper_ends: np.ndarray, sigma: np.ndarray) -> list:
    """[gauss_intervals.log_normal_masses(lower_ends, upper_ends, shift, sigma) for shift in
    (0, 1)]: the same values, the ends' checks, gathers and widths shared by the two
    components (they differ only in the interval's low end)."""
    out = [np.full(lower_ends.shape, -np.inf), np.full(lower_ends.shape, -np.inf)]
    reaching = upper_ends > lower_ends
    finite = np.isfinite(lower_ends) & np.isfinite(upper_ends) & reaching
    if np.any(finite):
        low, spread = lower_ends[finite], sigma[finite]
        width = (upper_ends[finite] - low) / spread
        lows = [(low - shift) / spread for shift in (0.0, 1.0)]
        # narrow for both components: the quadrature with its width terms shared
        both = width > 0
        for start in lows:
            both &= width * (np.abs(start) + width + 2.0) <= _NARROW
        where = np.flatnonzero(finite)
        for values, found in zip(out, _narrow_pair(lows[0][both], lows[1][both], width[both])):
            values[where[both]] = found
        rest = ~both
        if np.any(rest):
            for start, values in zip(lows, out):
                values[where[rest]] = log_interval_mass(start[rest], width[rest])
    from_below = np.isneginf(lower_ends) & reaching
    to_above = np.isposinf(upper_ends) & reaching & ~from_below
    for shift, values in zip((0.0, 1.0), out):
        if np.any(from_below):
            values[from_below] = log_ndtr((upper_ends[from_below] - shift) / sigma[from_below])
        if np.any(to_above):
            values[to_above] = log_ndtr((shift - lower_ends[to_above]) / sigma[to_above])
        values[np.isneginf(lower_ends) & np.isposinf(upper_ends)] = 0.0
    return out


def _narrow_pair(low_0: np.ndarray, low_1: np.ndarray, width: np.ndarray) -> list:
    """[gauss_intervals._log_narrow_interval(low, width) for low in (low_0, low_1)]: the
    same operations in the same order, each node's (2c_j)·e^{−d_j²/2} (a function of the
    width only) computed once for both, in chunks that stay in cache."""
    out = [np.empty(width.size), np.empty(width.size)]
    for first in range(0, width.size, _NARROW_CHUNK):
        part = slice(first, first + _NARROW_CHUNK)
        half = 0.5 * width[part]
        shared = []
        for node, weight in zip(_HALF_NODES, _NODE_WEIGHTS):
            offset_squared = (half * node) ** 2
            shared.append((offset_squared, (2.0 * weight) * _exp_small(-0.5 * offset_squared)))
        for low, values in ((low_0[part], out[0]), (low_1[part], out[1])):
            middle = low + half
            middle_squared = middle * middle
            total = np.zeros_like(low)
            for offset_squared, factor in shared:
                total += factor * _cosh_small(middle_squared * offset_squared)
            split = _SPLITTER * low
            high_part = split - (split - low)
            low_part = low - high_part
            square = low * low
            square_error = ((high_part * high_part - square) + 2.0 * high_part * low_part
                            + low_part * low_part)
            small = 0.5 * square_error + half * (low + 0.5 * half)
            values[part] = (np.log(half * total) - _LOG_SQRT_2PI - small) - 0.5 * square
    return out


def log_tails_many(pairs, direction: str, grids: list) -> list:
    """[pair.log_tails(direction, grid) for each pair], computed together where the pairs
    have two components."""
    if not all(_two_components(pair) for pair in pairs):
        return [pair.log_tails(direction, grid) for pair, grid in zip(pairs, grids)]
    sizes = [len(grid) for grid in grids]
    par = _Parameters(pairs, sizes)
    tails = _tails(np.concatenate(grids), direction, par)
    cuts = np.cumsum(sizes)[:-1]
    return list(zip(*(np.split(part, cuts) for part in tails)))


def log_bucket_masses_many(pairs, direction: str, edge_list: list) -> list:
    """[pair.log_bucket_masses(direction, edges) for each pair] (log P_k, log Q_k, log P
    below, log P above), computed together where the pairs have two components."""
    if not all(_two_components(pair) for pair in pairs):
        return [pair.log_bucket_masses(direction, edges) for pair, edges in zip(pairs, edge_list)]
    sizes = np.array([len(edges) for edges in edge_list])
    par = _Parameters(pairs, sizes)
    edges = np.concatenate(edge_list)
    roots = _inverse(edges if direction == REMOVE else -edges, par)
    # bucket k of a pair: its edges k, k + 1 (never across two pairs)
    last = np.cumsum(sizes) - 1
    keep = np.ones(edges.size, dtype=bool)
    keep[last] = False
    start = np.flatnonzero(keep)
    if direction == REMOVE:  # (x_k, x_{k+1}]
        lower_ends, upper_ends = roots[start], roots[start + 1]
    else:  # [x_{k+1}, x_k)
        lower_ends, upper_ends = roots[start + 1], roots[start]
    sigma = par.sigma[start]
    parts = _component_masses(lower_ends, upper_ends, sigma)
    mixture = np.logaddexp(par.log_w0[start] + parts[0], par.log_w1[start] + parts[1])
    gaussian = parts[0]
    log_p, log_q = (mixture, gaussian) if direction == REMOVE else (gaussian, mixture)
    ends = np.r_[0, last[:-1] + 1]
    end_values = np.column_stack([edges[ends], edges[last]]).ravel()
    end_par = _Parameters(pairs, np.full(len(pairs), 2))
    tails = _tails(end_values, direction, end_par)
    below, above = tails[1][0::2], tails[0][1::2]
    cuts = np.cumsum(sizes - 1)[:-1]
    return [(p, q_, float(b), float(a)) for p, q_, b, a in
            zip(np.split(log_p, cuts), np.split(log_q, cuts), below, above)]
