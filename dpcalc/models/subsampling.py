"""Privacy amplification by subsampling, and the weights of a subsampled group.

- :func:`amplify_poisson`: (ε, δ) of a mechanism run on a Poisson subsample.
- :func:`poisson_weights`: how many of k protected records a Poisson batch holds.
- :func:`hypergeometric_weights`: the same for a fixed-size batch drawn without
  replacement (seed 000: batch of B out of N).
- :func:`participation_bound`: how likely a run's composed pairs are to differ at all.
All in log space; no scipy.stats.
"""
from __future__ import annotations

import math

import numpy as np
from dpcalc.numerics import special_functions as special

from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_nonnegative_or_inf, check_range


def _check_unit_interval(value: float, flag: str) -> float:
    return check_range(value, flag, 0.0, 1.0, low_open=False, high_open=False)


def amplify_poisson(epsilon: float, delta: float, sampling_rate: float) -> tuple[float, float]:
    """(ε, δ) of an (ε, δ)-DP mechanism applied to a Poisson subsample at rate q.

    Balle, Barthe, Gaboardi 2018, Thm 8 (add/remove relation; Li, Qardaji, Su 2012):
    (ln(1 + q(e^ε − 1)), qδ).
    """
    epsilon = check_nonnegative_or_inf(epsilon, "--epsilon")
    delta = _check_unit_interval(delta, "--delta")
    sampling_rate = _check_unit_interval(sampling_rate, "--q (sampling rate)")
    amplified_delta = sampling_rate * delta
    if sampling_rate == 0.0:
        return 0.0, 0.0
    if epsilon == math.inf:
        return math.inf, amplified_delta
    if epsilon <= 1.0:
        amplified_epsilon = math.log1p(sampling_rate * math.expm1(epsilon))
    else:
        # ln(1 − q + q e^ε) = ε + ln(q + (1 − q) e^{−ε}): no overflow for large ε.
        amplified_epsilon = epsilon + math.log(sampling_rate + (1.0 - sampling_rate) * math.exp(-epsilon))
    return min(amplified_epsilon, epsilon), amplified_delta


def participation_bound(rates_and_steps) -> float:
    """An upper bound on δ(ε) at every ε ≥ 0 for the composition of per-step pairs whose
    total variation is at most r_i, T_i steps each: 1 − ∏ (1 − r_i)^{T_i}.

    Why: a pair (P, Q) at total variation r is a post-processing of the three-point pair
    ((1−r)·c + r·a, (1−r)·c + r·b) (write P = (1−r)R + rA, Q = (1−r)R + rB with A ⊥ B and
    map c ↦ R, a ↦ A, b ↦ B), and domination survives adaptive composition (Dong, Roth,
    Su 2022, §3: composition of trade-off functions), so the run is dominated by the
    composed three-point pairs, whose hockey-stick
    divergence at e^ε ≥ 1 is P(some step shows a) = 1 − ∏(1 − r_i)^{T_i}. Every DP-SGD
    step pair of dpcalc.models.worst_case is (1 − r)·N(0) + r·(…) against (1 − r)·N(0) +
    r·(…), r its sampling rate (the record's inclusion probability): its total variation
    is ≤ r. So when the record is drawn with probability ≤ δ over the whole run, ε = 0 is
    certified. Rounded up (a relative 1e-9 above the float value).
    """
    log_never = 0.0  # ln ∏ (1 − r_i)^{T_i}
    for rate, steps in rates_and_steps:
        rate = _check_unit_interval(rate, "sampling_rate")
        if rate == 1.0:
            return 1.0
        log_never += float(steps) * math.log1p(-rate)
    return min(1.0, -math.expm1(log_never) * (1.0 + 1e-9))


def poisson_weights(k: int, sampling_rate: float) -> np.ndarray:
    """P[J = j], j = 0..k, for J ~ Binomial(k, q): how many of k records a Poisson batch holds."""
    k = check_count(k, "--k", maximum=10**6)
    sampling_rate = _check_unit_interval(sampling_rate, "--q (sampling rate)")
    picked = np.arange(k + 1, dtype=float)
    left_out = k - picked
    log_choose = special.gammaln(k + 1.0) - special.gammaln(picked + 1.0) - special.gammaln(left_out + 1.0)
    log_in = math.log(sampling_rate) if sampling_rate > 0.0 else -math.inf
    log_out = math.log1p(-sampling_rate) if sampling_rate < 1.0 else -math.inf
    # 0 · (−∞) := 0, so q ∈ {0, 1} give a point mass.
    with np.errstate(invalid="ignore"):
        term_in = np.where(picked > 0, picked * log_in, 0.0)
        term_out = np.where(left_out > 0, left_out * log_out, 0.0)
    return np.exp(log_choose + term_in + term_out)


def hypergeometric_weights(k: int, batch_size: int, dataset_size: int) -> np.ndarray:
    """P[J = j], j = 0..k, for J ~ Hypergeometric: k protected records among N, a batch
    of B drawn without replacement; p_j = C(k, j) C(N − k, B − j) / C(N, B).

    Exact support max(0, B + k − N) ≤ j ≤ min(k, B); zero elsewhere. Computed from one
    anchor term by the ratio p_{j+1}/p_j = (k − j)(B − j) / ((j + 1)(N − k − B + j + 1)),
    every factor a ratio of exact integers, so N up to 1e9 and beyond stays accurate
    (gammaln of 1e9 would lose ~1e-6 relative).
    """
    k = check_count(k, "--k", maximum=10**6)
    batch_size = check_count(batch_size, "--batch-size")
    dataset_size = check_count(dataset_size, "--dataset-size")
    if k > dataset_size:
        raise DpcalcError(f"--k must be <= --dataset-size ({dataset_size}); got {k}")
    if batch_size > dataset_size:
        raise DpcalcError(f"--batch-size must be <= --dataset-size ({dataset_size}); got {batch_size}")
    first = max(0, batch_size + k - dataset_size)
    last = min(k, batch_size)
    log_first = _log_hypergeometric_anchor(k, batch_size, dataset_size, first)
    steps = np.arange(first, last, dtype=float)  # j for the ratio p_{j+1}/p_j
    log_ratios = np.log((k - steps) / (steps + 1.0)) + np.log(
        (batch_size - steps) / (dataset_size - k - batch_size + steps + 1.0)
    )
    log_pmf = log_first + np.concatenate(([0.0], np.cumsum(log_ratios)))
    weights = np.zeros(k + 1)
    weights[first : last + 1] = np.exp(log_pmf)
    return weights


def _log_hypergeometric_anchor(k: int, batch_size: int, dataset_size: int, first: int) -> float:
    """ln p_first, the lowest j in the support, as a short product of exact ratios."""
    if first == 0:
        # p_0 = C(N − k, B)/C(N, B) = ∏_{m<k} (1 − B/(N − m)); here N − m > B.
        offsets = np.arange(k, dtype=float)
        return float(np.sum(np.log1p(-batch_size / (dataset_size - offsets))))
    # first = B + k − N > 0: p_first = C(k, first)/C(N, B) = C(k, r)/C(N, r), r = N − B < k,
    # = ∏_{i<r} (k − i)/(N − i).
    offsets = np.arange(dataset_size - batch_size, dtype=float)
    return float(np.sum(np.log((k - offsets) / (dataset_size - offsets))))
