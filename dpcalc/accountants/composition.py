"""Composition of (ε, δ) guarantees, and the two accountants built on them.

- naive (basic) composition: sums (Dwork & Roth 2014, Thm 3.16);
- advanced composition (Dwork, Rothblum, Vadhan 2010, Thm III.3);
- Kairouz, Oh, Viswanath 2015 closed forms (Thm 3.4 homogeneous, Thm 3.5
  heterogeneous), which are never looser than Dwork–Rothblum–Vadhan.

The accountants treat each DP-SGD step as the analytic Gaussian mechanism (ε₀, δ₀) at
the step's sensitivity (worst_case.py: σ/Δ), amplified by subsampling at the step's rate
(Balle, Barthe, Gaboardi 2018: Thm 8 for Poisson-family pairs, Thm 9 for subsampling
without replacement under substitution — the same formula), then compose. They are certified but loose: the
tight answer comes from the privacy-loss-distribution accountant.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from dpcalc.accountants.base import SIMPLE_MODELS, Accountant
from dpcalc.models.gaussian import gaussian_epsilon
from dpcalc.accountants.result import EpsilonResult
from dpcalc.models.schedule import Schedule
from dpcalc.models.subsampling import amplify_poisson
from dpcalc.models.worst_case import worst_case
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_items, check_nonnegative_or_inf, check_range

# Reported ε is inflated by this relative amount: covers the floating-point error
# of the sums and square roots below, so the printed bound stays an upper bound.
_ROUND_UP = 1.0 + 1e-12
# A δ budget is shrunk by this relative amount before it is split, so that rounding
# in the split never lets the total exceed the target.
_DELTA_SHRINK = 1.0 - 1e-12


# ------------------------------------------------------------------- validation
def _check_epsilon(value: float, flag: str = "--epsilon") -> float:
    return check_nonnegative_or_inf(value, flag)


def _check_probability(value: float, flag: str) -> float:
    return check_range(value, flag, 0.0, 1.0, low_open=False, high_open=False)


def _check_slack(value: float) -> float:
    return check_range(value, "delta_slack", 0.0, 1.0)


# ------------------------------------------------------------------ closed forms
def compose_naive(epsilons: Sequence[float], deltas: Sequence[float]) -> tuple[float, float]:
    """Basic composition: (Σ ε_i, Σ δ_i) (Dwork & Roth 2014, Thm 3.16); δ capped at 1."""
    epsilons = [_check_epsilon(value, "epsilons")
                for value in check_items(epsilons, "epsilons", "numbers >= 0", empty=True)]
    deltas = [_check_probability(value, "deltas")
              for value in check_items(deltas, "deltas", "numbers in [0, 1]", empty=True)]
    if len(epsilons) != len(deltas):
        raise DpcalcError("epsilons and deltas must have the same length")
    return math.fsum(epsilons), min(1.0, math.fsum(deltas))


def compose_advanced(epsilon: float, delta: float, k: int, delta_slack: float) -> tuple[float, float]:
    """k-fold advanced composition (Dwork, Rothblum, Vadhan 2010, Thm III.3):
    (√(2k ln(1/δ′)) ε + k ε (e^ε − 1), k δ + δ′)."""
    epsilon = _check_epsilon(epsilon)
    delta = _check_probability(delta, "--delta")
    k = check_count(k, "--steps")
    delta_slack = _check_slack(delta_slack)
    total_epsilon = math.sqrt(2.0 * k * -math.log(delta_slack)) * epsilon + _times_expm1(k * epsilon, epsilon)
    return total_epsilon, min(1.0, k * delta + delta_slack)


def _times_expm1(factor: float, epsilon: float) -> float:
    """factor · (e^ε − 1) without inf·0 = NaN."""
    if factor == 0.0:
        return 0.0
    try:
        return factor * math.expm1(epsilon)
    except OverflowError:
        return math.inf


def _log_e_plus(log_x: float) -> float:
    """ln(e + x) given ln x, without overflow."""
    top = max(1.0, log_x)
    return top + math.log(math.exp(1.0 - top) + math.exp(log_x - top))


def _kairouz_epsilon(sum_eps: float, sum_eps_tanh: float, sum_eps_squared: float, delta_slack: float) -> tuple[float, str]:
    """ε̃ of Kairouz, Oh, Viswanath 2015 Thm 3.5 (Thm 3.4 when homogeneous), with the
    name of the branch that attains the minimum. (e^ε − 1)/(e^ε + 1) = tanh(ε/2)."""
    if sum_eps == 0.0:
        return 0.0, "sum"
    if math.isinf(sum_eps):
        return math.inf, "sum"
    # ln √(Σ ε_ℓ²); −∞ where the squares underflow (ε ≈ 1e-320: the root terms vanish)
    log_root = 0.5 * math.log(sum_eps_squared) if sum_eps_squared > 0.0 else -math.inf
    refined = sum_eps_tanh + math.sqrt(2.0 * sum_eps_squared * _log_e_plus(log_root - math.log(delta_slack)))
    plain = sum_eps_tanh + math.sqrt(2.0 * sum_eps_squared * -math.log(delta_slack))
    return min((sum_eps, "sum"), (refined, "refined"), (plain, "plain"))


def _kairouz_delta(log_keep: float, delta_slack: float) -> float:
    """1 − (1 − δ′) ∏(1 − δ_ℓ), given ln ∏(1 − δ_ℓ)."""
    return -math.expm1(log_keep + math.log1p(-delta_slack))


def compose_kairouz(epsilon: float, delta: float, k: int, delta_slack: float) -> tuple[float, float]:
    """k-fold composition, Kairouz, Oh, Viswanath 2015 Thm 3.4:
    ε̃ = min{kε, kε tanh(ε/2) + ε√(2k ln(e + √k ε/δ′)), kε tanh(ε/2) + ε√(2k ln(1/δ′))},
    δ̃ = 1 − (1 − δ)^k (1 − δ′)."""
    epsilon = _check_epsilon(epsilon)
    delta = _check_probability(delta, "--delta")
    k = check_count(k, "--steps")
    delta_slack = _check_slack(delta_slack)
    total_epsilon, _ = _kairouz_terms([epsilon], [k], delta_slack)
    return total_epsilon, _kairouz_delta(_log_keep([delta], [k]), delta_slack)


def compose_heterogeneous(
    epsilons: Sequence[float], deltas: Sequence[float], counts: Sequence[int], delta_slack: float
) -> tuple[float, float]:
    """Several phases, phase i being counts[i] mechanisms that are (ε_i, δ_i)-DP.

    Kairouz, Oh, Viswanath 2015 Thm 3.5:
    ε̃ = min{Σε, Σ ε tanh(ε/2) + √(2Σε² ln(e + √(Σε²)/δ′)), Σ ε tanh(ε/2) + √(2Σε² ln(1/δ′))},
    δ̃ = 1 − (1 − δ′) ∏(1 − δ_i)^{counts_i} (sums over all mechanisms).
    """
    epsilons = [_check_epsilon(value, "epsilons")
                for value in check_items(epsilons, "epsilons", "numbers >= 0", empty=True)]
    deltas = [_check_probability(value, "deltas")
              for value in check_items(deltas, "deltas", "numbers in [0, 1]", empty=True)]
    counts = [check_count(value, "--steps") for value in counts]
    if not (len(epsilons) == len(deltas) == len(counts)) or not epsilons:
        raise DpcalcError("epsilons, deltas and counts must be non-empty and of the same length")
    delta_slack = _check_slack(delta_slack)
    total_epsilon, _ = _kairouz_terms(epsilons, counts, delta_slack)
    return total_epsilon, _kairouz_delta(_log_keep(deltas, counts), delta_slack)


def _kairouz_terms(epsilons: Sequence[float], counts: Sequence[int], delta_slack: float) -> tuple[float, str]:
    sum_eps = math.fsum(count * eps for eps, count in zip(epsilons, counts))
    sum_eps_tanh = math.fsum(count * eps * math.tanh(0.5 * eps) for eps, count in zip(epsilons, counts))
    sum_eps_squared = math.fsum(count * eps * eps for eps, count in zip(epsilons, counts))
    return _kairouz_epsilon(sum_eps, sum_eps_tanh, sum_eps_squared, delta_slack)


def _log_keep(deltas: Sequence[float], counts: Sequence[int]) -> float:
    """ln ∏ (1 − δ_i)^{counts_i}."""
    return math.fsum(count * math.log1p(-delta) if delta < 1.0 else -math.inf for delta, count in zip(deltas, counts))


# --------------------------------------------------------------- split search
def _golden_minimum(func: Callable[[float], float], low: float, high: float, tolerance: float) -> tuple[float, float]:
    """Golden-section search for a minimum of ``func`` on [low, high]: (x, func(x))."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    left = high - ratio * (high - low)
    right = low + ratio * (high - low)
    value_left, value_right = func(left), func(right)
    while high - low > tolerance:
        if value_left <= value_right:
            high, right, value_right = right, left, value_left
            left = high - ratio * (high - low)
            value_left = func(left)
        else:
            low, left, value_left = left, right, value_right
            right = low + ratio * (high - low)
            value_right = func(right)
    return (left, value_left) if value_left <= value_right else (right, value_right)


def _minimise_over_split(objective: Callable[[float], float]) -> tuple[float, float]:
    """Minimise objective(fraction) over fraction ∈ (0, 1): a coarse grid on the logit
    scale, then golden section around the best grid point. Returns (fraction, value)."""

    def on_logit(logit: float) -> float:
        return objective(1.0 / (1.0 + math.exp(-logit)))

    grid = [-30.0 + 2.5 * index for index in range(25)]  # logit −30 .. 30
    values = [on_logit(logit) for logit in grid]
    best = min(range(len(grid)), key=lambda index: values[index])
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    logit, value = _golden_minimum(on_logit, low, high, tolerance=1e-4)
    if values[best] < value:
        logit, value = grid[best], values[best]
    return 1.0 / (1.0 + math.exp(-logit)), value


class _StepCache:
    """ε₀ of one un-amplified Gaussian step for δ₀, memoised within one call."""

    def __init__(self) -> None:
        self._values: dict[tuple[float, float], float] = {}

    def step_epsilon(self, step_delta: float, noise_multiplier: float) -> float:
        if step_delta >= 1.0:
            return 0.0
        key = (step_delta, noise_multiplier)
        if key not in self._values:
            self._values[key] = gaussian_epsilon(step_delta, noise_multiplier)
        return self._values[key]


def _amplified_steps(schedule: Schedule, amplified_delta: float, cache: _StepCache) -> list[dict]:
    """Per phase: the step (ε₀, δ₀) with q·δ₀ = ``amplified_delta`` and its amplified (ε, δ)."""
    phases = []
    for phase in schedule.phases:
        case = worst_case(phase)
        step_delta = min(1.0, amplified_delta / case.sampling_rate)
        step_epsilon = cache.step_epsilon(step_delta, case.effective_noise_multiplier)
        epsilon, delta = amplify_poisson(step_epsilon, step_delta, case.sampling_rate)
        phases.append(
            {
                "sampling_rate": case.sampling_rate,
                "noise_multiplier": phase.noise_multiplier,
                "sensitivity": case.sensitivity,
                "steps": phase.steps,
                "step_epsilon": step_epsilon,
                "step_delta": step_delta,
                "amplified_epsilon": epsilon,
                "amplified_delta": delta,
            }
        )
    return phases


def _naive_plan(schedule: Schedule, target_delta: float, cache: _StepCache) -> dict:
    """Σ T_i ε_i with δ split evenly: q δ₀ = δ/T per step (Dwork & Roth 2014, Thm 3.16)."""
    budget = target_delta * _DELTA_SHRINK
    phases = _amplified_steps(schedule, budget / schedule.total_steps, cache)
    epsilons = [phase["amplified_epsilon"] for phase in phases]
    counts = [phase["steps"] for phase in phases]
    total_delta = math.fsum(phase["amplified_delta"] * phase["steps"] for phase in phases)
    epsilon = math.fsum(eps * count for eps, count in zip(epsilons, counts))
    return {"method": "naive", "epsilon": epsilon, "delta_total": total_delta, "phases": phases}


def _kairouz_plan(schedule: Schedule, target_delta: float, fraction: float, cache: _StepCache) -> dict:
    """Kairouz et al. 2015 Thm 3.4/3.5 with a share ``fraction`` of δ for the steps:
    1 − (1 − qδ₀)^T = fraction·δ, the rest δ′ = (δ − S)/(1 − S) as slack."""
    budget = target_delta * _DELTA_SHRINK
    steps = schedule.total_steps
    step_share = fraction * budget
    amplified_delta = -math.expm1(math.log1p(-step_share) / steps)
    phases = _amplified_steps(schedule, amplified_delta, cache)
    counts = [phase["steps"] for phase in phases]
    log_keep = _log_keep([phase["amplified_delta"] for phase in phases], counts)
    spent = -math.expm1(log_keep)
    # 1 − (1 − δ′)(1 − S) = δ  ⇔  δ′ = (δ − S)/(1 − S)
    slack = (budget - spent) / (1.0 - spent) * _DELTA_SHRINK
    if not slack > 0.0:
        return {"method": "kairouz", "epsilon": math.inf, "phases": phases}
    epsilon, branch = _kairouz_terms([phase["amplified_epsilon"] for phase in phases], counts, slack)
    total_delta = _kairouz_delta(log_keep, slack)
    return {
        "method": "kairouz",
        "kairouz_branch": branch,
        "epsilon": epsilon,
        "delta_slack": slack,
        "delta_total": total_delta,
        "split_fraction": fraction,
        "phases": phases,
    }


def _advanced_plan(schedule: Schedule, target_delta: float, fraction: float, cache: _StepCache) -> dict:
    """Dwork–Rothblum–Vadhan (single phase): T q δ₀ = fraction·δ, δ′ = (1 − fraction)·δ."""
    budget = target_delta * _DELTA_SHRINK
    steps = schedule.total_steps
    phases = _amplified_steps(schedule, fraction * budget / steps, cache)
    (phase,) = phases
    slack = budget - phase["amplified_delta"] * steps
    if not slack > 0.0:
        return {"method": "advanced", "epsilon": math.inf, "phases": phases}
    epsilon, total_delta = compose_advanced(phase["amplified_epsilon"], phase["amplified_delta"], steps, min(slack, 1.0))
    return {
        "method": "advanced",
        "epsilon": epsilon,
        "delta_slack": slack,
        "delta_total": total_delta,
        "split_fraction": fraction,
        "phases": phases,
    }


def _best_plan(plan: Callable[[float], dict]) -> dict:
    fraction, _ = _minimise_over_split(lambda value: plan(value)["epsilon"])
    return plan(fraction)


def _result(name: str, plan: dict, notes: tuple[str, ...], extra: dict) -> EpsilonResult:
    epsilon = plan["epsilon"] * _ROUND_UP
    details = {key: value for key, value in plan.items() if key != "epsilon"}
    details.update(extra)
    if math.isinf(epsilon):
        notes = (*notes, "no finite epsilon at this delta with these bounds")
    return EpsilonResult(accountant=name, epsilon=epsilon, certified=True, notes=notes, details=details)


# ------------------------------------------------------------------ accountants
class StrongCompositionAccountant(Accountant):
    """DP-SGD by per-step analytic Gaussian, Poisson amplification and the tightest
    closed-form composition (Kairouz et al. 2015; Dwork–Rothblum–Vadhan; summation),
    with the δ split between steps and slack optimised."""

    name = "strong"
    certified = True
    models = SIMPLE_MODELS  # reads one (rate, sensitivity) per step
    summary = "per-step analytic Gaussian, amplified, advanced composition (Kairouz et al. 2015)"

    def _epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        target_delta = delta
        cache = _StepCache()
        candidates = [_best_plan(lambda fraction: _kairouz_plan(schedule, target_delta, fraction, cache))]
        if schedule.is_single_phase:
            candidates.append(_best_plan(lambda fraction: _advanced_plan(schedule, target_delta, fraction, cache)))
        candidates.append(_naive_plan(schedule, target_delta, cache))
        best = min(candidates, key=lambda plan: plan["epsilon"])
        extra = {f"epsilon_{plan['method']}": plan["epsilon"] * _ROUND_UP for plan in candidates}
        notes = (
            "per-step analytic Gaussian, amplified by subsampling, composed with the tightest "
            f"closed form ({_DESCRIPTIONS[best['method']]})",
            "Abadi et al.'s 'strong composition' 9.34 used eps' ~ q*eps0, which is not a bound; "
            "this is the rigorous value",
        )
        return _result(self.name, best, notes, extra)


class NaiveCompositionAccountant(Accountant):
    """DP-SGD by per-step analytic Gaussian, Poisson amplification and summation."""

    name = "naive"
    certified = True
    models = SIMPLE_MODELS
    summary = "per-step analytic Gaussian, amplified, summed (basic composition)"

    def _epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        target_delta = delta
        plan = _naive_plan(schedule, target_delta, _StepCache())
        notes = ("per-step analytic Gaussian, amplified by subsampling, summed over steps "
                 "(basic composition); delta split evenly over steps",)
        return _result(self.name, plan, notes, {})


_DESCRIPTIONS = {
    "kairouz": "Kairouz, Oh, Viswanath 2015 Thm 3.4/3.5",
    "advanced": "Dwork, Rothblum, Vadhan 2010",
    "naive": "summation",
}
