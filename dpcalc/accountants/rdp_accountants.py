"""The RDP-based accountants: ``rdp`` (current), ``moments`` (Abadi et al. 2016) and
``abadi`` (the closed form of Abadi et al. 2016, Lemma 3; an approximation).

Each reads the worst case of every phase (worst_case.py): Poisson-family pairs get the
RDP of the Poisson-subsampled Gaussian at noise σ/Δ [MTZ19], replace-one pairs the
subsampling-without-replacement bound of [WBK19] (rdp_replace.py), and revealed mixtures
(truncated Poisson, truncated.py) the mixture of their branches' A_α = exp((α − 1)ρ(α)):
A_α(mix) = Σ_i w_i·A_α(branch i), the worst neighbouring instance.

- [MTZ19] Mironov, Talwar, Zhang 2019; [M17] Mironov 2017, Prop. 1 (composition);
- [ACG16] Abadi et al. 2016, §3.2, Thm. 2 (tail bound), Lemma 3 (closed form);
- [CKS20] Canonne, Kamath, Steinke 2020, Prop. 12.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.numerics.special_functions import erf

from dpcalc.accountants.base import Accountant
from dpcalc.accountants.rdp import integer_rdp_many, rdp_subsampled_gaussian
from dpcalc.accountants.rdp_conversion import (DEFAULT_ORDERS, as_orders, rdp_to_delta_classic,
                                               rdp_to_delta_improved, rdp_to_epsilon_classic,
                                               rdp_to_epsilon_improved)
from dpcalc.accountants.rdp_replace import rdp_replace_one
from dpcalc.accountants.result import EpsilonResult
from dpcalc.models.samplers import ADD_REMOVE, FIXED, POISSON, ZERO_OUT
from dpcalc.models.schedule import Schedule
from dpcalc.models.worst_case import MIXTURE_FAMILY, POISSON_FAMILY, WorstCase, worst_case

__all__ = ["RdpAccountant", "MomentsAccountant", "AbadiBoundAccountant", "step_rdp", "schedule_rdp"]

_EDGE_NOTE = "optimal order α={order} is at the edge of the order grid; the bound may be loose"


def step_rdp(case: WorstCase, orders: np.ndarray) -> np.ndarray:
    """RDP ρ(α) of one step, valid for every neighbouring instance of its model."""
    if case.family == MIXTURE_FAMILY:
        return np.max([_mixture_rdp(instance, orders) for instance in case.components], axis=0)
    if case.family == POISSON_FAMILY:
        return rdp_subsampled_gaussian(case.sampling_rate, case.effective_noise_multiplier, orders)
    return rdp_replace_one(case.sampling_rate, case.noise_multiplier, orders, case.sensitivity)


def _mixture_rdp(branches, orders: np.ndarray) -> np.ndarray:
    """ρ(α) of a revealed mixture Σ_i w_i·(branch i): ln(Σ_i w_i e^{(α−1)ρ_i})/(α − 1), as
    a_b + log1p(Σ_{i≠b} w_i·expm1(a_i − a_b)) with a_i = (α − 1)ρ_i and b the branch of
    largest weight, so a mixture of tiny ρ keeps its relative accuracy; rounded up by a few
    ulps. With w_b ≥ 1/n the sum stays above w_b − 1 > −1, so log1p never meets the
    cancellation a base of small weight invites (w_0 = 0 and a_1 ≪ a_0 once gave
    log1p(−1) = −∞ and ρ = 0: rdp reported ε = 0 for a truncated Poisson run cut at every
    step). Branches of zero weight are not part of the mixture."""
    scale = orders - 1.0
    branches = [(weight, case) for weight, case in branches if weight > 0.0]
    branches.sort(key=lambda branch: -branch[0])
    exponents = [scale * step_rdp(case, orders) for _, case in branches]
    base = exponents[0]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        excess = np.zeros_like(base)
        for (weight, _), exponent in zip(branches[1:], exponents[1:]):
            excess = excess + weight * np.expm1(exponent - base)
        mixed = base + np.log1p(excess)
        # far apart (expm1 overflows): the plain log-sum-exp has no cancellation to fear
        logsum = np.logaddexp.reduce([math.log(weight) + exponent
                                      for (weight, _), exponent in zip(branches, exponents)],
                                     axis=0)
        mixed = np.where(np.isfinite(excess), mixed, logsum)
    mixed = np.where(np.isnan(mixed), np.inf, mixed)
    return np.maximum(mixed / scale, 0.0) * (1.0 + 1e-12)


def schedule_rdp(schedule: Schedule, orders: np.ndarray) -> np.ndarray:
    """Σ over phases of steps·ρ(α): RDP composes additively [M17 Prop. 1]."""
    total = np.zeros_like(orders)
    for phase in schedule.phases:
        total += phase.steps * step_rdp(worst_case(phase), orders)
    return total


_HINT_ORDERS = np.arange(2.0, 33.0)  # the integer orders of the grid computed for bounds
# ρ at _HINT_ORDERS per (q, σ), and one step's worst case per phase: a training loop asks
# again after every epoch with one more phase
_RHO: dict = {}
_RHO_SIZE = 4096


_CASES: dict = {}


def _case(phase) -> WorstCase:
    """worst_case(phase), kept per phase without its steps (which it does not read)."""
    key = (phase.sampling_rate, phase.noise_multiplier, phase.sampling, phase.adjacency,
           phase.batch_size, phase.dataset_size, phase.max_batch_size)
    found = _CASES.get(key)
    if found is None:
        if len(_CASES) > _RHO_SIZE:
            _CASES.clear()
        found = _CASES[key] = worst_case(phase)
    return found
_HINT_MARGIN = 1e-9  # relative: the computed ln A at integer orders are within ulps of exact


def rdp_epsilon_interval(schedule: Schedule, delta: float, orders: np.ndarray = DEFAULT_ORDERS):
    """(low, high) with low ≤ RdpAccountant(orders)'s ε ≤ high, from integer orders 2..32
    only (no fractional series: ~40 ms per distinct phase), or None where a phase is not
    of the Poisson family. high: the same minimum over fewer orders. low: ρ̂ at every
    order of the grid is an upper bound on the true ρ, and the true ln A_α = (α − 1)ρ(α) is
    convex in α [vEH14] and ρ non-decreasing, so between and beyond the integers
    computed it lies above the secants through neighbouring integers extended, and above
    ρ at the integer below; these lower bounds are converted as the grid's own values."""
    cases = [_case(phase) for phase in schedule.phases]
    if any(case.family != POISSON_FAMILY for case in cases):
        return None
    steps = np.array([phase.steps for phase in schedule.phases], dtype=float)
    keys = [(case.sampling_rate, case.effective_noise_multiplier) for case in cases]
    missing = list(dict.fromkeys(key for key in keys if key not in _RHO))
    if missing:
        rows = integer_rdp_many(np.array([key[0] for key in missing]),
                                np.array([key[1] for key in missing]), _HINT_ORDERS)
        if len(_RHO) + len(missing) > _RHO_SIZE:
            _RHO.clear()
        _RHO.update(zip(missing, rows))
    rho = np.array([_RHO[key] for key in keys])
    total = steps @ rho  # Σ T_i ρ_i(j), j = 2..32
    orders = np.asarray(orders, dtype=float)
    whole = np.isin(orders, _HINT_ORDERS)
    high = rdp_to_epsilon_improved(orders[whole], total[np.isin(_HINT_ORDERS, orders)], delta)[0]
    # ln A totals at j = 1..32 (ln A_1 = 0), upper bounds; lower bounds shrunk by the margin
    log_a = np.r_[0.0, total * (_HINT_ORDERS - 1.0)]
    js = np.r_[1.0, _HINT_ORDERS]
    low_log_a = log_a * (1.0 - _HINT_MARGIN)
    # every order: ρ(α) ≥ ρ(1) = KL ≥ 2·TV² (Pinsker), TV = q·erf(1/(2√2σ)) for this pair
    rates = np.array([case.sampling_rate for case in cases])
    sigmas = np.array([case.effective_noise_multiplier for case in cases])
    with np.errstate(divide="ignore"):
        variation = rates * erf(1.0 / (2.0 * math.sqrt(2.0) * sigmas))
    kl = float(steps @ (2.0 * variation**2)) * (1.0 - _HINT_MARGIN)
    bound = np.zeros(orders.size)
    for position, alpha in enumerate(orders.tolist()):
        j = min(int(math.floor(alpha)), int(js[-1]))  # the integer at or below α (≤ 32)
        at = j - 1  # index of j in js
        candidates = [0.0]
        if alpha == j:
            candidates.append(low_log_a[at])
        if j >= 2:  # secant through j−1, j extended to α ≥ j
            candidates.append((1.0 + alpha - j) * low_log_a[at] - (alpha - j) * log_a[at - 1])
        if alpha < j + 1 and j + 2 <= js[-1]:  # secant through j+1, j+2 extended back to α
            candidates.append((1.0 + j + 1 - alpha) * low_log_a[at + 1]
                              - (j + 1 - alpha) * log_a[at + 2])
        if j >= 2:  # ρ non-decreasing: (α − 1)ρ(α) ≥ (α − 1)ρ(j)
            candidates.append((alpha - 1.0) * low_log_a[at] / (j - 1.0))
        bound[position] = max(max(candidates) / (alpha - 1.0), kl)
    low = rdp_to_epsilon_improved(orders, np.maximum(bound, 0.0), delta)[0]
    return low * (1.0 - _HINT_MARGIN), high * (1.0 + _HINT_MARGIN)


def _edge_notes(orders: np.ndarray, order: float, epsilon: float, label: str = "") -> tuple[str, ...]:
    """A warning when the optimum sits at the smallest or largest order of the grid."""
    if not (0.0 < epsilon < math.inf) or order not in (orders[0], orders[-1]):
        return ()
    return (_EDGE_NOTE.format(order=f"{order:g}{label}"),)


class RdpAccountant(Accountant):
    """RDP of the subsampled Gaussian [MTZ19] with the improved conversion [CKS20]."""

    name = "rdp"
    certified = True
    summary = "Rényi DP of the subsampled Gaussian (Mironov et al. 2019), improved RDP→DP conversion"

    def __init__(self, orders=None) -> None:
        chosen = DEFAULT_ORDERS if orders is None else np.unique(as_orders(orders))
        self.orders = np.array(chosen, dtype=float)

    def _epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        return self._from_rdp(schedule_rdp(schedule, self.orders), delta)

    def _epsilon_curve(self, step, counts: list[int], delta: float) -> list[EpsilonResult]:
        one_step = step_rdp(worst_case(step), self.orders)  # RDP composes additively
        return [self._from_rdp(count * one_step, delta) for count in counts]

    def _from_rdp(self, total: np.ndarray, delta: float) -> EpsilonResult:
        epsilon, order = rdp_to_epsilon_improved(self.orders, total, delta)
        return EpsilonResult(
            accountant=self.name,
            epsilon=epsilon,
            certified=True,
            order=order,
            notes=_edge_notes(self.orders, order, epsilon),
            details={"conversion": "improved"},
        )

    def _delta(self, schedule: Schedule, epsilon: float) -> float:
        total = schedule_rdp(schedule, self.orders)
        return rdp_to_delta_improved(self.orders, total, epsilon)[0]


_MOMENT_ORDERS = np.arange(2.0, 34.0)  # α = λ + 1 for λ = 1..32 [ACG16 §3.2]


class MomentsAccountant(Accountant):
    """Abadi et al. 2016's moments accountant: λ = 1..32, exact moments, Thm. 2 tail bound."""

    name = "moments"
    certified = True
    summary = "Abadi et al. 2016 moments accountant (integer moments λ ≤ 32, classic tail bound)"

    def _epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        # α_M(λ) = T·ln A_{λ+1} = λ·T·ρ(λ + 1): the log-moment is RDP at order λ + 1.
        total = schedule_rdp(schedule, _MOMENT_ORDERS)
        epsilon, order = rdp_to_epsilon_classic(_MOMENT_ORDERS, total, delta)
        moment = int(order) - 1
        return EpsilonResult(
            accountant=self.name,
            epsilon=epsilon,
            certified=True,
            order=order,
            notes=_edge_notes(_MOMENT_ORDERS, order, epsilon, label=f" (λ={moment})"),
            details={"conversion": "classic", "lambda": moment},
        )

    def _delta(self, schedule: Schedule, epsilon: float) -> float:
        total = schedule_rdp(schedule, _MOMENT_ORDERS)
        return rdp_to_delta_classic(_MOMENT_ORDERS, total, epsilon)[0]


_ABADI_APPROXIMATION_NOTE = (
    "approximation: Abadi et al. 2016 Lemma 3 closed form with its O(q³λ³/σ³) term "
    "dropped; not a certified bound"
)


class AbadiBoundAccountant(Accountant):
    """Abadi et al. 2016 Lemma 3: α(λ) ≈ T q² λ(λ+1) / ((1 − q) σ²); an approximation."""

    name = "abadi"
    certified = False
    summary = "Abadi et al. 2016 Lemma 3 closed-form moments bound (approximation, σ ≥ 1, q < 1/(16σ))"
    # Lemma 3 approximates the Poisson-subsampled Gaussian; fixed-size add/remove is that
    # pair at noise σ/2 (worst_case.py). Replace-one pairs (and fixed-size zero-out, which
    # uses the replace-one pair) are not of that form.
    models = frozenset({(POISSON, ADD_REMOVE), (FIXED, ADD_REMOVE), (POISSON, ZERO_OUT)})

    @staticmethod
    def _effective(schedule: Schedule) -> list[tuple[float, float, int]]:
        """(q, σ/Δ, steps) of each phase."""
        cases = [(worst_case(phase), phase.steps) for phase in schedule.phases]
        return [(case.sampling_rate, case.effective_noise_multiplier, steps) for case, steps in cases]

    @staticmethod
    def _violation(schedule: Schedule) -> str | None:
        """Why Lemma 3 does not apply to some phase, or None when it applies to all."""
        for index, (q, sigma, _) in enumerate(AbadiBoundAccountant._effective(schedule), start=1):
            if not (sigma >= 1.0 and q < 1.0 / (16.0 * sigma)):
                where = f"phase {index}: " if len(schedule.phases) > 1 else ""
                return (
                    "not applicable: Abadi et al. Lemma 3 requires σ ≥ 1 and q < 1/(16σ) "
                    f"({where}σ={sigma:g}, q={q:g})"
                )
        return None

    @staticmethod
    def _moment_curve(schedule: Schedule) -> tuple[float, int]:
        """(c, Λ): summed over phases α(λ) = c·λ(λ + 1), valid for 1 ≤ λ ≤ Λ (every phase)."""
        phases = AbadiBoundAccountant._effective(schedule)
        coefficient = sum(steps * q**2 / ((1.0 - q) * sigma**2) for q, sigma, steps in phases)
        # λ ≤ σ² ln(1/(qσ)) for each phase (in logs: 1/(qσ) overflows for a subnormal q)
        largest = min(math.floor(-sigma**2 * (math.log(q) + math.log(sigma)))
                      for q, sigma, _ in phases)
        return coefficient, largest

    @staticmethod
    def _best_moment(center: float, largest: int) -> list[int]:
        """Integers next to the minimiser of a convex function of λ, within 1..Λ."""
        if not math.isfinite(center):
            return [largest]
        below = min(max(math.floor(center), 1), largest)
        return sorted({below, min(below + 1, largest)})

    def _epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        violation = self._violation(schedule)
        if violation is not None:
            return EpsilonResult(accountant=self.name, epsilon=None, certified=False, notes=(violation,))
        coefficient, largest = self._moment_curve(schedule)
        log_inverse_delta = -math.log(delta)
        # ε(λ) = (α(λ) + ln(1/δ))/λ = c(λ + 1) + ln(1/δ)/λ [ACG16 Thm. 2], minimal near sqrt(ln(1/δ)/c)
        center = math.sqrt(log_inverse_delta / coefficient) if coefficient > 0 else math.inf
        epsilon, moment = min(
            (coefficient * (lam + 1) + log_inverse_delta / lam, lam)
            for lam in self._best_moment(center, largest)
        )
        return EpsilonResult(
            accountant=self.name,
            epsilon=epsilon,
            certified=False,
            order=float(moment + 1),
            notes=(_ABADI_APPROXIMATION_NOTE,),
            details={"lambda": moment, "lambda_max": largest},
        )

    def _delta(self, schedule: Schedule, epsilon: float) -> float | None:
        if self._violation(schedule) is not None:
            return None
        coefficient, largest = self._moment_curve(schedule)
        # δ = min_λ exp(c λ(λ+1) − λ ε) [ACG16 Thm. 2], minimal near (ε − c)/(2c)
        center = (epsilon - coefficient) / (2.0 * coefficient) if coefficient > 0 else math.inf
        log_delta = min(
            coefficient * lam * (lam + 1) - lam * epsilon
            for lam in self._best_moment(center, largest)
        )
        return min(1.0, math.exp(min(0.0, log_delta)))