"""σ for a DP-SGD run: the smallest noise multiplier whose ε from a named accountant meets a
target (:func:`dpsgd_sigma`), seeded with the GDP/CLT guess (:func:`gdp_sigma_guess`) and,
for pb, the RDP σ; epoch samplers go to epochs.py. The search itself is search.py."""
from __future__ import annotations

import math

from dpcalc.calibration.certify import SigmaResult, certain_side, certify_sigma
from dpcalc.calibration.search import (DEFAULT_MAX_SIGMA, DEFAULT_PRECISION, _check_precision,
                                       _check_target, calibrate_noise_multiplier)
from dpcalc.errors import DpcalcError

# ------------------------------------------------------------------ DP-SGD calibration
# pb searches at a loose gap tolerance: its upper bound is certified at any tolerance, and
# 10% still lets the tilted and split passes run where the first grid is far off (small q,
# tiny δ: there a first-grid-only search gave up to 40% more noise than needed). The final σ
# is then re-checked at the caller's settings.
_PB_SEARCH_TOLERANCE = 0.1
# While bracketing, pb's first grid alone (a wide but certified interval) tells on which side
# of the target a far guess lies; far from the target (small σ, tiny δ) its tilted and split
# passes cost up to 4× the first grid and are not needed to classify the guess.
_PB_BRACKET_TOLERANCE = 0.99
_SAFE_SIDE_PRECISION = 1e-2  # the RDP σ that seeds pb's bracket needs no more


def gdp_sigma_guess(target_epsilon: float, delta: float, schedule) -> float:
    """σ at which the GDP/CLT approximation (accounting-methods.md §4) gives ``target_epsilon``.

    μ* solves δ_μ(ε*) = δ: the Gaussian mechanism with sensitivity 1 and noise σ_G is
    (1/σ_G)-GDP, so μ* = 1/analytic_gaussian_sigma(ε*, δ). Then invert
    μ² = Σ_phases q² T (e^{Δ²/σ²} − 1) (Bu et al. 2020 §3; Δ the step's sensitivity):
    σ = Δ/√(ln(1 + μ²/Σ q² T)). Not a bound: a starting guess, usually on the low side.
    """
    from dpcalc.models.gaussian_sigma import analytic_gaussian_sigma
    from dpcalc.models.worst_case import worst_case

    mu = 1.0 / analytic_gaussian_sigma(target_epsilon, delta)
    cases = [(worst_case(phase), phase.steps) for phase in schedule.phases]
    weight = sum(case.sampling_rate**2 * steps for case, steps in cases)
    sensitivity = max(case.sensitivity for case, _ in cases)
    growth = math.log1p(mu * mu / weight)
    return math.inf if growth <= 0.0 else sensitivity / math.sqrt(growth)


class _Scaled:
    """A schedule seen through a common multiplier of its phases' σ: the search's
    ``with_noise_multiplier(m)`` is the schedule with σ_i·m."""

    def __init__(self, schedule):
        self.schedule = schedule
        self.phases = schedule.phases

    def with_noise_multiplier(self, scale: float):
        return self.schedule.with_noise_scale(scale)


def gdp_scale_guess(target_epsilon: float, delta: float, schedule) -> float:
    """The multiplier m at which the GDP/CLT approximation gives ``target_epsilon`` for the
    schedule with σ_i·m (gdp_sigma_guess with each phase's own σ: μ² = Σ q_i² T_i
    (e^{Δ²/(mσ_i)²} − 1), decreasing in m, solved by bisection on ln m). Not a bound."""
    from dpcalc.models.gaussian_sigma import analytic_gaussian_sigma
    from dpcalc.models.worst_case import worst_case

    mu = 1.0 / analytic_gaussian_sigma(target_epsilon, delta)
    cases = [(worst_case(phase), phase.steps, phase.noise_multiplier) for phase in schedule.phases]

    def excess(log_scale: float) -> float:
        total = 0.0
        for case, steps, sigma in cases:
            exponent = min((case.sensitivity / (sigma * math.exp(log_scale))) ** 2, 700.0)
            total += case.sampling_rate**2 * steps * math.expm1(exponent)
        return total - mu * mu

    low, high = -30.0, 30.0
    if excess(high) > 0 or excess(low) < 0:
        return math.inf
    for _ in range(80):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if excess(middle) > 0 else (low, middle)
    return math.exp(high)


def dpsgd_sigma(
    accountant_name: str,
    target_epsilon: float,
    delta: float,
    sampling_rate: float | None = None,
    steps: int | None = None,
    *,
    schedule=None,
    precision: float = DEFAULT_PRECISION,
    max_sigma: float = DEFAULT_MAX_SIGMA,
    scale: bool = False,
    on_trial=None,
    **options,
) -> SigmaResult:
    """The smallest noise multiplier for a DP-SGD run whose ε from ``accountant_name`` at
    ``delta`` is ≤ ``target_epsilon`` (safe side, relative ``precision``).

    The run is ``schedule`` (every phase gets the calibrated σ; its own σ is ignored), or
    one Poisson phase of ``steps`` steps at ``sampling_rate``. ``scale``: the schedule's
    phases keep their own σ_i and the result is the smallest common multiplier m (σ_i·m
    for every phase; ``SigmaResult.sigma`` is m). ``on_trial(count, σ)``, if given, is
    called after each evaluation of the search (for progress). ``options`` go to the
    accountant (e.g. ``tolerance`` for pb). For pb the bracket is seeded with the GDP/CLT
    σ (low side) and the RDP σ (safe side); pb searches on its first grid and the final σ
    is re-checked at the requested settings.
    """
    from dpcalc.accountants.evaluate import make_accountant
    from dpcalc.models.schedule import Schedule
    from dpcalc.params import check_delta

    from dpcalc.params import check_range

    from dpcalc.params import check_callable

    target = _check_target(target_epsilon)
    precision = _check_precision(precision)
    check_callable(on_trial, "on_trial", optional=True)
    delta = check_delta(delta)
    max_sigma = check_range(max_sigma, "max_sigma", 0.0, 1e300, high_open=False)
    if schedule is None:
        if sampling_rate is None or steps is None:
            raise DpcalcError("give a schedule, or both sampling_rate and steps")
        schedule = Schedule.single(sampling_rate, 1.0, steps)
    elif sampling_rate is not None or steps is not None:
        raise DpcalcError("give either a schedule or sampling_rate and steps, not both")
    if not isinstance(schedule, Schedule):
        raise DpcalcError(f"schedule must be a dpcalc Schedule; got {type(schedule).__name__}")
    unknown = sorted(set(options) - {"tolerance"})
    if unknown:
        raise DpcalcError(f"dpsgd_sigma got an unknown option {unknown[0]!r} (valid: tolerance)")
    final_accountant = make_accountant(accountant_name, **options)
    reason = final_accountant.not_applicable(schedule)
    if reason is not None:
        raise DpcalcError(f"{accountant_name} cannot calibrate σ for this run: {reason}")
    from dpcalc.accountants.epoch_samplers import is_epoch_schedule

    if is_epoch_schedule(schedule):  # against pb's certified upper bound for the sampler
        from dataclasses import replace

        from dpcalc.calibration.epochs import epoch_sigma_result

        found = epoch_sigma_result(final_accountant, accountant_name, schedule, target, delta,
                                   precision, max_sigma)
        # one phase: the multiplier of its own σ (rounded up, the safe side)
        own = schedule.phases[0].noise_multiplier
        return replace(found, sigma=math.nextafter(found.sigma / own, math.inf)) if scale else found
    run = _Scaled(schedule) if scale else schedule  # what with_noise_multiplier(σ) builds
    search_accountant = final_accountant
    high_guess = side_of_target = None
    if accountant_name == "pb":
        from dpcalc.pb.buckets import DEFAULT_TOLERANCE

        # each search point starts on the grid the final tolerance allows (not the finest
        # one, at small T): upper bounds as tight as the final accountant's first grid gives
        search_options = {**options, "tolerance": _PB_SEARCH_TOLERANCE,
                          "start_tolerance": options.get("tolerance") or DEFAULT_TOLERANCE,
                          "upper_only": True}  # the search reads ε's upper bound only
        search_accountant = make_accountant(accountant_name, **search_options)
        side_of_target = certain_side(make_accountant(
            accountant_name, **{**options, "tolerance": _PB_BRACKET_TOLERANCE}), run,
            delta, target)
        try:
            high_guess = dpsgd_sigma("rdp", target, delta, schedule=schedule,
                                     precision=_SAFE_SIDE_PRECISION, max_sigma=max_sigma,
                                     scale=scale).sigma
        except (DpcalcError, ArithmeticError):
            high_guess = None
    results = {}

    def epsilon_at(sigma: float) -> float | None:
        result = search_accountant.epsilon(run.with_noise_multiplier(sigma), delta)
        if result.epsilon is None:
            reason = result.notes[0] if result.notes else "not applicable"
            raise DpcalcError(f"{accountant_name} cannot calibrate σ for --epsilon {target:g}: "
                              f"at σ = {sigma:.4g}, {reason}")
        results[sigma] = result
        if on_trial is not None:
            on_trial(len(results), sigma)
        return result.epsilon

    try:
        low_guess = (gdp_scale_guess if scale else gdp_sigma_guess)(target, delta, schedule)
    except (DpcalcError, ArithmeticError):
        low_guess = None
    found = calibrate_noise_multiplier(epsilon_at, target, low_guess=low_guess, high_guess=high_guess,
                                       precision=precision, max_sigma=max_sigma,
                                       side_of_target=side_of_target)
    sigma, evaluations = found.sigma, found.evaluations
    if search_accountant is final_accountant:
        final = results[sigma]
    else:
        final, sigma, extra = certify_sigma(final_accountant, sigma, target, delta, run, precision)
        evaluations += extra
    return SigmaResult(accountant_name, sigma, final.epsilon, final.certified, evaluations, final,
                       found.at_floor)
