"""Rényi DP of the Poisson-subsampled Gaussian, RDP → (ε, δ) conversions, and the
accountants built on it live in rdp_accountants.py, the conversions in
rdp_conversion.py, the fractional-order series in rdp_series.py.

References
- [MTZ19] Mironov, Talwar, Zhang 2019, "Rényi Differential Privacy of the Sampled
  Gaussian Mechanism" (arXiv:1908.10530), §3.2 (integer α) and §3.3 (fractional α).
- [M17] Mironov 2017, "Rényi Differential Privacy", Prop. 1 (composition), Prop. 3.
- [ACG16] Abadi et al. 2016, "Deep Learning with Differential Privacy", §3.2,
  Thm. 2 (tail bound), Lemma 3 (closed form).
- [CKS20] Canonne, Kamath, Steinke 2020, Prop. 12; [BBGHS20] Balle et al. 2020, Thm. 21.
- [vEH14] van Erven, Harremoës 2014, "Rényi Divergence and Kullback-Leibler Divergence".

Every function below returns an upper bound on the quantity it names: series tails
are bounded from above, never dropped, and a float-error allowance of a few ulps is
added in the safe direction.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.numerics import special_functions as special
from dpcalc.accountants.rdp_conversion import (DEFAULT_ORDERS, ULPS as _ULPS, as_orders,
                                               rdp_to_delta_classic, rdp_to_delta_improved,
                                               rdp_to_epsilon_classic, rdp_to_epsilon_improved)
from dpcalc.accountants.rdp_series import log_a_minus_one_fractional
from dpcalc.params import check_range

__all__ = [
    "DEFAULT_ORDERS",
    "rdp_subsampled_gaussian",
    "rdp_to_epsilon_classic",
    "rdp_to_epsilon_improved",
    "rdp_to_delta_classic",
    "rdp_to_delta_improved",
    "log_expm1",
    "logsumexp_segments",
]


# --------------------------------------------------------------------------- inputs


def _check_sampling_rate(value: float) -> float:
    return check_range(value, "sampling_rate", 0.0, 1.0, low_open=False, high_open=False)


# Below this σ, 2σ² nears the float range's end (a fuzz finding: σ = 1e-320 gave NaN);
# above the largest, σ² does
_SMALLEST_FINITE_SIGMA = 1e-150
_LARGEST_SIGMA = 1e150


def _check_noise_multiplier(value: float) -> float:
    # 0 is allowed (ρ = ∞, as Opacus's compute_rdp); above _LARGEST_SIGMA σ² overflows (a
    # fuzz finding: NaN at σ = 9.5e153, OverflowError at 1.3e154)
    return check_range(value, "noise_multiplier", 0.0, _LARGEST_SIGMA, low_open=False,
                       high_open=False)



# ------------------------------------------------------------------ log-space tools


def log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x − 1) for x > 0 without overflow."""
    small = np.log(np.expm1(np.minimum(x, 50.0)))
    large = x + np.log1p(-np.exp(-np.maximum(x, 50.0)))
    return np.where(x > 50.0, large, small)



def logsumexp_segments(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """log Σ exp(values) over consecutive segments (all values finite)."""
    peak = np.maximum.reduceat(values, starts)
    total = np.add.reduceat(np.exp(values - np.repeat(peak, counts)), starts)
    return peak + np.log(total)



# ------------------------------------------------------------------ integer orders


def _log_a_minus_one_integer(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log(A_α − 1), rounded up, for integer orders α ≥ 2 and 0 < q < 1.

    [MTZ19 §3.2]: A_α = Σ_{i=0}^{α} C(α,i) (1−q)^{α−i} q^i exp((i² − i)/(2σ²)).
    The same sum without the exponential is 1 (binomial theorem), so
    A_α − 1 = Σ_{i=2}^{α} C(α,i) (1−q)^{α−i} q^i expm1((i² − i)/(2σ²)): every term is
    positive, and tiny RDP values keep full relative precision.
    """
    whole = alphas.astype(np.int64)
    counts = whole - 1  # i = 2..α
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    alpha = np.repeat(whole, counts).astype(float)
    i = (np.arange(counts.sum()) - np.repeat(starts, counts) + 2).astype(float)

    log_gamma_alpha = special.gammaln(alpha + 1.0)
    log_gamma_i = special.gammaln(i + 1.0)
    log_gamma_rest = special.gammaln(alpha - i + 1.0)
    power_1mq = (alpha - i) * math.log1p(-q)
    power_q = i * math.log(q)
    exponent = (i * i - i) / (2.0 * sigma**2)
    log_terms = log_gamma_alpha - log_gamma_i - log_gamma_rest + power_1mq + power_q
    log_terms += log_expm1(exponent)

    # Float error of each log-term is a few ulps of the magnitudes that built it.
    magnitude = 1.0 + log_gamma_alpha + log_gamma_i + log_gamma_rest - power_1mq - power_q
    magnitude += 2.0 * exponent
    log_sum = logsumexp_segments(log_terms, starts, counts)
    log_error = logsumexp_segments(log_terms + np.log(magnitude), starts, counts)
    return np.logaddexp(log_sum, log_error + math.log(_ULPS))



def integer_rdp_many(rates: np.ndarray, sigmas: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """ρ(α) of rdp_subsampled_gaussian at the integer orders ``alphas`` (≥ 2) for many
    (q, σ) at once (rows), by the same sum as _log_a_minus_one_integer; rows with q in
    {0, 1} or an extreme σ are computed one by one."""
    rates, sigmas = np.asarray(rates, dtype=float), np.asarray(sigmas, dtype=float)
    alphas = np.asarray(alphas, dtype=float)
    out = np.empty((rates.size, alphas.size))
    plain = (rates > 0.0) & (rates < 1.0) & (sigmas >= _SMALLEST_FINITE_SIGMA)
    for row in np.flatnonzero(~plain):
        out[row] = rdp_subsampled_gaussian(rates[row], sigmas[row], alphas)
    if not np.any(plain):
        return out
    q, sigma = rates[plain][:, None], sigmas[plain][:, None]
    whole = alphas.astype(np.int64)
    counts = whole - 1  # i = 2..α
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    alpha = np.repeat(whole, counts).astype(float)[None, :]
    i = (np.arange(counts.sum()) - np.repeat(starts, counts) + 2).astype(float)[None, :]
    log_gamma_alpha = special.gammaln(alpha + 1.0)
    log_gamma_i = special.gammaln(i + 1.0)
    log_gamma_rest = special.gammaln(alpha - i + 1.0)
    power_1mq = (alpha - i) * np.log1p(-q)
    power_q = i * np.log(q)
    exponent = (i * i - i) / (2.0 * sigma**2)
    log_terms = log_gamma_alpha - log_gamma_i - log_gamma_rest + power_1mq + power_q
    log_terms = log_terms + log_expm1(exponent)
    magnitude = 1.0 + log_gamma_alpha + log_gamma_i + log_gamma_rest - power_1mq - power_q
    magnitude = magnitude + 2.0 * exponent
    peak = np.maximum.reduceat(log_terms, starts, axis=1)
    log_sum = peak + np.log(np.add.reduceat(np.exp(log_terms - np.repeat(peak, counts, axis=1)),
                                            starts, axis=1))
    weighted = log_terms + np.log(magnitude)
    peak = np.maximum.reduceat(weighted, starts, axis=1)
    log_error = peak + np.log(np.add.reduceat(np.exp(weighted - np.repeat(peak, counts, axis=1)),
                                              starts, axis=1))
    log_a = np.logaddexp(0.0, np.logaddexp(log_sum, log_error + math.log(_ULPS)))
    out[plain] = np.minimum(log_a / (alphas[None, :] - 1.0), alphas[None, :] / (2.0 * sigma**2))
    return out


# ------------------------------------------------------------------------ A_α, ρ(α)


def _log_a(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """Upper bounds on ln A_α = (α − 1)·ρ(α) for 0 < q < 1, σ > 0."""
    is_whole = alphas == np.round(alphas)
    fractional = alphas[~is_whole]
    # Integer orders needed: the grid's own, and the neighbours of fractional orders
    # (for the convexity fallback below).
    neighbours = np.concatenate([np.floor(fractional), np.floor(fractional) + 1.0])
    needed = np.unique(np.concatenate([alphas[is_whole], neighbours[neighbours >= 2.0]]))
    log_a_whole = {1.0: 0.0}  # A_1 = 1
    if needed.size:
        log_a_needed = np.logaddexp(0.0, _log_a_minus_one_integer(q, sigma, needed))
        log_a_whole.update(zip(needed.tolist(), log_a_needed.tolist()))

    log_a = np.empty_like(alphas)
    log_a[is_whole] = [log_a_whole[value] for value in alphas[is_whole].tolist()]
    if fractional.size:
        # ln A_α = ln E_{μ0}[(μ/μ0)^α] is convex in α (Hölder's inequality; [vEH14]), so the
        # chord between the neighbouring integer orders is an upper bound. It backs up
        # the series wherever that is unusable (and is never tighter where it works).
        lower = np.floor(fractional)
        chord = (lower + 1.0 - fractional) * np.array([log_a_whole[v] for v in lower.tolist()])
        chord += (fractional - lower) * np.array([log_a_whole[v] for v in (lower + 1.0).tolist()])
        series = np.logaddexp(0.0, log_a_minus_one_fractional(q, sigma, fractional))
        log_a[~is_whole] = np.fmin(series, chord)
    return log_a


def rdp_subsampled_gaussian(sampling_rate: float, noise_multiplier: float, orders) -> np.ndarray:
    """RDP ρ(α) of one step of the Poisson-subsampled Gaussian mechanism [MTZ19].

    Sensitivity 1, noise N(0, σ²) with σ = ``noise_multiplier``, each record sampled
    with probability ``sampling_rate``. ρ(α) = ln A_α / (α − 1) with
    A_α = E_{z~N(0,σ²)}[((1 − q) + q·exp((2z − 1)/(2σ²)))^α], the worst (remove)
    direction [MTZ19 §3]. Integer α: exact binomial sum; fractional α: the signed
    two-sided series of [MTZ19 §3.3], truncated on the safe side and capped by the
    convexity chord between neighbouring integer orders, and by the q = 1 value
    α/(2σ²). Every value is an upper bound; T steps compose to T·ρ [M17 Prop. 1].
    """
    q = _check_sampling_rate(sampling_rate)
    sigma = _check_noise_multiplier(noise_multiplier)
    alphas = as_orders(orders)
    if q == 0.0:
        return np.zeros_like(alphas)
    if sigma < _SMALLEST_FINITE_SIGMA:  # σ = 0, or ρ beyond the largest float (≥ 1e297 here)
        return np.full_like(alphas, math.inf)
    gaussian = alphas / (2.0 * sigma**2)  # q = 1: the Gaussian mechanism, α/(2σ²) [M17]
    if q == 1.0:
        return gaussian
    # A_α(q) = E_{μ0}[(1 − q + q·μ1/μ0)^α] is convex in q with its minimum 1 at q = 0,
    # so ρ never exceeds its q = 1 value; the cap only trims float-error allowance.
    key = (q, sigma, alphas.tobytes())
    cached = _RDP_CACHE.get(key)
    if cached is None:
        cached = np.minimum(_log_a(q, sigma, alphas) / (alphas - 1.0), gaussian)
        cached.flags.writeable = False
        if len(_RDP_CACHE) >= _RDP_CACHE_SIZE:
            _RDP_CACHE.pop(next(iter(_RDP_CACHE)))
        _RDP_CACHE[key] = cached
    return cached.copy()


# ρ of one step does not depend on T: a curve over step counts (and pb's hint beside the
# rdp column) asks for the same (q, σ, orders) again; the fractional orders' series cost
# ~20 ms each time.
_RDP_CACHE: dict = {}
_RDP_CACHE_SIZE = 64

