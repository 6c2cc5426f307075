"""The add direction's Rényi divergence of one balls-in-bins epoch, certified, at real
orders α > 1 (β = α − 1).

The pair (accountants/allocation_rdp.py's convention): t steps, Q = N(0, σ²I_t) (record
absent), P = (1/t)Σ_j N(e_j, σ²I_t) (present, unit gradient); P/Q = S = (1/t)Σ_j L_j with
L_j i.i.d. as laplace.py's L under Q. The add direction is
    D_α(Q‖P) = ln E_Q[S^{−β}]/β.
(1) Gamma–Laplace form. x^{−β} = Γ(β)^{−1}∫₀^∞u^{β−1}e^{−ux}du for x > 0; by Tonelli and
    the independence of the L_j, E_Q[S^{−β}] = Γ(β)^{−1}∫u^{β−1}φ(u/t)^t du, and with
    s = u/t, ψ = e^{s}φ (laplace.py):
        E_Q[S^{−β}] = ∫₀^∞ γ(s) ψ(s)^t ds,   γ(s) = t^β s^{β−1}e^{−ts}/Γ(β),
    the Gamma(β, rate t) density: the expectation of ψ(s)^t for s ~ Gamma(β, t).
(2) Fixed unit gradients are the worst case for adaptive ones. Given the other records'
    allocations their contributions are known functions of the past and are subtracted
    (the mixture over those allocations, the same law under both datasets, is handled by
    the joint convexity of (p, q) ↦ q^α p^{1−α}). Given the past, step j's factor
    L_j = exp(⟨Z_j, g_j⟩/σ² − |g_j|²/(2σ²)) is a mean-one log-normal with parameter
    c = |g_j|/σ ≤ η; these increase in convex order with c (exp(B_τ − τ/2) at τ = c², B a
    Brownian motion, is a martingale in τ) and x ↦ e^{−ux} is convex, so
    E[e^{−uL_j/t} | past] ≤ φ(u/t). Backward induction from the last step gives
    E_Q Π_j e^{−uL_j/t} ≤ φ(u/t)^t, and (1) integrates it with positive weights: the
    supremum over adaptive adversaries is attained by fixed unit gradients, at every α.
(3) Certified evaluation. laplace.py gives nodes 0 = s_0 < … < s_n and ℓ_k ≥ ln ψ(s_k),
    non-decreasing. The Gamma mass of [0, s_n] is ≤ 1, so
        E_Q[S^{−β}] ≤ 1 + Σ_cells ∫_cell γ(ψ^t − 1) + ∫_{s_n}^∞ γψ^t:
    the cells' excesses are not cancelled against the 1, so the float allowances below scale
    with the excess, not with 1 (at t = 10⁶ the excess is ~1e-8). On a cell [a, b],
    t ln ψ ≤ x(s) = t(c₀ + c₁s), the chord through (a, tℓ_a), (b, tℓ_b) (ln ψ is convex);
    x ≥ 0 and increases. Each excess is bounded by the smallest of
      (i)   e^{tc₀}(t/r)^β[P(β, rb) − P(β, ra)] − ΔP(β), r = t(1 − c₁) > 0: the integral of
            γ(e^x − 1), exactly (P the regularised lower incomplete gamma function, ΔP(β)
            the Gamma(β, t) mass of the cell, taken from below here);
      (ii)  where x_b < 1: tc₀ΔP(β) + c₁βΔP(β + 1) + (x_b²/2)e^{x_b}ΔP(β), by
            e^x − 1 ≤ x + x²e^x/2 (x ≥ 0) and sγ_{β,t}(s) = (β/t)γ_{β+1,t}(s);
      (iii) (e^{x_b} − 1)·ΔP(β);
      (iv)  e^{tc₀}t^β(b^β − a^β)/Γ(β + 1)·max(e^{−ra}, e^{−rb}) ≥ ∫_a^b γe^x, for any r;
    with ΔP(β) also ≤ t^β(b^β − a^β)e^{−ta}/Γ(β + 1). Beyond s_n, laplace.py's (F3) gives
    ψ(s)^t ≤ e^{ts}C_k^t s^{−tk} with C_k = (k/e)^k e^{k(k+1)η²/2}, so
      ∫_{s_n}^∞ γψ^t ≤ t^β C_k^t s_n^{β−tk}/(Γ(β)(tk − β))   for every k > β/t,
    minimised over a grid of k. Float allowances, all upward: the chord's rounding
    (4 ulps of |ℓ_a| + |ℓ_b| + |c₁|b in c₀), 1e-12 of the larger operand of each incomplete
    gamma difference (taken on the side of the median where it does not cancel:
    P(x₂) − P(x₁) below, Q(x₁) − Q(x₂) above, Q = 1 − P), 8 ulps of each log-term's
    magnitude, n ulps for the sum of the n terms and 8 ulps of the logarithm. A difference
    that underflows is never read as 0: the bounds that need it are dropped for that cell
    ((iv) is always finite). The chord's own error is second order in the cell width
    (ln-spacing 0.015 for s ≤ e^{2.5}): about 4e-5 relative in ln E_Q[S^{−β}].
(4) Jensen (the bound this replaces, kept where smaller): −ln S ≤ −(1/t)Σ_j ln L_j (ln is
    concave), whose exponential moments are bounded step by step as in (2):
    D_α(Q‖P) ≤ (1 + β/t)/(2σ²). It is tight when β/t is large (all Z_j equal).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.allocation.laplace import laplace_table
from dpcalc.numerics.special_functions import gammaln

_EPS = float(np.finfo(float).eps)
_GAMMA_ALLOWANCE = 1e-12  # relative to the larger operand of an incomplete gamma difference
_UNDERFLOW = 1e-290


def jensen_add_rdp(orders, steps: int, noise_multiplier: float) -> np.ndarray:
    """(4): (1 + (α − 1)/t)/(2σ²), rounded up."""
    orders = np.asarray(orders, dtype=float)
    return (1.0 + (orders - 1.0) / steps) / (2.0 * noise_multiplier**2) * (1.0 + 4.0 * _EPS)


def _difference(beta: np.ndarray, low: np.ndarray, high: np.ndarray):
    """(upper, lower) bounds on P(β, high) − P(β, low) ≥ 0, elementwise: taken on the side of
    the median where it does not cancel (P below β, Q = 1 − P above), with the allowance of
    (3); the upper bound is NaN where it underflows (the caller then drops that bound)."""
    from scipy.special import gammainc, gammaincc

    difference, allowance = np.empty(low.shape), np.empty(low.shape)
    below = low < beta
    if below.any():
        top = gammainc(beta[below], high[below])
        difference[below] = top - gammainc(beta[below], low[below])
        allowance[below] = _GAMMA_ALLOWANCE * top
    # above β: Q, from gammaincc; below 2 (only small β get there) from 1 − P, where Q is
    # not small (Q(β, 2) ≥ e^{−2}·2^β/Γ(β + 1)·… ≫ the allowance) and scipy's Q is slow
    near = ~below & (low < 2.0)
    if near.any():
        top = 1.0 - gammainc(beta[near], low[near])
        difference[near] = top - (1.0 - gammainc(beta[near], high[near]))
        allowance[near] = _GAMMA_ALLOWANCE * top + 4.0 * _EPS
    above = ~below & ~near
    if above.any():
        top = gammaincc(beta[above], low[above])
        difference[above] = top - gammaincc(beta[above], high[above])
        allowance[above] = _GAMMA_ALLOWANCE * top
    upper = difference + allowance
    return np.where(upper > _UNDERFLOW, upper, np.nan), np.maximum(difference - allowance, 0.0)


def _log(values):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(values)


def _log_expm1(x):
    """ln(e^x − 1) for x ≥ 0, without overflow."""
    with np.errstate(divide="ignore"):
        return np.where(x > 30.0, x + np.log1p(-np.exp(-np.minimum(x, 700.0))),
                        np.log(np.expm1(np.minimum(x, 30.0))))


def _log_excesses(betas: np.ndarray, steps: int, nodes: np.ndarray, bounds: np.ndarray):
    """ln of (3)'s bounds on each cell's ∫γ(ψ^t − 1): an array (orders, cells). The bounds
    without special functions ((iii) with the crude mass, (iv)) everywhere; the others only
    where those are within e^{50} of the largest cell (elsewhere they are negligible)."""
    t = float(steps)
    a, b = nodes[:-1], nodes[1:]
    la, lb = bounds[:-1], bounds[1:]
    slope = (lb - la) / (b - a)
    offset = la - slope * a + 4.0 * _EPS * (np.abs(la) + np.abs(lb) + np.abs(slope) * b)
    high = t * (offset + slope * b) * (1.0 + 4.0 * _EPS)  # x_b
    beta = betas[:, None]
    # the Gamma(β, t) mass of a cell is ≤ t^β(b^β − a^β)/Γ(β + 1)·e^{−ta}
    log_ratio = np.log(np.where(a > 0.0, a, 1.0) / b) + np.where(a > 0.0, 0.0, -np.inf)
    crude_mass = (beta * (math.log(t) + np.log(b)) + np.log(-np.expm1(beta * log_ratio))
                  - gammaln(beta + 1.0) - t * a)
    crude_mass += 8.0 * _EPS * (beta * (abs(math.log(t)) + np.abs(np.log(b)))
                                + np.abs(gammaln(beta + 1.0)) + t * a + 1.0)
    # (iv) e^{tc₀} t^β (b^β − a^β)/Γ(β + 1)·max(e^{−ra}, e^{−rb}), finite for every r
    rate = t * (1.0 - slope)
    crude_chord = crude_mass + t * a + t * offset + np.maximum(-rate * a, -rate * b)
    crude_chord += 8.0 * _EPS * (np.abs(t * offset) + np.abs(rate) * b + t * a)
    out = np.fmin(_log_expm1(high) + crude_mass, crude_chord)  # (iii) and (iv)
    need = out > out.max(axis=1, keepdims=True) - 50.0
    rows, cells = np.nonzero(need)
    beta, a, b, high = betas[rows], a[cells], b[cells], high[cells]
    offset, slope, rate = offset[cells], slope[cells], rate[cells]
    mass_up, mass_low = _difference(beta, t * a, t * b)
    best = out[rows, cells]
    best = np.fmin(best, _log_expm1(high) + _log(mass_up))  # (iii)
    # (ii) t c₀ ΔP(β) + c₁ β ΔP(β + 1) + (x_b²/2) e^{x_b} ΔP(β), where x_b < 1; c₀ may be
    # negative (the chord's intercept): its mass is then taken from below
    small = high < 1.0
    if small.any():
        next_up, _ = _difference(beta[small] + 1.0, t * a[small], t * b[small])
        x, up, low = high[small], mass_up[small], mass_low[small]
        series = (t * offset[small] * np.where(offset[small] >= 0.0, up, low)
                  + slope[small] * beta[small] * next_up + 0.5 * x * x * np.exp(x) * up)
        series = _log(series * (1.0 + 1e-12) + 1e-300)
        best[small] = np.fmin(best[small], series)  # NaN (an underflowed mass) is dropped
    # (i) e^{tc₀}(t/r)^β ΔP_r(β) − ΔP_t(β), r = t(1 − c₁) > 0
    positive = rate > 0.0
    if positive.any():
        tilted, _ = _difference(beta[positive], rate[positive] * a[positive],
                                rate[positive] * b[positive])
        log_rate = -np.log1p(-slope[positive])  # ln(t/r)
        shift = t * offset[positive]
        with np.errstate(invalid="ignore"):
            log_tilted = shift + beta[positive] * log_rate + _log(tilted)
            log_tilted += 8.0 * _EPS * (np.abs(shift) + beta[positive] * np.abs(log_rate)
                                        + np.abs(_log(tilted)) + 1.0)
            gap = np.minimum(_log(mass_low[positive]) - log_tilted, 0.0)
            chord = log_tilted + _log(-np.expm1(gap))
        best[positive] = np.fmin(best[positive], chord)  # NaN: underflow, dropped
    out[rows, cells] = best
    return out


def _log_tail(betas: np.ndarray, steps: int, last: float, noise_multiplier: float) -> np.ndarray:
    """ln of (3)'s tail bound beyond the last node, minimised over k > β/t."""
    t = float(steps)
    eta2 = 1.0 / noise_multiplier**2
    beta = betas[:, None]
    k = beta / t + np.geomspace(1e-3, 60.0, 120)[None, :]
    log_c = k * np.log(k) - k + 0.5 * k * (k + 1.0) * eta2
    values = (beta * math.log(t) + t * log_c + (beta - t * k) * math.log(last)
              - gammaln(beta) - np.log(t * k - beta))
    best = values.min(axis=1)
    return best + 8.0 * _EPS * (np.abs(best) + t * np.abs(log_c).max(axis=1)
                                + t * k.max(axis=1) * abs(math.log(last)) + 1.0)


def exact_add_log_moments(orders, steps: int, noise_multiplier: float) -> np.ndarray:
    """Certified upper bounds on ln E_Q[S^{−(α−1)}] at each order α > 1 (module doc, (3))."""
    betas = np.asarray(orders, dtype=float) - 1.0
    nodes, bounds = laplace_table(steps, noise_multiplier)
    tail = _log_tail(betas, steps, float(nodes[-1]), noise_multiplier)
    terms = np.concatenate([_log_excesses(betas, steps, nodes, bounds), tail[:, None]], axis=1)
    # a NaN or +inf term (not expected) leaves that order uncertified: +inf, Jensen then
    bad = (np.isnan(terms) | np.isposinf(terms)).any(axis=1)
    terms = np.where(bad[:, None], 0.0, terms)
    top = terms.max(axis=1)
    total = np.exp(terms - top[:, None]).sum(axis=1) * (1.0 + terms.shape[1] * _EPS)
    # ln E_Q[S^{−β}] ≤ ln(1 + Σ excesses + tail) (module doc, (3))
    out = np.logaddexp(0.0, top + np.log(total)) * (1.0 + 8.0 * _EPS)
    out[bad] = np.inf
    return out


def add_rdp(orders, steps: int, noise_multiplier: float) -> np.ndarray:
    """Certified D_α(Q‖P) of one epoch at each order: the smaller of the exact value (3) and
    Jensen's bound (4), rounded up. One step per epoch is the Gaussian: α/(2σ²)."""
    orders = np.asarray(orders, dtype=float)
    jensen = jensen_add_rdp(orders, steps, noise_multiplier)
    if steps <= 1:
        return jensen
    exact = exact_add_log_moments(orders, steps, noise_multiplier) / (orders - 1.0)
    return np.fmin(exact * (1.0 + 4.0 * _EPS), jensen)
