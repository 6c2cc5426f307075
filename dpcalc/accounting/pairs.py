"""Dominating pairs for the replace-one neighbouring relation (one instance, "replace").

Both pairs below are symmetric (swapping P and Q mirrors the output), so one
composition gives both orders of a replace-one neighbour.

* :class:`ReplaceOnePair` — Poisson sampling at rate q, replace-one:
  P = (1 − q)N(0, σ²) + qN(1, σ²) against Q = (1 − q)N(0, σ²) + qN(−1, σ²).
  With Poisson sampling the rest of the batch is the same for both datasets, and the
  replaced record's clipped gradients a, b (|a|, |b| ≤ 1) enter with probability q,
  independently of the rest; the antipodal choice a = −b is the worst case. Under
  Poisson sampling a replacement is one insertion plus one deletion, and Schuchardt,
  Stoian, Kosmala, Günnemann 2024 ("Unified mechanism-specific amplification by
  subsampling and group privacy amplification", NeurIPS), Thm 3.8 with K₊ = K₋ = 1 gives
  this pair as the tight dominating pair; it is the pair of dp_accounting's REPLACE_ONE.

* :class:`SymmetrisedPair` — fixed-size batches of B out of N, replace-one. Given the
  other B − 1 batch records U and the record the replaced one displaces, one step is
  (1 − γ)N(c) + γN(a) against (1 − γ)N(c) + γN(b), γ = B/N, a, b, c clipped gradients.
  By the advanced joint convexity of Balle, Barthe, Gaboardi 2018 (Thm 2) and joint
  convexity, for ε ≥ 0 the hockey-stick divergence of every such configuration is at
  most γ·H_{e^ε′}(N(2)‖N(0)), which the configuration c = b = −a attains: the profile of
  the remove pair R = ((1 − γ)N(0) + γN(2), N(0)) (Zhu, Dong, Wang 2022, Prop. 30, for
  the base pair (N(2), N(0))). An adversary may use R in one step and its reverse in the
  next (Lebeda, Regehr, Kamath, Steinke 2024), and the relation is symmetric, so the
  tight dominating pair is the symmetrisation of R (Dong, Roth, Su 2022, Thm 4.2:
  C_γ(f) = min{f_γ, f_γ⁻¹}**): its privacy loss equals R's where R's is positive,
  mirrored below zero with the two distributions swapped, and an atom at 0 holds the
  rest. In closed form, with L_R the loss of R and t = |e|:
      e ≥ 0:  P(L > e) = P_R(L_R > e),     Q(L > e) = Q_R(L_R > e);
      e < 0:  P(L ≤ e) = Q_R(L_R > t),     Q(L ≤ e) = P_R(L_R > t).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from dpcalc.accounting.mixture import REMOVE, GaussianMixturePair
from dpcalc.errors import DpcalcError

REPLACE = "replace"


def _check_pair_inputs(sampling_rate: float, noise_multiplier: float) -> tuple[float, float]:
    try:
        rate, sigma = float(sampling_rate), float(noise_multiplier)
    except (TypeError, ValueError):
        raise DpcalcError("a pair needs a numeric sampling rate and noise multiplier") from None
    if not 0.0 < rate <= 1.0:
        raise DpcalcError(f"sampling rate must be in (0, 1]; got {sampling_rate!r}")
    if not (math.isfinite(sigma) and sigma > 0.0):
        raise DpcalcError(f"noise multiplier must be a finite number > 0; got {noise_multiplier!r}")
    return rate, sigma


def _log_tails_of_shift(x: np.ndarray, shift: float, sigma: float):
    """(log Φ̄((x − s)/σ), log Φ((x − s)/σ)), each from the smaller tail (as mixture.py)."""
    z = (x - shift) / sigma
    with np.errstate(invalid="ignore"):
        smaller = log_ndtr(-np.abs(z))
        larger = np.log1p(-np.exp(smaller))
    positive = z > 0
    return np.where(positive, smaller, larger), np.where(positive, larger, smaller)


class ReplaceOnePair:
    """P = (1 − q)N(0, σ²) + qN(1, σ²) vs Q = (1 − q)N(0, σ²) + qN(−1, σ²).

    With u = x/σ², α = 1 − q and β = q·e^{−1/(2σ²)} the privacy loss is
    L(u) = ln(α + βe^u) − ln(α + βe^{−u}): odd and increasing. Its inverse solves
    βt² − α(e^L − 1)t − βe^L = 0 for t = e^u, taken in a form without cancellation.
    """

    directions = (REPLACE,)

    def __init__(self, sampling_rate: float, noise_multiplier: float):
        self.sampling_rate, self.noise_multiplier = _check_pair_inputs(sampling_rate,
                                                                       noise_multiplier)
        sigma2 = self.noise_multiplier**2
        self._log_alpha = math.log1p(-self.sampling_rate) if self.sampling_rate < 1 else -math.inf
        self._log_beta = math.log(self.sampling_rate) - 0.5 / sigma2

    def loss(self, x) -> np.ndarray:
        u = np.atleast_1d(np.asarray(x, dtype=float)) / self.noise_multiplier**2
        return (np.logaddexp(self._log_alpha, self._log_beta + u)
                - np.logaddexp(self._log_alpha, self._log_beta - u))

    def inverse_loss(self, loss_values) -> np.ndarray:
        """x with L(x) = e, exactly up to rounding (closed form)."""
        e = np.atleast_1d(np.asarray(loss_values, dtype=float))
        t = np.abs(e)
        kept = -np.expm1(-t)  # 1 − e^{−t} in [0, 1)
        with np.errstate(divide="ignore"):
            log_alpha_kept = self._log_alpha + np.log(kept)
        # ln(e^u) = t + ln(α(1 − e^{−t}) + sqrt(α²(1 − e^{−t})² + 4β²e^{−t})) − ln 2β, in logs
        log_root = 0.5 * np.logaddexp(2.0 * log_alpha_kept, math.log(4.0) + 2.0 * self._log_beta - t)
        log_t = t + np.logaddexp(log_alpha_kept, log_root) - math.log(2.0) - self._log_beta
        return np.sign(e) * log_t * self.noise_multiplier**2

    def log_tails(self, direction: str, grid) -> tuple:
        """log P(L > e), log P(L ≤ e), log Q(L > e), log Q(L ≤ e) for each e in ``grid``."""
        if direction != REPLACE:
            raise ValueError(f"direction must be {REPLACE!r}")
        x = self.inverse_loss(grid)
        sigma = self.noise_multiplier
        log_rate = math.log(self.sampling_rate)
        zero_above, zero_below = _log_tails_of_shift(x, 0.0, sigma)
        tails = []
        for shift in (1.0, -1.0):  # P: the record's gradient at +1; Q: at −1
            above, below = _log_tails_of_shift(x, shift, sigma)
            tails.append(np.logaddexp(self._log_alpha + zero_above, log_rate + above))
            tails.append(np.logaddexp(self._log_alpha + zero_below, log_rate + below))
        return tuple(tails)

    def loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        top = float(self.loss(1.0 + half_width * self.noise_multiplier)[0])
        return -top, top

    def loss_moments(self, direction: str) -> tuple[float, float]:
        sigma = self.noise_multiplier
        x = np.linspace(-1.0 - 12.0 * sigma, 1.0 + 12.0 * sigma, 801)
        density = ((1.0 - self.sampling_rate) * np.exp(-0.5 * (x / sigma) ** 2)
                   + self.sampling_rate * np.exp(-0.5 * ((x - 1.0) / sigma) ** 2))
        weights = density / density.sum()
        losses = self.loss(x)
        mean = float(np.sum(weights * losses))
        return mean, float(math.sqrt(max(float(np.sum(weights * (losses - mean) ** 2)), 0.0)))


class SymmetrisedPair:
    """The symmetrisation of a remove-direction pair R = (P_R, Q_R) (module doc)."""

    directions = (REPLACE,)

    def __init__(self, base: GaussianMixturePair):
        self.base = base
        self.noise_multiplier = base.noise_multiplier

    def log_tails(self, direction: str, grid) -> tuple:
        if direction != REPLACE:
            raise ValueError(f"direction must be {REPLACE!r}")
        grid = np.atleast_1d(np.asarray(grid, dtype=float))
        p_above, p_below, q_above, q_below = self.base.log_tails(REMOVE, np.abs(grid))
        negative = grid < 0
        # e < 0: P(L > e) = Q_R(L_R ≤ t), P(L ≤ e) = Q_R(L_R > t); Q's with P_R and Q_R swapped.
        return (np.where(negative, q_below, p_above), np.where(negative, q_above, p_below),
                np.where(negative, p_below, q_above), np.where(negative, p_above, q_below))

    def loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        _, top = self.base.loss_range(REMOVE, half_width)
        return -top, top

    def loss_moments(self, direction: str) -> tuple[float, float]:
        """Mean and standard deviation of the symmetrised loss under P (trapezoid rule)."""
        sigma = self.noise_multiplier
        x = np.linspace(-12.0 * sigma, self.base.max_shift + 12.0 * sigma, 1601)
        log_q = -0.5 * (x / sigma) ** 2
        loss = self.base.loss(x)
        positive = loss > 0
        p_density = np.exp(log_q + loss) * positive   # P_R on L_R > 0: loss +L_R
        q_density = np.exp(log_q) * positive          # Q_R on L_R > 0: loss −L_R (mirror)
        total = np.exp(log_q).sum()
        atom = max(0.0, 1.0 - (p_density.sum() + q_density.sum()) / total)
        mean = float((np.sum(p_density * loss) - np.sum(q_density * loss)) / total)
        second = float((np.sum(p_density * loss**2) + np.sum(q_density * loss**2)) / total)
        variance = max(second - mean**2, 0.0) if atom < 1.0 else 0.0
        return mean, math.sqrt(variance)
