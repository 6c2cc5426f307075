"""Certified upper bounds on ψ(s) = E exp(−s(L − 1)) at a grid of s ≥ 0, for one
balls-in-bins step: L = exp(ηZ − η²/2), Z ~ N(0, 1), η = 1/σ, is the likelihood ratio
N(1, σ²)/N(0, σ²) at a draw from N(0, σ²) (E L = 1), and ψ(s) = e^{s}φ(s) with
φ(s) = E e^{−sL} its Laplace transform. ψ carries the add direction's exact Rényi divergence
(add_rdp.py) and the recursive bound's bad event (recursive.py).

Facts used (each gives an upper bound on ψ(s); at every node the smallest is kept):
(F1) ln ψ is the cumulant generating function of −(L − 1): convex, ln ψ(0) = 0 and
     (ln ψ)′(0) = −E[L − 1] = 0, so ψ ≥ 1 and ψ is non-decreasing on s ≥ 0. An upper bound
     at s_j therefore bounds ψ at every s ≤ s_j (the suffix minimum in :func:`laplace_table`),
     and on a cell ln ψ lies under the chord through upper bounds at its ends (add_rdp.py).
(F2) Small s: ψ − 1 = E g(s(L − 1)) with g(x) = e^{−x} − 1 + x; Taylor's theorem with the
     Lagrange remainder gives g(x) ≤ x²/2 for x ≥ 0 and g(x) ≤ e^{−x}x²/2 for x < 0, and
     s(L − 1) ≥ −s, so ψ − 1 ≤ e^{s}s²V/2 with V = E(L − 1)² = e^{η²} − 1.
(F3) Large s: x^k e^{−x} ≤ (k/e)^k for x > 0, k > 0, and E L^{−k} = e^{k(k+1)η²/2} (the
     log-normal moment), so φ(s) ≤ (k/e)^k e^{k(k+1)η²/2} s^{−k} for every k > 0.
(F4) Quadrature: ψ − 1 = ∫ϕ(z)g(s(L(z) − 1))dz for s ≤ 1 and φ(s) = ∫ϕ(z)e^{−sL(z)}dz for
     s > 1 (ϕ the N(0, 1) density), by the trapezoid rule h·Σ_k w(kh) on z ∈ [−Z_l, Z_r]:
     - the infinite sum's error is ≤ 2M/(e^{2πa/h} − 1) when w is analytic in the strip
       |Im z| < a with ∫|w(x + iy)|dx ≤ M there (Trefethen & Weideman 2014, "The
       exponentially convergent trapezoidal rule", SIAM Rev. 56(3), Thm 5.1). For
       a ≤ π/(2η), Re L(x + iy) = e^{ηx − η²/2}cos(ηy) > 0, so |e^{−sL}| ≤ 1 and
       |e^{−s(L−1)}| ≤ e^{s}; ∫|ϕ(x + iy)|dx = ∫|Lϕ|(x + iy)dx = e^{y²/2}; hence
       M = e^{a²/2}(e^{s} + 1 + 2s) for the g form (|g(w)| ≤ |e^{−w}| + 1 + |w|) and
       M = e^{a²/2} for φ;
     - the terms left out: right of Z_r (> η), g(x) ≤ x ≤ sL and Lϕ(z) = ϕ(z − η) decreases,
       so their sum is ≤ sΦ̄(Z_r − η); left of −Z_l, −s ≤ x < 0 where g decreases, so
       ≤ g(−s)Φ(−Z_l). For φ, e^{−sL} ≤ 1: ≤ Φ̄(Z_r) + Φ(−Z_l).
     The sums are of positive terms: a relative 1e-10 covers their float error (≤ n·2⁻⁵²
     for n ≤ 10⁵ terms; g's rounding is ≤ 2⁻⁵¹/|x| relative for |x| ≥ 1e-3, where its
     series is not used). In the φ form each log-term's rounding (4 ulps of its magnitude)
     is added to it.
h is the largest of _STEPS whose error factor min_a e^{a²/2}/(e^{2πa/h} − 1) is ≤ 1e-32
(h = 0.1 at σ = 1, 0.25 at σ = 2, 0.5 at σ = 10, 0.025 at σ = 0.2); below σ ≈ 0.2 no step
qualifies and only (F2), (F3) and ψ's trivial bound e^{s} (φ ≤ 1) are used (the add
direction then falls back to Jensen's bound, add_rdp.py (4)).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from dpcalc.numerics.special_functions import ndtr

_SAFETY = 1e-10
_EPS = float(np.finfo(float).eps)
_Z_SPAN = 12.0  # Φ(−12) ≈ 1.8e-33
_ERROR_TARGET = 1e-32
_STEPS = (0.5, 0.4, 0.3, 0.25, 0.2, 0.15, 0.1, 0.075, 0.05, 0.035, 0.025)
_CHUNK = 1 << 20  # matrix entries per block of nodes
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# the node grid: s_1 = _FIRST/t, ln-spacing _FINE up to s = e^{_FINE_UP_TO}, _COARSE beyond,
# to e^{_REACH + η²}
_FIRST = 1e-4
_FINE = 0.015
_FINE_UP_TO = 2.5
_COARSE = 0.04
_REACH = 12.0
_MAX_REACH = 40.0


def quadrature_step(eta: float) -> tuple[float, float] | None:
    """(h, E): the largest h of _STEPS with E = min over a ∈ (0, π/(2η)) of
    e^{a²/2}/(e^{2πa/h} − 1) ≤ 1e-32 (F4's error per unit of M); None if none has."""
    top = 0.999 * math.pi / (2.0 * eta)
    for h in _STEPS:
        best = math.inf
        for a in (min(2.0 * math.pi / h, top), top, 0.75 * top, 0.5 * top):
            exponent = 2.0 * math.pi * a / h
            # ln(e^x − 1) = x + ln(1 − e^{−x})
            best = min(best, 0.5 * a * a - exponent - math.log1p(-math.exp(-exponent)))
        if best <= math.log(_ERROR_TARGET):
            return h, math.exp(best)
    return None


def g_function(x: np.ndarray) -> np.ndarray:
    """g(x) = e^{−x} − 1 + x ≥ 0 without cancellation (its series below |x| = 1e-3)."""
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < 1e-3
    xs = np.where(small, x, 0.0)
    series = xs * xs * (0.5 - xs / 6.0 + xs * xs / 24.0 - xs**3 / 120.0 + xs**4 / 720.0)
    return np.where(small, series, np.expm1(-x) + x)


def _moment_bound(s: np.ndarray, eta: float) -> np.ndarray:
    """(F3): an upper bound on ln φ(s), minimised over k on a grid."""
    k = np.geomspace(1e-3, 400.0, 400)[None, :]
    log_s = np.log(s)[:, None]
    values = k * np.log(k) - k + 0.5 * k * (k + 1.0) * eta * eta - k * log_s
    best = values.min(axis=1)
    return best + 8.0 * _EPS * (np.abs(log_s[:, 0]) * 400.0 + np.abs(best) + 1.0)


def _small(s: np.ndarray, eta: float, step) -> np.ndarray:
    """Upper bounds on ln ψ(s) for 0 < s ≤ 1: (F2), and (F4) in the g form."""
    variance = math.expm1(eta * eta)
    bound = np.exp(s) * s * s * variance / 2.0 * (1.0 + _SAFETY)  # (F2)
    if step is not None:
        h, error = step
        low, high = int(math.ceil(_Z_SPAN / h)), int(math.ceil((_Z_SPAN + eta) / h))
        z = h * np.arange(-low, high + 1)
        density = np.exp(-0.5 * z * z - _LOG_SQRT_2PI)
        ratio = np.exp(eta * z - 0.5 * eta * eta)
        rows = max(1, _CHUNK // z.size)
        for start in range(0, s.size, rows):
            part = s[start:start + rows]
            body = h * (g_function(part[:, None] * (ratio[None, :] - 1.0)) * density).sum(axis=1)
            left_out = (part * ndtr(-(high * h - eta)) + g_function(-part) * ndtr(-low * h)
                        + 1e-300)
            quadrature = 2.0 * (np.exp(part) + 1.0 + 2.0 * part) * error
            total = (body + left_out + quadrature) * (1.0 + _SAFETY)
            bound[start:start + rows] = np.minimum(bound[start:start + rows], total)
    return np.log1p(bound) * (1.0 + _SAFETY)


def _large(s: np.ndarray, eta: float, step) -> np.ndarray:
    """Upper bounds on ln ψ(s) = s + ln φ(s) for s > 1: (F3), and (F4) in the φ form."""
    log_phi = np.minimum(0.0, _moment_bound(s, eta))
    if step is not None:
        h, error = step
        # e^{−sL} lives where L ≲ 1/s: the left end follows ln s
        reach = _Z_SPAN + max(0.0, (math.log(float(s.max())) - 0.5 * eta * eta) / eta)
        low, high = int(math.ceil(reach / h)), int(math.ceil(_Z_SPAN / h))
        z = h * np.arange(-low, high + 1)
        log_weight = math.log(h) - 0.5 * z * z - _LOG_SQRT_2PI
        ratio = np.exp(eta * z - 0.5 * eta * eta)
        left_out = math.log(float(ndtr(-high * h)) + float(ndtr(-low * h)) + 2.0 * error + 1e-300)
        rows = max(1, _CHUNK // z.size)
        for start in range(0, s.size, rows):
            part = s[start:start + rows]
            exponent = part[:, None] * ratio[None, :]
            terms = log_weight[None, :] - exponent
            terms += 4.0 * _EPS * (np.abs(log_weight)[None, :] + exponent)  # rounding, up
            top = terms.max(axis=1)
            body = top + np.log(np.exp(terms - top[:, None]).sum(axis=1))
            quadrature = np.logaddexp(body, left_out) + _SAFETY
            log_phi[start:start + rows] = np.minimum(log_phi[start:start + rows], quadrature)
    return s + log_phi + 4.0 * _EPS * (s + np.abs(log_phi))


def log_psi_upper(s, sigma: float) -> np.ndarray:
    """Certified upper bounds on ln ψ(s) at each s ≥ 0 (module doc), not yet made monotone."""
    s = np.atleast_1d(np.asarray(s, dtype=float))
    eta = 1.0 / sigma
    step = quadrature_step(eta)
    out = np.zeros(s.size)
    small, large = (s > 0.0) & (s <= 1.0), s > 1.0
    if small.any():
        out[small] = _small(s[small], eta, step)
    if large.any():
        out[large] = _large(s[large], eta, step)
    return out


def node_grid(steps: int, sigma: float) -> np.ndarray:
    """0, then s_1 = 1e-4/t geometric with ln-spacing 0.015 up to e^{2.5} and 0.04 beyond, up
    to e^{min(40, 12 + η²)} (past the bulk of every Gamma–Laplace integrand add_rdp.py needs
    at t ≥ 2 for the orders it uses; beyond the last node a tail bound takes over)."""
    first = math.log(_FIRST / steps)
    fine = np.arange(first, _FINE_UP_TO, _FINE) if first < _FINE_UP_TO else np.empty(0)
    reach = min(_MAX_REACH, _REACH + 1.0 / sigma**2)
    coarse = np.arange(max(first, fine[-1] + _FINE if fine.size else first),
                       reach + _COARSE / 2, _COARSE)
    return np.concatenate([[0.0], np.exp(np.concatenate([fine, coarse]))])


@functools.lru_cache(maxsize=32)
def laplace_table(steps: int, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """(nodes s, upper bounds on ln ψ at them, non-decreasing), cached per (t, σ): the
    suffix minimum is valid because ψ is non-decreasing (F1)."""
    nodes = node_grid(steps, sigma)
    bounds = log_psi_upper(nodes, sigma)
    bounds = np.minimum.accumulate(bounds[::-1])[::-1]
    nodes.flags.writeable = bounds.flags.writeable = False
    return nodes, bounds
