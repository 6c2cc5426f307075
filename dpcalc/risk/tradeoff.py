"""What an ε means for an attacker: certified bounds on membership inference, posterior
success, reconstruction and the Gaussian-DP μ, from the privacy profiles of composed.py.

Notation. For a direction d the composed worst-case pair is (P, Q) (remove: P = the run
with the record, Q = without), δ_PQ(ε) = H_{e^ε}(P‖Q) = sup_S P(S) − e^ε Q(S) its profile
(direction d) and δ_QP the reverse (direction reverse[d]). A test φ that says "P" has
FPR α = E_Q[φ] and TPR = E_P[φ].

Truth (what the lower bounds bound). TPR*(α) = the largest TPR at FPR ≤ α of any test of
one world of a neighbouring pair against the other, either way round (max over d). By the
Neyman–Pearson lemma and convex duality, for one order
    TPR_PQ(α) = inf_{ε∈ℝ} [δ_PQ(ε) + e^ε α]
              = inf_{ε≥0} min{δ_PQ(ε) + e^ε α,  1 − e^{−ε}(1 − α − δ_QP(ε))}          (1)
(the second branch is the first at −ε, by δ_PQ(−ε) = 1 − e^{−ε} + e^{−ε} δ_QP(ε)); each
branch is the Kairouz–Oh–Viswanath 2015 / Dong–Roth–Su 2022 (Prop. 2.12) constraint
TPR ≤ 1 − f_{ε,δ}(α), f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)}.

Upper bounds (safe values). TPR: the symmetric f-DP curve of Dong–Roth–Su 2022 (their
symmetrisation, Def. F.1, as riskcal reports it): (1) with δ_sym = max_d δ_d^upper in both
branches, an infimum over the breakpoints of all directions. Any finite set of ε gives a
valid bound, δ_sym ≥ every δ_PQ and δ_QP, and the result is ≥ TPR*(α).

Lower bounds. With D_d ≤ δ_d the lower profiles of composed.py (δ_true(ε) ≥
δ_rounded(ε + η) − f, f the rounding failure, η its slack), (1) with D in place of δ is a
lower bound on TPR_PQ(α): the infimum of a pointwise smaller function is smaller. It is
certified only because the infimum is exact: D(ε) + e^ε α and 1 − e^{−ε}(1 − α − D(ε)) are
monotone between breakpoints (composed.py), so each infimum is the minimum over the
breakpoints, together with the limit 1 as ε → ∞. Hence, for every α,
    max(α, max_d min{1, min_j [D_d(ε_j) + e^{ε_j} α], min_j [1 − e^{−ε_j}(1 − α − D_rd(ε_j))]})
is ≤ TPR*(α) (rd = reverse[d]): some test on the true pair reaches at least this TPR.

Advantage max(TPR − FPR) = δ(0) (total variation; the same for both orders). Posterior
success of the Bayes-optimal guess with prior π on one world: max(π, 1 − π) +
min(π, 1 − π)·δ(|ln(π/(1 − π))|) (the sup over tests of a linear functional; riskcal's
Bayes risk is 1 minus this; Kulynych et al. 2025, Prop. D.1). Reconstruction: for an
attack whose baseline success (without the record) is κ, success ≤ the blow-up function
B_κ = sup{P(E) : Q(E) ≤ κ} = TPR at FPR κ (Hayes, Mahloujifar, Balle 2023, "Bounding
training data reconstruction in DP-SGD", NeurIPS, §3; Kulynych et al. 2025): its upper
bound is certified; its lower bound bounds B_κ, not an attack.

Epoch samplers (shuffle, shuffle-once, balls-in-bins) have no pair per step: risk_epoch.py
builds their ComposedRun from the certified upper and lower bounds of epoch_samplers.py.
"""
from __future__ import annotations

import numpy as np

from dpcalc.pb.composed import ComposedRun
from dpcalc.params import check_range

DEFAULT_FPRS = (1e-3, 1e-2, 0.1)
DEFAULT_TOLERANCE = 0.01
SMALLEST_FPR = 1e-12
# The rounding failure f of the lower profiles, relative to the smallest probability asked.
_FAILURE_FRACTION = 1e-4
_MAX_EXPONENT = 700.0
# Every figure is widened outward by this relative amount: the upper profile equals the true
# one at grid points up to float round-off, which may fall on either side.
_ROUNDOFF = 1e-10
_WORK_PER_CHUNK = 4_000_000


def check_probability(value, flag: str, low: float = SMALLEST_FPR) -> float:
    """A probability in [low, 1) (FPR, baseline) — DpcalcError naming ``flag`` otherwise."""
    return check_range(value, flag, low, 1.0, low_open=False)


def _min_of_lines(intercepts: np.ndarray, slopes: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """min_j (intercepts_j + slopes_j·α) for each α (every j, in chunks)."""
    out = np.full(alphas.size, np.inf)
    if intercepts.size == 0:
        return out
    chunk = max(1, _WORK_PER_CHUNK // intercepts.size)
    for start in range(0, alphas.size, chunk):
        block = alphas[start:start + chunk, None]
        out[start:start + chunk] = np.min(intercepts[None, :] + slopes[None, :] * block, axis=1)
    return out


def _branches(epsilons: np.ndarray, deltas: np.ndarray, alphas: np.ndarray):
    """(min_j δ_j + e^{ε_j}α, min_j 1 − e^{−ε_j}(1 − α − δ_j)) over the breakpoints.

    Breakpoints above ε = 700 are left out of the first: their terms exceed 1 for every
    α ≥ 1e-12, and the caller caps the result at 1."""
    near = epsilons <= _MAX_EXPONENT
    first = _min_of_lines(deltas[near], np.exp(epsilons[near]), alphas)
    shrink = np.exp(-epsilons)
    second = _min_of_lines(1.0 - shrink * (1.0 - deltas), shrink, alphas)
    return first, second


def upper_curves(run: ComposedRun) -> list:
    """The distinct upper profiles of the run's directions (a direction without one, an
    explicit lower instance's, is bounded by the others': composed.py)."""
    curves = {id(p.upper): p.upper for p in run.directions.values() if p.upper is not None}
    return list(curves.values())


def symmetric_upper_profile(run: ComposedRun) -> tuple[np.ndarray, np.ndarray]:
    """(ε, δ_sym) at the union of every direction's upper breakpoints, δ_sym = max_d δ_d
    (an upper bound at each point, made non-increasing on the safe side); computed once per
    run (read-only arrays)."""
    if "symmetric_upper" not in run.derived:
        curves = upper_curves(run)
        points = np.unique(np.concatenate([curve.breakpoints for curve in curves]))
        values = np.max([curve.at(points) for curve in curves], axis=0)
        values = np.maximum.accumulate(values[::-1])[::-1]
        points.setflags(write=False)
        values.setflags(write=False)
        run.derived["symmetric_upper"] = (points, values)
    return run.derived["symmetric_upper"]


def tpr_upper(run: ComposedRun, alphas) -> np.ndarray:
    """Certified upper bound on the TPR of any test at each FPR α (module doc)."""
    alphas = np.atleast_1d(np.asarray(alphas, dtype=float))
    epsilons, deltas = symmetric_upper_profile(run)
    first, second = _branches(epsilons, deltas, alphas)
    return np.minimum(1.0, np.minimum(first, second))


def tpr_lower(run: ComposedRun, alphas) -> np.ndarray:
    """Certified lower bound on TPR*(α), the best test's TPR at FPR α (module doc)."""
    alphas = np.atleast_1d(np.asarray(alphas, dtype=float))
    best = alphas.copy()  # the test that ignores the output
    for direction, profiles in run.directions.items():
        forward = run.directions[direction].lower
        backward = run.directions[run.reverse[direction]].lower
        first, _ = _branches(forward.breakpoints, forward.values, alphas)
        _, second = _branches(backward.breakpoints, backward.values, alphas)
        best = np.maximum(best, np.minimum(1.0, np.minimum(first, second)))
    return best


def _delta_bounds_at(run: ComposedRun, epsilon: float) -> tuple[float, float]:
    """(max_d δ_d upper, max_d δ_d lower) at ``epsilon`` ≥ 0."""
    point = np.array([epsilon])
    upper = max(float(curve.at(point)[0]) for curve in upper_curves(run))
    lower = max(float(p.lower.at(point)[0]) for p in run.directions.values())
    return min(1.0, upper), max(0.0, lower)
