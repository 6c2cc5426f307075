"""σ for the epoch samplers (shuffle, shuffle-once, balls-in-bins), calibrated against pb's
certified upper bound for the sampler: the value `dpcalc epsilon` reports
(epoch_samplers.epoch_upper).

- Closed form where that bound is the no-amplification GDP bound alone (shuffle,
  shuffle-once): μ = Δ√E/σ must be the μ* of the Gaussian mechanism with (ε, δ)
  (epoch_samplers.epoch_sigma). Exact.
- Balls-in-bins (every adjacency): the bound is the smaller of that closed form and the
  balls-in-bins bounds (accountants/allocation.py: exact Rényi DP, the recursive bound, the
  decomposition; replace-one their chain through D∖{x}), which have no closed form: a root
  search on σ (calibrate.calibrate_noise_multiplier, which needs ε non-increasing in σ) over
  the same function, seeded with the closed-form σ (always on the safe side: the reported
  bound never exceeds the closed form). Each of those bounds decreases in σ; they are read
  from pb's numeric compositions, grids of Rényi orders and thresholds chosen per σ, so the
  minimum is non-increasing up to that discretisation (a staircase far below the search's
  1e-3 precision); the σ returned is checked once more with the full accountant.
"""
from __future__ import annotations

from dpcalc.calibration.certify import SigmaResult, certify_sigma
from dpcalc.calibration.search import calibrate_noise_multiplier
from dpcalc.accountants.epoch_samplers import epoch_sigma, epoch_upper, upper_is_closed_form

# the closed-form σ over this is the first low trial: the search widens from there if needed
_LOW_GUESS_RATIO = 4.0


def epoch_sigma_result(accountant, name: str, schedule, target: float, delta: float,
                       precision: float, max_sigma: float) -> SigmaResult:
    """The smallest σ (to relative ``precision``, safe side) whose certified upper ε from pb
    for this one-phase epoch-sampler ``schedule`` is ≤ ``target``; ``accountant`` (pb at the
    caller's settings) gives the reported result at that σ."""
    phase = schedule.phases[0]
    closed = epoch_sigma(phase, target, delta)
    evaluations = 0
    sigma = closed
    if not upper_is_closed_form(phase):
        found = calibrate_noise_multiplier(
            lambda noise: epoch_upper(phase.with_noise_multiplier(noise), delta)[0], target,
            low_guess=closed / _LOW_GUESS_RATIO, high_guess=closed, precision=precision,
            max_sigma=max_sigma)
        sigma, evaluations = found.sigma, found.evaluations
    final, sigma, extra = certify_sigma(accountant, sigma, target, delta, schedule, precision)
    return SigmaResult(name, sigma, final.epsilon, final.certified, evaluations + extra, final)
