"""Group privacy: DP-SGD privacy for k protected records, per model (sampler + adjacency).

k protected records are added to (or removed from) the training set; each step clips
gradients to norm C = 1 and adds N(0, σ²). J = how many of them a batch holds.

* Poisson sampling (the default): J ~ Binomial(k, q), and the dominating pair is
  (Σ_j P[J=j]·N(j, σ²), N(0, σ²)) in both orders — the rest of the batch is the same
  with and without the k records.
* Fixed-size batches of B out of N: a protected record in the batch displaces another,
  so component j moves by up to 2j. The pair is (Σ_j h_j N(2j, σ²), N(0, σ²)) in both
  orders, with h = Hypergeom(N, k, B) (D′ = D minus the k records) and also with
  h′ = Hypergeom(N + k, k, B) (D′ = D plus them); the larger ε counts. Proof: couple the
  batches through one random order of D (D′'s batch takes its j protected records plus
  the first B − j of that order, D's batch the first B), so given the order each step is
  (Σ_c w_c N(d_c), N(0)) with |d_c| ≤ 2j(c). Every hockey-stick divergence, in either
  order, is E_Q[φ(Σ_c w_c Y_c)] with φ convex and Y_c = exp(⟨d_c, X⟩/σ² − |d_c|²/2σ²),
  X ~ Q; a comonotone sum is the largest in convex order given its marginals, and each Y_c
  grows in convex order with |d_c| (Dhaene, Denuit, Goovaerts, Kaas, Vyncke 2002,
  "The concept of comonotonicity", Thm 7 and its corollaries), so aligned shifts of full
  length 2j are the worst case. k = 1 is exactly ``dpcalc epsilon --sampling fixed``.
* ``seed`` — seed 000's pair (Σ_j h_j N(j, σ²), N(0, σ²)), h = Hypergeom(N, k, B). It
  assumes an absent protected record leaves its batch slot empty; with a FIXED batch size
  it displaces another record instead, so this pair is NOT a certificate for fixed-size
  batches (the brute-force test shows it falling below an explicit attack). Kept, under
  its own name, as the seed's model.

Replace-one: for k > 1 no dominating pair is proven here, so pb and rdp-overapprox do not
apply; group-conversion and rdp-group (chains of k single-record changes) do, from the
k = 1 guarantee of the model. Other methods live in group_bounds.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from dpcalc.pb.buckets import DEFAULT_TOLERANCE, PldBounds, check_consistent, epsilon_bounds
from dpcalc.models.mixture import GaussianMixturePair
from dpcalc.pb.profiles import upper_profiles
from dpcalc.accountants.result import EpsilonResult, upper_text
from dpcalc.models.samplers import (ADD_REMOVE, POISSON, REPLACE_ONE, SIMPLE_SAMPLINGS, model_label,
                                    parse_adjacency, parse_sampling)
from dpcalc.models.schedule import Phase
from dpcalc.models.subsampling import hypergeometric_weights, poisson_weights
from dpcalc.models.worst_case import worst_case
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_delta, check_noise_multiplier, check_positive

PB = "pb"
SEED = "seed"
RDP_OVERAPPROX = "rdp-overapprox"
GROUP_CONVERSION = "group-conversion"
RDP_GROUP = "rdp-group"
METHODS = (PB, SEED, RDP_OVERAPPROX, GROUP_CONVERSION, RDP_GROUP)
DEFAULT_METHODS = (PB, RDP_OVERAPPROX, GROUP_CONVERSION, RDP_GROUP)

# The mixture has k + 1 components evaluated on grids of up to 2^18 points: memory and
# time grow with k, and ε at k = 64 is already far beyond any useful budget.
MAX_GROUP_SIZE = 64

SEED_NOTE = ("the shift-j pair (--method seed), NOT a certificate for this run: "
             "hypergeometric weights with shift j assume an absent protected record leaves "
             "its batch slot empty; with "
             "fixed-size batches it displaces another record (shift up to 2j)")


@dataclass(frozen=True)
class GroupSetting:
    """k protected records; batches of ``batch_size`` out of ``dataset_size`` (Poisson:
    q = B/N), ``steps`` steps with noise multiplier σ, under ``sampling``/``adjacency``."""

    k: int
    batch_size: int
    dataset_size: int
    noise_multiplier: float
    steps: int
    sampling: str = POISSON
    adjacency: str = ADD_REMOVE

    def __post_init__(self) -> None:
        dataset = check_count(self.dataset_size, "--dataset-size")
        batch = check_count(self.batch_size, "--batch-size")
        k = check_count(self.k, "--k", maximum=MAX_GROUP_SIZE)
        if batch > dataset:
            raise DpcalcError(f"--batch-size must be <= --dataset-size ({dataset}); got {batch}")
        if k > dataset:
            raise DpcalcError(f"--k must be <= --dataset-size ({dataset}); got {k}")
        set_field = object.__setattr__
        set_field(self, "k", k)
        set_field(self, "batch_size", batch)
        set_field(self, "dataset_size", dataset)
        set_field(self, "noise_multiplier", check_noise_multiplier(self.noise_multiplier))
        set_field(self, "steps", check_count(self.steps, "--steps", maximum=10**9))
        set_field(self, "sampling", parse_sampling(self.sampling, allowed=SIMPLE_SAMPLINGS))
        set_field(self, "adjacency", parse_adjacency(self.adjacency,
                                                            allowed=(ADD_REMOVE, REPLACE_ONE)))

    @property
    def sampling_rate(self) -> float:
        """q = B/N: the chance that one given record is in a batch."""
        return self.batch_size / self.dataset_size

    @property
    def model(self) -> str:
        return model_label(self.sampling, self.adjacency)

    def record_phase(self) -> Phase:
        """The k = 1 run under the same model (what ``dpcalc epsilon`` accounts)."""
        return Phase.from_batches(self.batch_size, self.dataset_size, self.noise_multiplier,
                                  self.steps, self.sampling, self.adjacency)

    def with_k(self, k: int) -> "GroupSetting":
        return replace(self, k=k)

    def with_sigma(self, noise_multiplier: float) -> "GroupSetting":
        return replace(self, noise_multiplier=noise_multiplier)

    def with_steps(self, steps: int) -> "GroupSetting":
        return replace(self, steps=steps)


# ---------------------------------------------------------------------------- pairs
@dataclass(frozen=True)
class MixtureSpec:
    """(Σ_j weights[j]·N(shift·j, σ²), N(0, σ²)): the pair, in units of the clip norm."""

    weights: np.ndarray
    shift: float
    noise_multiplier: float

    def pair(self, prune: float = 0.0) -> GaussianMixturePair:
        # N(shift·j, σ²) vs N(0, σ²) is N(j, (σ/shift)²) vs N(0, (σ/shift)²), scaled.
        return GaussianMixturePair(self.weights, self.noise_multiplier / self.shift, prune)


def prune_level(delta: float, steps: int) -> float:
    """Top mixture components lighter than this add at most 1e-15·δ to δ over the run."""
    return 1e-15 * delta / steps


def _record_weights(setting: GroupSetting) -> np.ndarray:
    q = setting.sampling_rate
    return np.array([1.0 - q, q])


def mixture_specs(setting: GroupSetting) -> list[MixtureSpec]:
    """The add/remove mixtures whose composition bounds the group (module doc); the
    largest ε over them is the answer. Replace-one: only k = 1 (see pb_epsilon)."""
    sigma, k = setting.noise_multiplier, setting.k
    if setting.sampling == POISSON:
        weights = _record_weights(setting) if k == 1 else poisson_weights(k, setting.sampling_rate)
        return [MixtureSpec(weights, 1.0, sigma)]
    if k == 1:  # rate B/N dominates B/(N + 1) (worst_case.py)
        return [MixtureSpec(_record_weights(setting), 2.0, sigma)]
    batch, dataset = setting.batch_size, setting.dataset_size
    return [MixtureSpec(hypergeometric_weights(k, batch, dataset), 2.0, sigma),
            MixtureSpec(hypergeometric_weights(k, batch, dataset + k), 2.0, sigma)]


def seed_spec(setting: GroupSetting) -> MixtureSpec:
    """Seed 000's pair (module doc): hypergeometric weights, shift j."""
    if setting.k == 1:
        return MixtureSpec(_record_weights(setting), 1.0, setting.noise_multiplier)
    return MixtureSpec(hypergeometric_weights(setting.k, setting.batch_size, setting.dataset_size),
                       1.0, setting.noise_multiplier)


def worst_case_densities(spec: MixtureSpec, outputs) -> tuple[np.ndarray, np.ndarray]:
    """Densities of N(0, σ²) and the mixture at ``outputs`` (for the distributions figure)."""
    x = np.asarray(outputs, dtype=float)
    sigma = spec.noise_multiplier
    norm = 1.0 / (sigma * math.sqrt(2.0 * math.pi))
    density_a = norm * np.exp(-0.5 * (x / sigma) ** 2)
    shifts = spec.shift * np.arange(spec.weights.size, dtype=float)[:, None]
    density_b = norm * np.sum(spec.weights[:, None] * np.exp(-0.5 * ((x[None, :] - shifts) / sigma) ** 2),
                              axis=0)
    return density_a, density_b


def overapprox_parameters(setting: GroupSetting) -> tuple[float, float]:
    """(q′, σ/(s·k)) of the seed's over-approximation, each rounded to the safe side.

    q′ = max over the model's mixtures of P[J ≥ 1] (summed from the weights, no
    cancellation) rounded up; σ/(s·k) rounded down (RDP grows in q and falls in σ)."""
    specs = mixture_specs(setting)
    rate = max(float(np.sum(spec.weights[1:])) for spec in specs)
    sigma = setting.noise_multiplier / (specs[0].shift * setting.k)
    if setting.k > 1:
        rate = min(1.0, rate * (1.0 + 1e-13))
    if setting.k > 1 or specs[0].shift != 1.0:
        sigma = float(np.nextafter(sigma, 0.0))
    return rate, sigma


def rdp_upper(setting: GroupSetting, delta: float) -> float | None:
    """A certified upper ε by Rényi DP for the model's group pair, or None: k = 1, the rdp
    accountant on the record's run (what `dpcalc epsilon`'s pb reports where it is tighter
    than its numeric bound); k > 1 under add/remove, the seed's over-approximation
    (rdp-overapprox: a post-processing argument, bounds.py). pb reports the tighter of
    this and its own upper bound, as the pb accountant does (issue 16): at δ = 1e-300 the
    numeric composition's float round-off leaves pb's own bound at ∞ (issue 30)."""
    from dpcalc.accountants.rdp import rdp_subsampled_gaussian
    from dpcalc.accountants.rdp_accountants import RdpAccountant
    from dpcalc.accountants.rdp_conversion import DEFAULT_ORDERS, rdp_to_epsilon_improved
    from dpcalc.models.schedule import Schedule

    if setting.k == 1:
        return RdpAccountant().epsilon(Schedule((setting.record_phase(),)), delta).epsilon
    if setting.adjacency != ADD_REMOVE:
        return None
    rate, sigma = overapprox_parameters(setting)
    total = setting.steps * rdp_subsampled_gaussian(rate, sigma, DEFAULT_ORDERS)
    return rdp_to_epsilon_improved(DEFAULT_ORDERS, total, delta)[0]


# ------------------------------------------------------------------------------- pb
def _max_bounds(spec_list: list[MixtureSpec], steps: int, delta: float, tolerance: float):
    """(bounds with the largest upper, largest lower) over the mixtures."""
    # k = 1 must equal `dpcalc epsilon` digit for digit: only groups start coarse
    group = spec_list[0].weights.size > 2
    found = [epsilon_bounds([(spec.pair(prune_level(delta, steps)), steps)], delta, tolerance,
                            coarse_start=group)
             for spec in spec_list]
    top = max(found, key=lambda bounds: bounds.upper)
    return top, max(bounds.lower for bounds in found)


def _pb_result(name: str, bounds: PldBounds, lower: float, tolerance: float, notes: list,
               details: dict, rdp: float | None = None) -> EpsilonResult:
    """pb's bounds, with ``rdp`` (a certified upper bound on the same pair) where tighter."""
    upper, source = bounds.upper, "pb"
    if rdp is not None:
        check_consistent(rdp, lower, "ε (rdp's upper bound)")
        if rdp < upper:
            upper, source = rdp, "rdp"
            notes.append(f"upper bound from rdp (Rényi DP, certified), tighter than pb's "
                         f"numeric {upper_text(bounds.upper)} here; the lower bound is pb's")
    if not bounds.converged:
        notes.append(f"gap {upper - lower:.3g} exceeds tolerance {tolerance:g}·ε within "
                     "the work limit; both bounds remain certified")
    details.update({f"epsilon_{d}": upper for d, (upper, _) in bounds.by_direction.items()})
    details.update(grid_step=bounds.grid_step, epsilon_pb_upper=bounds.upper, upper_source=source)
    return EpsilonResult(name, upper, True, epsilon_lower=lower, notes=tuple(notes),
                         details=details)


def pb_epsilon(setting: GroupSetting, delta: float,
               tolerance: float = DEFAULT_TOLERANCE) -> EpsilonResult:
    """Certified upper and lower ε of the model's group pair composed ``steps`` times."""
    delta = check_delta(delta)
    tolerance = check_positive(tolerance, "--tolerance")
    if setting.adjacency != ADD_REMOVE:
        if setting.k > 1:
            return EpsilonResult(PB, None, True, notes=(
                "not applicable: no dominating pair for k > 1 records under replace-one is "
                "proven here; see group-conversion and rdp-group",))
        bounds = epsilon_bounds([(worst_case(setting.record_phase()).pair, setting.steps)], delta,
                                tolerance)
        # fixed-size replace-one/zero-out: that pair is not attained; the certified lower
        # bound is an explicit run's (lower_instances.py)
        from dpcalc.models.lower_instances import lower_instance
        from dpcalc.models.schedule import Schedule

        found = lower_instance(Schedule((setting.record_phase(),)))
        rdp = rdp_upper(setting, delta)
        if found is None:
            return _pb_result(PB, bounds, bounds.lower, tolerance, [], {}, rdp)
        lower = epsilon_bounds(found[0], delta, tolerance).lower
        return _pb_result(PB, bounds, lower, tolerance, list(found[1]), {}, rdp)
    specs = mixture_specs(setting)
    bounds, lower = _max_bounds(specs, setting.steps, delta, tolerance)
    details = {"weights": [float(w) for w in specs[0].weights], "shift": specs[0].shift}
    return _pb_result(PB, bounds, lower, tolerance, [], details, rdp_upper(setting, delta))


def seed_epsilon(setting: GroupSetting, delta: float,
                 tolerance: float = DEFAULT_TOLERANCE) -> EpsilonResult:
    """pb on seed 000's pair: certified for that pair only, which is not this run's model."""
    delta = check_delta(delta)
    tolerance = check_positive(tolerance, "--tolerance")
    spec = seed_spec(setting)
    bounds, lower = _max_bounds([spec], setting.steps, delta, tolerance)
    result = _pb_result(SEED, bounds, lower, tolerance, [SEED_NOTE],
                        {"weights": [float(w) for w in spec.weights], "applies": False})
    # Not a bound for the user's model: report it as such (certified only for the seed's pair).
    return replace(result, certified=False)


def pb_epsilon_over_steps(setting: GroupSetting, steps_list, delta: float,
                          seed: bool = False) -> list[float]:
    """Certified pb upper ε (seed: the seed pair's) for each T: one discretisation per
    mixture and direction, one composition per T (profiles.upper_profiles)."""
    delta = check_delta(delta)
    if seed:
        pairs = [seed_spec(setting).pair()]
    elif setting.adjacency != ADD_REMOVE:
        if setting.k > 1:
            return [None for _ in steps_list]
        pairs = [worst_case(setting.record_phase()).pair]
    else:
        pairs = [spec.pair() for spec in mixture_specs(setting)]
    per_pair = [upper_profiles(pair, steps_list, delta) for pair in pairs]
    return [max(profiles[index].epsilon(delta) for profiles in per_pair)
            for index in range(len(steps_list))]


__all__ = [
    "DEFAULT_METHODS", "GROUP_CONVERSION", "MAX_GROUP_SIZE", "METHODS", "PB", "RDP_GROUP",
    "RDP_OVERAPPROX", "SEED", "SEED_NOTE", "GroupSetting", "MixtureSpec", "mixture_specs",
    "pb_epsilon", "pb_epsilon_over_steps", "seed_epsilon", "seed_spec", "worst_case_densities",
]
