"""Fixed-size batches (B of N) under zero-out adjacency: the dominating pair, and the pair
of an explicit run that gives the certified lower bound.

Zero-out (dp_accounting's REPLACE_SPECIAL): D holds x, D′ the null record ⊥ (gradient 0)
in x's slot. Both draw the same indices. With γ = B/N and μ₀ the output law when the slot
is not drawn (B others), μ₁ and μ₁′ when it is (B − 1 others with x, resp. ⊥):
    M(D) = (1 − γ)μ₀ + γμ₁,   M(D′) = (1 − γ)μ₀ + γμ₁′.
Advanced joint convexity (Balle, Barthe, Gaboardi 2018, Thm 2; an identity of signed
measures): for ε′ ≥ 0, with e^ε = 1 + (e^ε′ − 1)/γ and β = e^ε′/e^ε ∈ (0, 1],
    H_{e^ε′}(M(D)‖M(D′)) = γH_{e^ε}(μ₁‖(1 − β)μ₀ + βμ₁′),
and the same with D and D′ swapped. A B-subset of the others is a uniform (B − 1)-subset S
plus a uniform further record y, so all three laws are mixtures over S with the same
weights, and μ₀ over y too; joint convexity of H (twice) leaves, per step,
    D against D′:  sup over a, c of γH_{e^ε}(N(a)‖(1 − β)N(c) + βN(0)),
    D′ against D:  sup over a, c of γH_{e^ε}(N(0)‖(1 − β)N(c) + βN(a)),
over clipped gradients ‖a‖, ‖c‖ ≤ C of x and y in any dimension (noise N(0, σ²I)). Under
the first argument, with Z standard normal, H = E[(1 − e^ε X)₊] for
X = (1 − β)e^{⟨Z,u⟩ − ‖u‖²/2} + βe^{⟨Z,v⟩ − ‖v‖²/2}, u = (c − a)/σ, v = −a/σ: a convex
function of a weighted sum of two lognormals with E = 1. For given marginals the sum is
largest in convex order when the two are comonotone, i.e. u, v parallel, and a comonotone
sum grows in convex order with its marginals, i.e. with ‖u‖, ‖v‖ (Dhaene, Denuit,
Goovaerts, Kaas, Vyncke 2002, "The concept of comonotonicity in actuarial science and
finance: theory", Thms 7 and 8; a lognormal e^{sW − s²/2} grows in convex order with s).
‖u‖ ≤ 2C/σ and ‖v‖ ≤ C/σ are reached together, parallel, by a = C·e, c = −C·e: the
explicit run below, whose one-sided profile is therefore the first order's supremum. In
the second order u = c/σ, v = a/σ, both ≤ C/σ, reached by a = c = C·e: x looks like the
crowd and ⊥ stands out, ((1 − γ)N(0) + γN(−C), N(0)), the Poisson pair R1 at rate γ.

The dominating pair is therefore the splice (pairs.SplicedPair) of the explicit run's
pair P* (above 0) with R1 (mirrored below 0); TV(P*) = γ·TV(N(2C), N(C)) = TV(R1), so the
splice exists. Both orders of the run are composed from it: 'remove' is D against D′,
'add' D′ against D. An adversary may switch between the two configurations from step to
step, which is why no single configuration's composition is an upper bound. Before this,
the pair spliced R2 = ((1 − γ)N(0) + γN(2C), N(0)) above 0 (a coarser bound on the first
order: x against y and x against ⊥ bounded by the larger shift), and before that the
symmetrisation of R2 (the replace-one pair), which mirrored R2 where zero-out's D′ can
only move the sum by C.

:class:`DisplacedNullPair` P* is that explicit run: every other record's gradient −C and
x's +C. Given the slot drawn, x displaces a −C record (the sum moves by 2C) and ⊥ displaces
one (C): P* = (1 − γ)N(0) + γN(2C) against Q* = (1 − γ)N(0) + γN(C), both orders attained
by the same datasets, so its composition is a certified lower bound.
"""
from __future__ import annotations

import math

import numpy as np
from dpcalc.numerics.special_functions import log_ndtr

from dpcalc.models.mixture import ADD, DIRECTIONS, REMOVE, GaussianMixturePair
from dpcalc.models.pairs import SplicedPair
from dpcalc.errors import DpcalcError

def _check(sampling_rate: float, noise_multiplier: float) -> tuple[float, float]:
    rate, sigma = float(sampling_rate), float(noise_multiplier)
    if not 0.0 < rate <= 1.0 or not math.isfinite(sigma) or not 1e-100 <= sigma <= 1e100:
        raise DpcalcError("a zero-out pair needs a rate in (0, 1] and a noise multiplier in "
                          "[1e-100, 1e100]")
    return rate, sigma


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise DpcalcError(f"direction must be one of {DIRECTIONS}")


def fixed_zero_out_pair(sampling_rate: float, noise_multiplier: float) -> SplicedPair:
    """The dominating pair of one fixed-size zero-out step (module doc): the explicit run's
    pair P* above a zero loss, the Poisson pair at rate γ mirrored below."""
    rate, sigma = _check(sampling_rate, noise_multiplier)
    return SplicedPair(DisplacedNullPair(rate, sigma),
                       GaussianMixturePair.subsampled_gaussian(rate, sigma))


def _log_tails_of(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log Φ̄(z), log Φ(z)), each from the smaller tail (one log_ndtr per entry)."""
    with np.errstate(invalid="ignore"):
        smaller = log_ndtr(-np.abs(z))
        larger = np.log1p(-np.exp(smaller))
    positive = z > 0
    return np.where(positive, smaller, larger), np.where(positive, larger, smaller)


def _log_outside_inside(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log P(Z < low or Z > high) and log P(low ≤ Z ≤ high) for Z standard normal, low ≤
    high (low = +inf, high = −inf: everywhere outside), the inside without cancellation."""
    above_high, below_high = _log_tails_of(high)
    if np.all(np.isneginf(low)):  # one-sided (every e ≥ 0)
        return above_high, below_high
    above_low, below_low = _log_tails_of(low)
    with np.errstate(divide="ignore", invalid="ignore"):
        outside = np.where(low > high, 0.0, np.logaddexp(below_low, above_high))
        right = low > 0  # both in the upper tail: Φ̄(low) − Φ̄(high)
        left = high < 0  # both in the lower tail: Φ(high) − Φ(low)
        big = np.where(right, above_low, below_high)
        small = np.where(right, above_high, below_low)
        same_side = big + np.log(-np.expm1(np.minimum(small - big, 0.0)))
        # straddling 0: 1 − Φ(low) − Φ̄(high), both terms ≤ ½
        middle = np.log1p(-(np.exp(below_low) + np.exp(above_high)))
        inside = np.where(right | left, same_side, middle)
    return outside, np.where(high > low, inside, -np.inf)


class DisplacedNullPair:
    """P* = (1 − γ)N(0, σ²) + γN(2, σ²) against Q* = (1 − γ)N(0, σ²) + γN(1, σ²)
    (sensitivity units; module doc). 'remove' compares (P*, Q*), 'add' (Q*, P*).

    With t = e^{x/σ²}, α = 1 − γ, a = γe^{−2/σ²} and c = γe^{−1/(2σ²)} the loss is
    L = ln(α + at²) − ln(α + ct), not monotone: L > e ⟺ at² − e^e·ct + α(1 − e^e) > 0,
    a quadratic in t whose roots are taken in a form without cancellation."""

    directions = DIRECTIONS

    def __init__(self, sampling_rate: float, noise_multiplier: float):
        self.sampling_rate, self.noise_multiplier = _check(sampling_rate, noise_multiplier)
        sigma2 = self.noise_multiplier ** 2
        self._alpha = 1.0 - self.sampling_rate
        self._log_a = math.log(self.sampling_rate) - 2.0 / sigma2
        self._log_c = math.log(self.sampling_rate) - 0.5 / sigma2

    def loss(self, x) -> np.ndarray:
        v = np.atleast_1d(np.asarray(x, dtype=float)) / self.noise_multiplier ** 2
        with np.errstate(divide="ignore"):
            log_alpha = math.log(self._alpha) if self._alpha > 0 else -math.inf
        return np.logaddexp(log_alpha, self._log_a + 2.0 * v) - np.logaddexp(log_alpha,
                                                                           self._log_c + v)

    def _roots(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x₋, x₊) with L > e ⟺ x < x₋ or x > x₊: x₋ = −inf where only large x exceed e,
        and x₋ = +inf, x₊ = −inf where every x does."""
        sigma2 = self.noise_multiplier ** 2
        # roots t = (kc/2a)(1 ± √(1 + r)), k = e^e, r = 4aα(k − 1)/(k²c²)
        #        = 4α e^{log a − 2 log c}·(−expm1(−e))·e^{−e}
        scale = 4.0 * self._alpha * math.exp(self._log_a - 2.0 * self._log_c)
        with np.errstate(over="ignore", invalid="ignore"):
            r = scale * (-np.expm1(-e)) * np.exp(-e) if scale > 0 else np.zeros_like(e)
            root = np.sqrt(np.maximum(1.0 + r, 0.0))
            log_half = e + self._log_c - self._log_a - math.log(2.0)  # ln(kc/2a)
            x_plus = sigma2 * (log_half + np.log1p(root))
            # t₋ = (kc/2a)(1 − √(1 + r)) = (kc/2a)(−r)/(1 + √(1 + r)), for r < 0 only
            with np.errstate(divide="ignore"):
                x_minus = np.where(r < 0, sigma2 * (log_half + np.log(np.maximum(-r, 0.0))
                                                     - np.log1p(root)), -np.inf)
        everywhere = 1.0 + r < 0
        return np.where(everywhere, np.inf, x_minus), np.where(everywhere, -np.inf, x_plus)

    def _log_side(self, shift: float, x_minus: np.ndarray, x_plus: np.ndarray):
        """log of (mass of L > e, mass of L ≤ e) under (1 − γ)N(0) + γN(shift)."""
        sigma = self.noise_multiplier
        parts_above, parts_below = [], []
        for weight, centre in ((self._alpha, 0.0), (self.sampling_rate, shift)):
            if weight <= 0.0:
                continue
            outside, inside = _log_outside_inside((x_minus - centre) / sigma,
                                                  (x_plus - centre) / sigma)  # L ≤ e inside
            parts_above.append(math.log(weight) + outside)
            parts_below.append(math.log(weight) + inside)
        return (np.logaddexp.reduce(parts_above, axis=0),
                np.logaddexp.reduce(parts_below, axis=0))

    def log_tails(self, direction: str, grid) -> tuple:
        """log P(L > e), log P(L ≤ e), log Q(L > e), log Q(L ≤ e) for each e in ``grid``."""
        _check_direction(direction)
        e = np.atleast_1d(np.asarray(grid, dtype=float))
        x_minus, x_plus = self._roots(e if direction == REMOVE else -e)
        p_above, p_below = self._log_side(2.0, x_minus, x_plus)
        q_above, q_below = self._log_side(1.0, x_minus, x_plus)
        if direction == REMOVE:
            return p_above, p_below, q_above, q_below
        # (Q*, P*), M = −L: M > e ⟺ L < −e (L has no atoms)
        return q_below, q_above, p_below, p_above

    def log_bucket_masses(self, direction: str, edges) -> tuple:
        """log P_k, log Q_k of the loss buckets (edges[k], edges[k+1]] and the end tails:
        {L > a} \\ {L > b} (a < b the bucket's ends in L) is [x₋(b), x₋(a)) ∪ (x₊(a), x₊(b)],
        or [x₋(b), x₊(b)] where every x has L > a; each interval's normal masses without
        cancellation (gauss_intervals.py)."""
        from dpcalc.numerics.gauss_intervals import log_normal_masses

        _check_direction(direction)
        edges = np.asarray(edges, dtype=float)
        # 'add' reads (Q*, P*) with M = −L: M ∈ (e_k, e_{k+1}] ⟺ L ∈ [−e_{k+1}, −e_k)
        values = edges if direction == REMOVE else -edges[::-1]
        x_minus, x_plus = self._roots(values)
        left_low, left_high = x_minus[1:], x_minus[:-1]
        right_low, right_high = x_plus[:-1], x_plus[1:]
        everywhere = np.isposinf(x_minus[:-1])  # L > a for every x
        left_high = np.where(everywhere, x_plus[1:], left_high)
        right_low = np.where(everywhere, np.inf, right_low)
        masses = []
        for shift in (2.0, 1.0):  # P*: the record's +C displaces −C; Q*: the null record
            parts = []
            for weight, centre in ((self._alpha, 0.0), (self.sampling_rate, shift)):
                if weight <= 0.0:
                    continue
                inside = np.logaddexp(
                    log_normal_masses(left_low, left_high, centre, self.noise_multiplier),
                    log_normal_masses(right_low, right_high, centre, self.noise_multiplier))
                parts.append(math.log(weight) + inside)
            masses.append(np.logaddexp.reduce(parts, axis=0))
        tails = self.log_tails(direction, edges[[0, -1]])
        log_p, log_q = masses if direction == REMOVE else (masses[1][::-1], masses[0][::-1])
        return log_p, log_q, float(tails[1][0]), float(tails[0][1])

    def _window(self, half_width: float) -> np.ndarray:
        sigma = self.noise_multiplier
        return np.linspace(-half_width * sigma, 2.0 + half_width * sigma, 2001)

    def loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        _check_direction(direction)
        losses = self.loss(self._window(half_width))
        low, high = float(losses.min()), float(losses.max())
        return (low, high) if direction == REMOVE else (-high, -low)

    def loss_moments(self, direction: str) -> tuple[float, float]:
        """Mean and standard deviation of the loss under P (trapezoid rule)."""
        _check_direction(direction)
        sigma = self.noise_multiplier
        x = self._window(12.0)
        losses = self.loss(x)
        base = self._alpha * np.exp(-0.5 * (x / sigma) ** 2)
        shift = 2.0 if direction == REMOVE else 1.0
        weights = base + self.sampling_rate * np.exp(-0.5 * ((x - shift) / sigma) ** 2)
        values = losses if direction == REMOVE else -losses
        weights = weights / weights.sum()
        mean = float(np.sum(weights * values))
        return mean, math.sqrt(max(float(np.sum(weights * (values - mean) ** 2)), 0.0))


__all__ = ["ADD", "REMOVE", "DisplacedNullPair", "fixed_zero_out_pair"]
