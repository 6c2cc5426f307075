"""The recursive bound of balls-in-bins (add/remove or zero-out), E epochs of t steps:
Poisson sampling at a rate q_a slightly above 1/t, plus a bad event.

After the "recursive" analysis of Feldman & Shenfeld 2025 (random-allocation package,
random_allocation_scheme/recursive.py: there the bad event is bounded through the
add-direction decomposition profile); proved here directly, with the bad event bounded by
a Chernoff bound on laplace.py's ψ.

THEOREM. Let R_i = P(y_{≤i})/Q(y_{≤i}) be the likelihood ratio of an epoch's first i outputs
(P: the record present, Q: absent), a ∈ (0, 1], G_a = {R_i ≥ a for 0 ≤ i ≤ t − 1},
q_a = min(1, 1/(ta)) and B(a) = min_{s>0} exp(ts(a − 1) + (t − 1) ln ψ(s)). Then
    δ_remove(ε) ≤ δ^{Pois(q_a), tE}_remove(ε) + E·a·B(a),
    δ_add(ε)    ≤ δ^{Pois(q_a), tE}_add(ε)    + E·B(a),
where δ^{Pois(q), n} is the profile of n steps of the Poisson-subsampled Gaussian at rate q.

PROOF. Fix the other records' allocations in every epoch (the same law under both datasets;
the hockey-stick divergence is jointly convex, so the mixture over them is bounded by the
worst fixed one) and subtract their contributions, known functions of the past. Within an
epoch, with L_j = exp(⟨y_j, g_j⟩/σ² − |g_j|²/(2σ²)) (g_j the record's gradient, |g_j| ≤ 1,
chosen from the past): R_i = (1/t)(Σ_{j≤i} L_j + t − i), R_0 = 1, a Q-martingale (E_Q[L_i |
past] = 1).
1. Conditional rate. P(y_{≤i}) = Q(y_{≤i})R_i and R_i = R_{i−1} + (L_i − 1)/t, so given the
   past, step i's output under P is (1 − π_i)N(0, σ²) + π_i N(g_i, σ²) with
   π_i = 1/(tR_{i−1}) (under Q: N(0, σ²)).
2. A modified mechanism P′: π′_i = π_i while R_0, …, R_{i−1} ≥ a, else 0; so π′_i ≤ q_a.
   Each step's pair ((1 − π′)N(0) + π′N(g), N(0)) is a post-processing (keep the draw with
   probability π′/q_a, else redraw from N(0)) of ((1 − q_a)N(0) + q_aN(g), N(0)), which the
   unit-shift Poisson pair dominates in both orders (|g| ≤ 1; models/worst_case.py). By the
   adaptive composition of dominating pairs (Zhu, Dong, Wang 2022, "Optimal accounting of
   differential privacy via characteristic function"), (P′, Q) over tE steps is dominated
   by tE Poisson steps at q_a, in each order.
3. P′ and P have the same conditional laws, hence the same density, on G = ∩_e G_{a,e}.
   Remove: P(S) − e^εQ(S) ≤ [P′(S ∩ G) − e^εQ(S ∩ G)] + P(G^c). Add: Q(S) − e^εP(S) ≤
   [Q(S ∩ G) − e^εP′(S ∩ G)] + Q(G^c). The brackets are ≤ the Poisson profiles (step 2), and
   P(G^c) ≤ Σ_e E[P(G^c_{a,e} | past epochs)], likewise under Q (union bound): each epoch,
   given the past, is again one epoch with adaptive gradients, bounded by step 4.
4. Bad event. Let τ be the first i ≤ t − 1 with R_i < a (τ = t − 1 if none). For s > 0,
   e^{−tsR} is a Q-submartingale (convex of a martingale), so by Markov's inequality and
   optional stopping, Q(G_a^c) = Q(R_τ < a) ≤ e^{tsa}E_Q e^{−tsR_τ} ≤ e^{tsa}E_Q e^{−tsR_{t−1}},
   and tR_{t−1} = Σ_{j≤t−1} L_j + 1 with E[e^{−sL_j} | past] ≤ φ(s) = e^{−s}ψ(s) (the convex
   order of add_rdp.py (2)), so Q(G_a^c) ≤ exp(ts(a − 1) + (t − 1) ln ψ(s)) for every s: B(a).
   Under P, with τ′ the first i with R_i < a: P(G_a^c) = Σ_{i≤t−1} E_Q[R_t; τ′ = i] =
   Σ_i E_Q[R_i; τ′ = i] ≤ a·Q(G_a^c) (martingale, {τ′ = i} known at i). ∎

Rounding: B(a) from laplace.py's upper bounds on ln ψ at its nodes (any s is valid), with
8 ulps of the magnitudes and a relative 1e-12; q_a rounded up by 4 ulps (a larger rate is
dominated by the same argument). The thresholds: for a target δ, the largest a (bisection)
with E·B(a) ≤ f·δ for f in _SHARES (δ on a grid of 10 per decade); every a is valid, the
choice only costs tightness.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.allocation.laplace import laplace_table
from dpcalc.allocation.poisson import PoissonProfile
from dpcalc.models.mixture import REMOVE

_EPS = float(np.finfo(float).eps)
# the bad events' share of the target δ (one Poisson composition each)
_SHARES = (0.03, 0.3)
# the Poisson compositions resolve δ down to this fraction of the target
_RESOLUTION = 1e-3
# thresholds whose rate q_a exceeds this multiple of 1/t are skipped (a cost rule only:
# Poisson at 4/t is far above the other bounds there)
_MAX_RATE_RATIO = 4.0


class RecursiveBound:
    """The theorem of the module doc for ``epochs`` epochs of ``steps`` steps at σ; the
    thresholds are chosen per target δ (:meth:`prepare`), each adding one profile."""

    def __init__(self, steps: int, noise_multiplier: float, epochs: int):
        self.steps, self.noise_multiplier, self.epochs = steps, noise_multiplier, epochs
        self.parts: list[tuple[PoissonProfile, float, float, float, float]] = []
        self._prepared: set = set()

    def log_bad_event(self, threshold: float) -> float:
        """ln B(a), an upper bound on ln Q(G_a^c) (module doc, step 4)."""
        t = float(self.steps)
        nodes, bounds = laplace_table(self.steps, self.noise_multiplier)
        values = t * nodes[1:] * (threshold - 1.0) + (t - 1.0) * bounds[1:]
        values = values + 8.0 * _EPS * (t * nodes[1:] + (t - 1.0) * np.abs(bounds[1:]))
        return min(0.0, float(values.min()))

    def threshold(self, log_target: float) -> float | None:
        """The largest a ∈ (0, 1] (to 1e-9) with ln B(a) ≤ log_target (ln B increases with
        a), None if even a → 0 misses it."""
        if self.log_bad_event(1e-12) > log_target:
            return None
        low, high = 1e-12, 1.0
        if self.log_bad_event(high) <= log_target:
            return high
        while high - low > 1e-9:
            middle = 0.5 * (low + high)
            below = self.log_bad_event(middle) <= log_target
            low, high = (middle, high) if below else (low, middle)
        return low

    def prepare(self, delta: float) -> None:
        """Add the profiles whose bad events take the shares _SHARES of the design δ: ``delta``
        rounded to a grid of 10 per decade, so that targets close together (ε(δ) and then
        δ at that ε) share their thresholds."""
        key = round(10.0 * math.log10(delta))
        if self.steps < 2 or key in self._prepared:
            return
        self._prepared.add(key)
        design = 10.0 ** (key / 10.0)
        for share in _SHARES:
            threshold = self.threshold(math.log(share * design / self.epochs))
            if threshold is None:
                continue
            rate = 1.0 / (self.steps * threshold) * (1.0 + 4.0 * _EPS)
            if rate >= min(1.0, _MAX_RATE_RATIO / self.steps):
                continue  # Poisson at ≥ 4/t: not worth a composition (any a is valid)
            bad = math.exp(self.log_bad_event(threshold)) * (1.0 + 1e-12) * self.epochs
            profile = PoissonProfile(rate, self.noise_multiplier, self.steps * self.epochs,
                                     design * _RESOLUTION)
            self.parts.append((profile, min(bad, threshold * bad * (1.0 + 1e-12)), bad,
                               threshold, rate))

    def deltas(self, direction: str, epsilons) -> np.ndarray:
        """The smallest of the prepared profiles' δ at each ε (1 where none is prepared)."""
        epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
        best = np.ones(epsilons.size)
        for profile, bad_remove, bad_add, _, _ in self.parts:
            bad = bad_remove if direction == REMOVE else bad_add
            best = np.minimum(best, profile.deltas(direction, epsilons) + bad)
        return best
