"""The fractional-order RDP series of the Poisson-subsampled Gaussian [MTZ19 §3.3].

[MTZ19] Mironov, Talwar, Zhang 2019, "Rényi Differential Privacy of the Sampled
Gaussian Mechanism" (arXiv:1908.10530). Returns upper bounds on log(A_α − 1): the
series is summed with its signs, its alternating tail bounded above by an Euler
transform, and a few ulps of float error added in the safe direction.
"""
from __future__ import annotations

import math

import numpy as np
from dpcalc.numerics import special_functions as special

from dpcalc.accountants.rdp_conversion import ULPS as _ULPS

__all__ = ["log_a_minus_one_fractional", "logsumexp_rows"]

# Fractional-order series: stop once the last term is this many nats below the sum.
_SERIES_TOLERANCE_NATS = 30.0
# Series lengths tried, in turn, for orders that have not converged.
_SERIES_LENGTHS = (96, 512, 4096)
# Terms of the Euler transform that bounds the alternating tail of the series.
_EULER_TERMS = 48
# Largest 2-D block (orders x terms) evaluated at once, to bound memory.
_BLOCK_ELEMENTS = 1 << 18


def logsumexp_rows(values: np.ndarray) -> np.ndarray:
    """log Σ_j exp(values[:, j]) per row; rows of −inf give −inf."""
    peak = values.max(axis=1)
    shift = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return shift + np.log(np.exp(values - shift[:, None]).sum(axis=1))



def _log_normal_mass(upper: float, lower: float, width: float) -> float:
    """log(Φ(upper) − Φ(lower)) for upper > lower (exactly ``width`` apart), from the thinner
    tail. Where float cannot tell the two apart (huge arguments, tiny width) it returns the
    lower bound width·min φ on the interval: the caller subtracts this mass, so a smaller
    value only raises its upper bound."""
    if upper + lower > 0.0:  # both mostly in the right tail: Φ̄(lower) − Φ̄(upper)
        upper, lower = -lower, -upper
    log_upper = float(special.log_ndtr(upper))
    log_lower = float(special.log_ndtr(lower))
    if log_lower < log_upper:
        return log_upper + math.log(-math.expm1(log_lower - log_upper))
    farthest = max(abs(upper), abs(lower))  # φ is smallest at the end farther from 0
    return math.log(width) - 0.5 * farthest * farthest - 0.5 * math.log(2.0 * math.pi)



# --------------------------------------------------------------- fractional orders


def _log_binomial_remainder(q: float, alphas: np.ndarray) -> np.ndarray:
    """log((1−q)^α − 1 + αq), which is > 0 for α > 1 (convexity of t ↦ t^α)."""
    small = alphas * q < 0.5
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        direct = np.log(np.expm1(alphas * math.log1p(-q)) + alphas * q)
        if not small.any():
            return direct
        # Taylor series Σ_{k≥2} C(α,k)(−q)^k, normalised by its first term (αq < 1/2).
        term = np.ones_like(alphas)
        series = np.ones_like(alphas)
        for k in range(2, 62):
            term = term * (alphas - k) * (-q) / (k + 1)
            series = series + term
        via_series = np.log(alphas * (alphas - 1.0) / 2.0) + 2.0 * math.log(q) + np.log(series)
    return np.where(small, via_series, direct)


def _log_ndtr_slope(x):
    """Upper bound on d/dx log Φ(x) = φ(x)/Φ(x): 1 − x below 0, 2φ(x) above."""
    return np.where(x < 0.0, 1.0 - x, 0.8 * np.exp(-0.5 * np.minimum(x * x, 1e4)))


def _log_ndtr_with_scale(argument: float, spread: float) -> tuple[float, float]:
    """(log Φ(x), float-error scale): an error of ~eps·spread in x moves log Φ by at
    most eps·spread·slope, plus ulps of the value itself."""
    value = float(special.log_ndtr(argument))
    return value, abs(value) + spread * float(_log_ndtr_slope(argument))


def _fixed_terms(q: float, sigma: float, alphas: np.ndarray):
    """The i = 0, 1 terms of the (−∞, z0] series minus ∫ μ0·(1 + α(b − q)) on each side.

    Subtracting the zero-mean linear part (E_{μ0}[b] = q, b(z) = q·exp((2z − 1)/(2σ²)))
    makes the series sum A_α − 1 itself, so tiny RDP values keep their precision.
    Returns (log positive term, log negative terms (rows × 3), log error scales (rows × 4)).
    """
    log_q, log_1mq = math.log(q), math.log1p(-q)
    z0 = sigma**2 * (log_1mq - log_q) + 0.5
    spread = (abs(z0) + 1.0) / sigma
    log_alpha_q = np.log(alphas) + log_q
    # (−∞, z0]: a^α Φ(z0/σ) − (1 − αq) Φ(z0/σ) = Φ(z0/σ)·((1−q)^α − 1 + αq) ≥ 0
    log_mass, scale_0 = _log_ndtr_with_scale(z0 / sigma, spread)
    log_remainder = _log_binomial_remainder(q, alphas)
    positive = log_mass + log_remainder
    scale_0 = 16.0 + np.abs(log_remainder) + scale_0
    # (−∞, z0]: α a^{α−1} q Φ((z0−1)/σ) − α q Φ((z0−1)/σ) ≤ 0
    log_mass, scale_1 = _log_ndtr_with_scale((z0 - 1.0) / sigma, spread)
    with np.errstate(divide="ignore"):  # 1 − (1−q)^(α−1) rounds to 0 for subnormal q: −∞
        shrink = np.log(-np.expm1((alphas - 1.0) * log_1mq))
    negative_1 = log_alpha_q + log_mass + shrink
    scale_1 = 4.0 + np.abs(log_alpha_q) + np.where(np.isfinite(shrink), np.abs(shrink), 0.0) + scale_1
    # (z0, ∞): −(1 − αq) Φ̄(z0/σ) − α q Φ̄((z0−1)/σ) = −Φ̄(z0/σ) − α q [Φ(z0/σ) − Φ((z0−1)/σ)]
    log_mass, scale_2 = _log_ndtr_with_scale(-z0 / sigma, spread)
    negative_2 = np.full_like(alphas, log_mass)
    scale_2 = np.full_like(alphas, 2.0 + scale_2)
    log_mass = _log_normal_mass(z0 / sigma, (z0 - 1.0) / sigma, 1.0 / sigma)
    negative_3 = log_alpha_q + log_mass
    # slope of log(Φ(u) − Φ(l)) in its arguments ≤ |x| + 1 + 1/(u − l)
    scale_3 = 4.0 + np.abs(log_alpha_q) + abs(log_mass) + spread * (2.0 + abs(z0) / sigma + sigma)
    negatives = np.stack([negative_1, negative_2, negative_3], axis=1)
    scales = np.stack([scale_0, scale_1, scale_2, scale_3], axis=1)
    return positive, negatives, np.log(scales)


def _series_terms(q: float, sigma: float, alphas: np.ndarray, n_terms: int):
    """Terms i = 0..n_terms−1 of the two [MTZ19 §3.3] series, in log magnitude.

    A_α = ∫ μ0 (a + b)^α with a = 1 − q, b = q·exp((2z − 1)/(2σ²)); split at
    z0 = σ² ln(1/q − 1) + ½ where a = b and expand binomially on each side:
      (−∞, z0]: Σ_i C(α,i) a^{α−i} q^i exp((i² − i)/(2σ²)) Φ((z0 − i)/σ)
      (z0, ∞):  Σ_i C(α,i) q^{α−i} a^i exp((j² − j)/(2σ²)) Φ((j − z0)/σ),  j = α − i.
    Both terms of index i carry the sign of C(α,i). Returns (log|low|, log|high|,
    negative-sign mask, log float-error scales of both). The i = 0, 1
    terms of the low series are left out (they are in _fixed_terms).
    """
    log_q, log_1mq = math.log(q), math.log1p(-q)
    z0 = sigma**2 * (log_1mq - log_q) + 0.5
    alpha = alphas[:, None]
    i = np.arange(n_terms, dtype=float)[None, :]
    j = alpha - i

    log_gamma_alpha = special.gammaln(alpha + 1.0)
    log_gamma_i = special.gammaln(i + 1.0)
    log_gamma_j = special.gammaln(j + 1.0)  # log|Γ| for negative arguments
    log_binom = log_gamma_alpha - log_gamma_i - log_gamma_j
    floor_alpha = np.floor(alpha)
    # sign C(α,i) = (−1)^{i−⌊α⌋−1} for i > ⌊α⌋, + below
    negative = (i > floor_alpha + 1.0) & ((i - floor_alpha) % 2.0 == 0.0)

    low_arg = (z0 - i) / sigma
    low_exp = (i * i - i) / (2.0 * sigma**2)
    log_low = log_binom + (alpha - i) * log_1mq + i * log_q + low_exp + special.log_ndtr(low_arg)
    log_low[:, :2] = -np.inf
    high_arg = (j - z0) / sigma
    high_exp = (j * j - j) / (2.0 * sigma**2)
    log_high = log_binom + j * log_q + i * log_1mq + high_exp + special.log_ndtr(high_arg)

    # A few ulps of every magnitude that entered a log-term bound its float error.
    common = 1.0 + np.abs(log_gamma_alpha) + np.abs(log_gamma_i) + np.abs(log_gamma_j)
    low_scale = common + np.abs(alpha - i) * abs(log_1mq) + i * abs(log_q) + low_exp
    low_scale += (abs(z0) + i + 1.0) / sigma * _log_ndtr_slope(low_arg)
    high_scale = common + np.abs(j) * abs(log_q) + i * abs(log_1mq) + np.abs(high_exp)
    high_scale += (np.abs(j) + 1.0) * (alpha + i) / sigma**2
    high_scale += (abs(z0) + np.abs(j) + 1.0) / sigma * _log_ndtr_slope(high_arg)
    return log_low, log_high, negative, np.log(low_scale), np.log(high_scale)


def _euler_tail(log_window: np.ndarray, log_scale: np.ndarray):
    """Upper bound on the alternating tail Σ_{k≥0} (−1)^k m_k from m_0..m_J (log m given).

    For k > α, |C(α,k)| = (|sin πα|/π)·Γ(k−α)/Γ(k+1) ∝ ∫_0^1 t^{k−α−1}(1−t)^α dt
    (reflection formula, Beta integral), and each series' k-th integral is ∫ r^k dν
    with 0 < r < 1 on its side of z0. So the magnitudes form a Hausdorff moment
    sequence m_k = ∫_0^1 x^k dm(x), and Σ (−1)^k m_k = ∫ dm/(1+x) = Σ_j d_j/2^{j+1}
    with d_j = ∫ (1−x)^j dm = Σ_l C(j,l)(−1)^l m_l ≥ 0 (Euler transform); the
    remainder after J terms is ≤ d_J/2^J. Returns (log upper bound, log d_J/2^J).
    """
    head = log_window[:, 0]
    empty = np.isneginf(head)
    safe_head = np.where(empty, 0.0, head)
    with np.errstate(invalid="ignore", under="ignore"):
        differences = np.exp(log_window - safe_head[:, None])  # m_k / m_0 ≤ 1
    differences = np.where(empty[:, None], 0.0, differences)
    order = log_window.shape[1] - 1
    euler_sum = np.zeros(head.shape)
    for index in range(order):
        euler_sum += differences[:, 0] / 2.0 ** (index + 1)
        differences = differences[:, :-1] - differences[:, 1:]
    truncation = np.maximum(differences[:, 0], 0.0) / 2.0**order
    # Float error: each d_j/2^{j+1} is off by ≤ (j·eps + ε_m)/2 with ε_m the relative
    # error of the m_k (a few ulps of their magnitudes).
    eps = np.finfo(float).eps
    float_error = order**2 * eps + (order + 1) * _ULPS * np.exp(log_scale.max(axis=1))
    with np.errstate(divide="ignore"):
        log_bound = head + np.log(euler_sum + truncation + float_error)
        log_truncation = head + np.log(truncation)
    return np.where(empty, -np.inf, log_bound), np.where(empty, -np.inf, log_truncation)


def _series_bound(q: float, sigma: float, alphas: np.ndarray, n_terms: int):
    """Upper bound on log(A_α − 1): [MTZ19 §3.3] series with signs, Euler-bounded tail.

    Terms up to a tail start n (> ⌊α⌋, positive sign) are summed as they are, positive
    and negative parts separately in log space; the alternating tail from n is bounded
    above by _euler_tail from the next _EULER_TERMS + 1 terms.
    Returns (log bound, or NaN where cancellation left nothing usable; converged flags).
    """
    log_low, log_high, negative, log_low_scale, log_high_scale = _series_terms(
        q, sigma, alphas, n_terms
    )
    floor_alpha = np.floor(alphas)
    tail_start = n_terms - 1 - _EULER_TERMS
    tail_start = tail_start - ((tail_start - floor_alpha) % 2.0 == 0.0)  # make it positive
    tail_start = tail_start.astype(np.int64)
    columns = np.arange(n_terms)[None, :]
    head = columns < tail_start[:, None]

    window = tail_start[:, None] + np.arange(_EULER_TERMS + 1)[None, :]
    log_magnitude = np.logaddexp(log_low, log_high)
    with np.errstate(invalid="ignore"):  # scale of the sum: magnitude-weighted
        log_scale = np.logaddexp(log_low + log_low_scale, log_high + log_high_scale) - log_magnitude
    log_tail, log_truncation = _euler_tail(
        np.take_along_axis(log_magnitude, window, axis=1),
        np.take_along_axis(np.nan_to_num(log_scale, nan=0.0), window, axis=1),
    )

    fixed_positive, fixed_negatives, fixed_log_scales = _fixed_terms(q, sigma, alphas)
    terms = np.concatenate([np.where(head, log_low, -np.inf), np.where(head, log_high, -np.inf)], axis=1)
    signs_negative = np.concatenate([negative, negative], axis=1)
    log_positive = logsumexp_rows(
        np.column_stack([np.where(signs_negative, -np.inf, terms), fixed_positive, log_tail])
    )
    log_negative = np.logaddexp(
        logsumexp_rows(np.where(signs_negative, terms, -np.inf)),
        logsumexp_rows(fixed_negatives),
    )
    weighted = np.where(
        np.isneginf(terms), -np.inf, terms + np.concatenate([log_low_scale, log_high_scale], axis=1)
    )
    all_fixed = np.column_stack([fixed_positive, fixed_negatives])
    log_error = math.log(_ULPS) + np.logaddexp(
        logsumexp_rows(weighted), logsumexp_rows(all_fixed + fixed_log_scales)
    )

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = 1.0 - np.exp(log_negative - log_positive) + np.exp(log_error - log_positive)
        log_bound = np.where(ratio > 0.0, log_positive + np.log(ratio), np.nan)
    converged = np.isfinite(log_bound) & (log_truncation <= log_bound - _SERIES_TOLERANCE_NATS)
    return log_bound, converged


def log_a_minus_one_fractional(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """Upper bounds on log(A_α − 1) for fractional α (NaN where the series is unusable).

    Orders are tried with longer series (_SERIES_LENGTHS) until the tail's truncation
    term is 30 nats below the sum. An order that never gets there keeps its last
    bound, which is still an upper bound (see _series_bound).
    """
    result = np.full(alphas.size, np.nan)
    pending = np.arange(alphas.size)
    minimum_terms = 2 * int(math.ceil(alphas.max())) + _EULER_TERMS + 8
    for length in _SERIES_LENGTHS:
        n_terms = max(length, minimum_terms)
        rows_per_block = max(1, _BLOCK_ELEMENTS // n_terms)
        still_pending = []
        for start in range(0, pending.size, rows_per_block):
            block = pending[start:start + rows_per_block]
            bound, converged = _series_bound(q, sigma, alphas[block], n_terms)
            usable = np.isfinite(bound) | np.isnan(result[block])
            result[block] = np.where(usable, bound, result[block])
            still_pending.append(block[~converged])
        pending = np.concatenate(still_pending)
        if pending.size == 0:
            break
    return result

