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
    """A σ/Δ at which δ(ε) ≤ target: the smaller of two, each valid — from δ(ε) ≤
    Φ(Δ/(2σ) − εσ/Δ), and the σ/Δ at which δ(0) = target (δ falls in ε). The first alone
    is ~z/ε for tiny ε: infinite at ε = 1e-320, where the second is finite."""
    at_zero = 1.0 / (2.0 * _SQRT2 * float(special.erfinv(target)))
    return min(_tail_scale_guess(epsilon, target), at_zero)


def _tail_scale_guess(epsilon: float, target: float) -> float:
    """σ/Δ with Φ(Δ/(2σ) − εσ/Δ) = target (∞ at ε = 0)."""
    if epsilon > 0.0:
        # ε s − 1/(2s) ≥ z  ⇔  s ≥ (z + √(z² + 2ε)) / (2ε), z = −Φ⁻¹(target); for z < 0
        # (target > 1/2) the same root as 1/(√(z² + 2ε) − z), free of the cancellation that
        # made it 0 at ε = 1e-300, δ = 0.999 (issue 30).
        z_score = -float(special.ndtri(target))
        root = math.sqrt(z_score * z_score + 2.0 * epsilon)
        if z_score < 0.0:
            return 1.0 / (root - z_score)
        return (z_score + root) / (2.0 * epsilon)
    # ε = 0: δ(0) = erf(μ/(2√2)) ≤ target ⇔ μ ≤ 2√2 erfinv(target) (the caller's other guess)
    return math.inf


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
    sigma = _representable(sensitivity * math.exp(log_scale), epsilon, sensitivity)
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
    return _representable(sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon,
                          epsilon, sensitivity)


def _representable(sigma: float, epsilon: float, sensitivity: float) -> float:
    """``sigma`` where float64 holds it as a normal number, else a DpcalcError naming the
    inputs (ε = 1e300 at Δ = 1e-300 asks for σ ≈ 1e-450, which rounds to 0)."""
    if not 2.2250738585072014e-308 <= sigma < math.inf:
        raise DpcalcError(f"the noise σ for --epsilon {epsilon:g} at --sensitivity "
                          f"{sensitivity:g} is outside the float range (about 1e-308 to "
                          f"1e308); rescale --sensitivity")
    return sigma


def classic_gaussian_is_valid(epsilon: float) -> bool:
    """Whether Dwork & Roth's Thm A.1 covers ``epsilon`` (it needs 0 < ε < 1)."""
    return 0.0 < float(epsilon) < 1.0
