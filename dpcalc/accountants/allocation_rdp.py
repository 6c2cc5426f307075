"""Rényi DP of one balls-in-bins epoch (t steps, each record in one uniformly chosen step),
add/remove, both directions; certified for adaptively chosen gradients.

With Q = N(0, σ²I_t) (record absent) and P = (1/t)Σ_j N(e_j, σ²I_t) (present), the
likelihood ratio is P/Q = (1/t)Σ_j L_j, L_j = exp((Z_j·g_j − |g_j|²/2)/σ²) with Z_j the
noise of step j and g_j the record's clipped gradient (|g_j| ≤ 1, chosen from the past).

* remove, D_α(P‖Q), integer α ≥ 2: expanding the multinomial, each term E_Q[Π_j L_j^{k_j}]
  is at most exp(Σ_j (k_j² − k_j)/(2σ²)) (conditional expectations from the last step back;
  k² − k ≥ 0, so |g_j| = 1 is the worst case), hence
      E_Q[(P/Q)^α] ≤ t^{−α} e^{−α/(2σ²)} α! [z^α] (Σ_k e^{k²/(2σ²)} z^k/k!)^t,
  with equality for fixed unit gradients (the same sum as Feldman & Shenfeld 2025, Cor. 6.2,
  derived here directly). The power series is raised to the t-th power in log space.
* add, D_α(Q‖P): ln(Q/P) = −ln((1/t)Σ_j L_j) ≤ −(1/t)Σ_j ln L_j (concavity of ln), whose
  exponential moment is bounded step by step as above:
      D_α(Q‖P) ≤ (1 + (α − 1)/t)/(2σ²).
Epochs compose additively in RDP (Mironov 2017, Prop. 1); ε from RDP by the improved
conversion (Canonne, Kamath, Steinke 2020, Prop. 12).
"""
from __future__ import annotations

import math

import numpy as np
from dpcalc.numerics.special_functions import gammaln, logsumexp

from dpcalc.accountants.rdp_conversion import rdp_to_epsilon_improved

ORDERS = np.arange(2, 129, dtype=float)


def _log_multiply(first: np.ndarray, second: np.ndarray, degree: int) -> np.ndarray:
    """Log-coefficients of the product of two power series, truncated at ``degree``."""
    out = np.full(degree + 1, -np.inf)
    for n in range(degree + 1):
        out[n] = logsumexp(first[: n + 1] + second[n::-1])
    return out


def _log_power(series: np.ndarray, exponent: int, degree: int) -> np.ndarray:
    result = np.full(degree + 1, -np.inf)
    result[0] = 0.0
    base = series
    while exponent:
        if exponent & 1:
            result = _log_multiply(result, base, degree)
        exponent >>= 1
        if exponent:
            base = _log_multiply(base, base, degree)
    return result


def remove_rdp(orders: np.ndarray, steps: int, noise_multiplier: float) -> np.ndarray:
    """D_α(P‖Q) of one epoch at each integer order (module doc)."""
    top = int(max(orders))
    k = np.arange(top + 1, dtype=float)
    inv = 1.0 / (2.0 * noise_multiplier**2)
    series = k * k * inv - gammaln(k + 1.0)
    powered = _log_power(series, steps, top)
    out = []
    for alpha in orders:
        a = int(alpha)
        log_moment = -a * math.log(steps) - a * inv + gammaln(a + 1.0) + powered[a]
        out.append(max(log_moment, 0.0) / (a - 1))
    return np.array(out)


def add_rdp(orders: np.ndarray, steps: int, noise_multiplier: float) -> np.ndarray:
    """An upper bound on D_α(Q‖P) of one epoch (module doc)."""
    return (1.0 + (orders - 1.0) / steps) / (2.0 * noise_multiplier**2)


def rdp_curves(steps: int, noise_multiplier: float) -> dict[str, np.ndarray]:
    """One epoch's RDP bound at ORDERS, per direction."""
    return {"remove": remove_rdp(ORDERS, steps, noise_multiplier),
            "add": add_rdp(ORDERS, steps, noise_multiplier)}


def allocation_rdp_epsilon(steps: int, noise_multiplier: float, epochs: int,
                           delta: float) -> dict[str, float]:
    """Certified ε per direction for ``epochs`` epochs, from the RDP bounds above."""
    return {name: rdp_to_epsilon_improved(ORDERS, epochs * curve, delta)[0]
            for name, curve in rdp_curves(steps, noise_multiplier).items()}
