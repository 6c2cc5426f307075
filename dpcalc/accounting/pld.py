"""Discrete privacy loss distributions (PLDs): discretise one step, compose by FFT, read off δ(ε).

A PLD here is the law of the privacy loss L = ln(P/Q) under P, on the grid
ℓ_i = (offset + i)·h, plus an atom at +∞ (outputs Q cannot produce). The
hockey-stick divergence of the T-fold product is
    δ(ε) = E[(1 − e^{ε − S})_+],  S = L_1 + … + L_T,
so composing means convolving PLDs (Meiser & Mohammadi 2018; Sommer et al. 2019).

Two discretisations of one step, from the bucket masses (P_k, Q_k) of the loss
intervals (e_k, e_{k+1}]:

* ``upper`` — connect-the-dots (Doroshenko et al. 2022): each bucket's mass is split
  between its two grid points preserving both P_k and Q_k. Its privacy curve is the
  chord of the true (convex in e^ε) curve, so the pair dominates the true pair and
  every composition of it is a certified upper bound; the error is second order in h.
  Loss below the grid is rounded up to its first point, loss above it goes to +∞.

* ``lower`` — the pair bucketed into loss intervals centred on the grid points (a
  post-processing of the true pair, so dominated by it), each bucket's exact loss
  ℓ_k = ln(P_k/Q_k) rounded to its grid point, an error of at most h/2 and, for a
  smooth PLD, of order h². The rounding errors E_t of the T steps are independent with a known law, so
  a Chernoff bound with their exact moment generating function gives η with
  P(Σ E_t > η) ≤ f; then δ_true(ε) ≥ δ_rounded(ε + η) − f (the concentration
  argument of Gopi, Lee, Wutschitz 2021, §5, with the exact MGF in place of
  Hoeffding's lemma). Loss below the grid is dropped and the top bucket rounded down:
  both only lower δ, and their errors are bounded by 0 in the MGF.

Composition uses one FFT over a window that a Chernoff bound shows holds all but τ of
the composed mass. Mass outside wraps around inside the window; the upper bound adds
τ to the +∞ atom, the lower bound subtracts it (accounting-methods.md §2, the FFT trap).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import fft as sp_fft

from dpcalc.accounting.fft_error import UNIT_ROUNDOFF, CompositionErrorBound
from dpcalc.accounting.mixture import GaussianMixturePair, _log_diff

UPPER = "upper"
LOWER = "lower"
MAX_FFT_POINTS = 1 << 22  # 4 Mi points: about 200 MB of work arrays at the worst


class GridTooLarge(Exception):
    """The composition needs more FFT points than MAX_FFT_POINTS at this grid step."""

    def __init__(self, points_needed: int):
        super().__init__(points_needed)
        self.points_needed = points_needed


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

    @property
    def losses(self) -> np.ndarray:
        cached = self.__dict__.get("_losses")
        if cached is None or cached.size != self.pmf.size:
            cached = (self.offset + np.arange(self.pmf.size)) * self.grid_step
            self.__dict__["_losses"] = cached
        return cached

    def log_mgf(self, lambdas: np.ndarray) -> np.ndarray:
        """ln E[e^{λL}; L finite] for each λ (sub-probability MGF: Chernoff stays valid)."""
        return _log_mgf(self.pmf, self.losses, lambdas)

    def rounding_log_mgf(self, lambdas: np.ndarray) -> np.ndarray:
        """ln E[e^{λE}] of one step's rounding error E (lower bound only)."""
        return _log_mgf(self.rounding_masses, self.rounding_errors, lambdas)


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


def _log_mgf(masses: np.ndarray, values: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """An upper bound on ln Σ_i m_i e^{λ v_i} for each λ (all of one sign), exact for the
    heavy entries; computed in chunks (no scipy overhead per λ)."""
    lambdas = np.atleast_1d(lambdas)
    keep = masses > 0
    log_masses, values = np.log(masses[keep]), values[keep]
    if values.size:
        log_masses, values = _pool_light_entries(log_masses, values, bool(lambdas[0] > 0))
    lambdas = np.atleast_1d(lambdas)
    out = np.empty(lambdas.size)
    chunk = max(1, 2_000_000 // max(values.size, 1))
    for start in range(0, lambdas.size, chunk):
        lam = lambdas[start:start + chunk, None]
        exponents = log_masses[None, :] + lam * values[None, :]
        top = exponents.max(axis=1, keepdims=True)
        out[start:start + chunk] = (top + np.log(np.exp(exponents - top).sum(axis=1, keepdims=True)))[:, 0]
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

    def _curve(self, bound: str):
        """Everything a query needs, computed once per side (a profile answers many δ):
        (p_∞, losses ℓ_j, S1_j = Σ_{i>j} p_i, ln S2_j = ln Σ_{i>j} p_i e^{−ℓ_i}, δ(ℓ_j))."""
        cache = self.__dict__.setdefault("_curves", {})
        if bound not in cache:
            pmf, infinity = self._effective(bound)
            losses = (self.offset + np.arange(pmf.size)) * self.grid_step
            after = np.append(np.cumsum(pmf[::-1])[::-1][1:], 0.0)
            with np.errstate(divide="ignore"):
                log_terms = np.log(pmf) - losses
            log_after = np.append(np.logaddexp.accumulate(log_terms[::-1])[::-1][1:], -np.inf)
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
            cache[bound] = (infinity, losses, after, log_after, at_grid, total, log_total)
        return cache[bound]

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
        infinity, losses, after, log_after, at_grid, total, log_total = self._curve(bound)
        if bound == LOWER:
            delta = delta + self.window_mass
        if infinity >= delta:
            return math.inf
        # first grid point with δ(ℓ_j) ≤ δ (the curve is non-increasing)
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


# --- one step ---------------------------------------------------------------------------
def _bucket_masses(pair: GaussianMixturePair, direction: str, edges: np.ndarray):
    """log P_k, log Q_k of the loss buckets (edges[k], edges[k+1]], and the log tails at the ends.

    Each mass is a difference of whichever tail is smaller, keeping relative accuracy.
    """
    p_above, p_below, q_above, q_below = pair.log_tails(direction, edges)
    use_upper = p_above[:-1] < math.log(0.5)
    log_p = np.where(use_upper, _log_diff(p_above[:-1], p_above[1:]),
                     _log_diff(p_below[1:], p_below[:-1]))
    use_upper_q = q_above[:-1] < math.log(0.5)
    log_q = np.where(use_upper_q, _log_diff(q_above[:-1], q_above[1:]),
                     _log_diff(q_below[1:], q_below[:-1]))
    return log_p, log_q, float(p_below[0]), float(p_above[-1])


def discretise(pair: GaussianMixturePair, direction: str, grid_step: float,
               tail_half_width: float, bound: str) -> DiscretePld:
    """One step of ``pair`` in ``direction`` on the grid of width ``grid_step``.

    ``tail_half_width`` K: the grid covers the losses of outputs x in [−Kσ, k + Kσ].
    """
    low, high = pair.loss_range(direction, tail_half_width)
    first = math.floor(low / grid_step)
    last = max(math.ceil(high / grid_step), first + 1)
    grid = np.arange(first, last + 1) * grid_step
    if bound == UPPER:
        # Buckets (e_k, e_{k+1}] between grid points.
        log_p, log_q, log_below, log_above = _bucket_masses(pair, direction, grid)
        mass = np.exp(log_p)
        # Exact in-bucket loss ℓ_k = ln(P_k/Q_k) as an offset in [0, h] from e_k.
        with np.errstate(invalid="ignore"):
            offset_in_bucket = np.clip(log_p - log_q - grid[:-1], 0.0, grid_step)
        offset_in_bucket = np.where(np.isfinite(offset_in_bucket), offset_in_bucket, grid_step)
        # Connect-the-dots split preserving P_k and Q_k: mass b at e_{k+1}, P_k − b at e_k.
        to_right = mass * (-np.expm1(-offset_in_bucket)) / (-math.expm1(-grid_step))
        to_right = np.minimum(to_right, mass)
        pmf = np.zeros(grid.size)
        pmf[1:] += to_right
        pmf[:-1] += mass - to_right
        pmf[0] += math.exp(log_below)  # loss below the grid, rounded up
        return DiscretePld(grid_step, first, pmf, math.exp(log_above))  # above the grid: +∞
    if bound == LOWER:
        # Buckets (e_k − h/2, e_k + h/2] centred on grid points: each bucket's exact loss
        # ℓ_k = ln(P_k/Q_k) lies within h/2 of e_k, and for a smooth PLD within O(h²).
        edges = (np.arange(first, last + 2) - 0.5) * grid_step
        log_p, log_q, log_below, log_above = _bucket_masses(pair, direction, edges)
        pmf = np.exp(log_p)
        with np.errstate(invalid="ignore"):
            errors = np.clip(grid - (log_p - log_q), -0.5 * grid_step, 0.5 * grid_step)
        errors = np.where(np.isfinite(errors), errors, 0.0)
        top_mass = math.exp(log_above)
        pmf[-1] += top_mass  # top bucket rounded down; bottom dropped (error ≤ 0: bound by 0)
        rest = np.array([top_mass + math.exp(log_below)])
        return DiscretePld(grid_step, first, pmf, 0.0,
                           np.concatenate([pmf[:-1], [pmf[-1] - top_mass], rest]),
                           np.concatenate([errors, [0.0]]))
    raise ValueError(f"bound must be {UPPER!r} or {LOWER!r}")


def _min_over_lambda(bound_at, guess: float) -> float:
    """min over λ > 0 of bound_at(λ), where every value is a valid bound.

    Five λ on a log grid around ``guess`` (the optimum for a Gaussian), widened while
    the best one sits at an edge, then five more between the best one's neighbours."""
    lambdas = guess * np.geomspace(1 / 8, 8, 5)
    values = bound_at(lambdas)
    for _ in range(6):
        clean = np.where(np.isfinite(values), values, np.inf)
        best = int(np.argmin(clean))
        if 0 < best < lambdas.size - 1 or not np.isfinite(clean[best]):
            break
        extra = lambdas[-1] * np.geomspace(2, 64, 5) if best else lambdas[0] / np.geomspace(2, 64, 5)
        lambdas = np.concatenate([lambdas, extra])
        values = np.concatenate([values, bound_at(extra)])
        order = np.argsort(lambdas)
        lambdas, values = lambdas[order], values[order]
    clean = np.where(np.isfinite(values), values, np.inf)
    best = int(np.argmin(clean))
    finer = np.geomspace(lambdas[max(best - 1, 0)], lambdas[min(best + 1, lambdas.size - 1)], 5)
    clean = np.concatenate([clean, bound_at(finer)])
    clean = clean[np.isfinite(clean)]
    return float(clean.min()) if clean.size else math.inf


def rounding_slack(plds_with_steps, failure: float) -> float:
    """η with P(Σ_t E_t > η) ≤ failure for the summed rounding errors (Chernoff, exact MGF).

    η may be negative when the rounding lowers the losses on average: the bound
    δ_true(ε) ≥ δ_rounded(ε + η) − failure holds for any real η."""
    step = plds_with_steps[0][0].grid_step
    total = sum(steps for _, steps in plds_with_steps)
    spread = step * math.sqrt(total / 12.0)  # if errors were uniform on ±h/2

    def bound_at(lambdas):
        cumulant = sum(steps * pld.rounding_log_mgf(lambdas) for pld, steps in plds_with_steps)
        return (cumulant - math.log(failure)) / lambdas

    return _min_over_lambda(bound_at, math.sqrt(2 * math.log(1 / failure)) / spread)


# --- composition ------------------------------------------------------------------------
def _chernoff_window(plds_with_steps, log_tau: float) -> tuple[float, float]:
    """Loss values (lo, hi) with P(S < lo) ≤ τ and P(S > hi) ≤ τ for the finite part of S."""
    mean = sum(steps * float(np.sum(p.pmf * p.losses)) for p, steps in plds_with_steps)
    var = sum(steps * float(np.sum(p.pmf * (p.losses - np.sum(p.pmf * p.losses)) ** 2))
              for p, steps in plds_with_steps)
    scale = math.sqrt(max(var, 0.0)) + plds_with_steps[0][0].grid_step

    def tail_bound(sign: float) -> float:
        def bound_at(lambdas):
            cumulant = sum(steps * p.log_mgf(sign * lambdas) for p, steps in plds_with_steps)
            return (cumulant - log_tau) / lambdas
        return _min_over_lambda(bound_at, math.sqrt(-2 * log_tau) / scale)

    hi = tail_bound(1.0)
    lo = -tail_bound(-1.0)
    if not math.isfinite(hi):
        hi = mean + 50 * scale
    if not math.isfinite(lo):
        lo = mean - 50 * scale
    return lo, hi


def _power(values: np.ndarray, exponent: int) -> np.ndarray:
    """values**exponent, skipping the entries that underflow to 0 anyway."""
    if exponent == 1:
        return values
    with np.errstate(divide="ignore"):
        log_modulus = 0.5 * np.log(values.real**2 + values.imag**2)
    alive = exponent * log_modulus > -745.0
    out = np.zeros_like(values)
    out[alive] = values[alive] ** exponent
    return out


def compose(plds_with_steps: list[tuple[DiscretePld, int]], tail_mass: float,
            max_points: int = MAX_FFT_POINTS,
            input_relative_error: float = 16.0 * UNIT_ROUNDOFF) -> ComposedPld:
    """T-fold self-composition of each PLD, then their product, by one FFT.

    ``tail_mass`` τ: the window is chosen so that at most τ of the composed mass lies on
    each side of it (Chernoff); 2τ is then reported as ``window_mass``.
    """
    step = plds_with_steps[0][0].grid_step
    if len(plds_with_steps) == 1 and plds_with_steps[0][1] == 1:
        single = plds_with_steps[0][0]  # one step: nothing to compose, nothing to round off
        return ComposedPld(step, single.offset, single.pmf.copy(), single.infinity_mass, 0.0, 0.0)
    support_lo = sum(steps * p.offset for p, steps in plds_with_steps)
    support_hi = sum(steps * (p.offset + p.pmf.size - 1) for p, steps in plds_with_steps)
    lo, hi = _chernoff_window(plds_with_steps, math.log(tail_mass))
    lo_index = max(support_lo, math.floor(lo / step))
    hi_index = min(support_hi, math.ceil(hi / step))
    window_mass = 0.0 if (lo_index == support_lo and hi_index == support_hi) else 2 * tail_mass
    needed = hi_index - lo_index + 1
    if needed > max_points:
        raise GridTooLarge(needed)
    # A pad beyond the window: its positions hold at most 2τ of true mass, so what the FFT
    # puts there measures its own float error.
    size = sp_fft.next_fast_len(needed + max(64, needed // 32), real=True)
    spectrum = None
    log_finite_mass = 0.0
    error_bound = CompositionErrorBound(size, input_relative_error)
    for pld, steps in plds_with_steps:
        folded = pld.pmf
        if folded.size > size:
            folded = np.bincount(np.arange(folded.size) % size, weights=folded, minlength=size)
        transformed = sp_fft.rfft(folded, size)
        error_bound.add_phase(folded, transformed, steps)
        transformed = _power(transformed, steps)
        spectrum = transformed if spectrum is None else spectrum * transformed
        log_finite_mass += steps * math.log1p(-pld.infinity_mass) if pld.infinity_mass < 1 else -math.inf
    circular = sp_fft.irfft(spectrum, size)
    # circular[m] holds the mass of S with (S_index − support_lo) ≡ m (mod size).
    shift = -((lo_index - support_lo) % size)
    rolled = np.roll(circular, shift)
    composed, pad = rolled[:needed], rolled[needed:]
    # The inverse transform's own error is measured only when its a priori bound could add
    # more than 1e4·τ (about 1e-5·δ) to δ over the whole window.
    budget = 1e4 * tail_mass / needed
    inverse = np.roll(np.broadcast_to(error_bound.inverse_error(spectrum, circular, budget),
                                      (size,)), shift)[:needed]
    # Float error of every entry: the a priori bound of fft_error.py (absolute, plus a
    # relative term for the rounded inputs). The pad beyond the window holds at most 2τ of
    # true mass; what the FFT puts there must lie within the bound (a cross-check, kept as a
    # floor so a bound that failed could never be smaller than an error actually seen).
    measured = max(0.0, float(np.abs(pad).max()) - 2 * tail_mass) if pad.size else 0.0
    absolute = max(error_bound.absolute(spectrum, include_inverse=False), measured,
                   float(max(0.0, -composed.min())))
    noise_floor = absolute + inverse + error_bound.relative() * np.abs(composed)
    infinity = -math.expm1(log_finite_mass)
    return ComposedPld(step, lo_index, composed, infinity, window_mass, noise_floor)


# --- exponential tilting -----------------------------------------------------------------
def _tilted_moments(support, theta: float) -> tuple[float, float]:
    """Mean and variance of L under the pmf tilted by e^{θL} (finite part);
    ``support`` = (log masses, losses) of the entries with mass."""
    log_masses, losses = support
    exponents = log_masses + theta * losses
    weights = np.exp(exponents - exponents.max())
    total = float(np.sum(weights))
    mean = float(np.sum(weights * losses)) / total
    variance = float(np.sum(weights * (losses - mean) ** 2)) / total
    return mean, variance


def saddle_tilt(plds_with_steps, target: float) -> float:
    """θ ≥ 0 whose tilted composition has mean ``target`` (Λ'(θ) = target).

    Λ'(θ) = Σ T·E_θ[L] is increasing (Λ is convex), with slope Σ T·Var_θ[L]: Newton steps
    kept inside a bracket, bisection when a step leaves it; a dozen evaluations at most
    where 60 bisections were used before. Any θ ≥ 0 gives valid bounds: the tilt only
    decides where the composition is accurate."""
    supports = []
    for pld, steps in plds_with_steps:
        keep = pld.pmf > 0
        supports.append(((np.log(pld.pmf[keep]), pld.losses[keep]), steps))

    def moments(theta):
        pairs = [(steps * mean, steps * variance)
                 for (mean, variance), steps in ((_tilted_moments(s, theta), steps)
                                                 for s, steps in supports)]
        return sum(m for m, _ in pairs) - target, sum(v for _, v in pairs)

    value, slope = moments(0.0)
    if value >= 0.0:
        return 0.0
    low, high = 0.0, None
    theta = 1.0
    for _ in range(100):
        value, slope = moments(theta)
        if abs(value) <= 1e-9 * (abs(target) + 1.0):
            return theta
        if value < 0.0:
            low = theta
        else:
            high = theta
        step = theta - value / slope if slope > 0.0 else math.inf
        if high is None:  # not bracketed yet: Newton from below, at least doubling
            theta = max(step, 2.0 * theta) if math.isfinite(step) else 4.0 * theta
            if theta > 1e8:
                return low
            continue
        if not (low < step < high):
            step = 0.5 * (low + high)
        theta = step
        if high - low <= 1e-12 * high:
            break
    return low


def compose_tilted(plds_with_steps, theta: float, tail_mass: float, valid_from: float,
                   max_points: int = MAX_FFT_POINTS) -> ComposedPld:
    """Compose the pmfs tilted by e^{θℓ}, then untilt: c_s = ĉ_s·exp(Λ − θ S_s).

    Tilting commutes with convolution, so the composed region near S ≈ Λ'(θ) becomes the
    bulk of what the FFT computes and its round-off there is relative, not absolute. The
    untilted float error per entry is ν̂·exp(Λ − θS_s) (ν̂ measured in tilted units), and
    the mass outside the window adds at most 2τ̂·exp(Λ − θ·valid_from) to δ(ε) for every
    ε ≥ valid_from, where τ̂ is chosen so that this is ``tail_mass``.
    """
    step = plds_with_steps[0][0].grid_step
    tilted, log_scale, log_scale_size = [], 0.0, 0.0
    input_relative = 16.0 * UNIT_ROUNDOFF
    for pld, steps in plds_with_steps:
        keep = pld.pmf > 0
        with np.errstate(divide="ignore"):
            log_masses = np.log(np.where(keep, pld.pmf, 1.0))
            exponents = np.where(keep, log_masses + theta * pld.losses, -np.inf)
        top = float(exponents.max())
        # Each tilted weight exp(ln p + θℓ − top) carries the round-off of its exponent,
        # u·(|ln p| + 2|θℓ| + |exponent − top| + |top|), on top of the input's own 16u.
        magnitudes = np.abs(log_masses) + 2.0 * np.abs(theta * pld.losses) + np.abs(exponents - top)
        largest = float(np.max(np.where(keep, magnitudes, 0.0))) + abs(top) + 2.0
        input_relative = max(input_relative, 16.0 * UNIT_ROUNDOFF + 2.0 * UNIT_ROUNDOFF * largest)
        weights = np.exp(exponents - top)
        log_mgf = top + math.log(float(weights.sum()))
        tilted.append((DiscretePld(step, pld.offset, weights / weights.sum(), 0.0), steps))
        log_scale += steps * log_mgf
        log_scale_size += steps * (abs(log_mgf) + abs(top))
    log_window = math.log(tail_mass / 2.0) - (log_scale - theta * valid_from)
    tilted_tail = math.exp(min(max(log_window, -690.0), math.log(0.01)))
    inner = compose(tilted, tilted_tail, max_points, input_relative)
    losses = (inner.offset + np.arange(inner.pmf.size)) * step
    log_factor = np.minimum(log_scale - theta * losses, 700.0)
    factor = np.exp(log_factor)
    pmf = np.clip(inner.pmf * factor, -1.0, 1.0)
    # float error of the untilting factor: a few ulps of every magnitude in its exponent
    factor_error = 8.0 * UNIT_ROUNDOFF * (log_scale_size + np.abs(theta * losses) + 2.0)
    noise = np.minimum(inner.noise_floor * factor + np.abs(pmf) * factor_error, 1.0)
    window = min(1.0, 2 * tilted_tail * math.exp(min(log_scale - theta * valid_from, 700.0)))
    log_finite = sum(steps * math.log1p(-pld.infinity_mass) if pld.infinity_mass < 1 else -math.inf
                     for pld, steps in plds_with_steps)
    return ComposedPld(step, inner.offset, pmf, -math.expm1(log_finite), window, noise, valid_from)
