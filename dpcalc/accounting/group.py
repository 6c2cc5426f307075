"""Group privacy: DP-SGD privacy for k protected records (seed 000).

Setting (seed 000, "How to extend DP-SGD to protect k samples"): each step draws a
batch of B records without replacement from N (batches independent), clips each
gradient to norm C = 1 and adds N(0, σ²) noise. The number J of the k protected
records in a batch is hypergeometric, p_j = C(k, j) C(N − k, B − j)/C(N, B), and the
worst-case pair of one step is

    A = N(0, σ²),   B = Σ_{j=0..k} p_j N(j, σ²)

(Poisson sampling at rate q: J ~ Binomial(k, q)). That this pair dominates the step is
the seed's argument (the k gradients aligned at full norm); every bound below is a
bound for this pair composed over T steps, as ``dpcalc epsilon`` bounds the k = 1 pair.
Neighbouring datasets, as in the seed: the k records' contributions present or absent
(B = the output without any of them), with N and B fixed, so each link of a chain of
single-record changes has the k = 1 pair with q = B/N (used by the two conversions).

Methods, side by side:

* ``pb`` — the pair composed numerically in both directions (buckets.epsilon_bounds):
  certified upper and lower ε. k = 1 is exactly the Poisson-subsampled Gaussian with
  q = B/N (the hypergeometric weights are then (1 − B/N, B/N)).
* ``rdp-overapprox`` — the seed's quick method: every j ≥ 1 moved to j = k, i.e. the
  pair A vs B′ = (1 − q′)N(0, σ²) + q′N(k, σ²) with q′ = 1 − p_0, which rescaled by 1/k
  is the subsampled Gaussian with rate q′ and noise multiplier σ/k; its RDP [MTZ19]
  composed T times and converted with the improved conversion [CKS20 Prop. 12].
  The seed leaves its validity open ("someone will prove that one day"). It is an upper
  bound: (A, B) is a post-processing of (A, B′) by one Markov kernel K — draw
  J′ ∈ {1..k} with P(J′ = j) = p_j/q′ and output (J′/k)·x + N(0, σ²(1 − J′²/k²)).
  K maps N(0, σ²) to N(0, σ²) for every J′ and N(k, σ²) to N(J′, σ²), so K(A) = A and
  K(B′) = p_0 N(0, σ²) + Σ_{j≥1} p_j N(j, σ²) = B; applied to each of the T steps, the
  data-processing inequality bounds every divergence of the composed (A, B) pair, in
  both directions, by that of (A, B′). Rényi DP of the subsampled Gaussian bounds both
  directions [MTZ19 §3], so the RDP ε is certified for the pair.
* ``group-conversion`` — the generic group-privacy property of (ε, δ)-DP applied to
  the certified k = 1 guarantee: (ε₁, δ₁) per record gives (kε₁, k e^{(k−1)ε₁} δ₁) for
  k records (Dwork & Roth 2014, Thm 2.2 and its δ version; Vadhan 2017, Lemma 2.2).
  δ₁ is chosen by a 1-D search so that k e^{(k−1)ε₁(δ₁)} δ₁ ≤ δ with kε₁ smallest;
  "no certificate" when no δ₁ in the range the engine certifies works.
* ``rdp-group`` — the RDP group property (Mironov 2017, Prop. 2): for k = 2^c and
  α ≥ 2^{c+1}, (α, ρ)-RDP per record gives (α/2^c, 3^c ρ)-RDP for k records; applied to
  the per-record RDP of the subsampled Gaussian with q = B/N, then converted.

Weights come from subsampling.py (log space / exact ratios, N up to 1e9, no scipy.stats).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from dpcalc.accounting.buckets import (TAIL_FRACTION, DEFAULT_TOLERANCE, compose_fitting,
                                       initial_grid_step, tail_half_width, epsilon_bounds)
from dpcalc.accounting.mixture import DIRECTIONS, GaussianMixturePair
from dpcalc.accounting.pld import UPPER, ComposedPld, compose
from dpcalc.accounting.rdp import DEFAULT_ORDERS, rdp_subsampled_gaussian, rdp_to_epsilon_improved
from dpcalc.accounting.result import EpsilonResult
from dpcalc.accounting.subsampling import hypergeometric_weights, poisson_weights
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_delta, check_noise_multiplier, check_positive

HYPERGEOMETRIC = "hypergeometric"
POISSON = "poisson"
SAMPLINGS = (HYPERGEOMETRIC, POISSON)

PB = "pb"
RDP_OVERAPPROX = "rdp-overapprox"
GROUP_CONVERSION = "group-conversion"
RDP_GROUP = "rdp-group"
METHODS = (PB, RDP_OVERAPPROX, GROUP_CONVERSION, RDP_GROUP)

# The mixture has k + 1 components evaluated on grids of up to 2^18 points: memory and
# time grow with k, and ε at k = 64 is already far beyond any useful budget.
MAX_GROUP_SIZE = 64
# group-conversion searches per-record δ₁ in [δ·_SMALLEST_DELTA_FACTOR, δ/k]: below,
# float64 round-off in the composed PLD dominates the certified profile anyway.
_SMALLEST_DELTA_FACTOR = 1e-12
_SCAN_STEP_NATS = 1.0  # log-δ₁ spacing of the scan before bisection
_BISECTIONS = 40
_BISECTION_WIDTH_NATS = 1e-6  # kε₁ then moves by ~1e-7·k at most
_MAX_ORDER = 10_000.0  # largest RDP order rdp.py accepts


# --------------------------------------------------------------------------- the setting
@dataclass(frozen=True)
class GroupSetting:
    """k protected records; batches of ``batch_size`` out of ``dataset_size`` for ``steps``
    steps with noise multiplier σ; ``sampling`` hypergeometric (fixed batch) or poisson."""

    k: int
    batch_size: int
    dataset_size: int
    noise_multiplier: float
    steps: int
    sampling: str = HYPERGEOMETRIC

    def __post_init__(self) -> None:
        dataset = check_count(self.dataset_size, "--dataset-size")
        batch = check_count(self.batch_size, "--batch-size")
        k = check_count(self.k, "--k", maximum=MAX_GROUP_SIZE)
        if batch > dataset:
            raise DpcalcError(f"--batch-size must be <= --dataset-size ({dataset}); got {batch}")
        if k > dataset:
            raise DpcalcError(f"--k must be <= --dataset-size ({dataset}); got {k}")
        if self.sampling not in SAMPLINGS:
            raise DpcalcError(f"--sampling must be one of {', '.join(SAMPLINGS)}; got {self.sampling!r}")
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "batch_size", batch)
        object.__setattr__(self, "dataset_size", dataset)
        object.__setattr__(self, "noise_multiplier", check_noise_multiplier(self.noise_multiplier))
        object.__setattr__(self, "steps", check_count(self.steps, "--steps", maximum=10**9))

    @property
    def sampling_rate(self) -> float:
        """q = B/N: the chance that one given record is in a batch."""
        return self.batch_size / self.dataset_size

    def with_k(self, k: int) -> "GroupSetting":
        return replace(self, k=k)

    def with_sigma(self, noise_multiplier: float) -> "GroupSetting":
        return replace(self, noise_multiplier=noise_multiplier)

    def with_steps(self, steps: int) -> "GroupSetting":
        return replace(self, steps=steps)


def group_weights(setting: GroupSetting) -> np.ndarray:
    """P[J = j], j = 0..k: how many of the k records a batch holds.

    k = 1 gives exactly (1 − q, q) with q = B/N under both samplings (C(N−1, B−1)/C(N, B)
    = B/N), computed as the Poisson pair is, so k = 1 reproduces ``dpcalc epsilon``.
    """
    q = setting.sampling_rate
    if setting.k == 1:
        return np.array([1.0 - q, q])
    if setting.sampling == POISSON:
        return poisson_weights(setting.k, q)
    return hypergeometric_weights(setting.k, setting.batch_size, setting.dataset_size)


def worst_case_pair(setting: GroupSetting) -> GaussianMixturePair:
    """A = N(0, σ²) vs B = Σ_j p_j N(j, σ²) (seed 000); k = 1 is the Poisson pair."""
    if setting.k == 1:
        return GaussianMixturePair.subsampled_gaussian(setting.sampling_rate, setting.noise_multiplier)
    return GaussianMixturePair(group_weights(setting), setting.noise_multiplier)


def worst_case_densities(setting: GroupSetting, outputs) -> tuple[np.ndarray, np.ndarray]:
    """Densities of A and B at ``outputs`` (for the distributions figure)."""
    x = np.asarray(outputs, dtype=float)
    sigma = setting.noise_multiplier
    weights = group_weights(setting)
    norm = 1.0 / (sigma * math.sqrt(2.0 * math.pi))
    density_a = norm * np.exp(-0.5 * (x / sigma) ** 2)
    shifts = np.arange(weights.size, dtype=float)[:, None]
    density_b = norm * np.sum(weights[:, None] * np.exp(-0.5 * ((x[None, :] - shifts) / sigma) ** 2),
                              axis=0)
    return density_a, density_b


# ------------------------------------------------------------------------------- pb
_PAIR_NOTE = ("certified for the worst-case pair of seed 000: N(0, σ²) vs Σ_j p_j N(j, σ²), "
              "p_j = P[j of the k records in a batch]")


def pb_epsilon(setting: GroupSetting, delta: float,
               tolerance: float = DEFAULT_TOLERANCE) -> EpsilonResult:
    """Certified upper and lower ε of the worst-case pair composed ``steps`` times."""
    delta = check_delta(delta)
    tolerance = check_positive(tolerance, "--tolerance")
    weights = group_weights(setting)
    bounds = epsilon_bounds([(worst_case_pair(setting), setting.steps)], delta, tolerance)
    notes = []
    if not bounds.converged:
        notes.append(f"gap {bounds.upper - bounds.lower:.3g} exceeds tolerance {tolerance:g}·ε "
                     "within the work limit; both bounds remain certified")
    return EpsilonResult(
        accountant=PB,
        epsilon=bounds.upper,
        certified=True,
        epsilon_lower=bounds.lower,
        notes=tuple(notes),
        details={"epsilon_remove": bounds.by_direction["remove"][0],
                 "epsilon_add": bounds.by_direction["add"][0],
                 "grid_step": bounds.grid_step,
                 "weights": [float(w) for w in weights]},
    )


# ------------------------------------------------------------------ rdp-overapprox
def overapprox_parameters(setting: GroupSetting) -> tuple[float, float]:
    """(q′, σ/k) of the seed's over-approximation, each rounded to the safe side.

    q′ = P[J ≥ 1] = 1 − p_0 (summed from the weights, no cancellation) rounded up;
    σ/k rounded down (RDP grows in q and falls in σ)."""
    weights = group_weights(setting)
    rate = float(np.sum(weights[1:]))
    if setting.k > 1:
        rate = min(1.0, rate * (1.0 + 1e-13))
    sigma = setting.noise_multiplier / setting.k
    if setting.k > 1:
        sigma = float(np.nextafter(sigma, 0.0))
    return rate, sigma


def rdp_overapprox_epsilon(setting: GroupSetting, delta: float,
                           orders: Sequence[float] = DEFAULT_ORDERS) -> EpsilonResult:
    """ε of the seed's over-approximation: RDP of the subsampled Gaussian with rate q′ and
    noise σ/k, T steps, improved conversion. An upper bound for the pair (module doc)."""
    delta = check_delta(delta)
    rate, sigma = overapprox_parameters(setting)
    orders = np.asarray(orders, dtype=float)
    total = setting.steps * rdp_subsampled_gaussian(rate, sigma, orders)
    epsilon, order = rdp_to_epsilon_improved(orders, total, delta)
    return EpsilonResult(
        accountant=RDP_OVERAPPROX,
        epsilon=epsilon,
        certified=True,
        order=order,
        notes=("seed 000's over-approximation: every j ≥ 1 moved to j = k (q′ = 1 − p_0, "
               "noise σ/k); an upper bound because the pair is a post-processing of it",),
        details={"sampling_rate": rate, "noise_multiplier": sigma, "conversion": "improved"},
    )


# ------------------------------------------------------------------------- rdp-group
def _power_of_two_exponent(k: int) -> int | None:
    return k.bit_length() - 1 if k & (k - 1) == 0 else None


def rdp_group_epsilon(setting: GroupSetting, delta: float,
                      orders: Sequence[float] = DEFAULT_ORDERS) -> EpsilonResult:
    """Mironov 2017 Prop. 2 on the per-record RDP (k = 2^c only; else epsilon None).

    Group RDP at order α′ = α/2^c is 3^c·ρ(α) for α ≥ 2^{c+1}, i.e. α′ ≥ 2."""
    delta = check_delta(delta)
    power = _power_of_two_exponent(setting.k)
    if power is None:
        return EpsilonResult(RDP_GROUP, None, True,
                             notes=("not applicable: the RDP group property (Mironov 2017, "
                                    "Prop. 2) needs k a power of two",))
    scale = 2**power
    group_orders = np.asarray(orders, dtype=float)
    group_orders = group_orders[(group_orders >= 2.0) & (group_orders * scale <= _MAX_ORDER)]
    record_rdp = rdp_subsampled_gaussian(setting.sampling_rate, setting.noise_multiplier,
                                         group_orders * scale)
    total = setting.steps * 3.0**power * record_rdp
    epsilon, order = rdp_to_epsilon_improved(group_orders, total, delta)
    return EpsilonResult(
        accountant=RDP_GROUP,
        epsilon=epsilon,
        certified=True,
        order=order,
        notes=("RDP group property (Mironov 2017, Prop. 2): for k = 2^c, order α/2^c gets "
               "3^c times the per-record RDP at α",),
        details={"conversion": "improved", "doubling_steps": power},
    )


# ------------------------------------------------------------------- group-conversion
@dataclass
class UpperProfile:
    """A certified upper privacy profile ε(δ) of one pair composed ``steps`` times:
    one composed PLD per direction (connect-the-dots, pld.py), queried at any δ."""

    steps: int
    composed: dict[str, ComposedPld] = field(default_factory=dict)

    def epsilon(self, delta: float) -> float:
        return max(pld.epsilon(delta, UPPER) for pld in self.composed.values())


def upper_profiles(pair: GaussianMixturePair, steps_list: Sequence[int],
                   smallest_delta: float) -> list[UpperProfile]:
    """Certified upper profiles of ``pair`` for each T in ``steps_list``, valid (tight to the
    grid) down to ``smallest_delta``. One discretisation per direction, on the grid the pb
    engine would pick for the largest T, composed once per T."""
    largest = max(steps_list)
    half_width = tail_half_width(largest, smallest_delta)
    tail_mass = TAIL_FRACTION * smallest_delta
    step = initial_grid_step([(pair, largest)], None, half_width)
    profiles = [UpperProfile(steps) for steps in steps_list]
    for direction in DIRECTIONS:
        _, plds, _ = compose_fitting([(pair, largest)], direction, step, UPPER, half_width, tail_mass)
        single = plds[0][0]
        for profile in profiles:
            profile.composed[direction] = compose([(single, profile.steps)], tail_mass)
    return profiles


def record_profile(setting: GroupSetting, delta: float) -> UpperProfile:
    """The certified per-record (k = 1) profile, for δ₁ down to δ·1e-12."""
    record = setting.with_k(1)
    return upper_profiles(worst_case_pair(record), [setting.steps],
                          delta * _SMALLEST_DELTA_FACTOR)[0]


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
                  smallest_delta: float) -> GroupConversion:
    """The smallest kε₁ over δ₁ ∈ [smallest_delta, δ/k] with k e^{(k−1)ε₁(δ₁)} δ₁ ≤ δ.

    ε₁(δ₁) (``profile``) falls as δ₁ grows, so the largest feasible δ₁ is best: scan
    ln δ₁ downward from ln(δ/k) and bisect between the first feasible point and the one
    above it. Every returned value satisfies the constraint with the ε₁ it reports.
    """
    log_delta = math.log(delta)
    if k == 1:
        epsilon = profile(delta)
        return GroupConversion(epsilon, epsilon, delta, delta)

    def feasible(log_record_delta: float) -> float | None:
        record_epsilon = profile(math.exp(log_record_delta))
        if not math.isfinite(record_epsilon):
            return None
        if _group_log_delta(k, record_epsilon, math.exp(log_record_delta)) <= log_delta:
            return record_epsilon
        return None

    top = log_delta - math.log(k)
    bottom = math.log(smallest_delta)
    above = None
    found = None
    point = top
    while point >= bottom:
        record_epsilon = feasible(point)
        if record_epsilon is not None:
            found = (point, record_epsilon)
            break
        above = point
        point -= _SCAN_STEP_NATS
    if found is None:
        return GroupConversion(None, None, None, None)
    if above is not None:
        low, high = found[0], above  # feasible at low, not at high
        for _ in range(_BISECTIONS):
            middle = 0.5 * (low + high)
            record_epsilon = feasible(middle)
            if record_epsilon is not None:
                low, found = middle, (middle, record_epsilon)
            else:
                high = middle
            if high - low < _BISECTION_WIDTH_NATS:
                break
    log_record_delta, record_epsilon = found
    record_delta = math.exp(log_record_delta)
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
        accountant=GROUP_CONVERSION,
        epsilon=conversion.epsilon,
        certified=True,
        notes=("group privacy of (ε, δ)-DP applied to the certified k = 1 bound: per record "
               "(ε₁, δ₁) → (kε₁, k·e^((k−1)ε₁)·δ₁), δ₁ chosen to minimise kε₁",),
        details={"record_epsilon": conversion.record_epsilon,
                 "record_delta": conversion.record_delta,
                 "group_delta": conversion.group_delta},
    )


# ------------------------------------------------------------------------- all methods
def group_epsilons(setting: GroupSetting, k_values: Sequence[int], delta: float,
                   methods: Sequence[str] = METHODS,
                   tolerance: float = DEFAULT_TOLERANCE) -> list[tuple[int, EpsilonResult]]:
    """(k, result) for every k and method, k-major; the per-record profile is shared."""
    delta = check_delta(delta)
    unknown = [name for name in methods if name not in METHODS]
    if unknown:
        raise DpcalcError(f"--method must be one of {', '.join(METHODS)}, all; got {unknown[0]!r}")
    settings = [setting.with_k(k) for k in k_values]
    profile = record_profile(setting, delta) if GROUP_CONVERSION in methods else None
    results = []
    for each in settings:
        for name in methods:
            if name == PB:
                result = pb_epsilon(each, delta, tolerance)
            elif name == RDP_OVERAPPROX:
                result = rdp_overapprox_epsilon(each, delta)
            elif name == GROUP_CONVERSION:
                result = group_conversion_epsilon(each, delta, profile)
            else:
                result = rdp_group_epsilon(each, delta)
            results.append((each.k, result))
    return results


# ------------------------------------------------------------------------- sweeps
def pb_epsilon_over_steps(setting: GroupSetting, steps_list: Sequence[int],
                          delta: float) -> list[float]:
    """Certified pb upper ε for each T (one discretisation, one composition per T)."""
    delta = check_delta(delta)
    return [profile.epsilon(delta)
            for profile in upper_profiles(worst_case_pair(setting), steps_list, delta)]


def rdp_overapprox_over_steps(setting: GroupSetting, steps_list: Sequence[int],
                              delta: float, orders: Sequence[float] = DEFAULT_ORDERS) -> list[float]:
    """rdp-overapprox ε for each T (the per-step RDP computed once)."""
    delta = check_delta(delta)
    rate, sigma = overapprox_parameters(setting)
    orders = np.asarray(orders, dtype=float)
    per_step = rdp_subsampled_gaussian(rate, sigma, orders)
    return [rdp_to_epsilon_improved(orders, steps * per_step, delta)[0] for steps in steps_list]


def conversion_over_steps(setting: GroupSetting, k_values: Sequence[int], steps_list: Sequence[int],
                          delta: float) -> dict[int, list[float | None]]:
    """group-conversion ε for each k and T (None where there is no certificate); the
    per-record profiles are computed once for all k."""
    delta = check_delta(delta)
    smallest = delta * _SMALLEST_DELTA_FACTOR
    profiles = upper_profiles(worst_case_pair(setting.with_k(1)), steps_list, smallest)
    return {k: [convert_group(profile.epsilon, k, delta, smallest).epsilon for profile in profiles]
            for k in k_values}


# ------------------------------------------------------------------------- calibration
_SEARCH_TOLERANCE = 1e6  # pb on its first grid: already certified, only less tight
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
    """σ that protects k records at (target ε, δ) by the pb bound (calibrate.py's search).

    The search runs pb on its first grid (any gap accepted: the upper bound is certified);
    the σ found is re-checked at ``tolerance`` and nudged up in the rare case that the
    finer grid reports more than the target."""
    from dpcalc.accounting.calibrate import calibrate_noise_multiplier

    target = check_positive(target_epsilon, "--target-epsilon")
    delta = check_delta(delta)

    def search_epsilon(sigma: float) -> float:
        each = setting.with_sigma(sigma)
        return epsilon_bounds([(worst_case_pair(each), each.steps)], delta, _SEARCH_TOLERANCE).upper

    # The seed's over-approximation is an upper bound (module doc): its σ is on the safe
    # side of pb's, and usually within a factor of two.
    def overapprox_epsilon(sigma: float) -> float:
        return rdp_overapprox_epsilon(setting.with_sigma(sigma), delta).epsilon

    try:
        high_guess = calibrate_noise_multiplier(overapprox_epsilon, target, precision=1e-2).sigma
    except (DpcalcError, ArithmeticError):
        high_guess = None
    low_guess = None if high_guess is None else high_guess / 2.0
    found = calibrate_noise_multiplier(search_epsilon, target, low_guess=low_guess,
                                       high_guess=high_guess, precision=precision,
                                       target_flag="--target-epsilon")
    sigma = found.sigma
    evaluations = found.evaluations
    for attempt in range(_MAX_BUMPS):
        result = pb_epsilon(setting.with_sigma(sigma), delta, tolerance)
        evaluations += 1
        if result.epsilon <= target:
            return GroupSigma(setting.k, sigma, result, evaluations)
        sigma *= 1.0 + precision * 2.0**attempt
    raise DpcalcError(f"--target-epsilon {target:g}: could not certify a noise multiplier "
                      f"near σ = {sigma:.6g} for k = {setting.k}")


__all__ = [
    "GROUP_CONVERSION", "HYPERGEOMETRIC", "MAX_GROUP_SIZE", "METHODS", "PB", "POISSON",
    "RDP_GROUP", "RDP_OVERAPPROX", "SAMPLINGS", "GroupConversion", "GroupSetting", "GroupSigma",
    "UpperProfile", "calibrate_group_sigma", "conversion_over_steps", "convert_group",
    "group_conversion_epsilon", "group_epsilons", "group_weights", "overapprox_parameters",
    "pb_epsilon", "pb_epsilon_over_steps", "rdp_group_epsilon", "rdp_overapprox_epsilon",
    "rdp_overapprox_over_steps", "record_profile", "upper_profiles", "worst_case_densities", "worst_case_pair",
]
