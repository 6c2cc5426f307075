"""The Gaussian mechanism: privacy profile and ε for δ (σ for (ε, δ): gaussian_sigma.py).

The Gaussian mechanism with L2 sensitivity Δ and noise std σ is μ-GDP with μ = Δ/σ
(Dong, Roth, Su 2019, Thm 2.7). Its exact hockey-stick curve (privacy profile) is
(Balle & Wang 2018, Thm 8; Dong, Roth, Su 2019, Cor. 2.13)

    δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).

Everything here works in log space so that δ down to ~1e-300 stays accurate, and
every solver returns the end of its bracket on the safe side.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from dpcalc.numerics import special_functions as special
from dpcalc.numerics.gauss_intervals import erfcx_gap

from dpcalc.errors import DpcalcError
from dpcalc.params import check_nonnegative, check_positive, check_range, float_array

_SQRT2 = math.sqrt(2.0)

# Solvers aim slightly below the target δ (a margin of 1e-10·min(δ, 1 − δ)) and compare it
# with the computed δ(ε) raised by its float-error bound (_log_profile_margin, the margin of
# gdp_delta_upper), so a returned ε (or σ) is safe for the true profile and not only for its
# floating-point evaluation. The first margin alone did not cover the error near δ = 1: δ(ε)
# is then computed to ~3e-16 absolute, above 1e-10·(1 − δ) once 1 − δ < 3e-6 (at δ = 1 −
# 1e-13, μ = 15, gdp_epsilon's ε had a true δ 3.2e-17 above the target).
_SAFETY = 1e-10

_MAX_DOUBLINGS = 2100  # enough to walk a bracket from 1e-300 to 1e300 and beyond


# --------------------------------------------------------------------------- checks
def _check_mu(mu: float) -> float:
    if isinstance(mu, (int, float)) and not isinstance(mu, bool) and mu == math.inf:
        return math.inf
    return check_nonnegative(mu, "mu (GDP parameter)")


def _check_delta_upto_one(delta: float) -> float:
    return check_range(delta, "--delta", 0.0, 1.0, high_open=False)


def _check_epsilon_values(epsilon) -> np.ndarray:
    return float_array(epsilon, "--epsilon", "a number or numbers (±inf allowed, not NaN)")



# ------------------------------------------------------------------ privacy profile
def _log_delta_nonnegative(epsilon: float, mu: float) -> float:
    """ln δ(ε) of μ-GDP for one ε ≥ 0 (scalar fast path, used by the solvers).

    With a = −ε/μ + μ/2 and b = a − μ one has b² = a² + 2ε, hence
    e^ε Φ(b) = ½ erfcx(−b/√2) e^{−a²/2} and Φ(a) = ½ erfcx(−a/√2) e^{−a²/2}.
    """
    if mu == 0.0 or epsilon == math.inf:
        return -math.inf
    if mu == math.inf:
        return 0.0
    a = -epsilon / mu + 0.5 * mu
    x_b = (mu - a) / _SQRT2  # −b/√2 ≥ μ/(2√2) > 0 for ε ≥ 0
    if a < 0.0:
        # Tail: δ = ½ e^{−a²/2} [erfcx(−a/√2) − erfcx(−b/√2)], both arguments > 0 and
        # −b/√2 = −a/√2 + μ/√2: the difference is taken without cancellation.
        gap = float(erfcx_gap(-a / _SQRT2, mu / _SQRT2)[0])
        if not gap > 0.0:
            return -math.inf
        return -0.5 * a * a + math.log(gap) - math.log(2.0)  # (0.5·gap may underflow)
    if epsilon < 1.0:
        # Φ(a) − Φ(b) as a sum of positives (a ≥ 0 > b), minus (e^ε − 1) Φ(b):
        # no cancellation even for tiny μ.
        delta = 0.5 * (math.erf(a / _SQRT2) + math.erf(x_b)) - math.expm1(epsilon) * 0.5 * math.erfc(x_b)
    else:
        # ε ≥ 1 and a ≥ 0 imply μ ≥ √2 and δ ≥ 0.28: plain subtraction is accurate.
        delta = 0.5 * math.erfc(-a / _SQRT2) - 0.5 * special.erfcx(x_b) * math.exp(-0.5 * a * a)
    return math.log(delta) if delta > 0.0 else -math.inf


def _delta_nonnegative_array(epsilon: np.ndarray, mu: float) -> np.ndarray:
    """δ(ε) of μ-GDP for an array of ε ≥ 0 (same formulas as the scalar path)."""
    out = np.zeros_like(epsilon, dtype=float)
    if mu == 0.0:
        return out
    if mu == math.inf:
        out[:] = 1.0
        return out
    with np.errstate(all="ignore"):
        a = -epsilon / mu + 0.5 * mu
        x_b = (mu - a) / _SQRT2
        tail = a < 0.0
        small = ~tail & (epsilon < 1.0)
        large = ~tail & ~small
        gap = erfcx_gap(-a[tail] / _SQRT2, mu / _SQRT2)
        out[tail] = np.where(gap > 0.0, np.exp(np.log(0.5 * np.maximum(gap, 0.0)) - 0.5 * a[tail] ** 2), 0.0)
        out[small] = 0.5 * (special.erf(a[small] / _SQRT2) + special.erf(x_b[small])) - np.expm1(
            epsilon[small]
        ) * 0.5 * special.erfc(x_b[small])
        out[large] = 0.5 * special.erfc(-a[large] / _SQRT2) - 0.5 * special.erfcx(x_b[large]) * np.exp(
            -0.5 * a[large] ** 2
        )
    return np.clip(out, 0.0, 1.0)


def _delta_scalar(epsilon: float, mu: float) -> float:
    if epsilon >= 0.0:
        return min(1.0, math.exp(_log_delta_nonnegative(epsilon, mu)))
    if epsilon == -math.inf:
        return 1.0
    complement = float(_complement_negative(epsilon, mu))
    if complement <= 0.5:  # near 1: within about an ulp (_complement_negative)
        return min(1.0, max(0.0, 1.0 - complement))
    # GDP is symmetric, so for ε < 0: δ(ε) = 1 − e^ε + e^ε δ(−ε) (a sum of non-negatives).
    reflected = math.exp(_log_delta_nonnegative(-epsilon, mu))
    return min(1.0, -math.expm1(epsilon) + math.exp(epsilon) * reflected)


def gdp_delta(epsilon, mu: float):
    """δ(ε) of μ-GDP, i.e. of the Gaussian mechanism with sensitivity/σ = μ.

    Balle & Wang 2018, Thm 8: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2). Valid for all
    real ε; ``epsilon`` may be a scalar (returns float) or an array (returns array).
    """
    mu = _check_mu(mu)
    values = _check_epsilon_values(epsilon)
    if values.ndim == 0:
        return _delta_scalar(float(values), mu)
    flat = values.ravel()
    out = np.empty_like(flat)
    nonnegative = flat >= 0.0
    out[nonnegative] = _delta_nonnegative_array(flat[nonnegative], mu)
    negative = flat[~nonnegative]
    with np.errstate(all="ignore"):
        complement = _complement_negative(negative, mu)
        # GDP is symmetric: δ(ε) = 1 − e^ε + e^ε δ(−ε), a sum of non-negatives (accurate
        # where δ is small); near 1, 1 − (1 − δ) instead (module doc of the helper)
        reflected = _delta_nonnegative_array(-negative, mu)
        mirrored = np.where(complement <= 0.5, 1.0 - complement,
                            -np.expm1(negative) + np.exp(negative) * reflected)
    out[~nonnegative] = np.where(np.isneginf(negative), 1.0, np.clip(mirrored, 0.0, 1.0))
    return out.reshape(values.shape)


# gdp_delta's float error at ε ≥ 0, relative (tests/test_gaussian.py against mpmath: at
# most 0.2 of the margin): the profile's own (~5e-14, erfcx_gap) and the rounding of
# a = −ε/μ + μ/2, which moves ln δ by about u·|a|·(|ε/μ| + μ/2 + |a|).
_PROFILE_ERROR = 1e-12
_SUBNORMAL_FLOOR = 1e-300  # more than any δ(ε) computed as 0 or subnormal can lose
_UNIT_ROUNDOFF = 2.0**-53


def _rounding_of_a(a, epsilon, mu: float):
    """A bound on the relative change of δ(ε) from the rounding of a = −ε/μ + μ/2 (|a| given)
    and of b = a − μ: 8u·((|a| + 1)(ε/μ + μ/2 + |a|) + 1). The "+ 1" on |a| keeps the bound
    where a ≈ 0: a's absolute rounding error is about u·(ε/μ + μ/2) there, not u·|a|, and
    moves ln δ by up to 0.4·u·μ (independent review: 2.5e-13 below δ at μ = 1e4 with |a|
    alone)."""
    return 8.0 * _UNIT_ROUNDOFF * ((a + 1.0) * (epsilon / mu + 0.5 * mu + a) + 1.0)


def gdp_delta_upper(epsilon, mu: float):
    """gdp_delta raised by a bound on its own float error: a certified upper δ(ε) of μ-GDP
    (scalar or array, as gdp_delta). For ε < 0, δ(ε) = 1 − e^ε + e^ε δ(−ε): the error of
    e^ε δ(−ε) at δ(−ε)'s margin, plus a few ulps for the rest."""
    delta = gdp_delta(epsilon, mu)
    mu = float(mu)
    if mu == 0.0 or mu == math.inf:
        return delta  # exact: 0 (or 1 − e^ε) and 1
    values = np.asarray(epsilon, dtype=float)
    with np.errstate(all="ignore"):
        size = np.abs(np.where(np.isfinite(values), values, 0.0))
        a = np.abs(0.5 * mu - size / mu)
        margin = _PROFILE_ERROR + _rounding_of_a(a, size, mu)
        margin = np.where(np.isfinite(margin), np.minimum(margin, 1.0), 1.0)  # (a² overflows)
        negative = values < 0
        reflected = np.where(negative, np.exp(values) * gdp_delta(size, mu), delta)
        # + an absolute floor: δ below the normal range loses its relative accuracy
        raised = (delta + reflected * margin + np.where(negative, 8.0 * _UNIT_ROUNDOFF, 0.0)
                  + _SUBNORMAL_FLOOR)
        raised = np.minimum(1.0, raised)
    return float(raised) if np.ndim(raised) == 0 else raised


def gdp_delta_lower(epsilon, mu: float) -> np.ndarray:
    """gdp_delta lowered by the same bound on its own float error as gdp_delta_upper (and
    the subnormal floor): a certified lower δ(ε) of μ-GDP at ε ≥ 0 (array in, array out)."""
    values = np.asarray(epsilon, dtype=float)
    if np.any(values < 0):
        raise DpcalcError("gdp_delta_lower takes ε ≥ 0")
    delta = np.asarray(gdp_delta(values, mu), dtype=float)
    mu = float(mu)
    if mu == 0.0 or mu == math.inf:
        return delta
    with np.errstate(all="ignore"):
        a = np.abs(0.5 * mu - values / mu)
        margin = _PROFILE_ERROR + _rounding_of_a(a, values, mu)
        margin = np.where(np.isfinite(margin), np.minimum(margin, 1.0), 1.0)
        lowered = delta * (1.0 - margin) - _SUBNORMAL_FLOOR
        # near 1 the relative margin of δ is far too coarse (it grows like |a|·μ): there
        # 1 − δ = Φ(−a) + e^ε Φ(b) is a sum of positives, raised by the same margin (a's
        # rounding moves it by as much, relatively) and a few ulps for 1 − x
        signed = 0.5 * mu - values / mu
        complement = (special.ndtr(-signed)
                      + np.exp(np.minimum(values + special.log_ndtr(-values / mu - 0.5 * mu),
                                          700.0)))
        near_one = 1.0 - (complement * (1.0 + margin) + 4.0 * _UNIT_ROUNDOFF)
        lowered = np.where(delta >= 0.5, np.maximum(lowered, near_one), lowered)
    return np.maximum(lowered, 0.0)


def _complement_negative(epsilon, mu: float):
    """1 − δ(ε) of μ-GDP for ε < 0, as the sum of positives Φ(ε/μ − μ/2) + e^ε Φ(−ε/μ − μ/2)
    (the same formula, Balle & Wang 2018, Thm 8). Where it is ≤ 1/2, 1 minus it is within
    about an ulp (an independent review: −0.99 to +1.84 ulp over 4 305 points against
    mpmath), so δ stays non-increasing near 1 whatever the last bit of exp
    (1 − e^ε + e^ε δ(−ε) did not: at μ = 30 it went 1 − 2^-53 → 1 as ε grew, on a CPU
    whose exp differs in the last bit); below 1/2 the sum of non-negatives is the accurate
    one (1 − (1 − δ) would lose ~1e-16/δ relative)."""
    if mu == 0.0:  # identical distributions: δ(ε) = 1 − e^ε
        return np.exp(epsilon)
    return special.ndtr(epsilon / mu - 0.5 * mu) + np.exp(epsilon) * special.ndtr(-epsilon / mu - 0.5 * mu)


# --------------------------------------------------------------------------- solver
def _solve_increasing(
    func: Callable[[float], float],
    low: float,
    high: float,
    value_low: float,
    value_high: float,
    rtol: float,
    atol: float,
    max_iter: int = 300,
) -> float:
    """Bracketed root of an increasing ``func`` with func(low) < 0 ≤ func(high).

    Illinois regula falsi with a bisection safeguard; every trial point stays inside
    the bracket, so ``high`` always satisfies func(high) ≥ 0. Returns ``high`` (the
    safe end) once high − low ≤ rtol·max(|low|, |high|) + atol.
    """
    last_side = 0
    stalled = 0
    for _ in range(max_iter):
        width = high - low
        tolerance = rtol * max(abs(low), abs(high)) + atol
        if width <= tolerance:
            break
        if stalled >= 2 or not (math.isfinite(value_low) and math.isfinite(value_high)):
            trial = 0.5 * (low + high)
            stalled = 0
        else:
            trial = low - value_low * width / (value_high - value_low)
        margin = min(0.5 * tolerance, 0.25 * width)
        trial = min(max(trial, low + margin), high - margin)
        value = func(trial)
        if value >= 0.0:
            shrink = (high - trial) / width
            high, value_high = trial, value
            if last_side == 1:
                value_low *= 0.5  # Illinois: the other end is stuck, halve its weight
            last_side = 1
        else:
            shrink = (trial - low) / width
            low, value_low = trial, value  # NaN counts as unsafe: it moves ``low`` only
            if last_side == -1:
                value_high *= 0.5
            last_side = -1
        stalled = stalled + 1 if shrink < 0.5 else 0
    return high


# ------------------------------------------------------------------ ε for a given δ
def _safe_log_target(delta: float) -> float:
    """ln of the target δ, lowered by the floating-point safety margin."""
    return math.log(delta) + math.log1p(-_SAFETY * min(1.0, (1.0 - delta) / delta))


def _log_profile_margin(epsilon: float, mu: float) -> float:
    """ln(1 + r), r a bound on the relative float error of _log_delta_nonnegative(ε, μ) below
    the true δ(ε), ε ≥ 0, by the formula it used (its branches):

    - a = −ε/μ + μ/2 < 0 (tail) or ε ≥ 1: the formula's own error (_PROFILE_ERROR in the
      tail, 16u for the plain subtraction) and the rounding of a, which enters through
      e^ε Φ(b) = ½ erfcx(−b/√2) e^{−a²/2} (b² = a² + 2ε): gdp_delta_upper's margin;
    - a ≥ 0, ε < 1: Φ(a) − Φ(b) − (e^ε − 1)Φ(b) with e^ε explicit, whose derivative in a
      (b = a − μ) is φ(a) − e^ε φ(b) = 0: a's rounding enters at second order only; 16u
      covers the erf/erfc sums (an mpmath sweep of 30 000 points found 6.9u).

    The solvers work in logs, where δ far below the normal range keeps this accuracy."""
    signed = 0.5 * mu - epsilon / mu
    if signed >= 0.0 and epsilon < 1.0:
        return math.log1p(16.0 * _UNIT_ROUNDOFF)
    a = abs(signed)
    own = _PROFILE_ERROR if signed < 0.0 else 16.0 * _UNIT_ROUNDOFF
    margin = own + _rounding_of_a(a, epsilon, mu)
    return math.log1p(margin) if margin < 1.0 else math.log(2.0)  # (and where a² overflows)


def gdp_epsilon(delta: float, mu: float) -> float:
    """The smallest ε ≥ 0 with δ(ε) ≤ ``delta`` for μ-GDP (safe side, rel. precision ~1e-12):
    the computed δ(ε), raised by its float-error bound, is ≤ ``delta`` lowered by _SAFETY."""
    delta = _check_delta_upto_one(delta)
    mu = _check_mu(mu)
    if mu == 0.0 or delta >= 1.0:  # every mechanism is (0, 1)-DP
        return 0.0
    if mu == math.inf:
        return math.inf
    log_target = _safe_log_target(delta)

    def excess(epsilon: float) -> float:
        return log_target - _log_delta_nonnegative(epsilon, mu) - _log_profile_margin(epsilon, mu)

    value_zero = excess(0.0)
    if value_zero >= 0.0:
        return 0.0
    # δ(ε) ≤ Φ(−ε/μ + μ/2), which equals the target at ε = μ²/2 + μ·z, z = −Φ⁻¹(target).
    z_score = -float(special.ndtri(math.exp(log_target)))
    high = max(0.5 * mu * mu + mu * z_score, 1e-300)
    value_high = excess(high)
    for _ in range(_MAX_DOUBLINGS):
        if value_high >= 0.0:
            break
        high *= 2.0
        value_high = excess(high)
    else:
        return math.inf
    if not math.isfinite(high):
        return math.inf
    return _solve_increasing(excess, 0.0, high, value_zero, value_high, rtol=1e-12, atol=0.0)


def gaussian_delta(epsilon, noise_multiplier: float, sensitivity: float = 1.0):
    """δ(ε) of the Gaussian mechanism with noise std ``noise_multiplier``·(unit) and
    L2 ``sensitivity``: gdp_delta with μ = sensitivity/noise_multiplier."""
    noise_multiplier = check_positive(noise_multiplier, "--sigma", what="noise multiplier")
    sensitivity = check_positive(sensitivity, "--sensitivity")
    return gdp_delta(epsilon, sensitivity / noise_multiplier)


def gaussian_epsilon(delta: float, noise_multiplier: float, sensitivity: float = 1.0) -> float:
    """The smallest ε with gaussian_delta(ε) ≤ ``delta`` (analytic Gaussian mechanism)."""
    noise_multiplier = check_positive(noise_multiplier, "--sigma", what="noise multiplier")
    sensitivity = check_positive(sensitivity, "--sensitivity")
    return gdp_epsilon(delta, sensitivity / noise_multiplier)
