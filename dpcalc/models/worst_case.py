"""The worst case of one DP-SGD step under a model (sampler + adjacency): the one object
every accountant reads.

A step clips each gradient to norm C = 1 and adds N(0, σ²) to the batch sum. Per model:

| sampling | adjacency   | dominating pair (pb)                                | family   | rate | Δ |
|----------|-------------|-----------------------------------------------------|----------|------|---|
| poisson  | add-remove  | ((1−q)N(0)+qN(1), N(0)) and reverse                 | poisson  | q    | 1 |
| fixed    | add-remove  | ((1−γ)N(0)+γN(2), N(0)) and reverse                 | poisson  | γ    | 2 |
| poisson  | replace-one | (1−q)N(0)+qN(1) vs (1−q)N(0)+qN(−1)                  | replace  | q    | 2 |
| fixed    | replace-one | symmetrisation of ((1−γ)N(0)+γN(2), N(0))            | replace  | γ    | 2 |
| poisson  | zero-out    | ((1−q)N(0)+qN(1), N(0)) and reverse                 | poisson  | q    | 1 |
| fixed    | zero-out    | ((1−γ)N(0)+γN(2), (1−γ)N(0)+γN(1)) above 0, R1 below | replace  | γ    | 2 |
| truncated-poisson | any | revealed mixture: (1−t)·poisson pair at q + t·fixed pair at q′ | mixture | q | 2 |

Truncated Poisson (truncated.py): with t = P(at least M others drawn) the step is the
revealed mixture (revealed_mixture.py) of the Poisson pair of its adjacency at rate q and
the fixed-size pair of its adjacency at q′ = q·E[M/(K+1) | K ≥ M]; under add/remove one
such mixture per neighbour size (N − 1 and N others), as separate directions. Its
``components`` list, per instance, the (weight, WorstCase) of each branch for rdp.

γ = B/N. Zero-out (a record x replaced by a null record ⊥ with gradient 0): the batches
of both datasets are drawn alike (the same indices), and they differ only by g_x, |g_x| ≤ 1,
when x's index is drawn (probability q, resp. γ). Under Poisson sampling the rest of the
batch is independent of whether x is drawn, so mixing over it by joint convexity leaves
the Poisson-subsampled Gaussian pair at rate q, Δ = 1. Under fixed-size batches it is not
(given x drawn, the rest is a (B − 1)-subset; otherwise a B-subset), and that pair is NOT a
certificate (brute force: B = 1 of N = 10, σ = 1, T = 10 reaches ε ≥ 7.1 where it gives
2.85). Given x's slot drawn, x displaces another record (D against D′ moves by up to 2C),
but ⊥ moves the sum by at most C: the dominating pair (zero_out_pairs.py) splices the
explicit run's pair (others −C, x +C against ⊥: ((1−γ)N(0)+γN(2), (1−γ)N(0)+γN(1)), the
supremum of the first order by advanced joint convexity and a comonotonicity argument)
with R1 = the Poisson pair at γ mirrored (the second order's supremum); the replace-one
pair, which mirrors R2 = ((1−γ)N(0)+γN(2), N(0)) in both orders, covers zero-out too but
is looser. rdp keeps the replace-one bound (family replace).

"""
from __future__ import annotations

from dataclasses import dataclass, field

from dpcalc.models.mixture import GaussianMixturePair
from dpcalc.models.pairs import ReplaceOnePair, SymmetrisedPair
from dpcalc.models.revealed_mixture import RevealedMixturePair
from dpcalc.models.samplers import (ADD_REMOVE, FIXED, PAIR_SAMPLINGS, POISSON, REPLACE_ONE,
                                    TRUNCATED_POISSON, ZERO_OUT)
from dpcalc.models.schedule import Phase
from dpcalc.models.truncated import BASE_DIRECTION, truncations
from dpcalc.models.zero_out_pairs import fixed_zero_out_pair
from dpcalc.errors import DpcalcError, InvalidResult
from dpcalc.params import check_positive, check_sampling_rate, shown

POISSON_FAMILY = "poisson"
REPLACE_FAMILY = "replace"
MIXTURE_FAMILY = "mixture"


@dataclass(frozen=True)
class WorstCase:
    """One step's worst case: ``pair`` for numeric composition (its ``directions`` are the
    neighbouring instances, composed separately), and the closed-form view: the Gaussian
    mechanism with L2 sensitivity ``sensitivity`` (in clip norms) and noise multiplier
    ``noise_multiplier``, subsampled at ``sampling_rate``, bounded by the theorems of
    ``family``."""

    pair: object
    sampling_rate: float
    noise_multiplier: float
    sensitivity: float
    family: str
    why: str
    components: tuple = field(default=(), compare=False)  # mixture: per instance ((w, case), …)

    def __post_init__(self) -> None:
        try:
            self._check_fields()
        except DpcalcError as error:
            raise InvalidResult(str(error)) from None

    def _check_fields(self) -> None:
        if not all(hasattr(self.pair, name) for name in ("log_tails", "directions")):
            raise DpcalcError(f"WorstCase pair must be a dominating pair (e.g. "
                              f"GaussianMixturePair); got {shown(self.pair)}")
        set_field = object.__setattr__
        set_field(self, "sampling_rate", check_sampling_rate(self.sampling_rate, "sampling_rate"))
        set_field(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))
        set_field(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        for name in ("family", "why"):
            if not isinstance(getattr(self, name), str):
                raise DpcalcError(f"WorstCase {name} must be text; got {shown(getattr(self, name))}")

    @property
    def effective_noise_multiplier(self) -> float:
        """σ/Δ: the noise of the equivalent sensitivity-1 Gaussian."""
        return self.noise_multiplier / self.sensitivity


def worst_case(phase: Phase) -> WorstCase:
    """The dominating pair of one step of ``phase`` under its sampler and adjacency."""
    if not isinstance(phase, Phase):
        raise DpcalcError(f"worst_case takes a dpcalc Phase; got {type(phase).__name__}")
    if phase.sampling not in PAIR_SAMPLINGS:
        raise DpcalcError(f"--sampling {phase.sampling} has no dominating pair per step, which this "
                          f"needs (poisson, fixed or truncated-poisson); for {phase.sampling} batches `dpcalc epsilon`, "
                          "`delta`, `risk`, `report`, `sigma --epsilon` and `compare` give "
                          "certified bounds")
    if phase.sampling == TRUNCATED_POISSON:
        return _truncated_worst_case(phase)
    rate, sigma = phase.sampling_rate, phase.noise_multiplier
    key = (phase.sampling, phase.adjacency)
    if key == (POISSON, ADD_REMOVE):
        return WorstCase(GaussianMixturePair.subsampled_gaussian(rate, sigma), rate, sigma, 1.0,
                         POISSON_FAMILY, "Poisson-subsampled Gaussian (Mironov et al. 2019)")
    if key == (POISSON, ZERO_OUT):
        return WorstCase(GaussianMixturePair.subsampled_gaussian(rate, sigma), rate, sigma, 1.0,
                         POISSON_FAMILY, "Poisson, zero-out: the record's slot holds a null "
                         "record, shift C (dpcalc.models.worst_case)")
    if key == (FIXED, ADD_REMOVE):
        return WorstCase(GaussianMixturePair.subsampled_gaussian(rate, sigma / 2.0), rate, sigma,
                         2.0, POISSON_FAMILY,
                         "fixed-size batches: an added record displaces another, shift 2C "
                         "(dpcalc.models.worst_case)")
    if key == (POISSON, REPLACE_ONE):
        return WorstCase(ReplaceOnePair(rate, sigma), rate, sigma, 2.0, REPLACE_FAMILY,
                         "Poisson, replace-one: (1−q)N(0)+qN(C) vs (1−q)N(0)+qN(−C)")
    if key == (FIXED, ZERO_OUT):
        return WorstCase(fixed_zero_out_pair(rate, sigma), rate, sigma, 2.0, REPLACE_FAMILY,
                         "fixed-size, zero-out: (1−γ)N(0)+γN(2C) vs (1−γ)N(0)+γN(C) spliced "
                         "with the Poisson pair at γ (dpcalc.models.zero_out_pairs)")
    if key == (FIXED, REPLACE_ONE):
        base = GaussianMixturePair.subsampled_gaussian(rate, sigma / 2.0)
        return WorstCase(SymmetrisedPair(base), rate, sigma, 2.0, REPLACE_FAMILY,
                         "fixed-size, replace-one: symmetrised ((1−γ)N(0)+γN(2C), N(0)) "
                         "(Dong, Roth, Su 2022 Thm 4.2)")
    raise AssertionError(f"no worst case for sampling {phase.sampling!r}, adjacency "
                         f"{phase.adjacency!r}")  # Phase admits no other model: a bug


def _truncated_worst_case(phase: Phase) -> WorstCase:
    """Truncated Poisson: the revealed mixture over W = 1{K ≥ M} (truncated.py)."""
    rate, sigma, adjacency = phase.sampling_rate, phase.noise_multiplier, phase.adjacency
    plain = worst_case(Phase(rate, sigma, 1, POISSON, adjacency))
    instances = truncations(phase.dataset_size, rate, phase.max_batch_size, adjacency)
    if all(cut.weight == 0.0 for _, cut in instances):  # M > every n: nothing is ever cut
        return plain
    components, rdp_components = {}, []
    for directions, cut in instances:
        branches = [(1.0 - cut.weight, plain)]
        if cut.weight > 0.0:
            branches.append((cut.weight, worst_case(Phase(cut.displaced_rate, sigma, 1, FIXED,
                                                          adjacency))))
        rdp_components.append(tuple(branches))
        for direction in directions or plain.pair.directions:
            base = BASE_DIRECTION.get(direction, direction)
            components[direction] = [
                (weight, case.pair, base if base in case.pair.directions else case.pair.directions[0])
                for weight, case in branches]
    worst_weight = max(cut.weight for _, cut in instances)
    return WorstCase(RevealedMixturePair(components), rate, sigma, 2.0, MIXTURE_FAMILY,
                     f"truncated Poisson (M={phase.max_batch_size}, N={phase.dataset_size}): "
                     f"P(truncation) ≤ {worst_weight:.3g}; revealed mixture of the Poisson pair "
                     "and the displacement pair (Ganesh 2025; dpcalc.models.truncated)",
                     tuple(rdp_components))
