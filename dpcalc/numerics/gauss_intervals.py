"""Normal masses of short intervals without cancellation, and the erfcx differences they
rest on.

A one-step PLD's bucket holds the output interval between two neighbouring roots of the
loss. Taken as a difference of two normal tails, its mass loses ~u·(tail/mass) relative:
1e-12 at h = 1e-4 and 1e-7 at h = 1e-9, far above the few hundred u per entry that the
FFT's float error bound (fft_error.entry_relative_error) allows its inputs, and with an uncontrolled sign (an
independent review measured pb's upper ε moving by 1.7e-5 relative against exact bucket
masses at q = 1e-4, σ = 1, T = 1e7). :func:`log_interval_mass` takes the interval's low end
and its width — the exact float difference of the two roots. A narrow interval's mass is
4-node Gauss–Legendre quadrature of the density (error ≤ ~1e-16 relative there); a wider
one's, Φ(a + w) − Φ(a), a product of terms that each keep their relative accuracy:
    a ≥ 0:   Φ̄(a)·(−expm1(D)),  D = ln(erfcx(b′)/erfcx(a′)) − w(a + w/2),
             a′ = a/√2, b′ = a′ + w/√2, the erfcx ratio as log1p(−gap/erfcx(a′)) with
             gap = erfcx(a′) − erfcx(b′) from :func:`erfcx_gap` (both terms of D ≤ 0);
    a + w ≤ 0: the mirror image;  a < 0 < a + w: ½erf((a + w)/√2) + ½erf(−a/√2).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.numerics import special_functions as special

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
# Below this step (and u < 8), erfcx(u) − erfcx(u + h) comes from its Taylor series: a plain
# difference is within ~5e-14 from 0.03 on (measured against mpmath; 8e-13 at 1e-3).
_SERIES_STEP = 0.03
_ASYMPTOTIC_FROM = 8.0  # from here on, erfcx_gap sums the asymptotic series (small steps)
_DIRECT_FROM_SHARE = 1.0 / 32.0
_SQRT_HALF = math.sqrt(0.5)


def minus_erfcx_slope(u: np.ndarray) -> np.ndarray:
    """−erfcx′(u) = 2/√π − 2u·erfcx(u) > 0 for u ≥ 0, without cancellation for large u
    (asymptotic series (2/√π) Σ_k (−1)^{k+1} (2k−1)!!/(2u²)^k for u ≥ 8)."""
    u = np.atleast_1d(np.asarray(u, dtype=float))
    out = _TWO_OVER_SQRT_PI - 2.0 * u * special.erfcx(u)
    large = u >= 8.0
    if np.any(large):
        inverse = 1.0 / (2.0 * u[large] ** 2)
        term, total = np.ones_like(inverse), np.zeros_like(inverse)
        for k in range(1, 25):
            term = term * (2 * k - 1) * inverse
            total += term if k % 2 else -term
        out[large] = _TWO_OVER_SQRT_PI * total
    return out


def erfcx_gap(u, step) -> np.ndarray:
    """erfcx(u) − erfcx(u + step) for u ≥ 0, step > 0 (a number, or one per u), within
    ~5e-14 relative (tests/test_special_functions.py, against mpmath; an independent review
    measured 4.35e-14 at the worst, u = 7, step = 0.03).

    A plain difference loses ~u·erfcx(u)/gap relative (the two values nearly cancel):
    ~1e-16/step near u = 0 but ~1e-16·u/step for large u (1.4e-12 at u = 15.5, step =
    1.3e-3 when it was taken for every step ≥ 1e-3). So it is used only for step ≥
    _SERIES_STEP below u = 8 and for step ≥ u/32 from there on. Below u = 8 and that step
    the Taylor series −Σ_n stepⁿ/n! f⁽ⁿ⁾(u) is summed, with f = erfcx, f′ = 2uf − 2/√π and
    f⁽ⁿ⁾ = 2(n−1)f⁽ⁿ⁻²⁾ + 2u f⁽ⁿ⁻¹⁾; from u = 8 on, the asymptotic series term by term
    (_gap_asymptotic).
    """
    u = np.atleast_1d(np.asarray(u, dtype=float))
    per_entry = np.ndim(step) > 0
    step = np.broadcast_to(np.asarray(step, dtype=float), u.shape) if per_entry else float(step)
    large_u = u >= _ASYMPTOTIC_FROM
    # at u ≥ 8, erfcx(u) − erfcx(u + s) ≈ erfcx(u)·s/(u + s): the plain difference loses
    # ~(u + s)/s ulps of erfcx, so it is taken from s ≥ u/32 on there
    direct = step >= np.where(large_u, u * _DIRECT_FROM_SHARE, _SERIES_STEP)
    large = ~direct & large_u
    series = ~direct & ~large
    if np.all(direct):
        return special.erfcx(u) - special.erfcx(u + step)
    out = np.empty_like(u)

    def pick(mask):
        return step[mask] if per_entry else step

    if np.any(direct):
        out[direct] = special.erfcx(u[direct]) - special.erfcx(u[direct] + pick(direct))
    if np.any(large):
        out[large] = _gap_asymptotic(u[large], pick(large))
    if np.any(series):
        out[series] = _gap_series(u[series], pick(series))
    return out


def _gap_series(u: np.ndarray, step) -> np.ndarray:
    """erfcx(u) − erfcx(u + step) for u < 8, step < _SERIES_STEP: the Taylor series."""
    previous, current = special.erfcx(u), -minus_erfcx_slope(u)  # f, f′
    coefficient = step
    gap = -coefficient * current
    for n in range(2, 40):
        previous, current = current, 2.0 * (n - 1) * previous + 2.0 * u * current
        coefficient = coefficient * step / n
        term = -coefficient * current
        gap = gap + term
        # checked every 4th term (the check costs as much as a term on short arrays)
        if n % 4 == 0 and np.all(np.abs(term) <= 1e-17 * np.abs(gap)):
            break
    return gap


def _gap_asymptotic(u: np.ndarray, step) -> np.ndarray:
    """erfcx(u) − erfcx(u + step) for u ≥ 8 from the asymptotic series
    erfcx(u) = (1/(u√π)) Σ_k (−1)^k (2k − 1)!!/(2u²)^k, term by term without cancellation:
    with a = 1/u, b = 1/(u + s), a^m − b^m = (a − b)·S_m, S_m = Σ_{j<m} a^j b^{m−1−j} (positive
    terms; S_{m+1} = a·S_m + b^m) and a − b = s/(u(u + s)). Each difference term is at most
    (2k + 1)(2k − 1)!!/(2u²)^k of the first; enough terms are summed for that to fall below
    1e-17 at the smallest u (at u ≥ 8, long before the series diverges)."""
    a = 1.0 / u
    b = 1.0 / (u + step)
    difference = step * a * b  # a − b
    sums, b_power = np.ones_like(u), b.copy()  # S_1 = 1, b^1
    total = np.full_like(u, 1.0 / math.sqrt(math.pi))  # c_0·S_1
    coefficient = 1.0 / math.sqrt(math.pi)  # c_k = (−1)^k (2k − 1)!!/2^k / √π
    for k in range(1, _asymptotic_terms(float(np.min(u)))):
        for _ in range(2):  # S_{2k−1} → S_{2k+1}
            sums = a * sums + b_power
            b_power = b_power * b
        coefficient *= -(2 * k - 1) / 2.0
        total = total + coefficient * sums
    return difference * total


def _asymptotic_terms(smallest: float) -> int:
    """Terms of _gap_asymptotic's series for u ≥ ``smallest`` (≥ 8): the first k whose
    bound (2k + 1)(2k − 1)!!/(2u²)^k is below 1e-17."""
    bound, k = 1.0, 0
    while bound * (2 * k + 1) >= 1e-17 and k < 60:
        k += 1
        bound *= (2 * k - 1) / (2.0 * smallest * smallest)
    return k + 1


def _log_upper_interval(low: np.ndarray, width: np.ndarray) -> np.ndarray:
    """ln(Φ̄(low) − Φ̄(low + width)) for low ≥ 0, 0 < width < ∞ (module doc)."""
    start = low * _SQRT_HALF
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gap = erfcx_gap(start, width * _SQRT_HALF)
        log_ratio = np.log1p(-gap / special.erfcx(start))  # ln(erfcx(b′)/erfcx(a′)) ≤ 0
        exponent = log_ratio - width * (low + 0.5 * width)
        return special.log_ndtr(-low) + np.log(-np.expm1(exponent))


# Gauss–Legendre, 4 nodes ±ξ_j on [−1, 1] with weights c_j (Abramowitz & Stegun, Table 25.4)
_HALF_NODES = (0.3399810435848563, 0.8611363115940526)
_NODE_WEIGHTS = (0.6521451548625461, 0.3478548451374538)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# Below this w·(|a| + w + 2) the 4-node rule is exact to a few ulps: its error is
# ~(4!)⁴/(9·(8!)³)·(w·t)⁸ ≈ 5.6e-10·(w·t)⁸ of the mass, φ⁽⁸⁾ ~ t⁸φ (A&S 25.4.30).
_NARROW = 0.15
_NARROW_CHUNK = 1 << 14


_SPLITTER = 134217729.0  # 2^27 + 1 (Dekker 1971: a float as the sum of two 26-bit halves)


def _exp_small(h: np.ndarray) -> np.ndarray:
    """e^h for |h| ≤ 6e-4 by its Taylor polynomial to h⁴/4! (the rest < |h|⁵/5! < 1e-18):
    twice as fast as np.exp and as accurate. Narrow intervals: h = −d²/2 with d ≤ 0.43·w,
    w ≤ 0.075, so |h| ≤ 5.2e-4."""
    return 1.0 + h * (1.0 + h * (0.5 + h * (1.0 / 6.0 + h * (1.0 / 24.0))))


def _cosh_small(x: np.ndarray) -> np.ndarray:
    """cosh(√x) for 0 ≤ x ≤ 0.0064 (|m·d| < 0.08) by Σ_{k≤4} x^k/(2k)! (the rest
    < x⁵/10! < 4e-18)."""
    return 1.0 + x * (0.5 + x * (1.0 / 24.0 + x * (1.0 / 720.0 + x * (1.0 / 40320.0))))


def _log_narrow_interval(low: np.ndarray, width: np.ndarray) -> np.ndarray:
    """ln ∫_low^{low+width} φ by 4-node Gauss–Legendre (narrow intervals only). With m the
    midpoint and d_j = wξ_j/2, φ(m ± d_j) = φ(m)·e^{−d_j²/2}·e^{∓m d_j}, so the rule is
    (w/2)·φ(m)·Σ_j 2c_j e^{−d_j²/2} cosh(m d_j): no cancellation, |m d_j| < 0.08 here
    (|m|·d_j ≤ (|low| + w)·0.43w ≤ 0.43·0.15), and both factors by short Taylor series.
    m²/2 = low²/2 + (w/2)(low + w/4) with low² exact as a double-double (Dekker's product):
    a rounded m would cost ~2u·m²/2 of the result (an independent review: 4u·|ln mass|)."""
    half = 0.5 * width
    middle = low + half
    middle_squared = middle * middle
    total = np.zeros_like(low)
    for node, weight in zip(_HALF_NODES, _NODE_WEIGHTS):
        offset_squared = (half * node) ** 2
        total += (2.0 * weight) * _exp_small(-0.5 * offset_squared) * _cosh_small(
            middle_squared * offset_squared)
    split = _SPLITTER * low
    high_part = split - (split - low)
    low_part = low - high_part
    square = low * low
    square_error = ((high_part * high_part - square) + 2.0 * high_part * low_part
                    + low_part * low_part)
    small = 0.5 * square_error + half * (low + 0.5 * half)
    return (np.log(half * total) - _LOG_SQRT_2PI - small) - 0.5 * square


def log_interval_mass(low, width) -> np.ndarray:
    """ln(Φ(low + width) − Φ(low)) for the standard normal, per entry, finite low and
    0 ≤ width < ∞, ``width`` the interval's exact width (module doc). Narrow intervals
    (w·(|low| + w + 2) ≤ 0.15, most buckets) by Gauss–Legendre quadrature, which is
    cheaper and as accurate; the others by the erfcx formula."""
    low = np.atleast_1d(np.asarray(low, dtype=float))
    width = np.broadcast_to(np.asarray(width, dtype=float), low.shape)
    out = np.full(low.shape, -np.inf)
    positive = width > 0
    narrow = positive & (width * (np.abs(low) + width + 2.0) <= _NARROW)
    if np.any(narrow):
        low_narrow, width_narrow = low[narrow], width[narrow]
        values = np.empty(low_narrow.size)
        for start in range(0, low_narrow.size, _NARROW_CHUNK):  # temporaries stay in cache
            part = slice(start, start + _NARROW_CHUNK)
            values[part] = _log_narrow_interval(low_narrow[part], width_narrow[part])
        out[narrow] = values
    positive = positive & ~narrow
    high = low + width
    upper = positive & (low >= 0)
    lower = positive & (high <= 0) & ~upper
    straddle = positive & ~upper & ~lower
    if np.any(upper):
        out[upper] = _log_upper_interval(low[upper], width[upper])
    if np.any(lower):  # Φ(high) − Φ(low) = Φ̄(−high) − Φ̄(−low)
        out[lower] = _log_upper_interval(-high[lower], width[lower])
    if np.any(straddle):
        with np.errstate(divide="ignore"):
            out[straddle] = np.log(0.5 * (special.erf(high[straddle] * _SQRT_HALF)
                                          + special.erf(-low[straddle] * _SQRT_HALF)))
    return out


def log_normal_masses(lower_ends: np.ndarray, upper_ends: np.ndarray, centre, sigma) -> np.ndarray:
    """ln P(lower < X ≤ upper) for X ~ N(centre, σ²), per interval (ends may be ±∞; an
    empty or reversed interval has mass 0; ``centre`` and ``sigma`` a number or one per
    interval). The width is the float difference of the ends (exact for neighbouring
    roots), divided by σ once: no cancellation (module doc)."""
    lower_ends = np.asarray(lower_ends, dtype=float)
    upper_ends = np.asarray(upper_ends, dtype=float)
    centre = np.broadcast_to(np.asarray(centre, dtype=float), lower_ends.shape)
    sigma = np.broadcast_to(np.asarray(sigma, dtype=float), lower_ends.shape)
    out = np.full(lower_ends.shape, -np.inf)
    finite = np.isfinite(lower_ends) & np.isfinite(upper_ends) & (upper_ends > lower_ends)
    if np.any(finite):
        out[finite] = log_interval_mass((lower_ends[finite] - centre[finite]) / sigma[finite],
                                        (upper_ends[finite] - lower_ends[finite]) / sigma[finite])
    from_below = np.isneginf(lower_ends) & (upper_ends > lower_ends)
    to_above = np.isposinf(upper_ends) & (upper_ends > lower_ends) & ~from_below
    if np.any(from_below):
        out[from_below] = special.log_ndtr((upper_ends[from_below] - centre[from_below])
                                           / sigma[from_below])
    if np.any(to_above):
        out[to_above] = special.log_ndtr((centre[to_above] - lower_ends[to_above]) / sigma[to_above])
    out[np.isneginf(lower_ends) & np.isposinf(upper_ends)] = 0.0
    return out
