"""ε(δ) of a composed PLD read from its spectrum, without the inverse transform.

After T ≥ 100 or so steps only a few hundred rfft coefficients W_k of the composition
survive the power (the others underflow to exactly 0, curve_compose._Strided.power), while
the circle has 10^5 points. Every quantity the read-out needs is a sum of the composed
masses c_i (window entry i at circle position w0 + i) against a geometric weight,
    Σ_{i=a}^{L−1} c_i x^{i−a} = (1/n) Σ_k w_k Re(W_k ω^{k(w0+a)} Σ_{m<L−a} (x ω^k)^m),
ω = e^{2πi/n}, w_k the multiplicity of the rfft coefficient (DFT inversion; the inner sum
is a geometric series in closed form), so each costs O(#coefficients).

Bounds, entry by entry as fft_compose.read_back: |c̃_i − c_i| ≤ E (fft_error.absolute,
without the inverse transform's term: there is no inverse transform) and c_true within
E + r|c̃_i| (r: rounded inputs), c̃ = the exact inverse DFT of the computed W. As c_i ≥ 0,
c̃_i ≥ −E, so |c̃_i| ≤ c̃_i + 2E and
    (1 − r)c̃_i − E(1 + 2r) ≤ c_true,i ≤ (1 + r)c̃_i + E(1 + 2r),
both linear in c̃: the upper (lower) read-out uses the right (left) side as its masses.
The float error of each spectral sum is bounded term by term: the numerator
ω^{k(w0+a)} − x^M ω^{k(w0+L)} is a difference of unit vectors whose angles 2πr/n come
from exactly reduced integers r (error ≤ 19u each, taken as 128u for the difference),
divided by 1 − xω^k computed without cancellation; the rest (the division, the product
with W_k, the sum of K terms) adds a relative (K + 64)u (Higham 2002, §3.1, the
recursive-summation bound γ_K). Where that bound exceeds 1e-4·δ the read-out declines.

The read-out then follows ComposedPld.loss_quantile: on (ℓ_{j−1}, ℓ_j] the δ of the
masses is A − e^ε B (A = p_∞ + Σ_{i≥j} p_i, B = Σ_{i≥j} p_i e^{−ℓ_i}); an upper answer is
only returned where the upper bound on δ is shown ≤ δ, a lower one only where the lower
bound on δ is shown > δ just below it (δ_true is non-increasing). Anything else (the
crossing at the window's first point, none inside the window) returns None: the caller
inverts the spectrum and reads it the usual way.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.pld.fft_error import UNIT_ROUNDOFF, full_spectrum_weights
from dpcalc.pld.pld import LOWER, UPPER

_UNIT_ERROR = 128.0 * UNIT_ROUNDOFF  # of ω^x − c·ω^y, |c| ≤ 1, from reduced angles
_PRODUCT_TERMS = 64  # relative error of the series, its products and the sum: (K + 64)u
# Declined (the caller inverts the spectrum) where the series' float-error bound exceeds
# this share of δ: there the inverse transform's per-entry bound is the tighter one.
_ERROR_SHARE = 1e-4
_CANDIDATES = 15  # grid points evaluated per narrowing of the bracket
_NEAR = 4  # grid points each side of a hint, evaluated at once (_near_hint)


class SpectralTail:
    """The composed PLD on the window [lo_index, lo_index + points) of a circle of ``size``
    points, given by its non-zero rfft coefficients ``values`` at ``index``."""

    def __init__(self, values, index, size: int, circle_start: int, points: int, lo_index: int,
                 step: float, infinity: float, window_mass: float, absolute: float,
                 relative: float):
        keep = values != 0
        values, index = values[keep], index[keep].astype(np.int64)
        weights = full_spectrum_weights(size, size // 2 + 1)[index]
        self.size, self.start, self.points = size, circle_start, points
        self.lo_index, self.step = lo_index, step
        self.infinity, self.window_mass = infinity, window_mass
        self.absolute, self.relative = absolute, relative
        self.entry = absolute * (1.0 + 2.0 * relative)  # E(1 + 2r)
        self.index = index
        self.coefficients = weights * values / size  # w_k W_k / n
        self.magnitudes = np.abs(self.coefficients)
        self.zero = index == 0
        h, half = step, np.pi * index / size  # θ_k/2
        # 1 − ω^k and 1 − e^{−h}ω^k, their parts computed without cancellation
        self.plain_denominator = 2 * np.sin(half) ** 2 - 1j * np.sin(2 * half)
        self.tilted_denominator = (-math.expm1(-h) + math.exp(-h) * 2 * np.sin(half) ** 2
                                   - 1j * math.exp(-h) * np.sin(2 * half))
        self.end = self._unit((index * ((circle_start + points) % size)) % size)  # ω^{k(w0+L)}
        # |H| error per unit of |numerator| error: 1/|D| (and none for k = 0, summed exactly)
        with np.errstate(divide="ignore"):
            self.plain_gain = np.where(self.zero, 0.0, 1.0 / np.abs(self.plain_denominator))
            self.tilted_gain = np.where(self.zero, 0.0, 1.0 / np.abs(self.tilted_denominator))
        self.relative_error = (index.size + _PRODUCT_TERMS) * UNIT_ROUNDOFF
        self.grid_size = points

    def _unit(self, turns: np.ndarray) -> np.ndarray:
        """ω^r for integers r in [0, n): the angle 2πr/n from the exactly reduced r."""
        angle = (2.0 * math.pi / self.size) * turns
        return np.cos(angle) + 1j * np.sin(angle)

    def noise_mass(self) -> float:
        """The float-error allowance over the window (Σ|c̃| ≤ 1 + 2E·points)."""
        return self.entry * self.points + self.relative * (1.0 + 2.0 * self.absolute * self.points)

    def _sums(self, first: np.ndarray):
        """For each window index a of ``first``: (Σ_{i≥a} c̃_i, Σ_{i≥a} c̃_i e^{−(i−a)h},
        float-error bounds of both, Σ_{m<M} e^{−mh}) with M = points − a ≥ 1 terms.

        ω^{k(w0+a)} Σ_{m<M} (xω^k)^m = (ω^{k(w0+a)} − x^M ω^{k(w0+L)}) / (1 − xω^k), x = 1 or
        e^{−h}; the k = 0 terms are M and (1 − e^{−hM})/(1 − e^{−h})."""
        h = self.step
        count = (self.points - first).astype(float)[:, None]  # M
        turns = (self.index[None, :] * ((self.start + first) % self.size)[:, None]) % self.size
        start = self._unit(turns)
        decay = np.exp(-h * count)
        geometric = np.expm1(-h * count) / math.expm1(-h)  # Σ_{m<M} e^{−mh}
        with np.errstate(divide="ignore", invalid="ignore"):
            plain = np.where(self.zero, count, (start - self.end) / self.plain_denominator)
            tilted = np.where(self.zero, geometric,
                              (start - decay * self.end) / self.tilted_denominator)
        first_sum = np.sum((self.coefficients * plain).real, axis=1)
        second_sum = np.sum((self.coefficients * tilted).real, axis=1)
        # absolute error of each numerator ≤ _UNIT_ERROR (two unit vectors from angles with
        # error ≤ 19u, their difference), relative error of the rest ≤ relative_error
        first_error = np.sum(self.magnitudes * (_UNIT_ERROR * 2.0 * self.plain_gain
                                                + self.relative_error * np.abs(plain)), axis=1)
        second_error = np.sum(self.magnitudes * (_UNIT_ERROR * (1.0 + decay) * self.tilted_gain
                                                 + self.relative_error * np.abs(tilted)), axis=1)
        return first_sum, second_sum, 1.01 * first_error, 1.01 * second_error, geometric[:, 0]

    def _at_grid(self, grid: np.ndarray, bound: str, with_error: bool = False):
        """Bounds on δ(ℓ_j) for window indices j (active masses i ≥ j + 1), and the pieces
        (A, B·e^{ℓ_{j+1}}) of the interval (ℓ_j, ℓ_{j+1}]."""
        s1, s2, e1, e2, geometric = self._sums(grid + 1)
        r, entry, shrink = self.relative, self.entry, math.exp(-self.step)
        count = (self.points - grid - 1).astype(float)
        # Σ_{i>j} p_i (1 − e^{ℓ_j − ℓ_i}) with e^{ℓ_j − ℓ_i} = e^{−h}·e^{−(i−j−1)h}
        weights_sum = np.maximum(count - shrink * geometric, 0.0)  # Σ (1 − e^{ℓ_j − ℓ_i})
        slack = 4.0 * UNIT_ROUNDOFF * (np.abs(s1) + np.abs(s2))  # s1 − e^{−h}s2, rounded
        if bound == UPPER:
            masses = (1 + r) * (s1 - shrink * s2 + e1 + shrink * e2 + slack)
            value = (self.infinity + self.window_mass + masses
                     + entry * (weights_sum * (1 + 1e-9) + count * 1e-12))
            a = self.infinity + self.window_mass + (1 + r) * (s1 + e1 + slack) + entry * count * (1 + 1e-9)
            b = (1 + r) * (s2 - e2 - slack) + entry * geometric * (1 - 1e-9)
        else:
            masses = (1 - r) * (s1 - shrink * s2 - e1 - shrink * e2 - slack)
            value = self.infinity + masses - entry * (weights_sum * (1 + 1e-9) + count * 1e-12)
            a = self.infinity + (1 - r) * (s1 - e1 - slack) - entry * count * (1 + 1e-9)
            b = (1 - r) * (s2 + e2 + slack) - entry * geometric * (1 - 1e-9)
        if with_error:
            return value, a, b, (1 + r) * (e1 + shrink * e2 + slack)
        return value, a, b

    def quantile(self, delta: float, bound: str, hint: float | None = None) -> float | None:
        """As ComposedPld.loss_quantile(delta, bound) (None: read it the usual way).
        ``hint``: a loss near the answer (e.g. the previous point's), where the search
        starts; any value gives the same answer."""
        if bound == LOWER:
            delta = delta + self.window_mass
        if self.infinity + (self.window_mass if bound == UPPER else 0.0) >= delta:
            return math.inf if bound == UPPER else None
        last = self.points - 2
        if last <= 0:
            return None
        near = self._near_hint(delta, bound, hint, last)
        if near is not None:
            return self._solve(near, delta, bound)
        bracket = self._bracket(delta, bound, hint, last)
        if bracket is None:
            return None
        low, high = bracket  # δ(ℓ_low) > δ ≥ δ(ℓ_high), shown
        while high - low > 1:
            grid = np.unique(np.linspace(low, high, _CANDIDATES + 2).astype(np.int64)[1:-1])
            grid = grid[(grid > low) & (grid < high)]
            values = self._at_grid(grid, bound)[0]
            below = np.flatnonzero(values <= delta)
            if below.size:
                high = int(grid[below[0]])
                above = np.flatnonzero(values[:below[0]] > delta)
                if above.size:
                    low = int(grid[above[-1]])
            else:
                # no candidate shown ≤ δ: the last shown > δ is the new low (a review
                # finding: taking the last candidate unchecked trusted a NaN value)
                above = np.flatnonzero(values > delta)
                if above.size == 0:
                    return None
                low = int(grid[above[-1]])
        return self._solve(low, delta, bound)

    def _near_hint(self, delta: float, bound: str, hint: float | None, last: int) -> int | None:
        """The index ``low`` of the crossing (δ shown > δ at low, ≤ δ at low + 1) when it lies
        within _NEAR grid points of ``hint``, from one evaluation of every point there (a
        good hint, as along a curve, saves the bracket and its narrowing); else None."""
        if hint is None or not math.isfinite(hint):
            return None
        guess = min(max(int(round(hint / self.step)) - self.lo_index, 0), last)
        grid = np.arange(max(0, guess - _NEAR), min(last, guess + _NEAR) + 1, dtype=np.int64)
        values = self._at_grid(grid, bound)[0]
        below = np.flatnonzero(values <= delta)
        if below.size == 0 or below[0] == 0 or not values[below[0] - 1] > delta:
            return None
        return int(grid[below[0] - 1])  # shown > δ, and the next point (the first) ≤ δ

    def _bracket(self, delta: float, bound: str, hint: float | None, last: int):
        """Grid indices (low, high) with the bound on δ shown > δ at low and ≤ δ at high:
        around ``hint`` first, widened 16-fold until it holds, the whole window last."""
        width = 64
        guess = (min(max(int(round(hint / self.step)) - self.lo_index, 0), last)
                 if hint is not None and math.isfinite(hint) else None)
        while True:
            if guess is None or width > last:
                low, high = 0, last
            else:
                low, high = max(0, guess - width), min(last, guess + width)
            ends = self._at_grid(np.array([low, high]), bound)[0]
            if ends[0] > delta and ends[1] <= delta:
                return low, high
            if (low, high) == (0, last):
                return None
            width *= 16

    def _solve(self, low: int, delta: float, bound: str) -> float:
        """The answer on (ℓ_low, ℓ_low + h], where δ(ℓ_low) > δ ≥ δ(ℓ_low + h) is shown."""
        # the crossing lies in (ℓ_low, ℓ_high], ℓ_high = ℓ_low + h: δ = A − e^ε B there
        _, a, b, error = self._at_grid(np.array([low]), bound, with_error=True)
        if error[0] > _ERROR_SHARE * delta:  # the series' own error would widen the bound
            return None
        base = (self.lo_index + low + 1) * self.step  # ℓ_high: B was scaled by e^{ℓ_high}
        left, right = base - self.step, base
        a, b = float(a[0]), float(b[0])
        if not b > 0.0:
            return right if bound == UPPER else (right if a > delta else left)
        eps = math.log(a - delta) - math.log(b) + base if a > delta else -math.inf
        return min(max(eps, left), right)
