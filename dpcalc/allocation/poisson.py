"""Profiles the balls-in-bins bounds are built from, and the ε search over a profile.

* :class:`PoissonProfile`: certified upper δ(ε) per direction of n steps of the
  Poisson-subsampled Gaussian (rate q, noise σ), read from pb's UPPER composition on its
  first grid (connect-the-dots discretisation, FFT composition with its float-error bound:
  certified for every ε; about 0.1% looser in ε than pb's refined answer).
* :func:`solve_epsilons`: the smallest ε (rounded up) at which a certified profile is
  ≤ each target δ.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.models.mixture import ADD, REMOVE, GaussianMixturePair
from dpcalc.pb.buckets import TAIL_FRACTION, compose_fitting, initial_grid_step, tail_half_width
from dpcalc.pld.pld import UPPER

DIRECTIONS = (REMOVE, ADD)


def solve_epsilons(deltas_of, targets) -> np.ndarray:
    """For each target δ, the smallest ε ≥ 0 (to 1e-9 relative, rounded up) with
    deltas_of(ε) ≤ δ (inf beyond ε = 1e4): doubling from ε = 1, then bisection, run for
    every target at once (``deltas_of`` maps an array of ε to their δ)."""
    targets = np.atleast_1d(np.asarray(targets, dtype=float))
    out = np.full(targets.size, math.inf)
    at_zero = deltas_of(np.zeros(targets.size)) <= targets
    out[at_zero] = 0.0
    low, high = np.zeros(targets.size), np.ones(targets.size)
    solving = ~at_zero
    growing = solving.copy()
    while growing.any():
        index = np.flatnonzero(growing)
        # not shown ≤ δ (NaN included) is above: ``high`` must be a certified point, as in
        # the bisection below (a NaN compared False with ">" and ended the growth there)
        above = index[~(deltas_of(high[index]) <= targets[index])]
        growing[index] = False
        high[above] *= 2.0
        too_far = above[high[above] > 1e4]
        growing[above] = True
        growing[too_far] = solving[too_far] = False
    index = np.flatnonzero(solving)
    while index.size:
        middle = 0.5 * (low[index] + high[index])
        below = deltas_of(middle) <= targets[index]
        high[index[below]] = middle[below]
        low[index[~below]] = middle[~below]
        index = index[high[index] - low[index] > 1e-9 * np.maximum(1.0, high[index])]
    out[solving] = high[solving]
    return out


class PoissonProfile:
    """Certified upper δ(ε) per direction of ``steps`` Poisson-subsampled Gaussian steps."""

    def __init__(self, rate: float, noise_multiplier: float, steps: int, smallest_delta: float):
        pair = GaussianMixturePair.subsampled_gaussian(rate, noise_multiplier)
        phases = [(pair, steps)]
        half_width = tail_half_width(steps, smallest_delta)
        tail = TAIL_FRACTION * smallest_delta
        self._composed = {}
        for direction in DIRECTIONS:
            grid = initial_grid_step(phases, None, half_width, direction)
            self._composed[direction] = compose_fitting(phases, direction, grid, UPPER,
                                                        half_width, tail)[0]

    def deltas(self, direction: str, epsilons) -> np.ndarray:
        """Certified upper bounds on δ(ε) of ``direction`` at each of ``epsilons``."""
        epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
        return self._composed[direction].deltas(epsilons, UPPER)
