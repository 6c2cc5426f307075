"""Special functions of the accounting core in NumPy alone, so a one-shot command never
imports scipy.special (with scipy ≥ 1.15 that import pulls in scipy's array-API layer and
numpy.testing, numpy.f2py …: about 0.15 s of a 0.25 s start-up).

All of them rest on erfcx(x) = e^{x²}·erfc(x) for x ≥ 0: piecewise polynomials on
[0, 63) (coefficients in erfcx_table.py, written by scripts/fit_erfcx.py from mpmath) and the
asymptotic series erfcx(x) = (1/(x√π))·Σ_n (−1)ⁿ(2n − 1)!!/(2x²)ⁿ beyond (Abramowitz &
Stegun 7.1.23; six terms, error < 1e-19 relative at x = 63). Relative error ≤ ~3e-16 over
the whole range (tests/test_special_functions.py: against mpmath and scipy).

* log Φ(x): x < 0: ln(erfcx(−x/√2)/2) − x²/2, with x²/2 taken from x itself (one rounding,
  as scipy's asymptotic branch); x ≥ 0: log1p(−erfcx(x/√2)·e^{−x²/2}/2).
* Φ⁻¹(p): Abramowitz & Stegun 26.2.23 (error < 4.5e-4) refined by Newton's method on
  log Φ(x) = log p (quadratic convergence: four steps reach the rounding floor), with
  Φ⁻¹(p) = −Φ⁻¹(1 − p) above ½ (1 − p is exact there).
* erf: the Taylor series x·Σ_n (−x²)ⁿ/(n!(2n + 1)) for |x| < ½ (A&S 7.1.5), 1 − erfc above.
* ln Γ: math.lgamma per entry (the arrays are small: orders and binomial indices).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.numerics.erfcx_table import COEFFICIENTS, EDGES, PER_OCTAVE

__all__ = ["binomial_upper_tail", "erf", "erfc", "erfcx", "erfinv", "gammaln", "log_ndtr",
           "logsumexp", "ndtr", "ndtri"]

_EDGES = np.array(EDGES)
_TABLE = np.array(COEFFICIENTS).T.copy()  # row j: the degree-j coefficient of every interval
_MIDPOINTS = 0.5 * (_EDGES[1:] + _EDGES[:-1])
_LAST = _EDGES.size - 2  # the last interval's index
_CHUNK = 16384
_FEW = 16  # up to this many entries: plain floats, entry by entry
_PER_LN = PER_OCTAVE / math.log(2.0)
_ASYMPTOTIC_FROM = float(_EDGES[-1])
_ASYMPTOTIC_TERMS = 6
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
_SQRT_HALF = math.sqrt(0.5)
_LOG_HALF = math.log(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_ERF_SERIES = tuple((-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(16))
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erfcx_series(values: np.ndarray) -> np.ndarray:
    """erfcx on 0 ≤ x < 63 from the polynomial table (Horner's scheme, in place)."""
    # the interval: ⌊PER_OCTAVE·log₂(1 + x)⌋ (an entry a rounding away from its edge may
    # land next door: the polynomial is accurate a little beyond its interval too)
    index = np.minimum((_PER_LN * np.log1p(values)).astype(np.intp), _LAST)
    offset = values - _MIDPOINTS.take(index)
    total = _TABLE[-1].take(index)
    for row in _TABLE[-2::-1]:
        total *= offset
        total += row.take(index)
    return total


def _erfcx_asymptotic(values: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        step = 0.5 / (values * values)  # 1/(2x²); underflows to 0 for huge x: fine
    total, term = np.ones_like(values), np.ones_like(values)
    for n in range(1, _ASYMPTOTIC_TERMS):
        term = term * (-(2 * n - 1) * step)
        total = total + term
    return total * _INV_SQRT_PI / values


def _erfcx_nonnegative(x: np.ndarray) -> np.ndarray:
    """erfcx on x ≥ 0 (NaN passes through), one flat chunk."""
    table = x < _ASYMPTOTIC_FROM
    if table.all():
        return _erfcx_series(x)
    out = np.empty_like(x)
    out[table] = _erfcx_series(x[table])
    out[~table] = _erfcx_asymptotic(x[~table])
    return out


_ROWS = tuple(tuple(float(value) for value in row) for row in COEFFICIENTS)
_MIDS = tuple(float(value) for value in _MIDPOINTS)


def _erfcx_scalar(x: float) -> float:
    """erfcx at one x ≥ 0 (or NaN) in plain floats: the same table and series as the array
    path, without NumPy's per-call cost (scalar callers: root finders, closed forms)."""
    if x < _ASYMPTOTIC_FROM:
        index = min(int(_PER_LN * math.log1p(x)), _LAST)
        row, offset = _ROWS[index], x - _MIDS[index]
        total = row[-1]
        for coefficient in row[-2::-1]:
            total = total * offset + coefficient
        return total
    if x != x:  # NaN
        return x
    step = 0.5 / (x * x) if x < 1e150 else 0.0
    total = term = 1.0
    for n in range(1, _ASYMPTOTIC_TERMS):
        term *= -(2 * n - 1) * step
        total += term
    return total * _INV_SQRT_PI / x


def _log_ndtr_scalar(x: float) -> float:
    scaled = _erfcx_scalar(abs(x) * _SQRT_HALF)
    if x < 0:
        return math.log(scaled) + _LOG_HALF - 0.5 * x * x if scaled > 0 else -math.inf
    if x != x:
        return x
    return math.log1p(-0.5 * scaled * math.exp(-0.5 * x * x)) if x < 40.0 else -0.0


def _upper_tail_scalar(x: float) -> float:
    """erfc(|x|)."""
    magnitude = abs(x)
    if magnitude > 27.3:  # erfc underflows
        return 0.0 if magnitude == magnitude else magnitude
    return _erfcx_scalar(magnitude) * math.exp(-magnitude * magnitude)


def _erfcx_any_scalar(x: float) -> float:
    if x >= 0 or x != x:
        return _erfcx_scalar(x)
    try:
        return 2.0 * math.exp(x * x) - _erfcx_scalar(-x)
    except OverflowError:
        return math.inf


def _erfc_scalar(x: float) -> float:
    tail = _upper_tail_scalar(x)
    return 2.0 - tail if x < 0 else tail


def _erf_scalar(x: float) -> float:
    if abs(x) < 0.5:
        square, total = x * x, _ERF_SERIES[-1]
        for coefficient in _ERF_SERIES[-2::-1]:
            total = total * square + coefficient
        return _TWO_OVER_SQRT_PI * x * total
    return math.copysign(1.0 - _upper_tail_scalar(x), x)


def _ndtr_scalar(x: float) -> float:
    half_square = 0.5 * x * x
    smaller = (0.5 * _erfcx_scalar(abs(x) * _SQRT_HALF) * math.exp(-half_square)
               if half_square < 745.0 else (0.0 if x == x else x))
    return smaller if x < 0 else 1.0 - smaller


def _evaluate(kernel, scalar_kernel, x):
    """One of the functions below at x: a NumPy scalar for a scalar input (as
    scipy.special returns), entry by entry in plain floats for a few entries (NumPy's
    per-call cost dominates there), else ``kernel`` on flat chunks small enough to stay
    in cache (fresh large temporaries cost more than the arithmetic: 10⁵ entries in one
    pass took 1.4–2× as long)."""
    if isinstance(x, (float, int, np.generic)) and not isinstance(x, (bool, np.bool_)):
        return np.float64(scalar_kernel(float(x)))
    x = np.asarray(x, dtype=float)
    flat = x.ravel()
    if flat.size <= _FEW:
        out = np.array([scalar_kernel(value) for value in flat.tolist()], dtype=float)
    elif flat.size <= _CHUNK:
        out = kernel(flat)
    else:
        out = np.empty_like(flat)
        for start in range(0, flat.size, _CHUNK):
            out[start:start + _CHUNK] = kernel(flat[start:start + _CHUNK])
    out = out.reshape(x.shape)
    return out[()] if out.ndim == 0 else out


def _erfcx_kernel(x: np.ndarray) -> np.ndarray:
    magnitude = np.abs(x)
    value = _erfcx_nonnegative(magnitude)
    if not np.any(x < 0):
        return value
    with np.errstate(over="ignore"):
        return np.where(x < 0, 2.0 * np.exp(x * x) - value, value)


def erfcx(x):
    """e^{x²}·erfc(x); for x < 0, 2e^{x²} − erfcx(−x) (overflows to inf, as scipy)."""
    return _evaluate(_erfcx_kernel, _erfcx_any_scalar, x)


def _upper_tail(x: np.ndarray) -> np.ndarray:
    """erfc(|x|) = erfcx(|x|)·e^{−x²}."""
    magnitude = np.abs(x)
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        return _erfcx_nonnegative(magnitude) * np.exp(-magnitude * magnitude)


def _erfc_kernel(x: np.ndarray) -> np.ndarray:
    tail = _upper_tail(x)
    return np.where(x < 0, 2.0 - tail, tail)


def erfc(x):
    """1 − erf(x), from erfcx without cancellation for x ≥ 0; 2 − erfc(−x) below."""
    return _evaluate(_erfc_kernel, _erfc_scalar, x)


def _erf_kernel(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        square = np.minimum(x * x, 0.25)  # the series serves |x| < ½ only
    total = np.full_like(x, _ERF_SERIES[-1])
    for coefficient in reversed(_ERF_SERIES[:-1]):
        total = total * square + coefficient
    series = _TWO_OVER_SQRT_PI * x * total
    return np.where(np.abs(x) < 0.5, series, np.copysign(1.0 - _upper_tail(x), x))


def erf(x):
    """erf(x): its Taylor series below |x| = ½ (no cancellation), 1 − erfc(|x|) above."""
    return _evaluate(_erf_kernel, _erf_scalar, x)


def _log_ndtr_kernel(x: np.ndarray) -> np.ndarray:
    scaled = _erfcx_nonnegative(np.abs(x) * _SQRT_HALF)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        half_square = 0.5 * x * x
        if np.all(x < 0):
            return np.log(scaled) + _LOG_HALF - half_square
        upper = np.log1p(-0.5 * scaled * np.exp(-half_square))
        if not np.any(x < 0):
            return upper
        return np.where(x < 0, np.log(scaled) + _LOG_HALF - half_square, upper)


def log_ndtr(x):
    """log Φ(x), the log of the standard normal CDF, accurate in both tails."""
    return _evaluate(_log_ndtr_kernel, _log_ndtr_scalar, x)


def _ndtr_kernel(x: np.ndarray) -> np.ndarray:
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        smaller = 0.5 * _erfcx_nonnegative(np.abs(x) * _SQRT_HALF) * np.exp(-0.5 * x * x)
    return np.where(x < 0, smaller, 1.0 - smaller)


def ndtr(x):
    """Φ(x), the standard normal CDF."""
    return _evaluate(_ndtr_kernel, _ndtr_scalar, x)


def _ndtri_lower(p: float) -> float:
    """Φ⁻¹(p) for 0 < p ≤ ½: A&S 26.2.23, then Newton on log Φ(x) = log p (tails) or on
    ½erf(x/√2) = p − ½ (p > ¼, where p − ½ is exact and erf's series keeps x ≈ 0 accurate)."""
    log_p = math.log(p)
    t = math.sqrt(-2.0 * log_p)
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328))
          / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    for _ in range(4):
        log_density = -0.5 * x * x - _LOG_SQRT_2PI
        if p > 0.25:  # f = Φ(x) − ½ − (p − ½), f′ = φ
            x -= (0.5 * _erf_scalar(x * _SQRT_HALF) - (p - 0.5)) * math.exp(-log_density)
        else:  # f = log Φ(x) − log p, f′ = φ/Φ
            log_cdf = _log_ndtr_scalar(x)
            x -= (log_cdf - log_p) * math.exp(log_cdf - log_density)
    return x


def _ndtri_scalar(p: float) -> float:
    if 0.0 < p <= 0.5:
        return _ndtri_lower(p)
    if 0.5 < p < 1.0:
        return -_ndtri_lower(1.0 - p)  # exact: p ≥ ½ (Sterbenz)
    return {0.0: -math.inf, 1.0: math.inf}.get(p, math.nan)


def _erfinv_scalar(y: float) -> float:
    target = abs(y)
    if not target < 1.0:
        return math.copysign(math.inf, y) if target == 1.0 else math.nan
    # a start: (√π/2)·y for small targets, else from the lower tail (1 − y is exact)
    x = (0.5 * math.sqrt(math.pi) * target if target < 0.5
         else -_ndtri_scalar(max(0.5 * (1.0 - target), 1e-300)) * _SQRT_HALF)
    for _ in range(4):
        residual = (_erf_scalar(x) - target if x < 0.5
                    else (1.0 - target) - _upper_tail_scalar(x))
        x -= residual / (_TWO_OVER_SQRT_PI * math.exp(-x * x))
    return math.copysign(x, y)


def _elementwise(scalar_kernel, x):
    """scalar_kernel entry by entry (inverse functions: few entries, rarely called)."""
    if isinstance(x, (float, int, np.generic)) and not isinstance(x, (bool, np.bool_)):
        return np.float64(scalar_kernel(float(x)))
    x = np.asarray(x, dtype=float)
    out = np.array([scalar_kernel(value) for value in x.ravel().tolist()], dtype=float)
    out = out.reshape(x.shape)
    return out[()] if out.ndim == 0 else out


def ndtri(p):
    """Φ⁻¹(p): −inf at 0, +inf at 1, NaN outside [0, 1]."""
    return _elementwise(_ndtri_scalar, p)


def erfinv(y):
    """erf⁻¹(y) on [−1, 1]: a start from Φ⁻¹, then Newton on erf (whose Taylor branch
    keeps small |y| accurate)."""
    return _elementwise(_erfinv_scalar, y)


def _lgamma(value: float) -> float:
    try:
        return math.lgamma(value)
    except (ValueError, OverflowError):  # a pole, or beyond the largest float: Γ is infinite
        return math.inf


_LGAMMA = np.frompyfunc(_lgamma, 1, 1)
_FACTORIALS = 4097  # ln Γ(n) for the integers 1..4096 kept in a table, made on first use
_log_gamma_table: list[np.ndarray] = []


def _integer_log_gamma() -> np.ndarray:
    if not _log_gamma_table:
        _log_gamma_table.append(np.array([math.inf] + [math.lgamma(n)
                                                       for n in range(1, _FACTORIALS)]))
    return _log_gamma_table[0]


def gammaln(x):
    """ln|Γ(x)| (inf at the poles), entry by entry (math.lgamma; the orders and binomial
    indices of the RDP series are mostly integers, read from a table of the same values)."""
    if isinstance(x, (float, int, np.generic)) and not isinstance(x, (bool, np.bool_)):
        return np.float64(_lgamma(float(x)))
    x = np.asarray(x, dtype=float)
    whole = (x == np.floor(x)) & (x >= 1) & (x < _FACTORIALS)
    if whole.all():
        out = _integer_log_gamma()[x.astype(np.intp)]
    else:
        with np.errstate(over="ignore"):  # beyond the largest float: inf, as scipy
            out = np.asarray(_LGAMMA(x), dtype=float)
        if whole.any():
            out[whole] = _integer_log_gamma()[x[whole].astype(np.intp)]
    return out[()] if out.ndim == 0 else out


def logsumexp(values, axis=None):
    """log Σ exp(values) over ``axis`` (all entries by default); −inf for an empty sum."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.float64(-np.inf) if axis is None else np.full(
            np.delete(np.array(values.shape), axis), -np.inf)
    peak = np.max(values, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        total = np.log(np.sum(np.exp(values - shift), axis=axis, keepdims=True)) + shift
    total = np.squeeze(total, axis=axis) if axis is not None else total.reshape(())
    return total[()] if total.ndim == 0 else total


def _log_binomial_term(j: int, trials: int, rate: float) -> tuple[float, float]:
    """(log C(n, j)pʲ(1 − p)ⁿ⁻ʲ, a bound on its rounding error). For m = min(j, n − j) up
    to 10⁵, log C(n, j) = m·ln n + Σ_{i<m} ln(1 − i/n) − ln m! (no ln Γ(n + 1), whose
    rounding grows with n); beyond, from ln Γ, with an error bound to match."""
    smaller = min(j, trials - j)
    if smaller <= 100_000:
        log_choose = float(np.sum(np.log1p(-np.arange(smaller, dtype=float) / trials))
                           + smaller * math.log(trials) - math.lgamma(smaller + 1.0))
        scale = abs(log_choose) + smaller
    else:
        log_choose = (math.lgamma(trials + 1.0) - math.lgamma(j + 1.0)
                      - math.lgamma(trials - j + 1.0))
        scale = 3.0 * math.lgamma(trials + 1.0)
    log_odds, log_stay = math.log(rate) - math.log1p(-rate), math.log1p(-rate)
    value = log_choose + j * log_odds + trials * log_stay
    # rounding: the terms of log C (scale), and j·log odds and n·log1p(−p), each a few ulps
    return value, 1e-14 * (scale + abs(value) + abs(j * log_odds) + abs(trials * log_stay) + 10.0)


def binomial_upper_tail(count: int, trials: int, rate: float) -> float:
    """P(X > count) for X ~ Binomial(trials, rate), rounded up (it bounds masses pb sends
    to +∞). Terms by the ratio t_{j+1}/t_j = (n − j)p/((j + 1)(1 − p)), which falls with
    j: past the mode the terms left after the last one summed are at most t_J·r/(1 − r) (a
    geometric series), added; at or below the mode 1 − P(X ≤ count) from the terms summed
    downwards (a partial sum of the lower tail, so the result is only ever too large).
    The first term's rounding is bounded and taken in the safe direction."""
    count, trials, rate = int(count), int(trials), float(rate)
    if count < 0 or rate >= 1.0:
        return 1.0 if trials > count else 0.0
    if count >= trials or rate <= 0.0:
        return 0.0
    odds = rate / (1.0 - rate)
    if count + 1 > math.floor((trials + 1) * rate):  # decreasing terms from count + 1 on
        j = count + 1
        log_first, error = _log_binomial_term(j, trials, rate)
        total, term = 1.0, 1.0  # relative to t_{count+1}
        while j < trials:
            ratio = (trials - j) / (j + 1.0) * odds
            if term * ratio < 1e-17 * total:
                total += term * ratio / (1.0 - ratio)  # the geometric bound on the rest
                break
            term *= ratio
            total += term
            j += 1
        return min(1.0, math.exp(log_first + error) * total * (1.0 + 1e-12))
    log_last, error = _log_binomial_term(count, trials, rate)
    j, total, term = count, 0.0, 1.0  # relative to t_count, summed downwards
    while j >= 0 and term > 1e-18 * total:
        total += term
        term *= j / ((trials - j + 1.0) * odds)
        j -= 1
    # 1 − x rounds to nearest: a few ulps of 1 added keep it above the truth
    return min(1.0, max(0.0, 1.0 - math.exp(log_last - error) * total * (1.0 - 1e-12)) + 4e-16)
