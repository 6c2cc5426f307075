"""Discrete privacy loss distributions (PLDs) and their read-out δ(ε).

A PLD here is the law of the privacy loss L = ln(P/Q) under P, on the grid
ℓ_i = (offset + i)·h, plus an atom at +∞ (outputs Q cannot produce). The
hockey-stick divergence of the T-fold product is
    δ(ε) = E[(1 − e^{ε − S})_+],  S = L_1 + … + L_T,
so composing means convolving PLDs (Meiser & Mohammadi 2018; Sommer et al. 2019).
One step is discretised in discretise.py, composed in fft_compose.py (plain) or
tilt.py (exponentially tilted); this module holds the data and reads δ(ε) and ε(δ).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

UPPER = "upper"
LOWER = "lower"
MAX_FFT_POINTS = 1 << 22  # 4 Mi points: about 200 MB of work arrays at the worst


class GridTooLarge(Exception):
    """The composition needs more FFT points than MAX_FFT_POINTS at this grid step."""

    def __init__(self, points_needed: int):
        super().__init__(points_needed)
        self.points_needed = points_needed


class PrecisionLost(ArithmeticError):
    """The float-error bound of a composition is no longer a float (its relative term
    exceeds e^709, e.g. 10^8 steps of an input whose rounding is 1e-5 relative): the
    composition certifies nothing. A pass that is optional (tilted, split) is skipped; the
    plain pass lets it through, and the accountant reports the failure (never a number)."""


@dataclass
class DiscretePld:
    """One step's PLD on the grid (offset + i)·grid_step, i = 0..len(pmf)−1, plus +∞."""

    grid_step: float
    offset: int
    pmf: np.ndarray
    infinity_mass: float
    # Lower bound only: P-masses and signed errors (rounded − exact loss) of the rounding.
    rounding_masses: np.ndarray | None = None
    rounding_errors: np.ndarray | None = None
    # Relative error of each entry beyond fft_error.entry_relative_error's model (e.g. a
    # pair's bucket_log_error, or summing many fine masses into one coarse entry).
    entry_error: float = 0.0

    @property
    def points(self) -> int:
        """Grid points of the pmf (its size)."""
        return self.pmf.size

    @property
    def losses(self) -> np.ndarray:
        cached = self.__dict__.get("_losses")
        if cached is None or cached.size != self.pmf.size:
            cached = (self.offset + np.arange(self.pmf.size)) * self.grid_step
            self.__dict__["_losses"] = cached
        return cached

    def loss_variance(self) -> float:
        """Σ p_i (ℓ_i − Σ p ℓ)²: the spread of the finite loss (Chernoff windows' scale)."""
        return float(np.sum(self.pmf * (self.losses - np.sum(self.pmf * self.losses)) ** 2))

    def log_mgf(self, lambdas: np.ndarray) -> np.ndarray:
        """ln E[e^{λL}; L finite] for each λ (sub-probability MGF: Chernoff stays valid)."""
        return self._cached_log_mgf("loss", self.pmf, self.losses, lambdas)

    def rounding_log_mgf(self, lambdas: np.ndarray) -> np.ndarray:
        """ln E[e^{λE}] of one step's rounding error E (lower bound only)."""
        return self._cached_log_mgf("rounding", self.rounding_masses, self.rounding_errors, lambdas)

    def mgf_support(self, upward: bool) -> tuple[np.ndarray, np.ndarray]:
        """(log masses, losses) of the finite part, light entries pooled for λ of the sign
        ``upward`` (_mgf_support), kept for the next call."""
        return self._pooled("loss", self.pmf, self.losses, upward)

    def _cached_log_mgf(self, what: str, masses: np.ndarray, values: np.ndarray,
                        lambdas: np.ndarray) -> np.ndarray:
        """_log_mgf with the pooled support (_mgf_support) kept per sign of λ: a Chernoff
        minimisation asks for many λ of one sign of the same (never modified) arrays."""
        lambdas = np.atleast_1d(lambdas)
        return _log_mgf_on(*self._pooled(what, masses, values, bool(lambdas[0] > 0)), lambdas)

    def _pooled(self, what: str, masses: np.ndarray, values: np.ndarray, upward: bool):
        """_mgf_support of (masses, values), cached per sign."""
        cache = self.__dict__.setdefault("_mgf_supports", {})
        found = cache.get((what, upward))
        if found is None or found[0] is not masses or found[1] is not values:
            found = (masses, values, _mgf_support(masses, values, upward))
            cache[(what, upward)] = found
        return found[2]


_POOL_BLOCK = 64
_NEGLIGIBLE_LOG_MASS = -27.6  # 1e-12 of the largest mass


def _pool_light_entries(log_masses: np.ndarray, values: np.ndarray, upward: bool):
    """Entries lighter than 1e-12 of the heaviest, pooled in blocks of consecutive grid
    points placed at the block's largest (upward) or smallest value: for λ of that sign
    the MGF can only grow, so Chernoff bounds stay valid, and the heavy entries are exact."""
    light = log_masses < log_masses.max() + _NEGLIGIBLE_LOG_MASS
    index = np.flatnonzero(light)
    if index.size < 4 * _POOL_BLOCK:
        return log_masses, values
    starts = np.r_[True, np.diff(index) > 1]
    run = np.cumsum(starts) - 1
    position = np.arange(index.size) - np.flatnonzero(starts)[run]
    block_starts = np.flatnonzero(starts | (position % _POOL_BLOCK == 0))
    pooled_mass = np.add.reduceat(np.exp(log_masses[index]), block_starts)
    reduce = np.maximum if upward else np.minimum
    pooled_values = reduce.reduceat(values[index], block_starts)
    with np.errstate(divide="ignore"):
        return (np.concatenate([log_masses[~light], np.log(pooled_mass)]),
                np.concatenate([values[~light], pooled_values]))


def _mgf_support(masses: np.ndarray, values: np.ndarray, upward: bool):
    """(log masses, values) of the entries with mass, light ones pooled for λ of the sign
    ``upward`` (_pool_light_entries)."""
    keep = masses > 0
    log_masses, values = np.log(masses[keep]), values[keep]
    if values.size:
        log_masses, values = _pool_light_entries(log_masses, values, upward)
    return log_masses, values


def _log_mgf(masses: np.ndarray, values: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """An upper bound on ln Σ_i m_i e^{λ v_i} for each λ (all of one sign), exact for the
    heavy entries; computed in chunks (no scipy overhead per λ)."""
    lambdas = np.atleast_1d(lambdas)
    return _log_mgf_on(*_mgf_support(masses, values, bool(lambdas[0] > 0)), lambdas)


_MGF_CHUNK = 1 << 18  # λ × support entries per chunk


def _log_mgf_on(log_masses: np.ndarray, values: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """ln Σ_i e^{log_masses_i + λ values_i} for each λ, in chunks of ~2 MB temporaries (16 MB
    ones cost a cold process ~0.1 s of first-touch page faults in `simulate`'s curve)."""
    lambdas = np.atleast_1d(lambdas)
    out = np.empty(lambdas.size)
    chunk = max(1, _MGF_CHUNK // max(values.size, 1))
    for start in range(0, lambdas.size, chunk):
        lam = lambdas[start:start + chunk, None]
        exponents = log_masses[None, :] + lam * values[None, :]
        top = exponents.max(axis=1, keepdims=True)
        out[start:start + chunk] = (top + np.log(np.exp(exponents - top).sum(axis=1, keepdims=True)))[:, 0]
    return out


def _log_suffix_sums(log_terms: np.ndarray) -> np.ndarray:
    """ln Σ_{i>j} e^{x_i} for every j (−∞ for the last): a scaled cumulative sum when the
    terms span less than e^600 (nothing underflows), else the log-domain accumulation."""
    out = np.full(log_terms.size, -np.inf)
    if log_terms.size < 2:
        return out
    finite = log_terms[np.isfinite(log_terms)]
    if finite.size == 0:
        return out
    top = float(finite.max())
    if top - float(finite.min()) < 600.0:
        with np.errstate(divide="ignore"):
            out[:-1] = np.log(np.cumsum(np.exp(log_terms[:0:-1] - top))[::-1]) + top
    else:
        out[:-1] = np.logaddexp.accumulate(log_terms[:0:-1])[::-1]
    return out


@dataclass
class ComposedPld:
    """The composed PLD on a window, with what the window and float arithmetic may miss.

    ``window_mass``: bound on the mass outside the window (wrapped inside by the FFT).
    ``noise_floor``: estimated absolute float error of each entry of ``pmf`` (one number,
    or one per entry after exponential tilting).
    ``valid_from``: the bounds hold for queries at ε ≥ this (−∞ unless tilted).
    """

    grid_step: float
    offset: int
    pmf: np.ndarray
    infinity_mass: float
    window_mass: float
    noise_floor: float | np.ndarray
    valid_from: float = -math.inf

    def _effective(self, bound: str):
        """Masses and +∞ atom moved to the safe side for ``bound``."""
        if bound == UPPER:
            pmf = np.maximum(self.pmf, 0.0) + self.noise_floor
            return pmf, min(1.0, self.infinity_mass + self.window_mass)
        pmf = np.maximum(self.pmf - self.noise_floor, 0.0)
        return pmf, self.infinity_mass

    def _curve(self, bound: str, start: int = 0, effective=None):
        """Everything a query needs, computed once per side (a profile answers many δ):
        (p_∞, losses ℓ_j, S1_j = Σ_{i>j} p_i, ln S2_j = ln Σ_{i>j} p_i e^{−ℓ_i}, δ(ℓ_j)).
        ``start`` > 0: the same for j ≥ start only (uncached; S1, S2 need only i > j)."""
        cache = self.__dict__.setdefault("_curves", {})
        if start == 0 and bound in cache:
            return cache[bound]
        pmf, infinity = self._effective(bound) if effective is None else effective
        pmf = pmf[start:]
        losses = (self.offset + start + np.arange(pmf.size)) * self.grid_step
        after = np.zeros(pmf.size)
        after[:-1] = np.cumsum(pmf[:0:-1])[::-1]
        with np.errstate(divide="ignore"):
            log_terms = np.log(pmf) - losses
        log_after = _log_suffix_sums(log_terms)
        with np.errstate(over="ignore", invalid="ignore"):
            at_grid = infinity + after - np.exp(np.minimum(losses + log_after, 700.0))
        at_grid = np.where(np.isfinite(at_grid), at_grid, infinity + after)
        # δ(ε) is non-increasing; make the float curve so on the safe side of ``bound``
        if bound == UPPER:
            at_grid = np.maximum.accumulate(at_grid[::-1])[::-1]
        else:
            at_grid = np.minimum.accumulate(at_grid)
        total = float(after[0] + pmf[0]) if pmf.size else 0.0
        log_total = float(np.logaddexp(log_terms[0], log_after[0])) if pmf.size else -math.inf
        curve = (infinity, losses, after, log_after, at_grid, total, log_total)
        if start == 0:
            cache[bound] = curve
        return curve

    def _query_curve(self, bound: str, delta: float):
        """The curve from a grid point ℓ_k on with δ(ℓ_k) > ``delta`` (or from ℓ_0), shown
        by a direct sum of non-negative terms (> 2δ, robust to round-off; the curve's own
        value there is checked too). The upper side's curve on j ≥ k is the whole curve's
        (its monotone fix runs from the right). On the lower side the slice's minimum runs
        over i ≥ k only: δ of the effective pmf is non-increasing and > δ at ℓ_k, so an
        earlier computed value ≤ δ could only be float noise, and δ_lower ≤ δ_true puts the
        true crossing above ℓ_k too. Saves the O(n) log-domain passes over the bulk when
        only the tail is queried; a second query builds and caches the whole curve."""
        queried = self.__dict__.setdefault("_queried", set())
        if bound in queried or bound in self.__dict__.get("_curves", {}):
            return 0, self._curve(bound)  # a second query: the whole curve, cached for all
        queried.add(bound)
        effective = self._effective(bound)
        pmf, infinity = effective
        if pmf.size < 4096:
            return 0, self._curve(bound, 0, effective)
        # S1_j + p_∞ ≥ δ(ℓ_j): the crossing is at or below the first j where it is ≤ δ
        after = np.cumsum(pmf[::-1])[::-1]
        bound_index = int(np.searchsorted(-(infinity + after), -delta, side="left"))
        losses = (self.offset + np.arange(pmf.size)) * self.grid_step
        width = max(1024, pmf.size // 64)
        while True:
            start = max(0, bound_index - width)
            if start == 0:
                return 0, self._curve(bound, 0, effective)
            # δ(ℓ_start) directly (one pass over the suffix) before building the curve; a
            # numpy sum, not np.dot: BLAS threads cost ~50× more on a loaded machine
            direct = infinity - float(np.sum(pmf[start + 1:]
                                             * np.expm1(losses[start] - losses[start + 1:])))
            if direct > 2.0 * delta:
                curve = self._curve(bound, start, effective)
                if curve[4][0] > delta:
                    return start, curve
            width *= 4

    def delta(self, epsilon: float, bound: str) -> float:
        """δ(ε) = p_∞ + Σ_{ℓ_i > ε} p_i (1 − e^{ε − ℓ_i}), on the side ``bound``."""
        infinity, losses, after, log_after, _, total, log_total = self._curve(bound)
        j = int(np.searchsorted(losses, epsilon, side="right")) - 1  # last ℓ_j ≤ ε
        if j < 0:
            s1, log_s2 = total, log_total
        else:
            s1, log_s2 = float(after[j]), float(log_after[j])
        with np.errstate(over="ignore"):
            value = infinity + s1 - (math.exp(min(epsilon + log_s2, 700.0)) if s1 > 0 else 0.0)
        if bound == LOWER:
            value -= self.window_mass
        return min(1.0, max(0.0, value))

    def deltas(self, epsilons: np.ndarray, bound: str) -> np.ndarray:
        """:meth:`delta` at each of ``epsilons`` (the same read-out, vectorised)."""
        infinity, losses, after, log_after, _, total, log_total = self._curve(bound)
        epsilons = np.asarray(epsilons, dtype=float)
        j = np.searchsorted(losses, epsilons, side="right") - 1  # last ℓ_j ≤ ε
        inside = j >= 0
        safe = np.where(inside, j, 0)
        s1 = np.where(inside, after[safe], total) if losses.size else np.full(j.shape, total)
        log_s2 = (np.where(inside, log_after[safe], log_total) if losses.size
                  else np.full(j.shape, log_total))
        with np.errstate(over="ignore"):
            tail = np.where(s1 > 0, np.exp(np.minimum(epsilons + log_s2, 700.0)), 0.0)
        value = infinity + s1 - tail
        if bound == LOWER:
            value = value - self.window_mass
        return np.minimum(1.0, np.maximum(0.0, value))

    def epsilon(self, delta: float, bound: str) -> float:
        """The smallest ε ≥ 0 with δ(ε) ≤ delta (math.inf if none), on the side ``bound``."""
        return max(0.0, self.loss_quantile(delta, bound))

    def raw_epsilon(self, delta: float) -> float:
        """ε(δ) of the computed pmf as it is, float error ignored: an estimate, NOT a bound."""
        bare = ComposedPld(self.grid_step, self.offset, np.maximum(self.pmf, 0.0),
                           self.infinity_mass, 0.0, 0.0, self.valid_from)
        return bare.epsilon(delta, UPPER)

    def loss_quantile(self, delta: float, bound: str) -> float:
        """inf{x : δ(x) ≤ delta}, NOT clamped at 0: may be negative, or −inf when δ(x) ≤
        delta everywhere. A lower bound that shifts this value by a rounding slack must
        use it unclamped: clamping first and shifting after turns a clamped 0 into a
        spurious positive bound when the slack is negative.

        On each grid interval (ℓ_j, ℓ_{j+1}] δ(ε) = p_∞ + S1 − e^ε S2 with suffix sums
        S1 = Σ_{i>j} p_i, S2 = Σ_{i>j} p_i e^{−ℓ_i}, solved exactly for ε.
        """
        if bound == LOWER:
            delta = delta + self.window_mass
        start, curve = self._query_curve(bound, delta)
        infinity, losses, after, log_after, at_grid, total, log_total = curve
        if infinity >= delta:
            return math.inf
        # first grid point with δ(ℓ_j) ≤ δ (the curve is non-increasing); from ``start``
        # on, δ(ℓ_start) > δ, so j ≥ 1 whenever start > 0
        j = int(np.searchsorted(-at_grid, -delta, side="left"))
        if j >= losses.size:  # δ(ℓ_last) > δ: only the +∞ atom lies above; p_∞ < δ
            return float(losses[-1]) if losses.size else math.inf
        if j == 0:  # solve on (−∞, ℓ_0] where every finite atom counts
            if total <= 0.0 or infinity + total <= delta:
                return -math.inf
            return min(float(losses[0]), math.log(infinity + total - delta) - log_total)
        s1, log_s2 = float(after[j - 1]), float(log_after[j - 1])
        if not math.isfinite(log_s2):  # nothing finite above: δ(ε) ≤ δ only at ℓ_j
            return float(losses[j])
        eps = math.log(infinity + s1 - delta) - log_s2 if infinity + s1 > delta else -math.inf
        return min(max(eps, float(losses[j - 1])), float(losses[j]))
