"""The decomposition bound of one balls-in-bins epoch (add/remove or zero-out): Poisson
sampling at q = 1/t read through the chance that it picks a record at least once.

Feldman & Shenfeld 2025, "Privacy amplification by random allocation", decomposition bound
(§4; the authors' random-allocation package, allocation_*_decomposition): with t steps per
epoch and λ = 1 − (1 − 1/t)^t (the chance that Poisson sampling at rate 1/t picks a record
at least once in t steps), the one-epoch hockey-stick profiles satisfy
    remove: δ_A(ε) ≤ δ_P(ε′)/λ,       ε′ = ln(1 + λ(e^ε − 1)),
    add:    δ_A(ε) ≤ δ_P(ε″)/λ″,      ε″ = −ln(1 − λ(1 − e^{−ε})),  λ″ = λe^{−ε}/(λe^{−ε} + 1 − λ),
where δ_P is the profile (same direction) of t steps of the Poisson-subsampled Gaussian at
q = 1/t, read from pb's certified UPPER composition (poisson.py). Zero-out has the same
pairs (a null record adds a zero gradient to its step: as if absent).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.allocation.poisson import DIRECTIONS, PoissonProfile, solve_epsilons
from dpcalc.models.mixture import REMOVE


class OneEpochProfile:
    """The decomposition bound of one epoch of t steps (module doc), both directions."""

    def __init__(self, steps: int, noise_multiplier: float, smallest_delta: float):
        self.steps = steps
        # λ = 1 − (1 − 1/t)^t, without cancellation
        self.selected = -math.expm1(steps * math.log1p(-1.0 / steps)) if steps > 1 else 1.0
        self._poisson = PoissonProfile(1.0 / steps, noise_multiplier, steps, smallest_delta)

    def direction_deltas(self, direction: str, epsilons) -> np.ndarray:
        """Certified upper bounds on the one-epoch δ(ε) of ``direction`` (module doc), at
        each of ``epsilons``."""
        epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
        lam = self.selected
        if lam >= 1.0:  # one step per epoch: allocation is the full-batch Gaussian
            return self._poisson.deltas(direction, epsilons)
        if direction == REMOVE:
            # ε′ = ln(1 + λ(e^ε − 1)) = ε + ln(e^{−ε} + λ(1 − e^{−ε})), stable for large ε
            removed = epsilons + np.log(np.exp(-epsilons) - lam * np.expm1(-epsilons))
            return np.minimum(1.0, self._poisson.deltas(REMOVE, removed) / lam)
        # ε″ = −ln(1 − λ(1 − e^{−ε})); ln λ″ = ln λ − ε − ln(1 − λ(1 − e^{−ε})), in logs: e^{−ε}
        # underflows long before ε″ stops growing
        kept = np.log1p(lam * np.expm1(-epsilons))
        add_delta = self._poisson.deltas(direction, -kept)
        with np.errstate(divide="ignore"):
            log_ratio = np.log(add_delta) - (math.log(lam) - epsilons - kept)
        return np.where(add_delta > 0.0, np.exp(np.minimum(0.0, log_ratio)), 0.0)

    def deltas(self, epsilons) -> np.ndarray:
        return np.max([self.direction_deltas(d, epsilons) for d in DIRECTIONS], axis=0)

    def direction_delta(self, direction: str, epsilon: float) -> float:
        return float(self.direction_deltas(direction, epsilon)[0])

    def delta(self, epsilon: float) -> float:
        return float(self.deltas(epsilon)[0])

    def direction_epsilons(self, direction: str, deltas) -> np.ndarray:
        return solve_epsilons(lambda eps: self.direction_deltas(direction, eps), deltas)

    def epsilons(self, deltas) -> np.ndarray:
        return solve_epsilons(self.deltas, deltas)

    def direction_epsilon(self, direction: str, delta: float) -> float:
        return float(self.direction_epsilons(direction, delta)[0])

    def epsilon(self, delta: float) -> float:
        return float(self.epsilons(delta)[0])
