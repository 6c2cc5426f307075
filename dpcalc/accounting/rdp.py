"""Rényi DP of the Poisson-subsampled Gaussian, RDP → (ε, δ) conversions, and the
RDP-based accountants: ``rdp`` (current), ``moments`` (Abadi et al. 2016) and
``abadi`` (the closed form of Abadi et al. 2016, Lemma 3; an approximation).

References
- [MTZ19] Mironov, Talwar, Zhang 2019, "Rényi Differential Privacy of the Sampled
  Gaussian Mechanism" (arXiv:1908.10530), §3.2 (integer α) and §3.3 (fractional α).
- [M17] Mironov 2017, "Rényi Differential Privacy", Prop. 1 (composition), Prop. 3.
- [ACG16] Abadi et al. 2016, "Deep Learning with Differential Privacy", §3.2,
  Thm. 2 (tail bound), Lemma 3 (closed form).
- [CKS20] Canonne, Kamath, Steinke 2020, Prop. 12; [BBGHS20] Balle et al. 2020, Thm. 21.
- [vEH14] van Erven, Harremoës 2014, "Rényi Divergence and Kullback-Leibler Divergence".

Every function below returns an upper bound on the quantity it names: series tails
are bounded from above, never dropped, and a float-error allowance of a few ulps is
added in the safe direction.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpcalc.accounting.base import Accountant
from dpcalc.accounting.result import EpsilonResult
from dpcalc.accounting.schedule import Schedule
from dpcalc.errors import DpcalcError
from dpcalc.params import check_delta, check_nonnegative

__all__ = [
    "DEFAULT_ORDERS",
    "rdp_subsampled_gaussian",
    "rdp_to_epsilon_classic",
    "rdp_to_epsilon_improved",
    "rdp_to_delta_classic",
    "rdp_to_delta_improved",
    "RdpAccountant",
    "MomentsAccountant",
    "AbadiBoundAccountant",
]


def _default_orders() -> np.ndarray:
    fine = (10.0 + np.arange(1, 100)) / 10.0  # 1.1, 1.2, ..., 10.9 (nearest floats)
    whole = np.arange(11, 65, dtype=float)
    large = np.array([80, 96, 128, 192, 256, 384, 512, 768, 1024], dtype=float)
    orders = np.unique(np.concatenate([fine, whole, large]))
    orders.flags.writeable = False
    return orders


DEFAULT_ORDERS: np.ndarray = _default_orders()

_MAX_ORDER = 10_000.0
# Relative float-error allowance per unit of magnitude of the quantities summed
# (a few ulps); added in the safe direction everywhere.
_ULPS = 8.0 * np.finfo(float).eps
# Fractional-order series: stop once the last term is this many nats below the sum.
_SERIES_TOLERANCE_NATS = 30.0
# Series lengths tried, in turn, for orders that have not converged.
_SERIES_LENGTHS = (96, 512, 4096)
# Terms of the Euler transform that bounds the alternating tail of the series.
_EULER_TERMS = 48
# Largest 2-D block (orders x terms) evaluated at once, to bound memory.
_BLOCK_ELEMENTS = 1 << 18
_EDGE_NOTE = "optimal order α={order} is at the edge of the order grid; the bound may be loose"


# --------------------------------------------------------------------------- inputs


def _check_sampling_rate(value: float) -> float:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise DpcalcError(f"sampling_rate must be a number in [0, 1]; got {value!r}") from None
    if not 0.0 <= rate <= 1.0:
        raise DpcalcError(f"sampling_rate must be in [0, 1]; got {value!r}")
    return rate


def _check_noise_multiplier(value: float) -> float:
    try:
        sigma = float(value)
    except (TypeError, ValueError):
        raise DpcalcError(f"noise_multiplier must be a number >= 0; got {value!r}") from None
    if not (0.0 <= sigma < math.inf):
        raise DpcalcError(f"noise_multiplier must be a finite number >= 0; got {value!r}")
    return sigma


def _as_orders(orders) -> np.ndarray:
    """Orders as a 1-D float array, each finite and in (1, 10000]."""
    try:
        values = np.asarray(orders, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise DpcalcError(f"orders must be numbers in (1, {_MAX_ORDER:g}]; got {orders!r}") from None
    if values.size == 0:
        raise DpcalcError("orders must contain at least one order in (1, 10000]")
    bad = ~np.isfinite(values) | (values <= 1.0) | (values > _MAX_ORDER)
    if bad.any():
        raise DpcalcError(
            f"orders must be finite numbers in (1, {_MAX_ORDER:g}]; got {float(values[bad][0])!r}"
        )
    return values


def _as_curve(orders, rdp_total) -> tuple[np.ndarray, np.ndarray]:
    """(orders, RDP values) as matching float arrays; RDP values in [0, inf]."""
    alphas = _as_orders(orders)
    try:
        rho = np.asarray(rdp_total, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise DpcalcError(f"rdp_total must be numbers >= 0; got {rdp_total!r}") from None
    if rho.shape != alphas.shape:
        raise DpcalcError(
            f"rdp_total must have one value per order ({alphas.size}); got {rho.size}"
        )
    if np.isnan(rho).any() or (rho < 0).any():
        raise DpcalcError("rdp_total must be numbers >= 0 (inf allowed); got a NaN or negative value")
    return alphas, rho


# ------------------------------------------------------------------ log-space tools


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x − 1) for x > 0 without overflow."""
    small = np.log(np.expm1(np.minimum(x, 50.0)))
    large = x + np.log1p(-np.exp(-np.maximum(x, 50.0)))
    return np.where(x > 50.0, large, small)


def _logsumexp_rows(values: np.ndarray) -> np.ndarray:
    """log Σ_j exp(values[:, j]) per row; rows of −inf give −inf."""
    peak = values.max(axis=1)
    shift = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return shift + np.log(np.exp(values - shift[:, None]).sum(axis=1))


def _logsumexp_segments(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """log Σ exp(values) over consecutive segments (all values finite)."""
    peak = np.maximum.reduceat(values, starts)
    total = np.add.reduceat(np.exp(values - np.repeat(peak, counts)), starts)
    return peak + np.log(total)


def _log_normal_mass(upper: float, lower: float) -> float:
    """log(Φ(upper) − Φ(lower)) for upper > lower, from the thinner tail."""
    if upper + lower > 0.0:  # both mostly in the right tail: Φ̄(lower) − Φ̄(upper)
        upper, lower = -lower, -upper
    log_upper = float(special.log_ndtr(upper))
    log_lower = float(special.log_ndtr(lower))
    return log_upper + math.log(-math.expm1(log_lower - log_upper))


# ------------------------------------------------------------------ integer orders


def _log_a_minus_one_integer(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log(A_α − 1), rounded up, for integer orders α ≥ 2 and 0 < q < 1.

    [MTZ19 §3.2]: A_α = Σ_{i=0}^{α} C(α,i) (1−q)^{α−i} q^i exp((i² − i)/(2σ²)).
    The same sum without the exponential is 1 (binomial theorem), so
    A_α − 1 = Σ_{i=2}^{α} C(α,i) (1−q)^{α−i} q^i expm1((i² − i)/(2σ²)): every term is
    positive, and tiny RDP values keep full relative precision.
    """
    whole = alphas.astype(np.int64)
    counts = whole - 1  # i = 2..α
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    alpha = np.repeat(whole, counts).astype(float)
    i = (np.arange(counts.sum()) - np.repeat(starts, counts) + 2).astype(float)

    log_gamma_alpha = special.gammaln(alpha + 1.0)
    log_gamma_i = special.gammaln(i + 1.0)
    log_gamma_rest = special.gammaln(alpha - i + 1.0)
    power_1mq = (alpha - i) * math.log1p(-q)
    power_q = i * math.log(q)
    exponent = (i * i - i) / (2.0 * sigma**2)
    log_terms = log_gamma_alpha - log_gamma_i - log_gamma_rest + power_1mq + power_q
    log_terms += _log_expm1(exponent)

    # Float error of each log-term is a few ulps of the magnitudes that built it.
    magnitude = 1.0 + log_gamma_alpha + log_gamma_i + log_gamma_rest - power_1mq - power_q
    magnitude += 2.0 * exponent
    log_sum = _logsumexp_segments(log_terms, starts, counts)
    log_error = _logsumexp_segments(log_terms + np.log(magnitude), starts, counts)
    return np.logaddexp(log_sum, log_error + math.log(_ULPS))


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
    shrink = np.log(-np.expm1((alphas - 1.0) * log_1mq))
    negative_1 = log_alpha_q + log_mass + shrink
    scale_1 = 4.0 + np.abs(log_alpha_q) + np.abs(shrink) + scale_1
    # (z0, ∞): −(1 − αq) Φ̄(z0/σ) − α q Φ̄((z0−1)/σ) = −Φ̄(z0/σ) − α q [Φ(z0/σ) − Φ((z0−1)/σ)]
    log_mass, scale_2 = _log_ndtr_with_scale(-z0 / sigma, spread)
    negative_2 = np.full_like(alphas, log_mass)
    scale_2 = np.full_like(alphas, 2.0 + scale_2)
    log_mass = _log_normal_mass(z0 / sigma, (z0 - 1.0) / sigma)
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
    log_positive = _logsumexp_rows(
        np.column_stack([np.where(signs_negative, -np.inf, terms), fixed_positive, log_tail])
    )
    log_negative = np.logaddexp(
        _logsumexp_rows(np.where(signs_negative, terms, -np.inf)),
        _logsumexp_rows(fixed_negatives),
    )
    weighted = np.where(
        np.isneginf(terms), -np.inf, terms + np.concatenate([log_low_scale, log_high_scale], axis=1)
    )
    all_fixed = np.column_stack([fixed_positive, fixed_negatives])
    log_error = math.log(_ULPS) + np.logaddexp(
        _logsumexp_rows(weighted), _logsumexp_rows(all_fixed + fixed_log_scales)
    )

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = 1.0 - np.exp(log_negative - log_positive) + np.exp(log_error - log_positive)
        log_bound = np.where(ratio > 0.0, log_positive + np.log(ratio), np.nan)
    converged = np.isfinite(log_bound) & (log_truncation <= log_bound - _SERIES_TOLERANCE_NATS)
    return log_bound, converged


def _log_a_minus_one_fractional(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
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


# ------------------------------------------------------------------------ A_α, ρ(α)


def _log_a(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """Upper bounds on ln A_α = (α − 1)·ρ(α) for 0 < q < 1, σ > 0."""
    is_whole = alphas == np.round(alphas)
    fractional = alphas[~is_whole]
    # Integer orders needed: the grid's own, and the neighbours of fractional orders
    # (for the convexity fallback below).
    neighbours = np.concatenate([np.floor(fractional), np.floor(fractional) + 1.0])
    needed = np.unique(np.concatenate([alphas[is_whole], neighbours[neighbours >= 2.0]]))
    log_a_whole = {1.0: 0.0}  # A_1 = 1
    if needed.size:
        log_a_needed = np.logaddexp(0.0, _log_a_minus_one_integer(q, sigma, needed))
        log_a_whole.update(zip(needed.tolist(), log_a_needed.tolist()))

    log_a = np.empty_like(alphas)
    log_a[is_whole] = [log_a_whole[value] for value in alphas[is_whole].tolist()]
    if fractional.size:
        # ln A_α = ln E_{μ0}[(μ/μ0)^α] is convex in α (Hölder's inequality; [vEH14]), so the
        # chord between the neighbouring integer orders is an upper bound. It backs up
        # the series wherever that is unusable (and is never tighter where it works).
        lower = np.floor(fractional)
        chord = (lower + 1.0 - fractional) * np.array([log_a_whole[v] for v in lower.tolist()])
        chord += (fractional - lower) * np.array([log_a_whole[v] for v in (lower + 1.0).tolist()])
        series = np.logaddexp(0.0, _log_a_minus_one_fractional(q, sigma, fractional))
        log_a[~is_whole] = np.fmin(series, chord)
    return log_a


def rdp_subsampled_gaussian(sampling_rate: float, noise_multiplier: float, orders) -> np.ndarray:
    """RDP ρ(α) of one step of the Poisson-subsampled Gaussian mechanism [MTZ19].

    Sensitivity 1, noise N(0, σ²) with σ = ``noise_multiplier``, each record sampled
    with probability ``sampling_rate``. ρ(α) = ln A_α / (α − 1) with
    A_α = E_{z~N(0,σ²)}[((1 − q) + q·exp((2z − 1)/(2σ²)))^α], the worst (remove)
    direction [MTZ19 §3]. Integer α: exact binomial sum; fractional α: the signed
    two-sided series of [MTZ19 §3.3], truncated on the safe side and capped by the
    convexity chord between neighbouring integer orders, and by the q = 1 value
    α/(2σ²). Every value is an upper bound; T steps compose to T·ρ [M17 Prop. 1].
    """
    q = _check_sampling_rate(sampling_rate)
    sigma = _check_noise_multiplier(noise_multiplier)
    alphas = _as_orders(orders)
    if q == 0.0:
        return np.zeros_like(alphas)
    if sigma == 0.0:
        return np.full_like(alphas, math.inf)
    gaussian = alphas / (2.0 * sigma**2)  # q = 1: the Gaussian mechanism, α/(2σ²) [M17]
    if q == 1.0:
        return gaussian
    # A_α(q) = E_{μ0}[(1 − q + q·μ1/μ0)^α] is convex in q with its minimum 1 at q = 0,
    # so ρ never exceeds its q = 1 value; the cap only trims float-error allowance.
    return np.minimum(_log_a(q, sigma, alphas) / (alphas - 1.0), gaussian)


# ---------------------------------------------------------------------- conversions


def rdp_to_epsilon_classic(orders, rdp_total, delta: float) -> tuple[float, float]:
    """(ε, optimal order) with ε = min_α [ρ_T(α) + ln(1/δ)/(α − 1)] [M17 Prop. 3; ACG16]."""
    alphas, rho = _as_curve(orders, rdp_total)
    delta = check_delta(delta)
    slack = -math.log(delta) / (alphas - 1.0)
    candidates = rho + slack
    candidates = candidates + _ULPS * (rho + slack)
    best = int(np.argmin(candidates))
    return float(candidates[best]), float(alphas[best])


def rdp_to_epsilon_improved(orders, rdp_total, delta: float) -> tuple[float, float]:
    """(ε, optimal order): ε = min_α [ρ_T(α) + ln(1 − 1/α) − (ln δ + ln α)/(α − 1)], ≥ 0.

    [CKS20 Prop. 12; BBGHS20 Thm. 21]. Also ε = 0 where δ ≥ sqrt(1 − e^{−ρ_T(α)}):
    TV ≤ sqrt(1 − e^{−KL}) (Bretagnolle–Huber) and KL ≤ D_α (monotone in α, [vEH14]).
    """
    alphas, rho = _as_curve(orders, rdp_total)
    delta = check_delta(delta)
    shrink = np.log1p(-1.0 / alphas)
    slack = (math.log(delta) + np.log(alphas)) / (alphas - 1.0)
    candidates = rho + shrink - slack
    candidates = candidates + _ULPS * (rho + np.abs(shrink) + np.abs(slack))
    total_variation_ok = delta**2 >= -np.expm1(-rho)
    candidates = np.where(total_variation_ok, 0.0, candidates)
    best = int(np.argmin(candidates))
    return max(0.0, float(candidates[best])), float(alphas[best])


def rdp_to_delta_classic(orders, rdp_total, epsilon: float) -> tuple[float, float]:
    """(δ, optimal order): δ = min_α exp((α − 1)(ρ_T(α) − ε)) [M17 Prop. 3], ≤ 1.

    With ρ_T(α) = α_M(λ)/λ at α = λ + 1 this is δ = min_λ exp(α_M(λ) − λε) [ACG16 Thm. 2].
    """
    alphas, rho = _as_curve(orders, rdp_total)
    epsilon = check_nonnegative(epsilon, "--epsilon")
    with np.errstate(invalid="ignore"):
        log_deltas = (alphas - 1.0) * (rho - epsilon)
        log_deltas = log_deltas + _ULPS * (alphas - 1.0) * (rho + epsilon)
    best = int(np.argmin(log_deltas))
    return min(1.0, math.exp(min(0.0, float(log_deltas[best])))), float(alphas[best])


def rdp_to_delta_improved(orders, rdp_total, epsilon: float) -> tuple[float, float]:
    """(δ, optimal order), the inverse of :func:`rdp_to_epsilon_improved`, ≤ 1.

    δ = min_α exp((α − 1)(ρ_T(α) − ε + ln(1 − 1/α)) − ln α) [CKS20 Prop. 12], and
    δ ≤ sqrt(1 − e^{−ρ_T(α)}) (Bretagnolle–Huber, as in the forward conversion).
    """
    alphas, rho = _as_curve(orders, rdp_total)
    epsilon = check_nonnegative(epsilon, "--epsilon")
    shrink = np.log1p(-1.0 / alphas)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_deltas = (alphas - 1.0) * (rho - epsilon + shrink) - np.log(alphas)
        log_deltas = log_deltas + _ULPS * (
            (alphas - 1.0) * (rho + epsilon + np.abs(shrink)) + np.log(alphas)
        )
        log_total_variation = 0.5 * np.log(-np.expm1(-rho)) + _ULPS
    log_deltas = np.fmin(log_deltas, log_total_variation)
    best = int(np.argmin(log_deltas))
    return min(1.0, math.exp(min(0.0, float(log_deltas[best])))), float(alphas[best])


# ---------------------------------------------------------------------- accountants


def _rdp_total(schedule: Schedule, orders: np.ndarray) -> np.ndarray:
    """Σ over phases of steps·ρ(α): RDP composes additively [M17 Prop. 1]."""
    total = np.zeros_like(orders)
    for phase in schedule.phases:
        total += phase.steps * rdp_subsampled_gaussian(
            phase.sampling_rate, phase.noise_multiplier, orders
        )
    return total


def _edge_notes(orders: np.ndarray, order: float, epsilon: float, label: str = "") -> tuple[str, ...]:
    """A warning when the optimum sits at the smallest or largest order of the grid."""
    if not (0.0 < epsilon < math.inf) or order not in (orders[0], orders[-1]):
        return ()
    return (_EDGE_NOTE.format(order=f"{order:g}{label}"),)


class RdpAccountant(Accountant):
    """RDP of the subsampled Gaussian [MTZ19] with the improved conversion [CKS20]."""

    name = "rdp"
    certified = True
    summary = "Rényi DP of the subsampled Gaussian (Mironov et al. 2019), improved RDP→DP conversion"

    def __init__(self, orders=None) -> None:
        chosen = DEFAULT_ORDERS if orders is None else np.unique(_as_orders(orders))
        self.orders = np.array(chosen, dtype=float)

    def epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        delta = check_delta(delta)
        total = _rdp_total(schedule, self.orders)
        epsilon, order = rdp_to_epsilon_improved(self.orders, total, delta)
        return EpsilonResult(
            accountant=self.name,
            epsilon=epsilon,
            certified=True,
            order=order,
            notes=_edge_notes(self.orders, order, epsilon),
            details={"conversion": "improved"},
        )

    def delta(self, schedule: Schedule, epsilon: float) -> float:
        total = _rdp_total(schedule, self.orders)
        return rdp_to_delta_improved(self.orders, total, epsilon)[0]


_MOMENT_ORDERS = np.arange(2.0, 34.0)  # α = λ + 1 for λ = 1..32 [ACG16 §3.2]


class MomentsAccountant(Accountant):
    """Abadi et al. 2016's moments accountant: λ = 1..32, exact moments, Thm. 2 tail bound."""

    name = "moments"
    certified = True
    summary = "Abadi et al. 2016 moments accountant (integer moments λ ≤ 32, classic tail bound)"

    def epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        delta = check_delta(delta)
        # α_M(λ) = T·ln A_{λ+1} = λ·T·ρ(λ + 1): the log-moment is RDP at order λ + 1.
        total = _rdp_total(schedule, _MOMENT_ORDERS)
        epsilon, order = rdp_to_epsilon_classic(_MOMENT_ORDERS, total, delta)
        moment = int(order) - 1
        return EpsilonResult(
            accountant=self.name,
            epsilon=epsilon,
            certified=True,
            order=order,
            notes=_edge_notes(_MOMENT_ORDERS, order, epsilon, label=f" (λ={moment})"),
            details={"conversion": "classic", "lambda": moment},
        )

    def delta(self, schedule: Schedule, epsilon: float) -> float:
        total = _rdp_total(schedule, _MOMENT_ORDERS)
        return rdp_to_delta_classic(_MOMENT_ORDERS, total, epsilon)[0]


_ABADI_APPROXIMATION_NOTE = (
    "approximation: Abadi et al. 2016 Lemma 3 closed form with its O(q³λ³/σ³) term "
    "dropped; not a certified bound"
)


class AbadiBoundAccountant(Accountant):
    """Abadi et al. 2016 Lemma 3: α(λ) ≈ T q² λ(λ+1) / ((1 − q) σ²); an approximation."""

    name = "abadi"
    certified = False
    summary = "Abadi et al. 2016 Lemma 3 closed-form moments bound (approximation, σ ≥ 1, q < 1/(16σ))"

    @staticmethod
    def _violation(schedule: Schedule) -> str | None:
        """Why Lemma 3 does not apply to some phase, or None when it applies to all."""
        for index, phase in enumerate(schedule.phases, start=1):
            q, sigma = phase.sampling_rate, phase.noise_multiplier
            if not (sigma >= 1.0 and q < 1.0 / (16.0 * sigma)):
                where = f"phase {index}: " if len(schedule.phases) > 1 else ""
                return (
                    "not applicable: Abadi et al. Lemma 3 requires σ ≥ 1 and q < 1/(16σ) "
                    f"({where}σ={sigma:g}, q={q:g})"
                )
        return None

    @staticmethod
    def _moment_curve(schedule: Schedule) -> tuple[float, int]:
        """(c, Λ): summed over phases α(λ) = c·λ(λ + 1), valid for 1 ≤ λ ≤ Λ (every phase)."""
        coefficient = sum(
            phase.steps * phase.sampling_rate**2
            / ((1.0 - phase.sampling_rate) * phase.noise_multiplier**2)
            for phase in schedule.phases
        )
        largest = min(  # λ ≤ σ² ln(1/(qσ)) for each phase
            math.floor(phase.noise_multiplier**2
                       * math.log(1.0 / (phase.sampling_rate * phase.noise_multiplier)))
            for phase in schedule.phases
        )
        return coefficient, largest

    @staticmethod
    def _best_moment(center: float, largest: int) -> list[int]:
        """Integers next to the minimiser of a convex function of λ, within 1..Λ."""
        if not math.isfinite(center):
            return [largest]
        below = min(max(math.floor(center), 1), largest)
        return sorted({below, min(below + 1, largest)})

    def epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        delta = check_delta(delta)
        violation = self._violation(schedule)
        if violation is not None:
            return EpsilonResult(accountant=self.name, epsilon=None, certified=False, notes=(violation,))
        coefficient, largest = self._moment_curve(schedule)
        log_inverse_delta = -math.log(delta)
        # ε(λ) = (α(λ) + ln(1/δ))/λ = c(λ + 1) + ln(1/δ)/λ [ACG16 Thm. 2], minimal near sqrt(ln(1/δ)/c)
        center = math.sqrt(log_inverse_delta / coefficient) if coefficient > 0 else math.inf
        epsilon, moment = min(
            (coefficient * (lam + 1) + log_inverse_delta / lam, lam)
            for lam in self._best_moment(center, largest)
        )
        return EpsilonResult(
            accountant=self.name,
            epsilon=epsilon,
            certified=False,
            order=float(moment + 1),
            notes=(_ABADI_APPROXIMATION_NOTE,),
            details={"lambda": moment, "lambda_max": largest},
        )

    def delta(self, schedule: Schedule, epsilon: float) -> float | None:
        epsilon = check_nonnegative(epsilon, "--epsilon")
        if self._violation(schedule) is not None:
            return None
        coefficient, largest = self._moment_curve(schedule)
        # δ = min_λ exp(c λ(λ+1) − λ ε) [ACG16 Thm. 2], minimal near (ε − c)/(2c)
        center = (epsilon - coefficient) / (2.0 * coefficient) if coefficient > 0 else math.inf
        log_delta = min(
            coefficient * lam * (lam + 1) - lam * epsilon
            for lam in self._best_moment(center, largest)
        )
        return min(1.0, math.exp(min(0.0, log_delta)))
