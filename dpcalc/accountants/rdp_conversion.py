"""RDP → (ε, δ) conversions and the order grid they run over.

- [M17] Mironov 2017, "Rényi Differential Privacy", Prop. 3 (classic conversion).
- [ACG16] Abadi et al. 2016, Thm. 2 (the moments accountant's tail bound).
- [CKS20] Canonne, Kamath, Steinke 2020, Prop. 12; [BBGHS20] Balle et al. 2020, Thm. 21.
- [vEH14] van Erven, Harremoës 2014, "Rényi Divergence and Kullback-Leibler Divergence".

Each conversion returns an upper bound: a few ulps of float error are added in the safe
direction.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.errors import DpcalcError
from dpcalc.params import check_delta, check_nonnegative, float_array

__all__ = ["DEFAULT_ORDERS", "MAX_ORDER", "ULPS", "as_orders", "rdp_to_epsilon_classic",
           "rdp_to_epsilon_improved", "rdp_to_delta_classic", "rdp_to_delta_improved"]


def _default_orders() -> np.ndarray:
    fine = (10.0 + np.arange(1, 100)) / 10.0  # 1.1, 1.2, ..., 10.9 (nearest floats)
    whole = np.arange(11, 65, dtype=float)
    large = np.array([80, 96, 128, 192, 256, 384, 512, 768, 1024], dtype=float)
    orders = np.unique(np.concatenate([fine, whole, large]))
    orders.flags.writeable = False
    return orders


DEFAULT_ORDERS: np.ndarray = _default_orders()

MAX_ORDER = 10_000.0
_MAX_ORDER = MAX_ORDER
# Relative float-error allowance per unit of magnitude of the quantities summed
# (a few ulps); added in the safe direction everywhere.
ULPS = 8.0 * np.finfo(float).eps
_ULPS = ULPS


def as_orders(orders) -> np.ndarray:
    """Orders as a 1-D float array, each finite and in (1, 10000]."""
    values = float_array(orders, "orders", f"numbers in (1, {_MAX_ORDER:g}]").reshape(-1)
    if values.size == 0:
        raise DpcalcError("orders must contain at least one order in (1, 10000]")
    bad = ~np.isfinite(values) | (values <= 1.0) | (values > _MAX_ORDER)
    if bad.any():
        raise DpcalcError(
            f"orders must be finite numbers in (1, {_MAX_ORDER:g}]; got {float(values[bad][0])!r}"
        )
    return values


def _as_curve(orders, rdp_total) -> tuple[np.ndarray, np.ndarray]:
    """(orders, RDP values) as matching float arrays; RDP values in [0, inf]."""
    alphas = as_orders(orders)
    rho = float_array(rdp_total, "rdp_total", "numbers >= 0 (inf allowed)").reshape(-1)
    if rho.shape != alphas.shape:
        raise DpcalcError(
            f"rdp_total must have one value per order ({alphas.size}); got {rho.size}"
        )
    if np.isnan(rho).any() or (rho < 0).any():
        raise DpcalcError("rdp_total must be numbers >= 0 (inf allowed); got a NaN or negative value")
    return alphas, rho

# ---------------------------------------------------------------------- conversions


def rdp_to_epsilon_classic(orders, rdp_total, delta: float) -> tuple[float, float]:
    """(ε, optimal order) with ε = min_α [ρ_T(α) + ln(1/δ)/(α − 1)] [M17 Prop. 3; ACG16]."""
    alphas, rho = _as_curve(orders, rdp_total)
    delta = check_delta(delta)
    slack = -math.log(delta) / (alphas - 1.0)
    candidates = rho + slack
    candidates = candidates + _ULPS * (rho + slack)
    best = int(np.argmin(candidates))
    return float(candidates[best]), float(alphas[best])


def rdp_to_epsilon_improved(orders, rdp_total, delta: float) -> tuple[float, float]:
    """(ε, optimal order): ε = min_α [ρ_T(α) + ln(1 − 1/α) − (ln δ + ln α)/(α − 1)], ≥ 0.

    [CKS20 Prop. 12; BBGHS20 Thm. 21]. Also ε = 0 where δ ≥ sqrt(1 − e^{−ρ_T(α)}):
    TV ≤ sqrt(1 − e^{−KL}) (Bretagnolle–Huber) and KL ≤ D_α (monotone in α, [vEH14]).
    """
    alphas, rho = _as_curve(orders, rdp_total)
    delta = check_delta(delta)
    shrink = np.log1p(-1.0 / alphas)
    slack = (math.log(delta) + np.log(alphas)) / (alphas - 1.0)
    candidates = rho + shrink - slack
    candidates = candidates + _ULPS * (rho + np.abs(shrink) + np.abs(slack))
    total_variation_ok = delta**2 >= -np.expm1(-rho)
    candidates = np.where(total_variation_ok, 0.0, candidates)
    best = int(np.argmin(candidates))
    return max(0.0, float(candidates[best])), float(alphas[best])


def rdp_to_delta_classic(orders, rdp_total, epsilon: float) -> tuple[float, float]:
    """(δ, optimal order): δ = min_α exp((α − 1)(ρ_T(α) − ε)) [M17 Prop. 3], ≤ 1.

    With ρ_T(α) = α_M(λ)/λ at α = λ + 1 this is δ = min_λ exp(α_M(λ) − λε) [ACG16 Thm. 2].
    """
    alphas, rho = _as_curve(orders, rdp_total)
    epsilon = check_nonnegative(epsilon, "--epsilon")
    with np.errstate(invalid="ignore"):
        log_deltas = (alphas - 1.0) * (rho - epsilon)
        log_deltas = log_deltas + _ULPS * (alphas - 1.0) * (rho + epsilon)
    best = int(np.argmin(log_deltas))
    return min(1.0, math.exp(min(0.0, float(log_deltas[best])))), float(alphas[best])


def rdp_to_delta_improved(orders, rdp_total, epsilon: float) -> tuple[float, float]:
    """(δ, optimal order), the inverse of :func:`rdp_to_epsilon_improved`, ≤ 1.

    δ = min_α exp((α − 1)(ρ_T(α) − ε + ln(1 − 1/α)) − ln α) [CKS20 Prop. 12], and
    δ ≤ sqrt(1 − e^{−ρ_T(α)}) (Bretagnolle–Huber, as in the forward conversion).
    """
    alphas, rho = _as_curve(orders, rdp_total)
    epsilon = check_nonnegative(epsilon, "--epsilon")
    shrink = np.log1p(-1.0 / alphas)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_deltas = (alphas - 1.0) * (rho - epsilon + shrink) - np.log(alphas)
        log_deltas = log_deltas + _ULPS * (
            (alphas - 1.0) * (rho + epsilon + np.abs(shrink)) + np.log(alphas)
        )
        log_total_variation = 0.5 * np.log(-np.expm1(-rho)) + _ULPS
    log_deltas = np.fmin(log_deltas, log_total_variation)
    best = int(np.argmin(log_deltas))
    return min(1.0, math.exp(min(0.0, float(log_deltas[best])))), float(alphas[best])

