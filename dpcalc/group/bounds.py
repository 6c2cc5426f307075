"""Group privacy bounds beside pb (group.py), the method dispatch, and σ calibration.

* ``rdp-overapprox`` — the seed's quick method: every j ≥ 1 moved to j = k, i.e. the pair
  (B′, A) with B′ = (1 − q′)N(0) + q′N(s·k), q′ = 1 − p_0 and s the shift per record (1
  Poisson, 2 fixed-size), which rescaled by 1/(s·k) is the subsampled Gaussian with rate q′
  and noise σ/(s·k); its RDP [MTZ19] composed and converted [CKS20 Prop. 12]. An upper
  bound: (A, B) is a post-processing of (A, B′) by one Markov kernel K — draw J′ ∈ {1..k}
  with P(J′ = j) = p_j/q′ and output (J′/k)·x + N(0, σ²(1 − J′²/k²)); K(A) = A and
  K(B′) = B — so the data-processing inequality bounds every divergence in both
  directions. Add/remove only.
* ``group-conversion`` — group privacy of (ε, δ)-DP applied to the certified k = 1 bound
  of the model: (ε₁, δ₁) → (kε₁, k e^{(k−1)ε₁} δ₁) (Dwork & Roth 2014, Thm 2.2; Vadhan
  2017, Lemma 2.2), δ₁ chosen by a 1-D search. Any adjacency: k changes are a chain of k
  single-record changes.
* ``rdp-group`` — Mironov 2017, Prop. 2: for k = 2^c and α ≥ 2^{c+1}, (α, ρ)-RDP per record
  gives (α/2^c, 3^c ρ)-RDP for k records, on the model's per-record RDP. Any adjacency.
"""
from __future__ import annotations

import math
from functools import partial
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from dpcalc.pb.buckets import DEFAULT_TOLERANCE, epsilon_bounds
from dpcalc.group.pairs import (DEFAULT_METHODS, GROUP_CONVERSION, METHODS, PB, RDP_GROUP,
                                RDP_OVERAPPROX, SEED, GroupSetting, mixture_specs,
                                overapprox_parameters, pb_epsilon, prune_level, seed_epsilon)
from dpcalc.pb.profiles import UpperProfile, upper_profiles
from dpcalc.accountants.rdp import rdp_subsampled_gaussian
from dpcalc.accountants.rdp_accountants import step_rdp
from dpcalc.accountants.rdp_conversion import DEFAULT_ORDERS, MAX_ORDER, rdp_to_epsilon_improved
from dpcalc.accountants.result import EpsilonResult
from dpcalc.models.samplers import ADD_REMOVE
from dpcalc.models.worst_case import worst_case
from dpcalc.errors import DpcalcError
from dpcalc.params import check_callable, check_delta, check_items, check_positive, shown

# group-conversion searches per-record δ₁ in [δ·_SMALLEST_DELTA_FACTOR, δ/k]: below,
# float64 round-off in the composed PLD dominates the certified profile anyway.
_SMALLEST_DELTA_FACTOR = 1e-12
_SCAN_STEP_NATS = 1.0  # log-δ₁ spacing of the scan before bisection
_BISECTIONS = 40
_BISECTION_WIDTH_NATS = 1e-6  # kε₁ then moves by ~1e-7·k at most
_CURVE_WIDTH_NATS = 1e-3  # a figure's curves: kε₁ moves by ~1e-4·k at most


# ------------------------------------------------------------------ rdp-overapprox
def rdp_overapprox_epsilon(setting: GroupSetting, delta: float,
                           orders: Sequence[float] = DEFAULT_ORDERS) -> EpsilonResult:
    """ε of the seed's over-approximation for the model's pair (module doc)."""
    delta = check_delta(delta)
    if setting.adjacency != ADD_REMOVE:
        return EpsilonResult(RDP_OVERAPPROX, None, True, notes=(
            "not applicable: the over-approximation bounds the add/remove mixture pair",))
    rate, sigma = overapprox_parameters(setting)
    orders = np.asarray(orders, dtype=float)
    total = setting.steps * rdp_subsampled_gaussian(rate, sigma, orders)
    epsilon, order = rdp_to_epsilon_improved(orders, total, delta)
    return EpsilonResult(
        accountant=RDP_OVERAPPROX, epsilon=epsilon, certified=True, order=order,
        notes=("RDP over-approximation: every j ≥ 1 moved to j = k (q′ = 1 − p_0, "
               "noise σ/(shift·k)); an upper bound because the pair is a post-processing of it",),
        details={"sampling_rate": rate, "noise_multiplier": sigma, "conversion": "improved"})


def rdp_overapprox_over_steps(setting: GroupSetting, steps_list: Sequence[int], delta: float,
                              orders: Sequence[float] = DEFAULT_ORDERS) -> list[float | None]:
    """rdp-overapprox ε for each T (the per-step RDP computed once)."""
    delta = check_delta(delta)
    if setting.adjacency != ADD_REMOVE:
        return [None for _ in steps_list]
    rate, sigma = overapprox_parameters(setting)
    orders = np.asarray(orders, dtype=float)
    per_step = rdp_subsampled_gaussian(rate, sigma, orders)
    return [rdp_to_epsilon_improved(orders, steps * per_step, delta)[0] for steps in steps_list]


# ------------------------------------------------------------------------- rdp-group
def _power_of_two_exponent(k: int) -> int | None:
    return k.bit_length() - 1 if k & (k - 1) == 0 else None


def rdp_group_epsilon(setting: GroupSetting, delta: float,
                      orders: Sequence[float] = DEFAULT_ORDERS) -> EpsilonResult:
    """Mironov 2017 Prop. 2 on the model's per-record RDP (k = 2^c only; else None).

    Group RDP at order α′ = α/2^c is 3^c·ρ(α) for α ≥ 2^{c+1}, i.e. α′ ≥ 2."""
    delta = check_delta(delta)
    power = _power_of_two_exponent(setting.k)
    if power is None:
        return EpsilonResult(RDP_GROUP, None, True,
                             notes=("not applicable: the RDP group property (Mironov 2017, "
                                    "Prop. 2) needs k a power of two",))
    scale = 2**power
    group_orders = np.asarray(orders, dtype=float)
    group_orders = group_orders[(group_orders >= 2.0) & (group_orders * scale <= MAX_ORDER)]
    record_rdp = step_rdp(worst_case(setting.record_phase()), group_orders * scale)
    total = setting.steps * 3.0**power * record_rdp
    epsilon, order = rdp_to_epsilon_improved(group_orders, total, delta)
    return EpsilonResult(
        accountant=RDP_GROUP, epsilon=epsilon, certified=True, order=order,
        notes=("RDP group property (Mironov 2017, Prop. 2): for k = 2^c, order α/2^c gets "
               "3^c times the per-record RDP at α",),
        details={"conversion": "improved", "doubling_steps": power})


# ------------------------------------------------------------------- group-conversion
def record_profile(setting: GroupSetting, delta: float) -> UpperProfile:
    """The certified per-record (k = 1) profile of the model for δ₁ from δ down to δ·1e-12
    (tilted compositions keep it tight far below δ, where the conversion looks)."""
    pair = worst_case(setting.record_phase()).pair
    return upper_profiles(pair, [setting.steps], delta * _SMALLEST_DELTA_FACTOR, delta)[0]


@dataclass(frozen=True)
class GroupConversion:
    """(kε₁, k e^{(k−1)ε₁} δ₁) from the per-record (ε₁, δ₁); ``epsilon`` None if none found."""

    epsilon: float | None
    record_epsilon: float | None
    record_delta: float | None
    group_delta: float | None


def _group_log_delta(k: int, record_epsilon: float, record_delta: float) -> float:
    """ln(k e^{(k−1)ε₁} δ₁), nudged up by a few ulps (safe side)."""
    value = math.log(k) + (k - 1) * record_epsilon + math.log(record_delta)
    return value + 1e-13 * (abs(value) + 1.0)


def convert_group(profile: Callable[[float], float], k: int, delta: float,
                  smallest_delta: float,
                  rough: Callable[[float], float] | None = None,
                  width_nats: float = _BISECTION_WIDTH_NATS) -> GroupConversion:
    """The smallest kε₁ over δ₁ ∈ [smallest_delta, δ/k] with k e^{(k−1)ε₁(δ₁)} δ₁ ≤ δ.

    ε₁(δ₁) (``profile``) falls as δ₁ grows, so the largest feasible δ₁ is best: scan
    ln δ₁ downward from ln(δ/k), then bisect between the first feasible point and the one
    above it. ``rough``, a cheaper upper profile (≥ ``profile``), may find the starting
    point: what is feasible for it is feasible for ``profile``. Every returned value
    satisfies the constraint with the ε₁ (from ``profile``) it reports; the bisection
    stops ``width_nats`` from the boundary (a wider stop only gives a larger kε₁).
    """
    log_delta = math.log(delta)
    if k == 1:
        epsilon = profile(delta)
        return GroupConversion(epsilon, epsilon, delta, delta)

    def feasible(curve, log_record_delta: float) -> float | None:
        record_epsilon = curve(math.exp(log_record_delta))
        if not math.isfinite(record_epsilon):
            return None
        if _group_log_delta(k, record_epsilon, math.exp(log_record_delta)) <= log_delta:
            return record_epsilon
        return None

    top, bottom = log_delta - math.log(k), math.log(smallest_delta)

    def scan(curve, start: float, step: float):
        """(first feasible point going down from ``start``, the point above it)."""
        above, point = None, start
        while point >= bottom:
            if feasible(curve, point) is not None:
                return point, above
            above, point = point, point - step
        return None, None

    found, above = scan(rough, top, _SCAN_STEP_NATS) if rough is not None else (None, None)
    if found is not None:  # climb with the exact profile from the rough optimum
        above = None
        while found + _SCAN_STEP_NATS <= top:
            if feasible(profile, found + _SCAN_STEP_NATS) is None:
                above = found + _SCAN_STEP_NATS
                break
            found += _SCAN_STEP_NATS
        if above is None and found < top:
            above = top if feasible(profile, top) is None else None
            found = top if above is None else found
    else:
        found, above = scan(profile, top, _SCAN_STEP_NATS)
    if found is None:
        return GroupConversion(None, None, None, None)
    if above is not None:
        low, high = found, above  # feasible at low, not at high
        for _ in range(_BISECTIONS):
            if high - low < width_nats:
                break
            middle = 0.5 * (low + high)
            if feasible(profile, middle) is not None:
                low = middle
            else:
                high = middle
        found = low
    record_epsilon = feasible(profile, found)
    record_delta = math.exp(found)
    group_delta = math.exp(_group_log_delta(k, record_epsilon, record_delta))
    return GroupConversion(k * record_epsilon, record_epsilon, record_delta, group_delta)


def group_conversion_epsilon(setting: GroupSetting, delta: float,
                             profile: UpperProfile | None = None) -> EpsilonResult:
    """Generic (ε, δ) group privacy on the certified pb profile of one record."""
    delta = check_delta(delta)
    smallest = delta * _SMALLEST_DELTA_FACTOR
    if profile is None:
        profile = record_profile(setting, delta)
    conversion = convert_group(profile.epsilon, setting.k, delta, smallest)
    if conversion.epsilon is None:
        note = (f"no certificate: no per-record δ₁ in [{smallest:.3g}, {delta / setting.k:.3g}] "
                f"gives k·e^((k−1)ε₁)·δ₁ ≤ δ = {delta:g}")
        return EpsilonResult(GROUP_CONVERSION, None, True, notes=(note,),
                             details={"search_delta_min": smallest})
    return EpsilonResult(
        accountant=GROUP_CONVERSION, epsilon=conversion.epsilon, certified=True,
        notes=("group privacy of (ε, δ)-DP applied to the certified k = 1 bound: per record "
               "(ε₁, δ₁) → (kε₁, k·e^((k−1)ε₁)·δ₁), δ₁ chosen to minimise kε₁",),
        details={"record_epsilon": conversion.record_epsilon,
                 "record_delta": conversion.record_delta,
                 "group_delta": conversion.group_delta})


def conversion_over_steps(setting: GroupSetting, k_values: Sequence[int], steps_list: Sequence[int],
                          delta: float) -> dict[int, list[float | None]]:
    """group-conversion ε for each k and T (None: no certificate); the per-record
    profiles are computed once for all k.

    Each T's profile starts plain and is tightened by tilted compositions only where the
    conversion reads it below the plain composition's float-noise level: the δ₁ the plain
    profile chooses is the smallest any tighter profile can choose (a smaller ε₁ only
    makes larger δ₁ feasible), so the tilts aim at [that δ₁, δ]."""
    delta = check_delta(delta)
    smallest = delta * _SMALLEST_DELTA_FACTOR
    profiles = upper_profiles(worst_case(setting.record_phase()).pair, steps_list, smallest)
    out: dict[int, list[float | None]] = {k: [] for k in k_values}
    for profile in profiles:
        found = [convert_group(profile.epsilon, k, delta, smallest, width_nats=_CURVE_WIDTH_NATS)
                 for k in k_values]
        reached = [each.record_delta for each in found if each.epsilon is not None]
        deepest = min(reached) if len(reached) == len(found) else smallest
        if deepest < max(profile.noisy_below(d) for d in profile.composed):
            # plain only: the second search's rough start
            untightened = UpperProfile(profile.steps,
                                       {d: list(plds) for d, plds in profile.composed.items()})
            profile.tighten(max(smallest, deepest), delta)
            found = [convert_group(profile.epsilon, k, delta, smallest, untightened.epsilon,
                                   _CURVE_WIDTH_NATS) for k in k_values]
        for k, each in zip(k_values, found):
            out[k].append(each.epsilon)
    return out


# ------------------------------------------------------------------------- all methods
def numeric_epsilon(task: tuple, delta: float, tolerance: float) -> EpsilonResult:
    """pb's or the seed pair's ε for one (method, setting): the costly methods, which a
    caller's ``map_points`` may answer in other processes."""
    name, each = task
    return pb_epsilon(each, delta, tolerance) if name == PB else seed_epsilon(each, delta, tolerance)


def group_epsilons(setting: GroupSetting, k_values: Sequence[int], delta: float,
                   methods: Sequence[str] = DEFAULT_METHODS,
                   tolerance: float = DEFAULT_TOLERANCE,
                   on_done: Callable[[int], None] | None = None,
                   map_points: Callable | None = None) -> list[tuple[int, EpsilonResult]]:
    """(k, result) for every k and method, k-major; the per-record profile is shared.
    ``on_done(1)``: called after each (k, method) (a progress bar's count). ``map_points``:
    a map(function, items) for the pb and seed compositions (e.g. a process pool's)."""
    if not isinstance(setting, GroupSetting):
        raise DpcalcError(f"setting must be a dpcalc GroupSetting; got {type(setting).__name__}")
    delta = check_delta(delta)
    tolerance = check_positive(tolerance, "--tolerance")
    k_values = [setting.with_k(k).k for k in check_items(k_values, "k_values", "group sizes k")]
    methods = check_items(methods, "methods", "method names")
    unknown = [name for name in methods if not isinstance(name, str) or name not in METHODS]
    if unknown:
        raise DpcalcError(f"--method must be one of {', '.join(METHODS)}, all; got "
                          f"{shown(unknown[0])}")
    check_callable(on_done, "on_done", optional=True)
    check_callable(map_points, "map_points", optional=True)
    done = on_done or (lambda count: None)
    wanted = [(k, name) for k in k_values for name in methods]
    numeric = [(k, name) for k, name in wanted if name in (PB, SEED)]
    found = {}
    answers = (map_points or map)(partial(numeric_epsilon, delta=delta, tolerance=tolerance),
                                  [(name, setting.with_k(k)) for k, name in numeric])
    for key, result in zip(numeric, answers):
        found[key] = result
        done(1)
    profile = record_profile(setting, delta) if GROUP_CONVERSION in methods else None
    others = {
        RDP_OVERAPPROX: lambda each: rdp_overapprox_epsilon(each, delta),
        GROUP_CONVERSION: lambda each: group_conversion_epsilon(each, delta, profile),
        RDP_GROUP: lambda each: rdp_group_epsilon(each, delta),
    }
    for k, name in wanted:
        if (k, name) not in found:
            found[(k, name)] = others[name](setting.with_k(k))
            done(1)
    return [(k, found[(k, name)]) for k, name in wanted]


# ------------------------------------------------------------------------- calibration
# The search's pb: certified at any tolerance, only less tight. It starts on the coarse grid
# a moment estimate of ε calls for (buckets.epsilon_bounds' coarse_start) and refines to a
# 10% gap, as calibrate.py's DP-SGD search: at k = 2, B = 64 of N = 1000, T = 10 that is
# 0.014 s an evaluation instead of 0.44-0.59 s on the fine first grid, the upper bound
# 0.01% looser. The σ found is re-checked by the full pb at the caller's tolerance.
_SEARCH_TOLERANCE = 0.1
_MAX_BUMPS = 60


@dataclass(frozen=True)
class GroupSigma:
    """The smallest σ (relative ``precision``) whose certified pb ε for k records meets
    the target, and the pb result there."""

    k: int
    sigma: float
    result: EpsilonResult
    evaluations: int


def calibrate_group_sigma(setting: GroupSetting, target_epsilon: float, delta: float,
                          tolerance: float = DEFAULT_TOLERANCE,
                          precision: float = 1e-3) -> GroupSigma:
    """σ that protects k records at (target ε, δ) by the model's pb bound (calibrate.py's
    search on pb's first grid; the σ found is re-checked at ``tolerance`` and nudged up
    in the rare case that the finer grid reports more than the target)."""
    from dpcalc.calibration.search import calibrate_noise_multiplier

    target = check_positive(target_epsilon, "--target-epsilon")
    delta = check_delta(delta)
    if setting.adjacency != ADD_REMOVE and setting.k > 1:
        raise DpcalcError("--target-epsilon calibrates pb, which has no group pair for "
                          "replace-one with k > 1")

    def search_epsilon(sigma: float) -> float:
        each = setting.with_sigma(sigma)
        if each.adjacency != ADD_REMOVE:
            return epsilon_bounds([(worst_case(each.record_phase()).pair, each.steps)], delta,
                                  _SEARCH_TOLERANCE, coarse_start=True).upper
        # the pruned pair (top components lighter than 1e-15·δ/T moved to a +∞ atom)
        # dominates the true one, so its upper bound is certified; at k = 64 it keeps ~12
        # of 65 components (37 s → a few s per calibration)
        return max(epsilon_bounds([(spec.pair(prune_level(delta, each.steps)), each.steps)],
                                  delta, _SEARCH_TOLERANCE, coarse_start=True).upper
                   for spec in mixture_specs(each))

    high_guess = None
    if setting.adjacency == ADD_REMOVE:  # the over-approximation is on pb's safe side
        try:
            high_guess = calibrate_noise_multiplier(
                lambda sigma: rdp_overapprox_epsilon(setting.with_sigma(sigma), delta).epsilon,
                target, precision=1e-2).sigma
        except (DpcalcError, ArithmeticError):
            high_guess = None
    low_guess = None if high_guess is None else high_guess / 2.0
    found = calibrate_noise_multiplier(search_epsilon, target, low_guess=low_guess,
                                       high_guess=high_guess, precision=precision,
                                       target_flag="--target-epsilon")
    sigma, evaluations = found.sigma, found.evaluations
    for attempt in range(_MAX_BUMPS):
        result = pb_epsilon(setting.with_sigma(sigma), delta, tolerance)
        evaluations += 1
        if result.epsilon <= target:
            return GroupSigma(setting.k, sigma, result, evaluations)
        sigma *= 1.0 + precision * 2.0**attempt
    raise DpcalcError(f"--target-epsilon {target:g}: could not certify a noise multiplier "
                      f"near σ = {sigma:.6g} for k = {setting.k}")


__all__ = [
    "GroupConversion", "GroupSigma", "calibrate_group_sigma", "conversion_over_steps",
    "convert_group", "group_conversion_epsilon", "group_epsilons", "numeric_epsilon",
    "overapprox_parameters",
    "rdp_group_epsilon", "rdp_overapprox_epsilon", "rdp_overapprox_over_steps", "record_profile",
]
