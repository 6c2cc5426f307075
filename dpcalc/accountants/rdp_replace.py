"""RDP of the subsampled Gaussian under replace-one (subsampling without replacement).

[WBK19] Wang, Balle, Kasiviswanathan 2019, "Subsampled Rényi Differential Privacy and
Analytical Moments Accountant" (AISTATS), Theorem 9: if M is (α, ε(α))-RDP under
replace-one, then M on a uniform subsample of γn of the n records satisfies, for every
integer α ≥ 2,

    ε′(α) ≤ 1/(α−1) · ln(1 + γ²C(α,2)·min{4(e^{ε(2)} − 1), e^{ε(2)}·min{2, (e^{ε(∞)} − 1)²}}
                           + Σ_{j=3..α} γ^j C(α,j) e^{(j−1)ε(j)} min{2, (e^{ε(∞)} − 1)^j}).

For DP-SGD the base mechanism is the Gaussian on the batch sum, whose replace-one
sensitivity is Δ = 2 clip norms: ε(j) = jΔ²/(2σ²) and ε(∞) = ∞, so every min{2, ·} is 2.
Fractional orders: ln A_α = (α − 1)ε′(α) of the true pair is convex in α (Hölder), so the
chord between the neighbouring integer orders bounds it (ln A_1 = 0).
"""
from __future__ import annotations

import math

import numpy as np
from dpcalc.numerics import special_functions as special

from dpcalc.accountants.rdp_conversion import ULPS, as_orders
from dpcalc.params import check_range

_LOG_TWO = math.log(2.0)
_LARGEST = 1e150  # σ and Δ: their squares stay finite floats
_LARGEST_SCALE = 1e150  # Δ/σ beyond this: ρ beyond ~1e297 at α = 2, reported as ∞


def _log_a_integer(rate: float, sigma: float, sensitivity: float, alphas: np.ndarray) -> np.ndarray:
    """Upper bounds on ln A_α = (α − 1)ε′(α) at integer α ≥ 2 (Theorem 9), rounded up."""
    out = np.empty(alphas.size)
    log_rate = math.log(rate)
    scale = sensitivity**2 / (2.0 * sigma**2)  # ε(j) = j·scale
    epsilon_two = 2.0 * scale
    # ln min{4(e^{ε(2)} − 1), 2e^{ε(2)}}, the j = 2 factor
    log_four_expm1 = (math.log(4.0) + (epsilon_two + math.log(-math.expm1(-epsilon_two)))
                      if epsilon_two > 0.0 else -math.inf)  # (Δ/σ)² below the float range
    log_second = min(log_four_expm1, _LOG_TWO + epsilon_two)
    for index, alpha in enumerate(alphas.astype(np.int64)):
        j = np.arange(2, alpha + 1, dtype=float)
        log_choose = special.gammaln(alpha + 1.0) - special.gammaln(j + 1.0) - special.gammaln(alpha - j + 1.0)
        log_terms = log_choose + j * log_rate + _LOG_TWO + (j - 1.0) * j * scale
        log_terms[0] = log_choose[0] + 2.0 * log_rate + log_second
        log_terms_sum = float(special.logsumexp(log_terms))
        log_sum = float(np.logaddexp(0.0, log_terms_sum))
        magnitude = 1.0 + float(np.max(np.abs(log_terms[np.isfinite(log_terms)]), initial=0.0))
        # the terms' rounding (relative ~ULPS·magnitude) moves ln(1 + S) by at most
        # ln(1 + 4·ULPS·magnitude·S/(1 + S)), and ln(1 + S) itself by a few ulps: rounded
        # up by both (an absolute allowance made tiny rates' ρ 20–60× too large)
        allowance = math.log1p(4.0 * ULPS * magnitude * math.exp(log_terms_sum - log_sum))
        out[index] = (log_sum + allowance) * (1.0 + 8.0 * 2.0**-53)
    return out


def rdp_replace_one(sampling_rate: float, noise_multiplier: float, orders,
                    sensitivity: float = 2.0) -> np.ndarray:
    """Upper bounds on the RDP of one DP-SGD step under replace-one adjacency with batches
    subsampled at ``sampling_rate`` (fixed-size, or Poisson: see worst_case.py)."""
    rate = check_range(sampling_rate, "sampling_rate", 0.0, 1.0, low_open=False, high_open=False)
    sigma = check_range(noise_multiplier, "noise_multiplier", 0.0, _LARGEST, low_open=False,
                        high_open=False)
    sensitivity = check_range(sensitivity, "sensitivity", 0.0, _LARGEST, high_open=False)
    alphas = as_orders(orders)
    if rate == 0.0:
        return np.zeros_like(alphas)
    scale = sensitivity / sigma if sigma > 0.0 else math.inf
    if not scale < _LARGEST_SCALE:  # σ = 0, or ρ past the float range: ∞, as rdp_subsampled_gaussian
        return np.full_like(alphas, math.inf)
    gaussian = alphas * scale**2 / 2.0  # γ = 1: the Gaussian itself, αΔ²/(2σ²)
    if rate >= 1.0:
        return gaussian
    lower = np.floor(alphas)
    needed = np.unique(np.concatenate([lower[lower >= 2.0], lower[alphas > lower] + 1.0]))
    needed = needed[needed >= 2.0]
    log_a = {1.0: 0.0}
    log_a.update(zip(needed.tolist(), _log_a_integer(rate, sigma, sensitivity, needed).tolist()))
    whole = alphas == lower
    values = np.empty(alphas.size)
    values[whole] = [log_a[value] for value in alphas[whole].tolist()]
    fractional = ~whole
    if fractional.any():
        below, frac = lower[fractional], alphas[fractional] - lower[fractional]
        values[fractional] = ((1.0 - frac) * np.array([log_a[v] for v in below.tolist()])
                              + frac * np.array([log_a[v] for v in (below + 1.0).tolist()]))
    # A subsample never leaks more than the whole batch: cap at the Gaussian's own RDP.
    return np.minimum(values / (alphas - 1.0), gaussian)
