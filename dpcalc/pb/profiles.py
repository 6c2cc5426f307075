"""Certified upper privacy profiles ε(δ) of one pair composed T times, for many T or δ.

One discretisation per direction (connect-the-dots, pld.py) on the grid the pb engine
picks for the largest T, composed once per T; each composed PLD then answers ε(δ) for
any δ down to the smallest δ it was sized for. At small δ a plain FFT composition is
swamped by its own float error (fft_error.py), so a profile may also hold compositions
tilted towards larger ε (tilt.compose_tilted, valid from ε = 0): each is a certified upper
bound, tight near its target, and a query takes the smallest of them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from dpcalc.pb.buckets import (TAIL_FRACTION, GridTooLarge, compose_fitting, initial_grid_step,
                               tail_half_width)
from dpcalc.pld.fft_compose import compose
from dpcalc.pld.pld import UPPER, ComposedPld
from dpcalc.pld.tilt import compose_tilted, saddle_tilt

# Tilted compositions per direction, at targets spread between the profile's ε at the
# largest and at the smallest δ it serves.
_TILTS = 2


@dataclass
class UpperProfile:
    """A certified upper privacy profile ε(δ) of one pair composed ``steps`` times: per
    direction, a plain composition and possibly tilted ones, queried at any δ."""

    steps: int
    composed: dict[str, list[ComposedPld]] = field(default_factory=dict)
    singles: dict = field(default_factory=dict)  # direction: the one-step PLD composed
    tail_mass: float = 0.0

    def epsilon(self, delta: float) -> float:
        return max(min(pld.epsilon(delta, UPPER) for pld in plds)
                   for plds in self.composed.values())

    def noisy_below(self, direction: str) -> float:
        """δ below which the plain composition's float error (fft_error.py) may show: up
        to ~1e3 times the most it can add to δ."""
        plain = self.composed[direction][0]
        return 1e3 * float(np.sum(np.broadcast_to(plain.noise_floor, plain.pmf.shape)))

    def tighten(self, smallest_delta: float, largest_delta: float) -> None:
        """Add tilted compositions where the plain one is swamped by its float error,
        aimed between ε at ``largest_delta`` and at ``smallest_delta``."""
        for direction, plds in self.composed.items():
            plain, noisy = plds[0], self.noisy_below(direction)
            if noisy > smallest_delta:
                low = plain.epsilon(min(largest_delta, noisy), UPPER)
                high = plain.epsilon(smallest_delta, UPPER)
                plds += _tilted(self.singles[direction], self.steps, self.tail_mass, low, high)


def _tilted(single, steps: int, tail_mass: float, low: float, high: float) -> list[ComposedPld]:
    """Compositions tilted towards targets between ``low`` and ``high`` (valid from 0)."""
    if not (math.isfinite(high) and high > low > 0.0):
        return []
    out = []
    for target in np.geomspace(low, high, _TILTS + 1)[1:]:
        theta = saddle_tilt([(single, steps)], float(target))
        if theta <= 0.0:
            continue
        try:
            out.append(compose_tilted([(single, steps)], theta, tail_mass, 0.0))
        except GridTooLarge:
            break
    return out


def upper_profiles(pair, steps_list: Sequence[int], smallest_delta: float,
                   largest_delta: float | None = None) -> list[UpperProfile]:
    """Certified upper profiles of ``pair`` for each T in ``steps_list``, valid down to
    ``smallest_delta``; tilted compositions keep them tight between ``largest_delta`` and
    ``smallest_delta`` when given."""
    largest = max(steps_list)
    half_width = tail_half_width(largest, smallest_delta)
    tail_mass = TAIL_FRACTION * smallest_delta
    step = initial_grid_step([(pair, largest)], None, half_width)
    profiles = [UpperProfile(steps, tail_mass=tail_mass) for steps in steps_list]
    for direction in pair.directions:
        _, plds, _ = compose_fitting([(pair, largest)], direction, step, UPPER, half_width, tail_mass)
        single = plds[0][0]
        for profile in profiles:
            profile.composed[direction] = [compose([(single, profile.steps)], tail_mass)]
            profile.singles[direction] = single
    if largest_delta is not None:
        for profile in profiles:
            profile.tighten(smallest_delta, largest_delta)
    return profiles
