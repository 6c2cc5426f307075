"""Noise calibration to an attack-risk target instead of ε: the smallest σ whose certified
TPR at an FPR (and/or certified advantage) meets the target.

The certified risk figures (risk.py) fall as σ grows, like ε, so the bracketing and
safeguarded interpolation of calibrate.py are reused: the objective is
max(TPR_upper(F)/T*, advantage_upper/A*) against 1, and the σ returned is the bracket end
on the safe side. Every evaluation uses the caller's tolerance, so the figures reported are
the ones the search compared.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcalc.calibration.search import DEFAULT_PRECISION, calibrate_noise_multiplier
from dpcalc.risk.bounds import Figure, composed_for_risk
from dpcalc.risk.tradeoff import DEFAULT_TOLERANCE, check_probability
from dpcalc.errors import DpcalcError
from dpcalc.params import check_range

_MAX_BUMPS = 30


@dataclass(frozen=True)
class RiskSigma:
    """``sigma`` (safe side) and the certified figures there: ``tpr`` (None without a TPR
    target) and ``advantage``."""

    sigma: float
    tpr: Figure | None
    advantage: Figure
    evaluations: int
    at_floor: bool = False


def _check_targets(max_tpr, at_fpr, max_advantage):
    if max_tpr is None and max_advantage is None:
        raise DpcalcError("give --max-tpr with --at-fpr, and/or --max-advantage")
    if (max_tpr is None) != (at_fpr is None):
        raise DpcalcError("--max-tpr and --at-fpr go together: the TPR target at that FPR")
    fpr = None if at_fpr is None else check_probability(at_fpr, "--at-fpr")
    tpr = None if max_tpr is None else check_range(max_tpr, "--max-tpr", 0.0, 1.0,
                                                   what="target TPR")
    if tpr is not None and tpr <= fpr:
        raise DpcalcError(f"--max-tpr must exceed --at-fpr {fpr:g}: every test reaches TPR = FPR "
                          f"by guessing; got {max_tpr!r}")
    advantage = None if max_advantage is None else check_range(
        max_advantage, "--max-advantage", 0.0, 1.0, what="target advantage")
    return tpr, fpr, advantage


def _check_pair_samplers(schedule, flag: str) -> None:
    """Risk calibration searches σ over pb's composition of one pair per step; the epoch
    samplers (risk_epoch.py) are not searched: one line naming what does work for them."""
    from dpcalc.accountants.epoch_samplers import is_epoch_schedule
    from dpcalc.models.samplers import PAIR_SAMPLINGS

    if is_epoch_schedule(schedule):
        sampling = next(p.sampling for p in schedule.phases if p.sampling not in PAIR_SAMPLINGS)
        raise DpcalcError(f"sigma {flag} needs a dominating pair per step (--sampling poisson or "
                          f"fixed); for {sampling} batches `dpcalc risk` gives the risk at a "
                          "given σ, and `sigma --epsilon` calibrates to ε")


def _gdp_guess(schedule, tpr, fpr, advantage) -> float | None:
    """σ at which the CLT/GDP approximation meets the targets (a starting guess only):
    TPR = Φ(Φ⁻¹(F) + μ), advantage = 2Φ(μ/2) − 1, μ² = Σ q²T(e^{Δ²/σ²} − 1) (Bu et al. 2020)."""
    from dpcalc.numerics.special_functions import ndtri

    from dpcalc.models.worst_case import worst_case

    mus = []
    if tpr is not None:
        mus.append(float(ndtri(tpr) - ndtri(fpr)))
    if advantage is not None:
        mus.append(2.0 * float(ndtri(0.5 * (1.0 + advantage))))
    mu = min(mus)
    cases = [(worst_case(phase), phase.steps) for phase in schedule.phases]
    weight = sum(case.sampling_rate**2 * steps for case, steps in cases)
    sensitivity = max(case.sensitivity for case, _ in cases)
    growth = math.log1p(mu * mu / weight) if mu > 0 else 0.0
    return None if growth <= 0.0 else sensitivity / math.sqrt(growth)


def risk_sigma(schedule, *, max_tpr=None, at_fpr=None, max_advantage=None,
               precision: float = DEFAULT_PRECISION, tolerance: float = DEFAULT_TOLERANCE,
               grid_step: float | None = None) -> RiskSigma:
    """The smallest noise multiplier (relative ``precision``) whose certified TPR at
    ``at_fpr`` is ≤ ``max_tpr`` and/or whose certified advantage is ≤ ``max_advantage``;
    every phase of ``schedule`` gets that σ."""
    tpr, fpr, advantage = _check_targets(max_tpr, at_fpr, max_advantage)
    _check_pair_samplers(schedule, "--max-tpr" if tpr is not None else "--max-advantage")
    probabilities = [fpr] if fpr is not None else [0.5]
    flag = "--max-tpr" if tpr is not None else "--max-advantage"

    seen: dict[float, tuple[Figure, Figure]] = {}

    def figures_at(sigma: float):
        if sigma not in seen:
            _, figures = composed_for_risk(schedule.with_noise_multiplier(sigma), probabilities,
                                           tolerance, grid_step)
            seen[sigma] = (figures[0], figures[-1])
        return seen[sigma]

    def ratio(figures) -> float:
        tpr_figure, advantage_figure = figures
        values = []
        if tpr is not None:
            values.append(tpr_figure.upper / tpr)
        if advantage is not None:
            values.append(advantage_figure.upper / advantage)
        return max(values)

    found = calibrate_noise_multiplier(lambda sigma: ratio(figures_at(sigma)), 1.0,
                                       low_guess=_gdp_guess(schedule, tpr, fpr, advantage),
                                       precision=precision, target_flag=flag)
    sigma, evaluations = found.sigma, found.evaluations
    for _ in range(_MAX_BUMPS):  # the safe side, whatever the interpolation did
        figures = figures_at(sigma)
        if ratio(figures) <= 1.0:
            return RiskSigma(sigma, figures[0] if tpr is not None else None, figures[1],
                             evaluations, found.at_floor)
        sigma *= 1.0 + precision
        evaluations += 1
    raise DpcalcError(f"{flag}: could not certify a noise multiplier near σ = {sigma:.6g}")
