"""Rényi DP of balls-in-bins (t steps per epoch, each record in one uniformly chosen step),
add/remove, per direction; certified for adaptively chosen gradients.

With Q = N(0, σ²I_t) (record absent) and P = (1/t)Σ_j N(e_j, σ²I_t) (present), the
likelihood ratio is P/Q = S = (1/t)Σ_j L_j, L_j = exp((Z_j·g_j − |g_j|²/2)/σ²) with Z_j the
noise of step j and g_j the record's clipped gradient (|g_j| ≤ 1, chosen from the past).

* remove, D_α(P‖Q), integer α ∈ [2, 256]: the multinomial form, exact for fixed unit
  gradients, which are the worst case (allocation/remove_rdp.py).
* add, D_α(Q‖P), real α > 1: the Gamma–Laplace form E_Q[S^{−(α−1)}] = E_{s ~ Gamma(α−1, t)}
  ψ(s)^t, exact for fixed unit gradients, the worst case, evaluated as a certified upper
  bound (allocation/add_rdp.py); per order the smaller of it and Jensen's
  (1 + (α − 1)/t)/(2σ²).
E epochs compose additively in RDP (Mironov 2017, Prop. 1: adaptive composition; each
epoch given the past is again one epoch with adaptive gradients); each direction's profile
comes from its own curve by the improved conversion (Canonne, Kamath, Steinke 2020,
Prop. 12; rdp_conversion.py), which bounds the hockey-stick divergence of that order of
the pair only — so the two directions are converted separately.
"""
from __future__ import annotations

import functools

import numpy as np

from dpcalc.accountants.rdp_conversion import ULPS, rdp_to_epsilon_improved
from dpcalc.allocation.add_rdp import add_rdp
from dpcalc.allocation.remove_rdp import remove_rdp
from dpcalc.models.mixture import ADD, REMOVE

REMOVE_ORDERS = np.arange(2, 257, dtype=float)
# α − 1 on a geometric grid from 0.02 to 255 (ratio ≈ 1.1)
ADD_ORDERS = 1.0 + np.geomspace(0.02, 255.0, 100)
ORDERS = {REMOVE: REMOVE_ORDERS, ADD: ADD_ORDERS}


@functools.lru_cache(maxsize=16)
def rdp_curves(steps: int, noise_multiplier: float) -> dict[str, np.ndarray]:
    """One epoch's certified RDP at ORDERS[direction], per direction (cached per (t, σ))."""
    curves = {REMOVE: remove_rdp(REMOVE_ORDERS, steps, noise_multiplier),
              ADD: add_rdp(ADD_ORDERS, steps, noise_multiplier)}
    for curve in curves.values():
        curve.flags.writeable = False
    return curves


def rdp_deltas(orders: np.ndarray, rdp_total: np.ndarray, epsilons) -> np.ndarray:
    """rdp_conversion.rdp_to_delta_improved at each of ``epsilons`` (the same formula and
    allowances): δ = min_α exp((α − 1)(ρ(α) − ε + ln(1 − 1/α)) − ln α), the Bretagnolle–Huber
    bound sqrt(1 − e^{−ρ(α)}), at most 1; 1 at ε < 0. Each order's ln δ is a line in ε ≥ 0
    (its allowance too), so their minimum is read from the lower envelope of the lines:
    O((orders + points)·log) instead of their product. Every value read is one order's
    line, so an envelope misplaced by rounding can only give a larger δ."""
    epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
    alphas, rho = np.asarray(orders, dtype=float), np.asarray(rdp_total, dtype=float)
    finite = np.isfinite(rho)
    alphas, rho = alphas[finite], rho[finite]
    out = np.ones(epsilons.size)
    if not alphas.size:
        return out
    shrink = np.log1p(-1.0 / alphas)
    # ln δ_α(ε) ≤ intercept − slope·ε for ε ≥ 0 (rdp_to_delta_improved's allowance included)
    intercept = ((alphas - 1.0) * (rho + shrink) - np.log(alphas)
                 + ULPS * ((alphas - 1.0) * (rho + np.abs(shrink)) + np.log(alphas)))
    slope = (alphas - 1.0) * (1.0 - ULPS)
    hull = _lower_envelope(intercept, slope)
    lines_a, lines_b = intercept[hull], slope[hull]
    with np.errstate(divide="ignore", invalid="ignore"):
        breaks = (lines_a[1:] - lines_a[:-1]) / (lines_b[1:] - lines_b[:-1])
    total_variation = float((0.5 * np.log(-np.expm1(-rho)) + ULPS).min())
    valid = epsilons >= 0.0
    index = np.searchsorted(breaks, epsilons[valid], side="right")
    logs = np.minimum(lines_a[index] - lines_b[index] * epsilons[valid], total_variation)
    out[valid] = np.exp(np.minimum(0.0, logs))
    return out


def _lower_envelope(intercept: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """Indices of the lines y = intercept − slope·x forming their minimum over x ≥ 0, in
    order of increasing slope (the convex hull trick)."""
    order = np.lexsort((intercept, slope))
    hull: list[int] = []
    for i in order:
        if hull and slope[hull[-1]] == slope[i]:
            continue  # same slope, larger intercept: never below
        while hull:
            last = hull[-1]
            crossing = (intercept[i] - intercept[last]) / (slope[i] - slope[last])
            if crossing <= 0.0:  # i is below ``last`` on all of x ≥ 0
                hull.pop()
                continue
            if len(hull) >= 2:
                before = hull[-2]
                previous = ((intercept[last] - intercept[before])
                            / (slope[last] - slope[before]))
                if crossing <= previous:
                    hull.pop()
                    continue
            break
        hull.append(int(i))
    return np.array(hull)


class EpochsRdp:
    """The RDP route for ``epochs`` epochs of ``steps`` steps: δ(ε) and ε(δ) per direction."""

    def __init__(self, steps: int, noise_multiplier: float, epochs: int):
        one = rdp_curves(steps, noise_multiplier)
        self.curves = {d: epochs * one[d] for d in (REMOVE, ADD)}

    def deltas(self, direction: str, epsilons) -> np.ndarray:
        return rdp_deltas(ORDERS[direction], self.curves[direction], epsilons)

    def epsilon(self, direction: str, delta: float) -> float:
        curve = self.curves[direction]
        finite = np.isfinite(curve)
        return rdp_to_epsilon_improved(ORDERS[direction][finite], curve[finite], delta)[0]


def allocation_rdp_epsilon(steps: int, noise_multiplier: float, epochs: int,
                           delta: float) -> dict[str, float]:
    """Certified ε per direction for ``epochs`` epochs, from the RDP bounds above."""
    route = EpochsRdp(steps, noise_multiplier, epochs)
    return {d: route.epsilon(d, delta) for d in (REMOVE, ADD)}
