"""The remove direction's Rényi divergence of one balls-in-bins epoch at integer orders,
with its float error bounded.

Pair as in add_rdp.py: D_α(P‖Q) = ln E_Q[S^α]/(α − 1), S = (1/t)Σ_j L_j. For integer α ≥ 2,
expanding the multinomial, each term E_Q[Π_j L_j^{k_j}] is at most exp(Σ_j (k_j² − k_j)/(2σ²))
(conditional expectations from the last step back: given the past, E[L_j^k] = e^{k(k−1)c²/2}
with c = |g_j|/σ ≤ η, and k² − k ≥ 0, so |g_j| = 1 is the worst case; the mixture over the
other records' allocations as in add_rdp.py (2)), hence
    E_Q[S^α] ≤ t^{−α} e^{−α/(2σ²)} α! [z^α] (Σ_k e^{k²/(2σ²)} z^k/k!)^t,
with equality for fixed unit gradients (the sum of Feldman & Shenfeld 2025, Cor. 6.2,
derived here directly). The power series is raised to the t-th power by repeated squaring
in log space, every coefficient of a product a log-sum-exp of the factors' coefficients.

Float error (tracked per coefficient, added in the safe direction): a product's
coefficient n inherits the largest sum of its factors' errors over the terms it adds, plus
8 ulps of (the largest |term| + n): the rounding of each term's sum (one ulp of |term|), of
its distance to the largest term (≤ 2|term|), of exp, of the n + 1 additions and of the
logarithm (coefficient 0 is ln 1 = 0 + 0, exact: its error stays 0 through the powering, so
the errors grow with n and the number of products, not with t). The final ln E_Q[S^α]
adds 8 ulps of the magnitudes it combines (ln α! from math.lgamma, accurate to a few ulps,
α ln t, α/(2σ²) and the coefficient).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.numerics.special_functions import gammaln

_EPS = float(np.finfo(float).eps)


def _log_multiply(first, second):
    """(log-coefficients, error bounds) of the product of two truncated power series given
    as (log-coefficients, error bounds), truncated at the same degree."""
    (left, left_error), (right, right_error) = first, second
    degree = left.size - 1
    n = np.arange(degree + 1)
    index = n[:, None] - n[None, :]  # row n, column i: the factor pair (i, n − i)
    inside = index >= 0
    safe = np.where(inside, index, 0)
    with np.errstate(invalid="ignore"):
        terms = np.where(inside, left[None, :] + right[safe], -np.inf)
        errors = np.where(inside, left_error[None, :] + right_error[safe], 0.0)
    top = terms.max(axis=1)
    finite = np.isfinite(top)
    shift = np.where(finite, top, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = shift + np.log(np.exp(terms - shift[:, None]).sum(axis=1))
    out = np.where(finite, out, -np.inf)
    magnitude = np.where(np.isfinite(terms), np.abs(terms), 0.0).max(axis=1)
    error = errors.max(axis=1) + 8.0 * _EPS * (magnitude + n)
    return out, error


def _log_power(series, exponent: int):
    degree = series[0].size - 1
    result = (np.concatenate([[0.0], np.full(degree, -np.inf)]), np.zeros(degree + 1))
    base = series
    while exponent:
        if exponent & 1:
            result = _log_multiply(result, base)
        exponent >>= 1
        if exponent:
            base = _log_multiply(base, base)
    return result


def remove_rdp(orders, steps: int, noise_multiplier: float) -> np.ndarray:
    """Certified D_α(P‖Q) of one epoch at each integer order ≥ 2 (module doc)."""
    orders = np.asarray(orders, dtype=float)
    top = int(orders.max())
    k = np.arange(top + 1, dtype=float)
    inv = 1.0 / (2.0 * noise_multiplier**2)
    log_factorials = gammaln(k + 1.0)
    series = k * k * inv - log_factorials
    powered, error = _log_power((series, 8.0 * _EPS * (k * k * inv + log_factorials)), steps)
    a = orders.astype(int)
    parts = (gammaln(a + 1.0), a * math.log(steps), a * inv, powered[a])
    log_moment = parts[0] - parts[1] - parts[2] + parts[3]
    log_moment = log_moment + error[a] + 8.0 * _EPS * sum(np.abs(part) for part in parts)
    return np.maximum(log_moment, 0.0) / (orders - 1.0) * (1.0 + 4.0 * _EPS)
