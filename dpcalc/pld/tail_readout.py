"""ε(δ) of a composed PLD from its upper tail only (the read-out of ε curves).

ComposedPld.loss_quantile builds the whole curve δ(ℓ_j) = p_∞ + S1_j − e^{ℓ_j} S2_j
(S1_j = Σ_{i>j} p_i, S2_j = Σ_{i>j} p_i e^{−ℓ_i}) over the tail above a point it has shown
to lie below the crossing. Here that tail enters through two totals: with b the first
index where p_∞ + Σ_{i≥b} p_i ≤ δ, every j ≥ b has δ(ℓ_j) ≤ p_∞ + S1_j ≤ δ (each term of
δ(ℓ_j) is at most p_i), so the crossing lies in [start, b] for a start with δ(ℓ_start) > δ,
and S1_j, S2_j there are the totals over i ≥ b plus short cumulative sums over (j, b).
The same effective masses (pmf ± its float-error floor, ComposedPld._effective), the same
monotone fix on the short stretch and the same exact solve on the crossing's grid
interval, so the answer is the one loss_quantile gives, up to summation order; anything
unusual (a crossing near the window's start, a tail wider than e^600 in e^{−ℓ}) is left to
loss_quantile itself.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.pld.pld import LOWER, UPPER, ComposedPld

_BLOCK = 256
_SPAN = 600.0  # e^{−(ℓ_i − ℓ_start)} stays far from underflow across the tail


def _first_below(pmf: np.ndarray, limit: float) -> int:
    """The first j with Σ_{i≥j} pmf_i ≤ ``limit`` (pmf.size when none): block sums from
    the top, then one block entry by entry."""
    size = pmf.size
    whole = size // _BLOCK * _BLOCK
    head = float(np.sum(pmf[whole:]))  # the partial block at the top
    if head > limit:
        after = np.cumsum(pmf[whole:][::-1])[::-1]
        return whole + int(np.searchsorted(-after, -limit, side="left"))
    blocks = pmf[:whole].reshape(-1, _BLOCK).sum(axis=1)
    above = head + np.cumsum(blocks[::-1])[::-1]  # Σ_{i ≥ block start}
    number = int(np.searchsorted(-above, -limit, side="left"))  # first block start ≤ limit
    if number == 0:
        return 0
    first = (number - 1) * _BLOCK  # the crossing lies inside block number − 1
    rest = above[number] if number < above.size else head
    after = rest + np.cumsum(pmf[first:first + _BLOCK][::-1])[::-1]
    return first + int(np.searchsorted(-after, -limit, side="left"))


def tail_quantile(composed: ComposedPld, delta: float, bound: str) -> float:
    """composed.loss_quantile(delta, bound) from the tail above the answer."""
    fallback = composed.loss_quantile
    asked = delta
    if bound == LOWER:
        delta = delta + composed.window_mass
    pmf, infinity = composed._effective(bound)
    if infinity >= delta or pmf.size < 4096:
        return fallback(asked, bound)
    b = _first_below(pmf, delta - infinity)
    if b >= pmf.size:
        return fallback(asked, bound)
    step, offset = composed.grid_step, composed.offset
    width = max(1024, pmf.size // 64)
    while True:
        start = b - width
        if start <= 0:
            return fallback(asked, bound)
        base = (offset + start) * step
        if (offset + pmf.size - 1) * step - base > _SPAN:
            return fallback(asked, bound)
        # δ(ℓ_start) directly, a sum of non-negative terms, as ComposedPld._query_curve
        shifted = (np.arange(start + 1, pmf.size) - start) * step  # ℓ_i − ℓ_start
        direct = infinity - float(np.sum(pmf[start + 1:] * np.expm1(-shifted)))
        if direct > 2.0 * delta:
            answer = _solve(pmf, infinity, start, b, shifted, base, step, delta, bound)
            if answer is not None:
                return answer
        width *= 4


def _solve(pmf, infinity, start, b, shifted, base, step, delta, bound):
    """The exact crossing on [ℓ_start, ℓ_b] (None when the computed δ(ℓ_start) ≤ δ)."""
    weights = np.exp(-shifted)  # e^{−(ℓ_i − ℓ_start)}, i > start
    masses = pmf[start + 1:]
    split = b - start  # entries i > start with i ≥ b begin at position split − 1
    tail1 = float(np.sum(masses[split - 1:]))
    tail2 = float(np.sum(masses[split - 1:] * weights[split - 1:]))
    # S1_j, S2_j·e^{ℓ_start} for j = start..b−1: totals over i ≥ b plus i in (j, b)
    near1 = masses[:split - 1][::-1].cumsum()[::-1]
    near2 = (masses[:split - 1] * weights[:split - 1])[::-1].cumsum()[::-1]
    s1 = np.concatenate([near1 + tail1, [tail1]])
    s2 = np.concatenate([near2 + tail2, [tail2]])
    offsets = np.arange(split) * step  # ℓ_j − ℓ_start
    with np.errstate(over="ignore", invalid="ignore"):
        at_grid = infinity + s1 - np.exp(offsets) * s2
    at_grid = np.where(np.isfinite(at_grid), at_grid, infinity + s1)
    if bound == UPPER:  # non-increasing, on the safe side (the rest j ≥ b is ≤ δ)
        at_grid = np.maximum.accumulate(at_grid[::-1])[::-1]
    else:
        at_grid = np.minimum.accumulate(at_grid)
    if not at_grid[0] > delta:
        return None
    j = int(np.searchsorted(-at_grid, -delta, side="left"))  # 1 ≤ j ≤ split
    low, high = base + (j - 1) * step, base + j * step
    if not s2[j - 1] > 0.0:  # nothing finite above: δ(ε) ≤ δ only at ℓ_j
        return high
    excess = infinity + float(s1[j - 1]) - delta
    eps = math.log(excess) - (math.log(float(s2[j - 1])) - base) if excess > 0 else -math.inf
    return min(max(eps, low), high)
