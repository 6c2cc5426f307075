"""The ``gdp`` accountant: the central-limit (Gaussian DP) approximation. NOT a bound.

Bu, Dong, Long, Su 2020 ("Deep Learning with Gaussian Differential Privacy", §3, the
central limit theorem for Poisson-subsampled DP-SGD; Dong, Roth, Su 2019 §5): T steps
of the Poisson-subsampled Gaussian with rate q and noise multiplier σ are
approximately μ-GDP with

    μ = q √(T (e^{1/σ²} − 1)),

and μ-GDP composes as μ² adds over phases. It came out BELOW the tight ε in every
case tested (accounting-methods.md §4), so it is labelled an approximation and used
as the low starting guess of noise calibration.
"""
from __future__ import annotations

import math

from dpcalc.accountants.base import Accountant
from dpcalc.models.gaussian import gdp_delta, gdp_epsilon
from dpcalc.accountants.result import EpsilonResult
from dpcalc.models.samplers import ADD_REMOVE, FIXED, POISSON, ZERO_OUT
from dpcalc.models.schedule import Schedule
from dpcalc.models.worst_case import worst_case

_NOTE = ("approximation: central-limit (Gaussian DP) approximation of Bu et al. 2020; "
         "not a bound, often below the true ε")


def clt_mu(sampling_rate: float, noise_multiplier: float, steps: int) -> float:
    """μ = q √(T (e^{1/σ²} − 1)) (Bu et al. 2020 §3); inf when e^{1/σ²} overflows."""
    exponent = 1.0 / (noise_multiplier * noise_multiplier)
    if exponent > 700.0:
        return math.inf
    return sampling_rate * math.sqrt(steps * math.expm1(exponent))


def schedule_mu(schedule: Schedule) -> float:
    """μ of the whole schedule: μᵢ-GDP mechanisms compose to √(Σ μᵢ²)-GDP
    (Dong, Roth, Su 2019, §3)."""
    squares = 0.0
    for phase in schedule.phases:
        case = worst_case(phase)  # fixed-size add/remove: the Poisson pair at noise σ/2
        mu = clt_mu(case.sampling_rate, case.effective_noise_multiplier, phase.steps)
        if math.isinf(mu):
            return math.inf
        squares += mu * mu
    return math.sqrt(squares)


class GdpAccountant(Accountant):
    """Gaussian DP / central-limit approximation (Bu et al. 2020); an approximation."""

    name = "gdp"
    certified = False
    summary = "Gaussian DP central-limit approximation (Bu et al. 2020); approximation, not a bound"
    # The CLT of Bu et al. is for the Poisson-subsampled Gaussian pair (not fixed-size
    # zero-out, whose worst case is the replace-one pair).
    models = frozenset({(POISSON, ADD_REMOVE), (FIXED, ADD_REMOVE), (POISSON, ZERO_OUT)})

    def _epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        mu = schedule_mu(schedule)
        if math.isinf(mu):  # e^{1/σ²} overflows: the approximation says nothing (no bare inf)
            return EpsilonResult(accountant=self.name, epsilon=None, certified=False,
                                 notes=("no value: the central-limit μ = q√(T(e^{1/σ²} − 1)) "
                                        "overflows at this σ (the approximation breaks down "
                                        "for small σ); use pb",), details={"mu": mu})
        return EpsilonResult(accountant=self.name, epsilon=gdp_epsilon(delta, mu), certified=False,
                             notes=(_NOTE,), details={"mu": mu})

    def _delta(self, schedule: Schedule, epsilon: float) -> float:
        return float(gdp_delta(epsilon, schedule_mu(schedule)))
