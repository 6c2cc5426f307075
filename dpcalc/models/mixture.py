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

import math

import numpy as np
from dpcalc.numerics.special_functions import log_ndtr

from dpcalc.errors import DpcalcError
from dpcalc.numerics import mixture_tails as mixture_many
from dpcalc.params import check_range, float_array, shown

REMOVE = "remove"
ADD = "add"
DIRECTIONS = (REMOVE, ADD)


def _logsumexp_rows(terms: np.ndarray) -> np.ndarray:
    """log Σ_rows exp(terms) per column (a leaner scipy.special.logsumexp(axis=0))."""
    peak = terms.max(axis=0)
    shift = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        return shift + np.log(np.exp(terms - shift).sum(axis=0))


def check_direction(direction, directions) -> str:
    """``direction`` if it is one of ``directions``, else a DpcalcError."""
    if not isinstance(direction, str) or direction not in directions:
        raise DpcalcError(f"direction must be one of {', '.join(directions)}; got {shown(direction)}")
    return direction


def _finite_array(values, flag: str) -> np.ndarray:
    array = float_array(values, flag, "finite numbers")
    if not np.all(np.isfinite(array)):
        raise DpcalcError(f"{flag} must be finite numbers; got an infinite one")
    return array


class GaussianMixturePair:
    """A = N(0, σ²) versus B = Σ_j weights[j]·N(j, σ²) for j = 0..k (sensitivity 1).

    Two neighbouring-relation instances ("directions"): remove compares (B, A), add
    compares (A, B).

    ``prune``: the top components whose weights sum to at most this are replaced by an
    atom w that only B can produce (loss +∞ in the remove direction, −∞ in the add
    direction). The true pair is a post-processing of the pruned one (the atom is mapped
    to the dropped components, everything else left alone), so every upper bound stays
    certified, and δ grows by at most T·w. A lower bound computed on the pruned pair holds
    for the true pair only at a δ smaller by the dropped mass: T·w in the remove direction,
    e^ε·T·w in the add direction; pb reads its lower compositions that much higher
    (pb/direction_pass.lower_allowance)."""

    directions = DIRECTIONS
    # log_tails / log_bucket_masses of many pairs at once (numerics/mixture_tails.py):
    # internal to the pld discretisation, their arguments not checked
    _log_tails_many = staticmethod(mixture_many.log_tails_many)
    _log_bucket_masses_many = staticmethod(mixture_many.log_bucket_masses_many)

    def __init__(self, weights, noise_multiplier: float, prune: float = 0.0):
        weights = float_array(weights, "weights", "finite numbers >= 0")
        sigma = check_range(noise_multiplier, "noise multiplier", 1e-100, 1e100, low_open=False,
                            high_open=False)  # σ² must stay a finite, normal, non-zero float
        prune = check_range(prune, "prune", 0.0, 1.0, low_open=False)
        if (weights.ndim != 1 or weights.size < 2 or not np.all(np.isfinite(weights))
                or np.any(weights < 0) or not weights[1:].sum() > 0):
            raise DpcalcError("mixture weights must be finite, >= 0, over j = 0..k (k >= 1), with "
                              "some weight at j >= 1")
        weights = weights / weights.sum()
        self.dropped = 0.0
        if prune > 0.0 and weights.size > 2:
            tail = np.cumsum(weights[::-1])[::-1]  # tail[j] = Σ_{i ≥ j} p_i
            keep = max(2, int(np.flatnonzero(tail > prune)[-1]) + 1)
            self.dropped = float(tail[keep]) if keep < weights.size else 0.0
            weights = weights[:keep]
        self.weights = weights
        self.noise_multiplier = sigma
        self.shifts = np.arange(weights.size, dtype=float)
        with np.errstate(divide="ignore"):
            self.log_weights = np.log(self.weights)
        # ln p_0: the infimum of g (−inf when p_0 = 0, e.g. q = 1).
        self.loss_floor = float(self.log_weights[0])

    @classmethod
    def subsampled_gaussian(cls, sampling_rate: float, noise_multiplier: float):
        """One DP-SGD step with Poisson sampling: p = (1 − q, q)."""
        rate = check_range(sampling_rate, "sampling_rate", 0.0, 1.0, high_open=False)
        return cls([1.0 - rate, rate], noise_multiplier)

    @property
    def gaussian_mu(self) -> float | None:
        """j/σ where all of B's weight sits at one shift j (q = 1): the pair is then exactly
        the Gaussian pair (N(j, σ²), N(0, σ²)), μ-GDP with μ = j/σ in both directions and
        no better (Dong, Roth, Su 2022, Def. 2.7); None otherwise."""
        support = np.flatnonzero(self.weights > 0)
        if support.size != 1 or self.dropped > 0.0:
            return None
        return float(self.shifts[support[0]]) / self.noise_multiplier

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
        x = np.atleast_1d(_finite_array(x, "x (outputs)"))
        return _logsumexp_rows(self._exponents(x))

    def inverse_loss(self, loss_values) -> np.ndarray:
        """x with g(x) = ε, vectorised; −inf where ε ≤ ln p_0 (no such x).

        Two components (p_0 = 1 − q): closed form x = σ²[ln(expm1(ε) + q) − ln q] + ½
        (accounting-methods.md §2). More, or a pruned pair: Newton from the right on
        ln M(x) = ln(e^ε − p_0), M(x) = Σ_{j≥1} p_j exp((2jx − j²)/(2σ²)) = e^{g(x)} − p_0.
        ln M is a log-sum-exp of affine functions of x, so convex and increasing, and
        Newton from the right converges monotonically; it is nearly affine at both ends
        (one component dominates), so a few steps suffice. Refined to ~1e-14 since a
        loose inverse understates δ.
        """
        eps = np.atleast_1d(float_array(loss_values, "loss_values", "numbers (not NaN)"))
        sigma2 = self.noise_multiplier**2
        out = np.full(eps.shape, -np.inf)
        valid = eps > self.loss_floor
        if not np.any(valid):
            return out
        e = eps[valid]
        top = self.max_shift
        if top == 1 and self.weights.size == 2 and not self.dropped:
            # p_0 = 1 − q here; a pruned pair's weights sum to 1 − w: Newton below
            q = self.weights[1]
            if self.weights[0] == 0.0:
                out[valid] = sigma2 * e + 0.5
            else:
                # ln(e^ε − p_0): by expm1 near the floor, and as ε + log1p(−p_0 e^{−ε}) above
                # ε = 1, where expm1 would overflow past ε ≈ 709.8 (and pin x at +∞).
                small = e <= 1.0
                log_excess = np.empty_like(e)
                log_excess[small] = np.log(np.expm1(e[small]) + q)
                log_excess[~small] = e[~small] + np.log1p(-(1.0 - q) * np.exp(-e[~small]))
                out[valid] = sigma2 * (log_excess - np.log(q)) + 0.5
            return out
        # ln(e^ε − p_0) = ε + ln(1 − e^{ln p_0 − ε}): exact in the difference ε − ln p_0,
        # which keeps ε just above the floor (where g is flat) accurate; ε itself when p_0 = 0.
        with np.errstate(divide="ignore"):
            target = e + np.log(-np.expm1(self.loss_floor - e))
        present = np.flatnonzero(self.weights[1:] > 0.0) + 1
        shifts = self.shifts[present][:, None]
        log_weights = self.log_weights[present][:, None]
        # Each component alone is below M, so its own root lies right of the true root.
        x = np.min(sigma2 * (target[None, :] - log_weights) / shifts + shifts / 2.0, axis=0)
        active = np.arange(x.size)  # entries not yet converged
        for _ in range(200):
            x_active = x[active]
            exps = log_weights + (2.0 * shifts * x_active[None, :] - shifts * shifts) / (2.0 * sigma2)
            peak = exps.max(axis=0)
            scaled = np.exp(exps - peak)
            total = scaled.sum(axis=0)
            # (ln M)'(x) = E_w[j]/σ², w ∝ exp(exps): the mean shift under the posterior.
            slope = (shifts * scaled).sum(axis=0) / (total * sigma2)
            step = (peak + np.log(total) - target[active]) / slope
            x[active] = x_active - step
            converged = np.abs(step) <= 1e-14 * np.maximum(1.0, np.abs(x[active]))
            active = active[~converged]
            if active.size == 0:
                break
        out[valid] = x
        return out

    # --- tail masses of the loss under P and Q ------------------------------------------
    def _log_component_cdfs(self, x: np.ndarray):
        """log Φ̄((x − j)/σ) and log Φ((x − j)/σ) for every component j (rows).

        log_ndtr is evaluated once per point, for the smaller tail; the larger one is
        log1p(−e^{smaller}), accurate because the smaller tail is at most ½."""
        z = (x[None, :] - self.shifts[:, None]) / self.noise_multiplier
        with np.errstate(invalid="ignore"):
            smaller = log_ndtr(-np.abs(z))
            larger = np.log1p(-np.exp(smaller))
        positive = z > 0
        return np.where(positive, smaller, larger), np.where(positive, larger, smaller)

    def _log_mixture(self, log_parts: np.ndarray) -> np.ndarray:
        """log Σ_j p_j e^{log_parts[j]} over the components with non-zero weight."""
        terms = self.log_weights[:, None] + log_parts
        if terms.shape[0] == 2:
            return np.logaddexp(terms[0], terms[1])
        return _logsumexp_rows(terms)

    def log_tails(self, direction: str, grid: np.ndarray):
        """For each loss value e in ``grid``: log P(L > e), log P(L ≤ e), log Q(L > e), log Q(L ≤ e).

        remove: P = B, Q = A, L > e ⟺ x > g⁻¹(e).
        add:    P = A, Q = B, L > e ⟺ x < g⁻¹(−e).
        """
        check_direction(direction, DIRECTIONS)
        grid = float_array(grid, "grid", "loss values (numbers, not NaN)")
        # remove: x = g⁻¹(e); add: x = g⁻¹(−e), −inf where −e ≤ ln p_0 (L > e never happens)
        x = self.inverse_loss(grid if direction == REMOVE else -grid)
        upper, lower = self._log_component_cdfs(x)
        mixture_upper, mixture_lower = self._log_mixture(upper), self._log_mixture(lower)
        gauss_upper, gauss_lower = upper[0], lower[0]  # A = N(0, σ²) is component j = 0
        if direction == REMOVE:
            if self.dropped:  # the pruned atom's loss is +∞: always above e
                mixture_upper = np.logaddexp(mixture_upper, math.log(self.dropped))
            return mixture_upper, mixture_lower, gauss_upper, gauss_lower
        if self.dropped:  # add direction: its loss is −∞, always at or below e
            mixture_upper = np.logaddexp(mixture_upper, math.log(self.dropped))
        return gauss_lower, gauss_upper, mixture_lower, mixture_upper

    def log_bucket_masses(self, direction: str, edges: np.ndarray):
        """log P_k, log Q_k of the loss buckets (edges[k], edges[k+1]], and log P(L ≤ e_0),
        log P(L > e_last): each bucket's output interval between neighbouring roots, its
        normal masses without cancellation (gauss_intervals.py)."""
        from dpcalc.numerics.gauss_intervals import log_normal_masses

        check_direction(direction, DIRECTIONS)
        edges = float_array(edges, "edges", "loss values (numbers, not NaN)")
        if edges.ndim != 1 or edges.size < 1:
            raise DpcalcError("edges must be a non-empty list of loss values")
        if direction == REMOVE:  # L = g(x) > e ⟺ x > g⁻¹(e): bucket (x_k, x_{k+1}]
            roots = self.inverse_loss(edges)
            lower_ends, upper_ends = roots[:-1], roots[1:]
        else:  # L = −g(x) > e ⟺ x < g⁻¹(−e): bucket [x_{k+1}, x_k)
            roots = self.inverse_loss(-edges)
            lower_ends, upper_ends = roots[1:], roots[:-1]
        sigma = self.noise_multiplier
        parts = np.array([log_normal_masses(lower_ends, upper_ends, shift, sigma)
                          for shift in self.shifts])
        mixture, gaussian = self._log_mixture(parts), parts[0]
        tails = self.log_tails(direction, edges[[0, -1]])
        log_p, log_q = (mixture, gaussian) if direction == REMOVE else (gaussian, mixture)
        return log_p, log_q, float(tails[1][0]), float(tails[0][1])

    def loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        """Loss values at the ends of the output window [−Kσ, k + Kσ] (K = half_width),
        kept for the last few (direction, K) asked."""
        check_direction(direction, DIRECTIONS)
        half_width = check_range(half_width, "half_width", 0.0, 1e6, high_open=False)
        cache = self.__dict__.setdefault("_ranges", {})
        key = (direction, half_width)
        if key not in cache:
            if len(cache) > 8:
                cache.clear()
            cache[key] = self._loss_range(direction, half_width)
        return cache[key]

    def _loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        sigma = self.noise_multiplier
        ends = np.array([-half_width * sigma, self.max_shift + half_width * sigma])
        g_low, g_high = self.loss(ends)
        if direction == REMOVE:
            return float(g_low), float(g_high)
        return float(-g_high), float(-g_low)

    def loss_moments(self, direction: str) -> tuple[float, float]:
        """Mean and standard deviation of L under P (trapezoid rule; used to pick a grid),
        kept per direction (pb asks for them for every phase several times)."""
        check_direction(direction, DIRECTIONS)
        cache = self.__dict__.setdefault("_moments", {})
        if direction not in cache:
            cache[direction] = self._loss_moments(direction)
        return cache[direction]

    def _loss_moments(self, direction: str) -> tuple[float, float]:
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
