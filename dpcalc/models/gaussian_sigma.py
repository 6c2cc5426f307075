"""σ for one Gaussian mechanism at (ε, δ): the analytic calibration of Balle & Wang 2018
(Thm 8, solved on gaussian.py's certified profile, safe side) and the classic one of Dwork &
Roth 2014 (Thm A.1: proven only for ε < 1)."""
from __future__ import annotations

import math

from dpcalc.errors import DpcalcError
from dpcalc.models.gaussian import (_MAX_DOUBLINGS, _SQRT2, _log_delta_nonnegative,
                                    _log_profile_margin, _safe_log_target, _solve_increasing)
from dpcalc.numerics import special_functions as special
from dpcalc.params import check_delta, check_nonnegative, check_positive


def _safe_scale_guess(epsilon: float, target: float) -> float:
    """A σ/Δ at which δ(ε) ≤ target, from δ(ε) ≤ Φ(Δ/(2σ) − εσ/Δ)."""
    if epsilon > 0.0:
        # ε s − 1/(2s) ≥ z  ⇔  s ≥ (z + √(z² + 2ε)) / (2ε), z = −Φ⁻¹(target).
        z_score = -float(special.ndtri(target))
        return (z_score + math.sqrt(z_score * z_score + 2.0 * epsilon)) / (2.0 * epsilon)
    # ε = 0: δ(0) = erf(μ/(2√2)) ≤ target ⇔ μ ≤ 2√2 erfinv(target).
    return 1.0 / (2.0 * _SQRT2 * float(special.erfinv(target)))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest noise std σ with δ(ε) ≤ ``delta`` (Balle & Wang 2018, Alg. 1 / Thm 8).

    Bracketed root finding in ln σ; returns the safe end (σ slightly too large,
    relative precision ~1e-12).
    """
    epsilon = check_nonnegative(epsilon, "--epsilon")
    delta = check_delta(delta)
    sensitivity = check_positive(sensitivity, "--sensitivity")
    log_target = _safe_log_target(delta)

    def excess_at(mu: float) -> float:  # ≥ 0: δ(ε) at μ, raised by its float error, meets it
        return log_target - _log_delta_nonnegative(epsilon, mu) - _log_profile_margin(epsilon, mu)

    def excess(log_scale: float) -> float:  # increasing in ln(σ/Δ)
        return excess_at(math.exp(min(-log_scale, 700.0)))

    high = math.log(_safe_scale_guess(epsilon, math.exp(log_target)))
    value_high = excess(high)
    for _ in range(_MAX_DOUBLINGS):
        if value_high >= 0.0:
            break
        high += math.log(2.0)
        value_high = excess(high)
    low, value_low = high, value_high
    for _ in range(_MAX_DOUBLINGS):
        if value_low < 0.0:
            break
        low -= math.log(2.0)
        value_low = excess(low)
    if not (value_low < 0.0 <= value_high):
        raise DpcalcError(f"no noise level reaches --delta {delta!r} at --epsilon {epsilon!r}")
    log_scale = _solve_increasing(excess, low, high, value_low, value_high, rtol=0.0, atol=1e-12)
    sigma = sensitivity * math.exp(log_scale)
    # Guard against the rounding of Δ·s changing μ = Δ/σ by an ulp: the μ the caller will
    # form is checked as the search's μ was.
    while not excess_at(sensitivity / sigma) >= 0.0:
        sigma *= 1.0 + 1e-13
    return sigma


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = Δ √(2 ln(1.25/δ)) / ε (Dwork & Roth 2014, Thm A.1).

    Proven only for ε < 1 (see :func:`classic_gaussian_is_valid`); above that it can
    miss the target δ (ε = 10, δ = 1e-5: true δ ≈ 2.3e-5).
    """
    epsilon = check_positive(epsilon, "--epsilon")
    delta = check_delta(delta)
    sensitivity = check_positive(sensitivity, "--sensitivity")
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def classic_gaussian_is_valid(epsilon: float) -> bool:
    """Whether Dwork & Roth's Thm A.1 covers ``epsilon`` (it needs 0 < ε < 1)."""
    return 0.0 < float(epsilon) < 1.0
