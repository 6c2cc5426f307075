"""Truncated Poisson sampling: Poisson at rate q, then, if more than M records were drawn,
a uniformly random M of them (static batch shapes; Ganesh 2025, "Tight privacy analysis
of truncated Poisson sampling", arXiv 2508.15089; dp_accounting's
TruncatedSubsampledGaussianDpEvent).

One step, neighbours D ∋ x and D' = D − x, n = |D'| other records. Let K ~ Binomial(n, q)
be the number of OTHER records drawn and W = 1{K ≥ M}. W has the same law under D and D'
and is independent of whether x is drawn, so the revealed mixture over W dominates the
step (revealed_mixture.py): its δ(ε) is (1 − t)·δ₀(ε) + t·δ₁(ε), t = P(K ≥ M).

* W = 0 (K ≤ M − 1): D' gives its K records uncut, D adds x with probability q and then
  holds K + 1 ≤ M: nothing is cut. Given the drawn others, P = (1 − q)N(s) + qN(s + g_x),
  Q = N(s); by joint convexity the Poisson-subsampled Gaussian pair at rate q, shift C
  (Mironov et al. 2019). Replace-one: the Poisson replace-one pair (pairs.py).
* W = 1 (K ≥ M): given K = k the kept M others T are a uniform M-subset of a uniform
  k-subset: a uniform M-subset of the n others whatever k is. D' outputs N(s_T). D draws x
  (probability q) and keeps it with probability M/(k + 1), displacing a uniform y ∈ T
  (x kept = x plus a uniform (M − 1)-subset of the others; x drawn and cut, or not drawn
  = a uniform M-subset). Coupled on (T, y):
      P = E_{T,y}[(1 − q′)N(s_T) + q′N(s_T − g_y + g_x)],   Q = E_{T,y}[N(s_T)],
  q′ = q·E[M/(K + 1) | K ≥ M]; the rate does not depend on (T, y) because T's law does
  not depend on K. |g_x − g_y| ≤ 2C, so by joint convexity the branch is dominated by
  ((1 − q′)N(0) + q′N(2C), N(0)) and its reverse: the fixed-size add/remove pair of
  worst_case.py at rate q′. Replace-one and zero-out (x against x′ or a null record, both
  datasets of N records): (1 − q′)N(c) + q′N(a) against (1 − q′)N(c) + q′N(b), with
  b = 0 for zero-out: the fixed-size pair of the adjacency at q′ (replace-one: the
  symmetrisation, pairs.py; zero-out: zero_out_pairs.py, whose argument needs just this
  coupled form).
  Others at −C and x at +C attain the W = 1 branch exactly.
* With b(k; n, q) = C(n, k)qᵏ(1 − q)ⁿ⁻ᵏ and b(k; n, q)/(k + 1) = b(k + 1; n + 1, q)/((n + 1)q):
      q′ = M·P(Binomial(n + 1, q) > M) / ((n + 1)·t).

Add/remove with the user's dataset of N records: its neighbours have N − 1 records (x
removed: n = N − 1) or N + 1 (x added: n = N). Neither is dominated by the other in
general (t grows with n, q′ falls), so both are kept as separate neighbouring instances —
directions ``remove``/``add`` (n = N − 1) and ``remove-larger``/``add-larger`` (n = N) —
composed separately; pb reports the worst, with that instance's interval. dp_accounting
takes n = N − 1 and the replace-one pair at σ/2 for W = 1 (looser under add/remove).
Replace-one and zero-out: n = N − 1 only.

RDP (for ``rdp``/``moments``): exp((α − 1)D_α) of the revealed mixture is the w-mixture
of the branches' (the branches have disjoint supports), so
A_α = (1 − t)·A_α(branch 0) + t·A_α(branch 1) with A_α = exp((α − 1)ρ(α)), and the
instances' worst ρ.

Lower bound. The dominating pair reveals W, so its lower bound is not one for the
sampler. pb's certified lower bound comes from an explicit instance of the sampler
instead (lower_instances.py): every other record's clipped gradient 0 and x's +C
(replace-one: x′ at −C; zero-out: the null record at 0), x one of the user's N records
(n = N − 1 others). The output of a step is then N(C·1{x in the cut batch}, σ²), and x is
in the cut batch with probability, independently at every step,
    q_in = q·E[min(1, M/(K + 1))] = q·P(K ≤ M − 1) + M·P(Binomial(n + 1, q) > M)/(n + 1)
(the same identity as for q′): exactly the Poisson-subsampled Gaussian pair at rate q_in
(shift C; replace-one: the Poisson replace-one pair). Any certified lower bound on that
pair's ε is one on the sampler's: the sampler's ε is a supremum over such instances. The
interval pb reports for truncated Poisson therefore also holds the gap between this
instance and the dominating pair; the result says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcalc.models.samplers import ADD_REMOVE

REMOVE_LARGER = "remove-larger"
ADD_LARGER = "add-larger"
# The neighbouring order each truncated instance's direction reads in a pair that has
# only one instance (a Poisson or fixed-size phase of the same run).
BASE_DIRECTION = {REMOVE_LARGER: "remove", ADD_LARGER: "add"}
REVERSE_LARGER = {REMOVE_LARGER: ADD_LARGER, ADD_LARGER: REMOVE_LARGER}

# Rates are rounded down by this much for the lower instance: a smaller rate only lowers
# its ε, so the bound stays below the truth whatever the last bits of the binomial tails.
_RATE_ROUNDING = 1e-9


@dataclass(frozen=True)
class Truncation:
    """One neighbouring instance: ``others`` records besides x, the chance ``weight`` = t
    that at least M of them are drawn, and the rate ``displaced_rate`` = q′ at which x is
    drawn and kept given that (module doc)."""

    others: int
    weight: float
    displaced_rate: float


def truncation(others: int, sampling_rate: float, max_batch_size: int) -> Truncation:
    """t = P(Binomial(n, q) ≥ M) and q′ = M·P(Binomial(n + 1, q) > M)/((n + 1)t)."""
    from scipy.stats import binom

    n, q, cap = int(others), float(sampling_rate), int(max_batch_size)
    if cap > n:
        return Truncation(n, 0.0, 0.0)
    if q >= 1.0:  # K = n ≥ M always; x kept with probability M/(n + 1)
        return Truncation(n, 1.0, cap / (n + 1))
    log_weight = float(binom.logsf(cap - 1, n, q))
    if not log_weight > -math.inf:  # below the smallest float: no truncation in float
        return Truncation(n, 0.0, 0.0)
    log_kept = float(binom.logsf(cap, n + 1, q))
    rate = math.exp(math.log(cap) + log_kept - math.log(n + 1) - log_weight)
    # The true q′ ≤ q·M/(M + 1) < q (K + 1 ≥ M + 1 in the branch): capping at q never
    # lowers it below the true value.
    return Truncation(n, min(1.0, math.exp(log_weight)), min(rate, q))


def truncations(dataset_size: int, sampling_rate: float, max_batch_size: int,
                adjacency: str) -> list[tuple[tuple[str, ...], Truncation]]:
    """The neighbouring instances of a dataset of N records: (directions, truncation)."""
    removed = truncation(dataset_size - 1, sampling_rate, max_batch_size)
    if adjacency != ADD_REMOVE:
        return [((), removed)]
    added = truncation(dataset_size, sampling_rate, max_batch_size)
    return [(("remove", "add"), removed), ((REMOVE_LARGER, ADD_LARGER), added)]


def contained_rate(dataset_size: int, sampling_rate: float, max_batch_size: int) -> float:
    """q_in = P(x in the cut batch) for x one of N records (module doc), rounded down."""
    from scipy.stats import binom

    n, q, cap = int(dataset_size) - 1, float(sampling_rate), int(max_batch_size)
    if cap > n:  # never cut
        return q
    if q >= 1.0:  # all n others drawn: x kept with probability M/(n + 1)
        return cap / (n + 1) * (1.0 - _RATE_ROUNDING)
    uncut = q * float(binom.cdf(cap - 1, n, q))
    cut = cap * float(binom.sf(cap, n + 1, q)) / (n + 1)
    return min(q, (uncut + cut) * (1.0 - _RATE_ROUNDING))

