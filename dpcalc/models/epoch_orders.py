"""Samplers that use each record at most once per epoch: what a run of them is, and why
its certified bounds hold (epoch_samplers.py computes them).

Setting. N records, batches of B cut consecutively from each epoch's order (the last one
partial when B ∤ N, or dropped with ``drop_last``), b steps per epoch (⌈N/B⌉, ⌊N/B⌋ with
drop_last, ⌈1/q⌉ from q alone). T steps touch E = ⌈T/b⌉ epochs, the last one observed for
r = T − (E−1)b ∈ {1, …, b} steps. Step t releases Y_t = Σ_{j ∈ batch t} g_t(x_j) + N(0, σ²C²)
with ‖g_t‖ ≤ C and g_t chosen from the past outputs (adaptive). The order (which step holds
which index) is drawn independently of the records' values and of the noise, so it has the
same law under neighbours D, D' that keep every index: zero-out (x_i replaced by a null
record ⊥, g(⊥) = 0: a step's sum moves by Δ = C) and replace-one (x_i by x_i': Δ = 2C).
Add/remove has no certificate here: an inserted record shifts the position of every later
record in the order, so many batches change at once.

(A) Upper bound, any order law (shuffle, shuffle-once, sequential, once-per-epoch).
Condition on the orders O. A step whose batch does not hold index i feeds the same records
to the same (adaptively chosen) map under D and D': given the past its output has the same
law, sensitivity 0; the step holding i has sensitivity ≤ Δ. Given O the run is an adaptive
composition of Gaussian mechanisms of which K_i(O) (fixed by O, not adaptive) have
sensitivity Δ, so it is μ_K-GDP with μ_k = Δ√k/σ (Dong, Roth, Su 2022, Cor. 3.3). The
released law is the O-mixture P = E_O P_O (Q alike, the same mixing law), and the hockey-stick
divergence H_{e^ε}(P‖Q) = sup_S P(S) − e^ε Q(S) ≤ E_O H_{e^ε}(P_O‖Q_O) (a supremum of an
expectation), in both orders since GDP is symmetric:

    δ(ε) ≤ E[δ_{μ_K}(ε)],   δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)

(Balle & Wang 2018, Thm 8). δ_μ grows with μ and K ≤ E, so δ(ε) ≤ δ_{μ_E}(ε) whatever the
order law: the E-fold Gaussian without amplification.

(B) The law of K where it is known (uniform orders; the law is the same for every record).
- shuffle (a fresh uniform permutation each epoch): every full epoch holds i; the last
  epoch's first r < b batches are full, hold rB of the N slots, so i is among them with
  probability w = rB/N (w = 1 when r = b): K = E − 1 + Bernoulli(w), and
  δ(ε) ≤ w·δ_{μ_E}(ε) + (1 − w)·δ_{μ_{E−1}}(ε) (the proof is
  (A)'s). With drop_last each epoch uses bB of the N slots of a fresh permutation:
  K = Binomial(E − 1, bB/N) + Bernoulli(rB/N), independent.
- shuffle-once (one uniform permutation): i's slot is the same every epoch, so
  K = E − 1 + 1{slot in the first r batches}: the law of shuffle.
- sequential (a known order): K_i is fixed; the records of the first batch have K = E.
- once-per-epoch (any order law): K ≤ E, and the law is unknown: E is the bound.

(C) Sequential is exact. Let every other record have gradient 0 and the record of the first
batch +C (against ⊥: 0; replace-one: −C), whatever θ. The record's E steps release
N(C, σ²C²) against N(0, σ²C²) (2C apart under replace-one), every other step the same law
under both, independently: the run is exactly μ_E-GDP. Upper = lower = δ_{μ_E}.

(D) Lower bound for once-per-epoch, ANY order law (Chua et al. 2024, ICML, §4's instance).
Others at −C, x_i at +C; ⊥ at 0 (zero-out) or x_i' at −C (replace-one). The batch sizes
B_1, …, B_b are fixed by N and B; adding the known B_t·C to step t's output (a
post-processing) leaves Z_t + m·1{t = t_e}, Z_t ~ N(0, σ²C²), with m = 2 under D and 1 (⊥)
or 0 (x_i') under D', whatever the size of the record's batch (its sum is −(B_t − 1)C + g).
Keep only M_e = max_t of epoch e's outputs (units of C):
    P(M_e ≤ c | t_e) = Φ((c − m)/σ)·Φ(c/σ)^{b−1},
the same for every position t_e. So given all positions (t_1, …, t_E), whatever their joint
law within and across epochs, M_1, …, M_{E−1} are independent with that law — and so they
are unconditionally. A partial last epoch (r < b observed steps) has, given the positions,
the law of the max of r outputs with (t_E ≤ r) or without the record: unconditionally the
mixture with weight w_i = P(t_E ≤ r), independent of the full epochs (whose law does not
depend on the positions). The w_i of all records add up to the rB slots of the first r
batches (full when only an epoch's last batch is partial, as a batch() after the order
emits it; each record at most once), so some record has w_i ≥ rB/N; the pair at a smaller
weight w ≤ w_i is a post-processing of the pair at w_i (replace a draw, with probability
1 − w/w_i, by a fresh one of the common component), so w = min(1, rB/N) is valid. The pair of
laws of (M_1, …, M_E) is thus a post-processing of the run: every certified lower bound
computed from it (max_pair.py, pb's lower composition) bounds the run's ε from below. What
this proves for a partial last batch: nothing is lost (recentring makes every batch alike);
what it assumes: that batch is the epoch's last one. Shuffle is the special case of a
uniform order (epoch_samplers.py's instance); with drop_last the record is in each full
epoch with probability bB/N, independently across fresh permutations (weight bB/N).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.errors import DpcalcError
from dpcalc.models import gaussian
from dpcalc.models.gaussian import gdp_delta_upper, gdp_epsilon
from dpcalc.models.samplers import (BALLS_IN_BINS, REPLACE_ONE, SEQUENTIAL, SHUFFLE,
                                    SHUFFLE_ONCE)

# A binomial law of K with more atoms than this falls back to K = E (safe, no gain).
_MAX_BINOMIAL_ATOMS = 20_000
_UNIT = 2.0**-53
_LOG_PMF_ULPS = 16.0  # allowance on the binomial log-weights, in ulps of Σ|term|
# Esseen 1956: no Berry–Esseen constant is below (√10 + 3)/(6√(2π)).
ESSEEN_CONSTANT = (math.sqrt(10.0) + 3.0) / (6.0 * math.sqrt(2.0 * math.pi))


def steps_per_epoch(phase) -> int:
    """b: ⌈N/B⌉, ⌊N/B⌋ with drop_last, or ⌈1/q⌉ (Phase.batches_per_epoch)."""
    per_epoch = phase.batches_per_epoch
    if per_epoch is None:
        raise DpcalcError(f"--sampling {phase.sampling} has no epochs (every step is drawn afresh)")
    return per_epoch


def epochs_touched(phase) -> tuple[int, int]:
    """(E = ⌈T/b⌉, r = T − (E − 1)b, the last epoch's observed steps)."""
    per_epoch = steps_per_epoch(phase)
    epochs = -(-phase.steps // per_epoch)
    return epochs, phase.steps - (epochs - 1) * per_epoch


def sensitivity(phase) -> float:
    """Per-epoch L2 sensitivity in clip norms: 2 under replace-one, else 1 (module doc)."""
    return 2.0 if phase.adjacency == REPLACE_ONE else 1.0


def _slots_fraction(phase, batches: int) -> float:
    """The chance a given record's slot of a uniform permutation is among the first
    ``batches`` full batches: min(1, batches·B/N) (batches·q from q alone)."""
    if phase.batch_size is not None and phase.dataset_size is not None:
        return min(1.0, batches * phase.batch_size / phase.dataset_size)
    return min(1.0, batches * phase.sampling_rate)


def presence(phase) -> tuple[float, float]:
    """(p, w) of the uniform-order samplers: the chance the record is in a full epoch's
    observed steps, and in the last epoch's first r (module doc, (B) and (D)). For the
    explicit lower instances of every epoch sampler; the upper bound reads epoch_count_law."""
    per_epoch = steps_per_epoch(phase)
    _, rest = epochs_touched(phase)
    if phase.sampling == BALLS_IN_BINS:
        return 1.0, rest / per_epoch
    if phase.sampling == SEQUENTIAL:
        return 1.0, 1.0
    full = _slots_fraction(phase, per_epoch) if phase.drop_last else 1.0
    return full, (full if rest == per_epoch else _slots_fraction(phase, rest))


def epoch_count_law(phase) -> tuple[tuple[int, float], ...]:
    """The law of K (module doc, (B)): ((k, w_k), …) in increasing k, for the worst record,
    each w_k ≥ P(K = k) (raised by its float error; the sum may pass 1 by ~1e-12). A point
    mass at E where the law is unknown, not a uniform order, or too wide."""
    epochs, _ = epochs_touched(phase)
    if phase.sampling not in (SHUFFLE, SHUFFLE_ONCE):
        return ((epochs, 1.0),)
    full, last = presence(phase)
    if full >= 1.0:
        return tuple((k, weight) for k, weight in ((epochs - 1, 1.0 - last), (epochs, last))
                     if weight > 0.0)
    trials = epochs - 1
    if trials + 2 > _MAX_BINOMIAL_ATOMS:
        return ((epochs, 1.0),)
    ks = np.arange(trials + 1)
    log_factorials = np.array([math.lgamma(k + 1) for k in range(trials + 1)])
    terms = (math.lgamma(trials + 1), log_factorials, log_factorials[::-1],
             ks * math.log(full), (trials - ks) * math.log1p(-full))
    log_pmf = terms[0] - terms[1] - terms[2] + terms[3] + terms[4]
    # The weights feed upper bounds only (S_k ≥ P(K ≥ k) in mixture_delta_upper): each is
    # raised by its float error. lgamma, log and log1p err by a few ulp of their values, the
    # four additions by an ulp of the largest partial sum: |error| ≤ 16u·Σ|term|, with room.
    magnitude = sum(np.abs(term) for term in terms)
    pmf = np.exp(log_pmf + _LOG_PMF_ULPS * _UNIT * magnitude)
    law = np.zeros(trials + 2)
    law[:-1] += pmf * (1.0 - last)
    law[1:] += pmf * last
    law *= 1.0 + 8.0 * _UNIT  # exp's, the products' and 1 − last's rounding
    return tuple((int(k), float(weight)) for k, weight in enumerate(law) if weight > 0.0)


def mixture_delta_upper(epsilon, law, unit_mu: float):
    """A certified upper bound on E[δ_{μ_K}(ε)], μ_k = unit_mu·√k (module doc, (A)), for a
    scalar or an array of ε ≥ 0.

    As Σ_k S_k·(d_k − d_{k−1}) with d_k the certified δ_{μ_k}(ε) made non-decreasing in k and
    S_k ≥ P(K ≥ k) (tail sums of the law, raised by their float error): each term only
    grows, so the sum bounds Σ_k P(K = k)·δ_{μ_k}(ε) from above; then raised by its own
    rounding."""
    points = np.atleast_1d(np.asarray(epsilon, dtype=float))
    ks = np.array([k for k, _ in law], dtype=float)
    weights = np.array([weight for _, weight in law], dtype=float)
    deltas = np.array([np.zeros(points.size) if k == 0 else
                       np.atleast_1d(gdp_delta_upper(points, unit_mu * math.sqrt(k)))
                       for k in ks])
    deltas = np.maximum.accumulate(np.minimum(deltas, 1.0), axis=0)
    tails = np.cumsum(weights[::-1])[::-1]
    tails = np.minimum(1.0, tails * (1.0 + 4.0 * _UNIT * (ks.size + 2)) + 1e-300)
    tails[0] = 1.0  # P(K ≥ smallest k) = 1
    steps = np.diff(np.concatenate([np.zeros((1, points.size)), deltas]), axis=0)
    total = np.sum(tails[:, None] * steps, axis=0)
    bound = np.minimum(1.0, total * (1.0 + 4.0 * _UNIT * (ks.size + 2)) + 1e-300)
    return float(bound[0]) if np.ndim(epsilon) == 0 else bound


def mixture_epsilon(delta: float, law, unit_mu: float) -> float:
    """The smallest ε ≥ 0 (safe side: the upper end of the last bracket) with
    mixture_delta_upper(ε) ≤ ``delta``; never above the E-fold bound's gdp_epsilon."""
    top = gdp_epsilon(delta, unit_mu * math.sqrt(max(k for k, _ in law)))
    if len(law) == 1:
        return top
    if mixture_delta_upper(0.0, law, unit_mu) <= delta:
        return 0.0
    if not math.isfinite(top) or mixture_delta_upper(top, law, unit_mu) > delta:
        return top
    low, high = 0.0, top
    for _ in range(200):
        if high - low <= 1e-12 * high:
            break
        middle = 0.5 * (low + high)
        if mixture_delta_upper(middle, law, unit_mu) <= delta:
            high = middle
        else:
            low = middle
    return high


def gdp_delta_lower(epsilon: float, mu: float) -> float:
    """A certified lower bound on δ_μ(ε), ε ≥ 0 (gaussian.gdp_delta_lower, as a float)."""
    return float(gaussian.gdp_delta_lower(epsilon, mu))


def gdp_epsilon_lower(delta: float, mu: float) -> float:
    """The largest ε found with gdp_delta_lower(ε) ≥ ``delta`` (safe side for a lower bound:
    the lower end of the last bracket): no mechanism that is exactly μ-GDP has a smaller ε."""
    if gdp_delta_lower(0.0, mu) < delta:
        return 0.0
    low, high = 0.0, max(gdp_epsilon(delta, mu), 1e-300)
    if not math.isfinite(high):
        return math.inf
    for _ in range(200):
        if high - low <= 1e-12 * high:
            break
        middle = 0.5 * (low + high)
        if gdp_delta_lower(middle, mu) >= delta:
            low = middle
        else:
            high = middle
    return low


def berry_esseen_note(phase) -> str:
    """Why van Dijk & Ertan 2026 (arXiv 2605.06259) gives nothing here: its regime check, and
    the least error any Berry–Esseen bound adds to δ (Esseen 1956: the smallest Berry–Esseen constant)."""
    per_epoch = steps_per_epoch(phase)
    epochs, _ = epochs_touched(phase)
    if per_epoch < 2:
        return ("van Dijk & Ertan 2026 (arXiv 2605.06259, shuffling, Berry–Esseen): needs ≥ 2 "
                "steps per epoch; not used")
    threshold = math.sqrt(3.0 / math.log(per_epoch))
    regime = "met" if phase.noise_multiplier >= threshold else "not met"
    floor = epochs * ESSEEN_CONSTANT / math.sqrt(per_epoch)
    return (f"van Dijk & Ertan 2026 (arXiv 2605.06259, shuffling): its regime σ ≥ √(3/ln b) = "
            f"{threshold:.4g} is {regime}, but any Berry–Esseen bound adds to δ at least "
            f"{ESSEEN_CONSTANT:.4f}/√b per epoch (Esseen 1956's smallest constant), "
            f"{floor:.3g} over {epochs} epoch(s) at b = {per_epoch}: no finite ε at δ ≤ 1e-3 "
            "below ~1e5 steps per epoch; its statement could not be retrieved, so it is not used")


__all__ = ["berry_esseen_note", "epoch_count_law",
           "epochs_touched", "gdp_delta_lower", "gdp_epsilon_lower", "mixture_delta_upper",
           "mixture_epsilon", "presence", "sensitivity", "steps_per_epoch"]
