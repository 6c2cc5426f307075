"""Balls-in-bins (random allocation), add/remove or zero-out: a certified upper bound for
one epoch from Poisson sampling, and over several epochs by composition.

Feldman & Shenfeld 2025, "Privacy amplification by random allocation", decomposition bound
(§4; the authors' random-allocation package, allocation_*_decomposition): with t steps per
epoch and λ = 1 − (1 − 1/t)^t (the chance that Poisson sampling at rate 1/t picks a record
at least once in t steps), the one-epoch hockey-stick profiles satisfy
    remove: δ_A(ε) ≤ δ_P(ε′)/λ,       ε′ = ln(1 + λ(e^ε − 1)),
    add:    δ_A(ε) ≤ δ_P(ε″)/λ″,      ε″ = −ln(1 − λ(1 − e^{−ε})),  λ″ = λe^{−ε}/(λe^{−ε} + 1 − λ),
where δ_P is the profile (same direction) of t steps of the Poisson-subsampled Gaussian at
q = 1/t, read here from pb's certified UPPER composition. Zero-out has the same pairs (a
null record adds a zero gradient to its step: as if absent).

Per direction the smaller of this and the RDP bound of allocation_rdp.py is kept (one epoch);
E epochs: the RDP bound composed, or the one-epoch (ε₁, δ₁) guarantee composed by the
homogeneous composition bound of Kairouz, Oh, Viswanath 2015, Thm 3.4 (composition.py),
minimised over δ₁ — certified, but loose for many epochs (the add direction's RDP bound
grows like E/(2σ²)).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.pb.buckets import (TAIL_FRACTION, compose_fitting, initial_grid_step, tail_half_width)
from dpcalc.accountants.allocation_rdp import ORDERS, rdp_curves
from dpcalc.accountants.composition import compose_kairouz
from dpcalc.models.mixture import ADD, REMOVE, GaussianMixturePair
from dpcalc.pld.pld import UPPER
from dpcalc.accountants.rdp_conversion import rdp_to_delta_improved, rdp_to_epsilon_improved


def _solve_epsilons(deltas_of, targets) -> np.ndarray:
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


class OneEpochProfile:
    """The decomposition bound of one epoch of t steps (module doc), both directions."""

    def __init__(self, steps: int, noise_multiplier: float, smallest_delta: float):
        self.steps = steps
        # λ = 1 − (1 − 1/t)^t, without cancellation
        self.selected = -math.expm1(steps * math.log1p(-1.0 / steps)) if steps > 1 else 1.0
        pair = GaussianMixturePair.subsampled_gaussian(1.0 / steps, noise_multiplier)
        phases = [(pair, steps)]
        half_width = tail_half_width(steps, smallest_delta)
        tail = TAIL_FRACTION * smallest_delta
        self._composed = {}
        for direction in (REMOVE, ADD):
            grid = initial_grid_step(phases, None, half_width, direction)
            self._composed[direction] = compose_fitting(phases, direction, grid, UPPER,
                                                        half_width, tail)[0]

    def direction_deltas(self, direction: str, epsilons) -> np.ndarray:
        """Certified upper bounds on the one-epoch δ(ε) of ``direction`` (module doc), at
        each of ``epsilons``."""
        epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
        lam = self.selected
        if lam >= 1.0:  # one step per epoch: allocation is the full-batch Gaussian
            return self._composed[direction].deltas(epsilons, UPPER)
        if direction == REMOVE:
            # ε′ = ln(1 + λ(e^ε − 1)) = ε + ln(e^{−ε} + λ(1 − e^{−ε})), stable for large ε
            removed = epsilons + np.log(np.exp(-epsilons) - lam * np.expm1(-epsilons))
            return np.minimum(1.0, self._composed[REMOVE].deltas(removed, UPPER) / lam)
        # ε″ = −ln(1 − λ(1 − e^{−ε})); ln λ″ = ln λ − ε − ln(1 − λ(1 − e^{−ε})), in logs: e^{−ε}
        # underflows long before ε″ stops growing
        kept = np.log1p(lam * np.expm1(-epsilons))
        add_delta = self._composed[ADD].deltas(-kept, UPPER)
        with np.errstate(divide="ignore"):
            log_ratio = np.log(add_delta) - (math.log(lam) - epsilons - kept)
        return np.where(add_delta > 0.0, np.exp(np.minimum(0.0, log_ratio)), 0.0)

    def deltas(self, epsilons) -> np.ndarray:
        return np.maximum(self.direction_deltas(REMOVE, epsilons),
                          self.direction_deltas(ADD, epsilons))

    def direction_delta(self, direction: str, epsilon: float) -> float:
        return float(self.direction_deltas(direction, epsilon)[0])

    def delta(self, epsilon: float) -> float:
        return float(self.deltas(epsilon)[0])

    def direction_epsilons(self, direction: str, deltas) -> np.ndarray:
        return _solve_epsilons(lambda eps: self.direction_deltas(direction, eps), deltas)

    def epsilons(self, deltas) -> np.ndarray:
        return _solve_epsilons(self.deltas, deltas)

    def direction_epsilon(self, direction: str, delta: float) -> float:
        return float(self.direction_epsilons(direction, delta)[0])

    def epsilon(self, delta: float) -> float:
        return float(self.epsilons(delta)[0])


# δ′'s share of δ in the composition of the decomposition bound over epochs (a coarse search)
_KAIROUZ_SHARES = (0.05, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.95)


class AllocationBound:
    """Certified upper bounds for ``epochs`` balls-in-bins epochs of ``steps`` steps."""

    def __init__(self, steps: int, noise_multiplier: float, epochs: int, smallest_delta: float):
        self.epochs, self.noise_multiplier = epochs, noise_multiplier
        self._curves = None
        self.profile = OneEpochProfile(steps, noise_multiplier, smallest_delta / (10.0 * epochs))

    def _rdp(self, delta: float) -> dict[str, float]:
        if self._curves is None:
            self._curves = rdp_curves(self.profile.steps, self.noise_multiplier)
        return {name: rdp_to_epsilon_improved(ORDERS, self.epochs * curve, delta)[0]
                for name, curve in self._curves.items()}

    def epsilons(self, deltas) -> np.ndarray:
        """The smallest certified ε at each δ of ``deltas``: per direction the better of the
        decomposition and RDP bounds for one epoch; for several, the better of the composed
        decomposition bound and the RDP bound (both directions each)."""
        deltas = np.atleast_1d(np.asarray(deltas, dtype=float))
        rdp = [self._rdp(float(delta)) for delta in deltas]
        if self.epochs == 1:
            return np.max([np.minimum(self.profile.direction_epsilons(d, deltas),
                                      [by_rdp[d] for by_rdp in rdp]) for d in (REMOVE, ADD)],
                          axis=0)
        return np.minimum([max(by_rdp.values()) for by_rdp in rdp], self._kairouz(deltas))

    def epsilon(self, delta: float) -> float:
        """:meth:`epsilons` at one δ."""
        return float(self.epsilons(delta)[0])

    def _kairouz(self, deltas: np.ndarray) -> np.ndarray:
        """The one-epoch decomposition bound composed over the epochs (Kairouz et al.)."""
        # δ = 1 − (1 − δ₁)^E (1 − δ′) ≤ E·δ₁ + δ′; a coarse search over δ′'s share of δ
        shares = np.array(_KAIROUZ_SHARES)
        per_epoch = (1.0 - shares[:, None]) * deltas[None, :] / self.epochs
        epsilon_one = self.profile.epsilons(per_epoch.ravel()).reshape(per_epoch.shape)
        best = np.full(deltas.size, math.inf)
        for (i, j), value in np.ndenumerate(epsilon_one):
            if math.isfinite(value):
                composed = compose_kairouz(float(value), float(per_epoch[i, j]), self.epochs,
                                           float(shares[i] * deltas[j]))[0]
                best[j] = min(best[j], composed)
        return best

    def delta(self, epsilon: float) -> float:
        """A certified δ at ``epsilon``: the RDP bound's (both directions), or — where the
        composed decomposition bound is the tighter one — the smallest δ (to 1e-6 in ln δ,
        rounded up) whose certified ε is ≤ ``epsilon``."""
        if self._curves is None:
            self._curves = rdp_curves(self.profile.steps, self.noise_multiplier)
        by_rdp = {d: rdp_to_delta_improved(ORDERS, self.epochs * curve, epsilon)[0]
                  for d, curve in self._curves.items()}
        if self.epochs == 1:
            return max(min(self.profile.direction_delta(d, epsilon), by_rdp[d])
                       for d in (REMOVE, ADD))
        rdp = max(by_rdp.values())
        if rdp <= 0.0 or self._kairouz(np.array([rdp]))[0] >= epsilon:
            return rdp  # the Kairouz route does not reach ε at this δ, nor below it
        low, high = math.log(1e-300), math.log(rdp)
        while high - low > 1e-6:
            middle = 0.5 * (low + high)
            low, high = (low, middle) if self.epsilon(math.exp(middle)) <= epsilon else (middle, high)
        return math.exp(high)


def allocation_epsilon(steps: int, noise_multiplier: float, epochs: int, delta: float) -> float:
    """Certified upper ε at ``delta`` for ``epochs`` balls-in-bins epochs of ``steps`` steps."""
    return AllocationBound(steps, noise_multiplier, epochs, delta).epsilon(delta)
