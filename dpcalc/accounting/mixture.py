"""The worst-case pair of one DP-SGD step: A = N(0, σ²) against B = Σ_j p_j N(j, σ²).

The Poisson-subsampled Gaussian is p = (1 − q, q) (Abadi et al. 2016; seed 000);
k protected records give hypergeometric or binomial weights over j = 0..k
(seed 000, "How to extend DP-SGD to protect k samples").

Privacy loss in the *remove* direction (P = B, Q = A):
    L(x) = g(x) = ln Σ_j p_j exp((2 j x − j²) / (2σ²)),
convex and increasing in x. The *add* direction (P = A, Q = B) has L = −g(x).
Everything is computed in log space (log_ndtr, logsumexp) so tails down to
1e-300 keep their relative accuracy.
"""
from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, logsumexp

REMOVE = "remove"
ADD = "add"
DIRECTIONS = (REMOVE, ADD)


def _log_diff(log_big: np.ndarray, log_small: np.ndarray) -> np.ndarray:
    """log(exp(log_big) − exp(log_small)) for log_big ≥ log_small; −inf where equal."""
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.minimum(log_small - log_big, 0.0)
        out = log_big + np.log(-np.expm1(gap))
    return np.where(np.isneginf(log_big), -np.inf, out)


class GaussianMixturePair:
    """A = N(0, σ²) versus B = Σ_j weights[j]·N(j, σ²) for j = 0..k (sensitivity 1)."""

    def __init__(self, weights, noise_multiplier: float):
        weights = np.asarray(weights, dtype=float)
        if weights.ndim != 1 or weights.size < 2 or np.any(weights < 0):
            raise ValueError("weights must be a non-negative vector over j = 0..k, k >= 1")
        self.weights = weights / weights.sum()
        self.noise_multiplier = float(noise_multiplier)
        self.shifts = np.arange(weights.size, dtype=float)
        with np.errstate(divide="ignore"):
            self.log_weights = np.log(self.weights)
        # ln p_0: the infimum of g (−inf when p_0 = 0, e.g. q = 1).
        self.loss_floor = float(self.log_weights[0])

    @classmethod
    def subsampled_gaussian(cls, sampling_rate: float, noise_multiplier: float):
        """One DP-SGD step with Poisson sampling: p = (1 − q, q)."""
        return cls([1.0 - sampling_rate, sampling_rate], noise_multiplier)

    @property
    def max_shift(self) -> int:
        """The largest j with non-zero weight."""
        return int(np.flatnonzero(self.weights > 0)[-1])

    # --- the privacy loss g and its inverse -------------------------------------------
    def _exponents(self, x: np.ndarray) -> np.ndarray:
        sigma2 = self.noise_multiplier**2
        j = self.shifts[:, None]
        return self.log_weights[:, None] + (2.0 * j * x[None, :] - j * j) / (2.0 * sigma2)

    def loss(self, x) -> np.ndarray:
        """g(x) = ln(B(x)/A(x)), the remove-direction privacy loss at output x."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        return logsumexp(self._exponents(x), axis=0)

    def inverse_loss(self, loss_values) -> np.ndarray:
        """x with g(x) = ε, vectorised; −inf where ε ≤ ln p_0 (no such x).

        Two components: closed form x = σ²[ln(expm1(ε) + q) − ln q] + ½
        (accounting-methods.md §2). More: Newton from the right, which converges
        monotonically because g is convex and increasing; refined to ~1e-13 since
        a loose inverse understates δ.
        """
        eps = np.atleast_1d(np.asarray(loss_values, dtype=float))
        sigma2 = self.noise_multiplier**2
        out = np.full(eps.shape, -np.inf)
        valid = eps > self.loss_floor
        if not np.any(valid):
            return out
        e = eps[valid]
        top = self.max_shift
        if top == 1 and self.weights.size == 2:
            q = self.weights[1]
            if self.weights[0] == 0.0:
                out[valid] = sigma2 * e + 0.5
            else:
                out[valid] = sigma2 * (np.log(np.expm1(e) + q) - np.log(q)) + 0.5
            return out
        # Start to the right of the root: the top component alone is below g.
        x = sigma2 * (e - self.log_weights[top]) / top + top / 2.0
        for _ in range(200):
            exps = self._exponents(x)
            g = logsumexp(exps, axis=0)
            # g'(x) = E_w[j]/σ² with w ∝ exp(exps): the mean shift under the posterior.
            slope = np.exp(logsumexp(exps, axis=0, b=self.shifts[:, None]) - g) / sigma2
            step = (g - e) / slope
            x = x - step
            if np.all(np.abs(step) <= 1e-14 * np.maximum(1.0, np.abs(x))):
                break
        out[valid] = x
        return out

    # --- tail masses of the loss under P and Q ------------------------------------------
    def _log_mixture_cdf(self, x: np.ndarray, upper: bool) -> np.ndarray:
        """log Σ_j p_j Φ̄((x − j)/σ) (upper) or log Σ_j p_j Φ((x − j)/σ)."""
        z = (x[None, :] - self.shifts[:, None]) / self.noise_multiplier
        parts = log_ndtr(-z if upper else z)
        return logsumexp(self.log_weights[:, None] + parts, axis=0)

    def _log_gauss_cdf(self, x: np.ndarray, upper: bool) -> np.ndarray:
        z = x / self.noise_multiplier
        return log_ndtr(-z if upper else z)

    def log_tails(self, direction: str, grid: np.ndarray):
        """For each loss value e in ``grid``: log P(L > e), log P(L ≤ e), log Q(L > e), log Q(L ≤ e).

        remove: P = B, Q = A, L > e ⟺ x > g⁻¹(e).
        add:    P = A, Q = B, L > e ⟺ x < g⁻¹(−e).
        """
        grid = np.asarray(grid, dtype=float)
        if direction == REMOVE:
            x = self.inverse_loss(grid)
            p_above = self._log_mixture_cdf(x, upper=True)
            p_below = self._log_mixture_cdf(x, upper=False)
            q_above = self._log_gauss_cdf(x, upper=True)
            q_below = self._log_gauss_cdf(x, upper=False)
        elif direction == ADD:
            x = self.inverse_loss(-grid)  # −inf where −e ≤ ln p_0: then L > e never happens
            p_above = self._log_gauss_cdf(x, upper=False)
            p_below = self._log_gauss_cdf(x, upper=True)
            q_above = self._log_mixture_cdf(x, upper=False)
            q_below = self._log_mixture_cdf(x, upper=True)
        else:
            raise ValueError(f"direction must be one of {DIRECTIONS}")
        return p_above, p_below, q_above, q_below

    def loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        """Loss values at the ends of the output window [−Kσ, k + Kσ] (K = half_width)."""
        sigma = self.noise_multiplier
        ends = np.array([-half_width * sigma, self.max_shift + half_width * sigma])
        g_low, g_high = self.loss(ends)
        if direction == REMOVE:
            return float(g_low), float(g_high)
        return float(-g_high), float(-g_low)

    def loss_moments(self, direction: str) -> tuple[float, float]:
        """Mean and standard deviation of L under P (trapezoid rule; used to pick a grid)."""
        sigma = self.noise_multiplier
        x = np.linspace(-12.0 * sigma, self.max_shift + 12.0 * sigma, 801)
        log_a = -0.5 * (x / sigma) ** 2
        remove_loss = self.loss(x)
        if direction == REMOVE:
            weights, values = np.exp(log_a + remove_loss), remove_loss
        else:
            weights, values = np.exp(log_a), -remove_loss
        weights = weights / weights.sum()
        mean = float(np.sum(weights * values))
        var = float(np.sum(weights * (values - mean) ** 2))
        return mean, float(np.sqrt(max(var, 0.0)))
