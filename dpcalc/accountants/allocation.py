"""Balls-in-bins (random allocation): certified upper bounds for E epochs of t steps (each
record in one uniformly chosen step per epoch), add/remove, zero-out and replace-one.

ADD/REMOVE (zero-out has the same pairs: a null record adds a zero gradient to its step,
as if absent; t is public). Per direction d the certified profile δ_d(ε) is the pointwise
smallest of (the smallest of certified upper bounds on δ_d(ε) is one):
* the Rényi DP route (allocation_rdp.py): exact one-epoch RDP (remove: multinomial;
  add: Gamma–Laplace; add also Jensen's bound where smaller), times E, converted per
  direction;
* the recursive bound (allocation/recursive.py): Poisson sampling at q_a = 1/(ta) over tE
  steps plus E times a bad event bounded by a Chernoff bound, thresholds a per target δ;
* one epoch: the decomposition bound of Feldman & Shenfeld 2025 (allocation/decomposition.py).
ε_d(δ) is read from the profile (rounded up), and ε = max(ε_remove, ε_add).

REPLACE-ONE, D = D₀ ∪ {x} against D′ = D₀ ∪ {x′}, through D₀ run with the same t steps: with
P_x, Q, P_x′ the laws of the E-epoch outputs, (P_x, Q) is the remove pair and (Q, P_x′) the
add pair (each with its own adaptive adversary: the profiles above hold for all of them), so
for every set S and every split ε = ε₁ + ε₂:
    P_x(S) ≤ e^{ε₁}Q(S) + δ_rem(ε₁) ≤ e^{ε₁}(e^{ε₂}P_x′(S) + δ_add(ε₂)) + δ_rem(ε₁),
i.e. δ_rep(ε) ≤ δ_rem(ε₁) + e^{ε₁}δ_add(ε − ε₁); x and x′ play symmetric roles, so this
covers both orders. The profiles are of the E-fold composed mechanism: the chain is applied
once, after composition (chaining per epoch and composing would be group privacy, much
looser). The split is minimised over _SPLITS (every split is valid). epoch_samplers.py
reports the smaller of this and the no-amplification Δ = 2 Gaussian.
"""
from __future__ import annotations

import numpy as np

from dpcalc.accountants.allocation_rdp import EpochsRdp
from dpcalc.allocation.decomposition import OneEpochProfile  # noqa: F401 (re-exported)
from dpcalc.allocation.poisson import DIRECTIONS, solve_epsilons
from dpcalc.allocation.poisson import solve_epsilons as _solve_epsilons  # noqa: F401
from dpcalc.allocation.recursive import RecursiveBound
from dpcalc.models.mixture import ADD, REMOVE
from dpcalc.models.samplers import ADD_REMOVE, REPLACE_ONE

# ε₁/ε of the replace-one chain's split
_SPLITS = np.linspace(0.0, 1.0, 41)
# replace-one: the recursive thresholds are chosen for this share of δ (each link's δ is
# about δ/2: δ_rem(ε₁) and e^{ε₁}δ_add(ε₂) share δ)
_REPLACE_SHARE = 0.5
_NAMES = {"rdp": "Rényi DP", "recursive": "recursive", "decomposition": "decomposition"}


class AllocationBound:
    """Certified upper bounds for ``epochs`` balls-in-bins epochs of ``steps`` steps under
    ``adjacency`` (module doc); ``smallest_delta``: the smallest δ the profiles resolve."""

    def __init__(self, steps: int, noise_multiplier: float, epochs: int, smallest_delta: float,
                 adjacency: str = ADD_REMOVE):
        self.steps, self.noise_multiplier, self.epochs = steps, noise_multiplier, epochs
        self.replace = adjacency == REPLACE_ONE
        self.rdp = EpochsRdp(steps, noise_multiplier, epochs)
        self.recursive = RecursiveBound(steps, noise_multiplier, epochs)
        self.decomposition = (OneEpochProfile(steps, noise_multiplier, smallest_delta / 10.0)
                              if epochs == 1 and steps > 1 else None)
        self._solved: dict[float, dict[str, float]] = {}  # δ → the ε per direction (sources)

    # --- per direction ------------------------------------------------------------------
    def _parts(self, direction: str, epsilons) -> dict[str, np.ndarray]:
        parts = {"rdp": self.rdp.deltas(direction, epsilons)}
        if self.recursive.parts:
            parts["recursive"] = self.recursive.deltas(direction, epsilons)
        if self.decomposition is not None:
            parts["decomposition"] = self.decomposition.direction_deltas(direction, epsilons)
        return parts

    def direction_deltas(self, direction: str, epsilons) -> np.ndarray:
        """Certified δ_direction(ε) at each ε: the smallest of the bounds prepared."""
        return np.minimum.reduce(list(self._parts(direction, epsilons).values()))

    def _prepare(self, deltas) -> None:
        """Recursive thresholds for these targets: each δ for up to six, else one every
        other decade down to 1e-12."""
        deltas = np.atleast_1d(np.asarray(deltas, dtype=float))
        if deltas.size > 6:  # a profile over many δ (risk): one design every other decade
            # down to 1e-12 (below, the Rényi DP route; each design costs two compositions)
            deltas = 10.0 ** np.unique(np.round(np.log10(deltas[deltas >= 1e-12])))[::2]
        for delta in deltas:
            if 0.0 < delta < 1.0:
                self.recursive.prepare(float(delta))

    def direction_epsilons(self, direction: str, deltas) -> np.ndarray:
        self._prepare(deltas)
        return solve_epsilons(lambda eps: self.direction_deltas(direction, eps), deltas)

    def direction_epsilon(self, direction: str, delta: float) -> float:
        return float(self.direction_epsilons(direction, delta)[0])

    # --- the relation ------------------------------------------------------------------
    def replace_deltas(self, epsilons) -> np.ndarray:
        """δ_rep(ε) ≤ min over splits of δ_rem(ε₁) + e^{ε₁}δ_add(ε − ε₁) (module doc)."""
        epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
        first = epsilons[:, None] * _SPLITS[None, :]
        second = epsilons[:, None] - first
        removed = self.direction_deltas(REMOVE, first.ravel()).reshape(first.shape)
        added = self.direction_deltas(ADD, second.ravel()).reshape(first.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            chained = removed + np.exp(first) * added
        chained = np.where(np.isnan(chained), 1.0, chained)
        return np.minimum(1.0, chained.min(axis=1) * (1.0 + 1e-12))

    def deltas(self, epsilons) -> np.ndarray:
        """Certified δ(ε) of the relation at each ε, with the profiles prepared so far."""
        if self.replace:
            return self.replace_deltas(epsilons)
        return np.max([self.direction_deltas(d, epsilons) for d in DIRECTIONS], axis=0)

    def epsilons(self, deltas) -> np.ndarray:
        """The smallest certified ε at each δ of ``deltas`` (module doc)."""
        deltas = np.atleast_1d(np.asarray(deltas, dtype=float))
        if self.replace:
            self._prepare(_REPLACE_SHARE * deltas)
            found = solve_epsilons(self.replace_deltas, deltas)
            for delta, epsilon in zip(deltas, found):
                self._solved[float(delta)] = self._split(float(epsilon))
            return found
        found = {d: self.direction_epsilons(d, deltas) for d in DIRECTIONS}
        for i, delta in enumerate(deltas):
            self._solved[float(delta)] = {d: float(found[d][i]) for d in DIRECTIONS}
        return np.max(list(found.values()), axis=0)

    def _split(self, epsilon: float) -> dict[str, float]:
        """The chain's best split (ε₁, ε − ε₁) at ``epsilon`` (no finite ε: ∞ each)."""
        if not np.isfinite(epsilon):  # ∞·0 would be NaN: no split of an infinite ε
            return {REMOVE: np.inf, ADD: np.inf}
        first = epsilon * _SPLITS
        chained = (self.direction_deltas(REMOVE, first)
                   + np.exp(first) * self.direction_deltas(ADD, epsilon - first))
        best = float(first[int(np.argmin(chained))])
        return {REMOVE: best, ADD: epsilon - best}

    def epsilon(self, delta: float) -> float:
        """:meth:`epsilons` at one δ."""
        return float(self.epsilons(delta)[0])

    def delta(self, epsilon: float) -> float:
        """A certified δ at ``epsilon``. The recursive thresholds (any is valid) are chosen
        for the δ found, and for its neighbours on recursive.py's grid of design δ, until
        that δ's neighbourhood is prepared: so δ(ε(δ₀)) ≤ δ₀, the thresholds ε(δ₀) used
        being among them."""
        value = float(self.deltas(np.array([epsilon]))[0])
        for _ in range(8):
            prepared = len(self.recursive._prepared)
            if not 0.0 < value < 1.0:
                break
            around = value * 10.0 ** (np.arange(-1, 2) / 10.0)
            self._prepare(_REPLACE_SHARE * around if self.replace else around)
            value = float(self.deltas(np.array([epsilon]))[0])
            if len(self.recursive._prepared) == prepared:
                break
        return value

    def sources(self, delta: float) -> dict[str, str]:
        """Per direction, which bound is the smallest at that direction's ε(δ) (add/remove)
        or at its share of the chain's best split (replace-one): "rdp", "recursive" or
        "decomposition"."""
        if float(delta) not in self._solved:
            self.epsilons(delta)
        out = {}
        for direction, epsilon in self._solved[float(delta)].items():
            parts = self._parts(direction, np.array([epsilon]))
            out[direction] = min(parts, key=lambda name: float(parts[name][0]))
        return out

    def method(self, delta: float) -> str:
        """One line: what the certified upper bound at ``delta`` is."""
        won = self.sources(delta)
        which = f"remove by {_NAMES[won[REMOVE]]}, add by {_NAMES[won[ADD]]}"
        pieces = ("exact Rényi DP of one epoch composed (remove multinomial, add Gamma–Laplace), "
                  "the recursive bound (Poisson at q = 1/(ta) plus a Chernoff-bounded bad event)")
        if self.decomposition is not None:
            pieces += " and Feldman & Shenfeld 2025's decomposition"
        epochs = f"{self.epochs} epoch{'s' if self.epochs > 1 else ''} of {self.steps} steps"
        if self.replace:
            return (f"certified upper: replace-one through D∖{{x}}, δ(ε₁ + ε₂) ≤ δ_remove(ε₁) + "
                    f"e^{{ε₁}}·δ_add(ε₂) over the balls-in-bins bounds of {epochs} (per "
                    f"direction the smallest of {pieces}; {which})")
        return (f"certified upper: balls-in-bins, {epochs}, per direction the smallest of "
                f"{pieces}; {which}")


def allocation_epsilon(steps: int, noise_multiplier: float, epochs: int, delta: float,
                       adjacency: str = ADD_REMOVE) -> float:
    """Certified upper ε at ``delta`` for ``epochs`` balls-in-bins epochs of ``steps`` steps."""
    return AllocationBound(steps, noise_multiplier, epochs, delta, adjacency).epsilon(delta)


__all__ = ["AllocationBound", "OneEpochProfile", "allocation_epsilon"]
