"""Certified bounds for the epoch samplers: shuffle, shuffle-once, balls-in-bins,
sequential, once-per-epoch (their proofs: models/epoch_orders.py).

Their certificate is not the composition of one pair per step, so each bound says what it
is. With b = ⌈N/B⌉ steps per epoch (⌈1/q⌉ when only q is given; ⌊N/B⌋ with drop_last), T
steps touch E = ⌈T/b⌉ epochs, and in each epoch every record is in at most one step.

UPPER (all, no amplification; balls-in-bins also gets allocation.py's bounds — exact Rényi
DP, the recursive bound, Feldman & Shenfeld 2025's decomposition, and for replace-one their
chain through D∖{x} — and the smaller is reported). Zero-out: given the batch randomness
(permutations or
allocations, the same law for both datasets), a run is an adaptive composition of Gaussian
mechanisms of which at most E have sensitivity C (the step holding the record) and the rest
0; so it is (√E/σ)-GDP (Dong, Roth, Su 2022, Cor. 3.3), and mixing over the batch
randomness keeps the bound (joint convexity of the hockey-stick divergence). Replace-one:
the same with sensitivity 2C (both records in the same slot). Balls-in-bins add/remove: an
added record's allocation is independent of the others', so nothing is displaced and Δ = C.
δ(ε) is the closed form of Balle & Wang 2018, Thm 8 at μ = Δ√E/σ. For shuffle and
shuffle-once the number K of epochs whose observed steps hold the record has a known law,
and δ(ε) ≤ E[δ_{μ_K}(ε)] (epoch_orders.py (B); with a partial last epoch this is
w·δ_{μ_E} + (1 − w)·δ_{μ_{E−1}}, w = rB/N, proved there); the smaller is reported.
Samplers that fix positions in an order under add/remove are not applicable: inserting a
record shifts every later position (the nearest certified model is zero-out).

LOWER (max_pair.py). An explicit instance and the max-of-outputs test of Chua et al. 2024
(ICML, §4), composed over epochs by pb's certified lower bound:
- shuffle, zero-out: others at −C, the record at +C vs ⊥ ⇒ shifts (2, 1) (Chua et al.'s pair);
  replace-one: the larger of (2, 1) and (2, 0) (the replacement at 0 or at −C);
- shuffle-once: T//b epochs of one permutation see each slot's sum repeatedly; averaging the
  epochs is a post-processing, giving one epoch at σ/√(T//b);
- once-per-epoch: shuffle's instance and pair, valid for ANY order law (epoch_orders.py (D));
- sequential: the exact E-fold Gaussian (epoch_orders.py (C)): lower = upper;
- balls-in-bins (nothing displaced; others at 0): add/remove and zero-out (1, 0), replace-one
  the larger of (1, −1) and (1, 0).
A last partial epoch of r steps enters (reshuffled samplers) with weight r·B/N (shuffle,
once-per-epoch) or r/b (balls-in-bins): the chance that the record is in one of its steps;
with drop_last every epoch has weight bB/N.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dpcalc.accountants.allocation import AllocationBound
from dpcalc.accountants.result import upper_text
from dpcalc.pb.buckets import check_consistent, delta_bounds, epsilon_bounds
from dpcalc.models.epoch_orders import (berry_esseen_note, epoch_count_law, epochs_touched,
                                        gdp_delta_lower, gdp_epsilon_lower, mixture_delta_upper,
                                        mixture_epsilon, presence, sensitivity, steps_per_epoch)
from dpcalc.models.gaussian import gdp_delta_upper, gdp_epsilon
from dpcalc.models.gaussian_sigma import analytic_gaussian_sigma
from dpcalc.models.max_pair import max_statistic_pair
from dpcalc.models.mixture import GaussianMixturePair
from dpcalc.models.samplers import (ADD_REMOVE, BALLS_IN_BINS, EPOCH_MODELS, EPOCH_SAMPLINGS,
                                    NEAREST_WHY, ONCE_PER_EPOCH, ORDER_SAMPLINGS, POISSON,
                                    REPLACE_ONE, SEQUENTIAL, SHUFFLE, SHUFFLE_ONCE, model_label,
                                    nearest_certified)
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.models.worst_case import worst_case

# upper/lower above this ratio: the output says plainly that the interval is wide.
WIDE_RATIO = 1.5

ORDER_ADD_REMOVE = (
    "not applicable: {label} under add/remove-one adjacency have no certified bound (an "
    "inserted record shifts every later position of the order, so many batches change); "
    "--adjacency zero-out (a record replaced by a null record, as dp_accounting's "
    "REPLACE_SPECIAL) or replace-one have one")

_UPPER_METHOD = ("certified upper: {epochs}-fold Gaussian without amplification (each record in one "
                 "step per epoch, sensitivity {sensitivity:g}C; Dong, Roth, Su 2022 Cor. 3.3)")
_MIXTURE_METHOD = ("certified upper: Gaussian-DP mixed over the epochs that hold the record "
                   "(K = {low}…{high} of {epochs}: E[δ_{{μ_K}}], μ_k = {sensitivity}√k/σ; "
                   "proof: dpcalc.models.epoch_orders, (B); docs/models.md), below the "
                   "{epochs}-fold Gaussian")
_EXACT_METHOD = ("certified upper = lower: exactly {epochs}-fold Gaussian (the same known order "
                 "every epoch: no amplification, and an adversary attains it; sensitivity "
                 "{sensitivity:g}C)")
_LOWER_METHOD = {
    SHUFFLE: "certified lower: Chua et al. 2024's max-of-outputs pair, composed over epochs",
    SHUFFLE_ONCE: "certified lower: Chua et al. 2024's max-of-outputs pair, one permutation "
                  "(epochs averaged: σ/√epochs)",
    BALLS_IN_BINS: "certified lower: max-of-outputs pair of balls-in-bins, composed over epochs",
    ONCE_PER_EPOCH: "certified lower: Chua et al. 2024's max-of-outputs pair, composed over "
                    "epochs (its law is the same wherever the record sits: valid for any order "
                    "law; dpcalc.models.epoch_orders (D))",
    SEQUENTIAL: "certified lower: the exact run (others' gradients 0, the record's +C every "
                "epoch), the same Gaussian-DP closed form",
}


def is_epoch_schedule(schedule: Schedule) -> bool:
    return any(phase.sampling in EPOCH_SAMPLINGS for phase in schedule.phases)


def epoch_not_applicable(schedule: Schedule) -> str | None:
    """Why pb has no bound for this epoch-sampler run (None when it has one)."""
    if not schedule.is_single_phase:
        return ("not applicable: pb bounds shuffled and balls-in-bins runs of one phase only "
                "(give one --sampling for the whole run)")
    phase = schedule.phases[0]
    if (phase.sampling, phase.adjacency) in EPOCH_MODELS:
        return None
    if phase.adjacency == ADD_REMOVE and phase.sampling in ORDER_SAMPLINGS:
        label = SAMPLING_WORDS.get(phase.sampling, phase.sampling)
        return ORDER_ADD_REMOVE.format(label=label)
    return f"not applicable: pb has no bound for {model_label(phase.sampling, phase.adjacency)}"


def nearest_schedule(schedule: Schedule) -> Schedule | None:
    """The same run under the nearest model that has a certificate, where this one has none
    (samplers.NEAREST_ADJACENCY: an order sampler under add/remove → zero-out); else None."""
    from dataclasses import replace

    if not schedule.is_single_phase:
        return None
    phase = schedule.phases[0]
    adjacency = nearest_certified(phase.sampling, phase.adjacency)
    return None if adjacency is None else Schedule((replace(phase, adjacency=adjacency),))


SAMPLING_WORDS = {SHUFFLE: "shuffled batches", SHUFFLE_ONCE: "batches of one shuffle",
                  SEQUENTIAL: "sequential batches", ONCE_PER_EPOCH: "once-per-epoch batches"}


def nearest_note(adjacency: str, interval: str) -> str:
    """The note beside a not-applicable row: the certified figure under the nearest model."""
    return (f"nearest model with a certificate: {adjacency} adjacency, {interval} for the same "
            f"run — {NEAREST_WHY}")


def upper_mu(phase: Phase) -> tuple[float, int]:
    """(μ of the no-amplification GDP bound, epochs touched E = ⌈T/b⌉)."""
    epochs, _ = epochs_touched(phase)
    return sensitivity(phase) * math.sqrt(epochs) / phase.noise_multiplier, epochs


def _shift_pairs(phase: Phase) -> list[tuple[float, float]]:
    """(shift under D, shift under D′) of the explicit instances (module doc); sequential:
    the record's one shift Δ against 0 (its exact run)."""
    if phase.sampling == SEQUENTIAL:
        return [(sensitivity(phase), 0.0)]
    if phase.sampling == BALLS_IN_BINS:
        return [(1.0, -1.0), (1.0, 0.0)] if phase.adjacency == REPLACE_ONE else [(1.0, 0.0)]
    return [(2.0, 1.0), (2.0, 0.0)] if phase.adjacency == REPLACE_ONE else [(2.0, 1.0)]


def _lower_phases(phase: Phase, shifts: tuple[float, float]):
    """The (pair, epochs) list whose composition's lower bound bounds the run from below."""
    per_epoch = steps_per_epoch(phase)
    full, rest = divmod(phase.steps, per_epoch)
    sigma = phase.noise_multiplier
    if phase.sampling == SEQUENTIAL:  # E steps of the Gaussian mechanism, shift Δ (exact)
        return [(GaussianMixturePair.subsampled_gaussian(1.0, sigma / shifts[0]),
                 upper_mu(phase)[1])]
    if phase.sampling == SHUFFLE_ONCE and full >= 1:
        return [(max_statistic_pair(sigma / math.sqrt(full), per_epoch, *shifts), 1)]
    # the chance the record is in an epoch's observed steps (epoch_orders.presence): 1, or
    # bB/N with drop_last; in the last `rest` steps rest/b (balls-in-bins) or rest·B/N
    always, last = presence(phase)
    phases = ([(max_statistic_pair(sigma, per_epoch, *shifts, weight=always), full)]
              if full else [])
    if rest and (phase.sampling != SHUFFLE_ONCE or not full):
        phases.append((max_statistic_pair(sigma, rest, *shifts, weight=last), 1))
    return phases


def lower_epsilon(phase: Phase, delta: float, tolerance: float) -> float:
    """The largest certified lower bound over the explicit instances (sequential: the exact
    closed form, from below)."""
    if phase.sampling == SEQUENTIAL:
        return gdp_epsilon_lower(delta, upper_mu(phase)[0])
    best = 0.0
    for instance in lower_instances(phase):
        # a coarse first grid (buckets.epsilon_hint): the lower bound moves in the 4th digit
        bounds = epsilon_bounds(instance, delta, tolerance, coarse_start=True)
        best = max(best, bounds.lower)
    return best


def lower_instances(phase: Phase) -> list[list]:
    """Every explicit instance (a (pair, count) list to compose) whose certified lower bound
    bounds the run from below; the caller takes the largest."""
    instances = []
    for shifts in _shift_pairs(phase):
        instances.append(_lower_phases(phase, shifts))
        if phase.sampling == SHUFFLE_ONCE and phase.steps > steps_per_epoch(phase):
            # the per-epoch max-of-outputs law does not depend on where the record sits, so
            # its product over epochs (once-per-epoch's instance, epoch_orders.py (D)) is an
            # instance of one reused permutation too; at times above its sum instance
            instances.append(_lower_phases(replace(phase, sampling=ONCE_PER_EPOCH), shifts))
    return instances


def poisson_reference(phase: Phase, delta: float, tolerance: float) -> float:
    """pb's certified ε for Poisson sampling at q = B/N, T steps (a reference that does NOT
    apply to the epoch sampler)."""
    poisson = Phase(phase.sampling_rate, phase.noise_multiplier, phase.steps, POISSON,
                    phase.adjacency)
    return epsilon_bounds([(worst_case(poisson).pair, phase.steps)], delta, tolerance).upper


@dataclass(frozen=True)
class EpochBounds:
    """Certified [lower, upper] for one epoch-sampler phase, with what each one is."""

    upper: float
    lower: float
    upper_source: str  # "gaussian-no-amplification" or "random-allocation"
    upper_method: str
    lower_method: str
    poisson_epsilon: float
    epochs: int
    steps_per_epoch: int

    @property
    def wide(self) -> bool:
        return self.lower <= 0.0 or self.upper > WIDE_RATIO * self.lower

    extra: tuple[str, ...] = ()

    def notes(self, sampling: str) -> tuple[str, ...]:
        poisson = (f"Poisson figure {upper_text(self.poisson_epsilon)} (q = B/N, same steps) does NOT "
                   f"apply to {sampling} batches: shown for comparison only")
        notes = [self.upper_method, self.lower_method, poisson, *self.extra]
        if self.wide:
            ratio = "∞" if self.lower <= 0 else f"{self.upper / self.lower:.3g}"
            notes.append(f"the certified interval is wide (upper/lower = {ratio}): the true ε lies "
                         f"between the two, and only the upper bound may be reported as ε")
        return tuple(notes)


def _allocation(phase: Phase, smallest_delta: float) -> AllocationBound | None:
    """allocation.py's bounds where they apply: balls-in-bins, any adjacency."""
    if phase.sampling != BALLS_IN_BINS:
        return None
    return AllocationBound(steps_per_epoch(phase), phase.noise_multiplier, upper_mu(phase)[1],
                           smallest_delta, phase.adjacency)


def upper_is_closed_form(phase: Phase) -> bool:
    """True where the certified upper bound is the no-amplification GDP closed form alone
    (shuffle, shuffle-once over whole epochs, sequential, once-per-epoch): σ then follows in
    closed form."""
    return phase.sampling != BALLS_IN_BINS and len(epoch_count_law(phase)) == 1


def _gaussian_method(phase: Phase) -> tuple[str, str]:
    """(source, method) of the Gaussian-DP upper bound: E-fold, its K-mixture, or exact."""
    _, epochs = upper_mu(phase)
    law = epoch_count_law(phase)
    if phase.sampling == SEQUENTIAL:
        return "gaussian-exact", _EXACT_METHOD.format(epochs=epochs,
                                                      sensitivity=sensitivity(phase))
    if len(law) > 1:
        return "gaussian-epoch-mixture", _MIXTURE_METHOD.format(
            low=law[0][0], high=law[-1][0], epochs=epochs,
            sensitivity="2" if sensitivity(phase) == 2.0 else "")
    return "gaussian-no-amplification", _UPPER_METHOD.format(epochs=epochs,
                                                             sensitivity=sensitivity(phase))


def gaussian_delta_upper(phase: Phase, epsilon: float) -> float:
    """The certified upper δ(ε) of Gaussian DP mixed over K (epoch_orders.py (A), (B)): the
    E-fold closed form where K = E."""
    law = epoch_count_law(phase)
    unit_mu = sensitivity(phase) / phase.noise_multiplier
    if len(law) == 1:
        return float(gdp_delta_upper(epsilon, upper_mu(phase)[0]))
    return mixture_delta_upper(epsilon, law, unit_mu)


def epoch_upper(phase: Phase, delta: float) -> tuple[float, str, str]:
    """(certified upper ε at ``delta``, its source, its method): the smaller of the certified
    upper bounds that apply — the value `dpcalc epsilon` reports."""
    mu, epochs = upper_mu(phase)
    law = epoch_count_law(phase)
    upper = gdp_epsilon(delta, mu)  # the E-fold Gaussian; Prop. 1's mixture where K varies
    if len(law) > 1:
        upper = min(upper, mixture_epsilon(delta, law, sensitivity(phase) / phase.noise_multiplier))
    source, method = _gaussian_method(phase)
    allocation = _allocation(phase, delta)
    if allocation is not None:
        decomposed = allocation.epsilon(delta)
        if decomposed < upper:
            upper, source, method = decomposed, "random-allocation", allocation.method(delta)
    return upper, source, method


def epoch_bounds(phase: Phase, delta: float, tolerance: float = 0.01) -> EpochBounds:
    """Certified upper and lower ε at ``delta`` for one epoch-sampler phase: the smaller of
    the certified upper bounds that apply."""
    _, epochs = upper_mu(phase)
    upper, source, method = epoch_upper(phase, delta)
    lower = lower_epsilon(phase, delta, tolerance)
    check_consistent(upper, lower, f"ε ({phase.sampling})")
    return EpochBounds(upper, lower, source, method, _LOWER_METHOD[phase.sampling],
                       poisson_reference(phase, delta, tolerance), epochs, steps_per_epoch(phase),
                       _extra_notes(phase))


def _extra_notes(phase: Phase) -> tuple[str, ...]:
    """Shuffle: why no amplification theorem is used (van Dijk & Ertan's regime check)."""
    return (berry_esseen_note(phase),) if phase.sampling == SHUFFLE else ()


def epoch_delta_upper(phase: Phase, epsilon: float) -> float:
    """The certified upper δ(ε): the GDP bound (mixed over K where known), or allocation.py's
    where smaller."""
    return _delta_upper(phase, epsilon)[0]


def _delta_upper(phase: Phase, epsilon: float) -> tuple[float, AllocationBound | None]:
    gaussian = gaussian_delta_upper(phase, epsilon)
    allocation = _allocation(phase, 1e-12)
    if allocation is None:
        return gaussian, None
    return min(gaussian, allocation.delta(epsilon)), allocation


@dataclass(frozen=True)
class EpochDeltaBounds:
    """Certified [lower, upper] δ at one ε for an epoch-sampler phase, labelled as
    :class:`EpochBounds` labels ε."""

    upper: float
    lower: float
    upper_source: str
    poisson_delta: float
    notes: tuple[str, ...]


def epoch_delta_bounds(phase: Phase, epsilon: float) -> EpochDeltaBounds:
    """δ(ε): the certified upper bound (epoch_delta_upper) and the explicit instances'
    certified lower bound (the largest over them), with the Poisson δ beside them as a
    reference that does NOT apply."""
    _, epochs = upper_mu(phase)
    gaussian = gaussian_delta_upper(phase, epsilon)
    upper, allocation = _delta_upper(phase, epsilon)
    if upper < gaussian:
        source, method = "random-allocation", allocation.method(upper)
    else:
        source, method = _gaussian_method(phase)
    if phase.sampling == SEQUENTIAL:
        lower = gdp_delta_lower(epsilon, upper_mu(phase)[0])
    else:
        lower = max(delta_bounds(instance, epsilon).lower for instance in lower_instances(phase))
    check_consistent(upper, lower, f"δ ({phase.sampling})")
    poisson = Phase(phase.sampling_rate, phase.noise_multiplier, phase.steps, POISSON,
                    phase.adjacency)
    poisson_delta = delta_bounds([(worst_case(poisson).pair, phase.steps)], epsilon).upper
    notes = [method, _LOWER_METHOD[phase.sampling],
             f"Poisson figure δ = {poisson_delta:.5g} (q = B/N, same steps) does NOT apply to "
             f"{phase.sampling} batches: shown for comparison only", *_extra_notes(phase)]
    if lower <= 0.0 or upper > WIDE_RATIO * lower:
        ratio = "∞" if lower <= 0 else f"{upper / lower:.3g}"
        notes.append(f"the certified interval is wide (upper/lower = {ratio}): the true δ lies "
                     f"between the two, and only the upper bound may be reported as δ")
    return EpochDeltaBounds(upper, lower, source, poisson_delta, tuple(notes))


def epoch_sigma(phase: Phase, target_epsilon: float, delta: float) -> float:
    """The σ at which the E-fold Gaussian upper bound is ``target_epsilon``: μ = Δ√E/σ must be
    the μ* of the Gaussian mechanism with (ε, δ), μ* = 1/σ_G (Balle & Wang 2018). The
    reported bound where not closed form (upper_is_closed_form) is at most this one's."""
    mu_at_unit_noise, _ = upper_mu(phase.with_noise_multiplier(1.0))
    return mu_at_unit_noise * analytic_gaussian_sigma(target_epsilon, delta)
