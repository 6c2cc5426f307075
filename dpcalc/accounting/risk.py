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

import math
from dataclasses import dataclass, field

import numpy as np
from dpcalc.accounting.special_functions import log_ndtr

from dpcalc.accounting.buckets import REFINE_POINTS_LIMIT, check_consistent
from dpcalc.accounting.composed import ComposedRun, composed_directions, default_grid_step
from dpcalc.accounting.epoch_samplers import is_epoch_schedule
from dpcalc.accounting.risk_epoch import epoch_composed_run
from dpcalc.errors import DpcalcError
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


# --- Gaussian DP --------------------------------------------------------------------------
_GDP_DELTA_FLOOR = 1e-10   # μ is certified where the profile is above this
_GDP_POINTS = 4000         # breakpoints kept for the μ search (every interval still covered)
_GDP_MIN_MU = 1e-9        # the μ searches start here (a μ below it is reported as this)
_GDP_FIRST_HIGH = 64.0     # their first upper end, raised 8× at a time up to _GDP_LIMIT_MU
_GDP_LIMIT_MU = 1e8        # ε ~ μ²/2 = 5e15 there: past every run the engine composes
# δ values within this of 1 cannot be told apart from 1 in float: the upper μ is checked
# from the first breakpoint where δ_U is below 1 − this (gdp_mu_bounds)
_GDP_NEAR_ONE = 1e-8
_GDP_FAILURE = 1e-4 * _GDP_DELTA_FLOOR  # the rounding failure of the lower profile μ reads
_HOLD_MARGIN = 1e-10  # relative, below the computed δ_μ (_gdp_holds)


def log_gdp_delta(mu: float, epsilons: np.ndarray) -> np.ndarray:
    """ln δ_μ(ε), δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth, Su 2022, Cor. 2.13)."""
    high = log_ndtr(-epsilons / mu + mu / 2.0)
    low = log_ndtr(-epsilons / mu - mu / 2.0)
    with np.errstate(divide="ignore"):
        return high + np.log(-np.expm1(np.minimum(epsilons + low - high, -1e-300)))


def _thinned(points: np.ndarray) -> np.ndarray:
    if points.size <= _GDP_POINTS:
        return np.arange(points.size)
    return np.unique(np.linspace(0, points.size - 1, _GDP_POINTS).round().astype(int))


def _bisect_mu(holds, low: float = _GDP_MIN_MU, high: float | None = None) -> tuple[float, float]:
    """(a, b), a < b, for a predicate ``holds`` that is false below some μ* and true above:
    ``holds(b)`` and not ``holds(a)``, b/a ≤ 1 + 1e-6, so a ≤ μ* ≤ b. a = 0 where ``holds(low)``
    (nothing below ``low`` was tried); b = inf where no μ up to _GDP_LIMIT_MU holds (a is then
    the last μ that failed). With ``high`` given, ``holds(high)`` is taken as known.

    Whoever needs a certified upper bound reads b, a certified lower bound reads a: a search
    that gives up returns a bound from its safe side (inf above, the last failure below),
    never inf as a lower bound nor ``low`` as one."""
    if holds(low):
        return 0.0, low
    if high is None:
        high = max(_GDP_FIRST_HIGH, 2.0 * low)
        while not holds(high):
            if high >= _GDP_LIMIT_MU:
                return high, math.inf
            low, high = high, min(8.0 * high, _GDP_LIMIT_MU)
    for _ in range(80):
        if high / low < 1.0 + 1e-6:
            break
        middle = math.sqrt(low * high)
        if holds(middle):
            high = middle
        else:
            low = middle
    return low, high


@dataclass(frozen=True)
class GdpBounds:
    """``upper``: a μ with TPR ≤ Φ(Φ⁻¹(α) + μ) for every FPR α in ``fpr_range`` (certified:
    δ_d(ε) ≤ δ_μ(ε) on [0, ``epsilon_range``] for every direction); ``lower``: no μ below it
    satisfies δ_d ≤ δ_μ on that range."""

    upper: float
    lower: float
    epsilon_range: float
    fpr_range: tuple[float, float]


def _interval_checks(curve, start: float, top: float):
    """(left ends, right ends, δ_U at left ends, δ_U at right ends) of the intervals between
    the breakpoints of ``curve`` covering [start, top] (the first starts at ``start``)."""
    keep = (curve.breakpoints > start) & (curve.breakpoints < top)
    lefts = np.concatenate([[start], curve.breakpoints[keep]])
    values = np.concatenate([curve.at(np.array([start])), curve.values[keep]])
    rights = np.append(lefts[1:], top)
    return lefts, rights, values, np.append(values[1:], curve.at(np.array([top])))


def _gdp_holds(mu: float, checks) -> bool:
    """δ_U ≤ δ_μ on every interval [a, b] of ``checks``. δ_U is convex in s = e^ε (a
    hockey-stick curve) so it lies below its chord, and δ_μ convex lies above its tangent at
    b, slope dδ_μ/ds = −Φ(−ε_b/μ − μ/2): the chord is below the tangent line when both ends
    are, i.e. δ_U(a) ≤ δ_μ(b) + Φ(−ε_b/μ − μ/2)(e^b − e^a) and δ_U(b) ≤ δ_μ(b). The rise
    is formed in logs (e^b overflows past ε = 709; capped at e^700, far above any δ ≤ 1)."""
    for lefts, rights, at_left, at_right in checks:
        at_b = np.exp(log_gdp_delta(mu, rights))
        with np.errstate(divide="ignore"):
            log_rise = (log_ndtr(-rights / mu - mu / 2.0) + rights
                        + np.log(-np.expm1(np.minimum(lefts - rights, 0.0))))
        tangent = at_b + np.exp(np.minimum(log_rise, _MAX_EXPONENT))
        # δ_μ and its tangent are float values (relative error ~1e-15): the check keeps a
        # margin of _HOLD_MARGIN below them, so a μ that passes holds for the exact ones
        safe_tangent, safe_at_b = tangent * (1.0 - _HOLD_MARGIN), at_b * (1.0 - _HOLD_MARGIN)
        if np.any(at_left > safe_tangent) or np.any(at_right > safe_at_b):
            return False
    return True


def _certified_mu(checks, low: float) -> float:
    """The smallest μ (relative 1e-6) passing :func:`_gdp_holds` on every interval, inf if
    none up to _GDP_LIMIT_MU does: searched on merged intervals (a merged interval's check
    implies its parts'), then on the intervals nearest to binding, verified on all of them,
    and searched on all of them where that fails (so the answer does not hang on which
    intervals were near). Every value returned passed the check on all intervals."""
    def merged(lefts, rights, at_left, at_right):
        index = _thinned(lefts)
        last = np.append(index[1:] - 1, lefts.size - 1)
        return lefts[index], rights[last], at_left[index], at_right[last]

    coarse = [merged(*c) for c in checks]  # the same for every μ tried
    _, first = _bisect_mu(lambda mu: _gdp_holds(mu, coarse), low)
    if not math.isfinite(first):
        return first
    near = []
    for lefts, rights, at_left, at_right in checks:
        at_b = np.exp(log_gdp_delta(first, rights))
        with np.errstate(divide="ignore", invalid="ignore"):
            margin = np.minimum(at_b / at_left, at_b / at_right)
        pick = np.sort(np.argsort(np.nan_to_num(margin, nan=np.inf), kind="stable")[:_GDP_POINTS])
        near.append((lefts[pick], rights[pick], at_left[pick], at_right[pick]))
    _, candidate = _bisect_mu(lambda mu: _gdp_holds(mu, near), low, first)

    def holds_everywhere(mu: float) -> bool:
        return _gdp_holds(mu, checks)

    if candidate < first and holds_everywhere(candidate):
        return candidate
    # A merged interval's check implies its parts' in exact arithmetic: checked here, not
    # assumed (an independent review found the check non-monotone in μ's last bits).
    if holds_everywhere(first):
        # where an interval outside the near ones binds: the smallest μ in [candidate, first]
        return first if candidate >= first else _bisect_mu(holds_everywhere, candidate, first)[1]
    return _bisect_mu(holds_everywhere, first)[1]  # upward from first (inf if none holds)


def _checked_range(run: ComposedRun) -> tuple[float, float]:
    """[start, top]: the ε range the μ bounds are checked on. top: the last breakpoint where
    the symmetric upper profile is ≥ _GDP_DELTA_FLOOR; start: 0, or, where the profile is
    within _GDP_NEAR_ONE of 1 at ε = 0 (a large μ: δ(0) = 1 − 2Φ(−μ/2) is 1 in float), the
    first breakpoint below 1 − _GDP_NEAR_ONE, since no float check can certify δ_μ ≥ a δ
    that rounds to 1 while δ_μ < 1. None where no breakpoint up to top qualifies."""
    epsilons, deltas = symmetric_upper_profile(run)
    above = np.flatnonzero(deltas >= _GDP_DELTA_FLOOR)
    top = float(epsilons[above[-1]]) if above.size else 0.0
    top = max(top, float(epsilons[min(1, epsilons.size - 1)]))
    below_one = np.flatnonzero((deltas <= 1.0 - _GDP_NEAR_ONE) & (epsilons < top))
    if not below_one.size:
        return None
    return float(epsilons[below_one[0]]), top


def _fpr_range(mu: float, start: float, top: float) -> tuple[float, float]:
    """The FPRs α whose tangent point on G_μ, ε*(α) = −μΦ⁻¹(α) − μ²/2, lies at |ε*| in
    [start, top]: where δ ≤ δ_μ was checked on both orders, TPR(α) ≤ Φ(Φ⁻¹(α) + μ)
    (TPR(α) = inf_ε δ(ε) + e^ε α, taken at ε*). From start = 0 that is one interval through
    α = Φ(−μ/2); from start > 0 the upper of its two pieces, the one with the usual FPRs."""
    from dpcalc.accounting.special_functions import ndtr

    if start > 0.0:
        return float(ndtr(start / mu - mu / 2.0)), float(ndtr(top / mu - mu / 2.0))
    return float(ndtr(-top / mu - mu / 2.0)), float(ndtr(top / mu - mu / 2.0))


def gdp_mu_bounds(run: ComposedRun) -> GdpBounds:
    """The smallest certified Gaussian-DP μ on the range where the profile is ≥ 1e-10, and
    a certified lower bound on it; μ known in closed form (ComposedRun.gdp_mu) holds at every
    FPR and is taken where it is smaller."""
    checked = _checked_range(run)
    if checked is None:  # δ_U ≈ 1 up to the floor: nothing certifiable below μ = inf
        start, top = 0.0, 0.0
        upper, lower = math.inf, 0.0
    else:
        start, top = checked
        lower = _lower_mu(run, start, top)
        upper = _certified_mu([_interval_checks(curve, start, top) for curve in upper_curves(run)],
                              max(lower, _GDP_MIN_MU))
    if run.gdp_mu_lower is not None:  # exact in closed form: certified on every FPR
        lower = max(lower, run.gdp_mu_lower)
    if run.gdp_mu is not None and run.gdp_mu <= upper:  # certified in closed form: every FPR
        check_consistent(run.gdp_mu, lower, "the Gaussian-DP μ")
        return GdpBounds(run.gdp_mu, lower, math.inf, (0.0, 1.0))
    check_consistent(upper, lower, "the Gaussian-DP μ")
    if not math.isfinite(upper):
        return GdpBounds(upper, lower, top, (0.0, 1.0))
    return GdpBounds(upper, lower, top, _fpr_range(upper, start, top))


def _lower_mu(run: ComposedRun, start: float, top: float) -> float:
    """The largest μ found ruled out on [start, top]: some lower-profile point has
    D_j > δ_μ(ε_j) (δ_true ≥ D_j), with the same relative margin as the upper check; 0 where
    none is."""
    lower_checks = []
    for profiles in run.directions.values():
        lower_profile = profiles.lower_for(_GDP_FAILURE)
        keep = (lower_profile.breakpoints >= start) & (lower_profile.breakpoints <= top)
        index = _thinned(np.flatnonzero(keep))
        with np.errstate(divide="ignore"):
            lower_checks.append((lower_profile.breakpoints[keep][index],
                                 np.log(np.maximum(lower_profile.values[keep][index], 0.0))))
    log_margin = math.log1p(_HOLD_MARGIN)

    def not_ruled_out(mu: float) -> bool:  # δ_true(ε_j) ≥ D_j > δ_μ(ε_j) rules μ out
        return all(not np.any(values > log_gdp_delta(mu, points) + log_margin)
                   for points, values in lower_checks)

    ruled_out, _ = _bisect_mu(not_ruled_out)
    return ruled_out


# --- everything at once -------------------------------------------------------------------
@dataclass(frozen=True)
class Figure:
    """One risk figure: ``upper`` is safe to report (attack success cannot exceed it),
    ``lower`` certified below the truth where known (None otherwise)."""

    name: str
    upper: float
    lower: float | None
    at: float | None = None


def _outward(name: str, upper: float, lower: float | None, at: float | None = None,
             trivial: float = 0.0) -> Figure:
    """A figure with its bounds moved outward by the float round-off allowance; the lower
    bound never below ``trivial``, what an attack that ignores the output achieves."""
    return Figure(name, min(1.0, max(upper * (1.0 + _ROUNDOFF), trivial)),
                  None if lower is None else max(trivial, lower * (1.0 - _ROUNDOFF)), at)


@dataclass(frozen=True)
class RiskBounds:
    tpr: list[Figure]
    advantage: Figure
    posterior: Figure
    reconstruction: Figure | None
    gdp: GdpBounds
    prior: float
    baseline: float | None
    details: dict = field(default_factory=dict)
    run: ComposedRun | None = field(default=None, repr=False, compare=False)


def failure_for(probabilities) -> float:
    """The rounding failure f of the lower profiles: 1e-4 of the smallest probability asked."""
    return max(_FAILURE_FRACTION * min(probabilities), 1e-18)


def posterior_bounds(run: ComposedRun, prior: float) -> Figure:
    """Bayes-optimal success at ``prior`` (module doc)."""
    threshold = abs(math.log(prior) - math.log1p(-prior))
    upper_delta, lower_delta = _delta_bounds_at(run, threshold)
    base, weight = max(prior, 1.0 - prior), min(prior, 1.0 - prior)
    return _outward("posterior_success", base + weight * upper_delta, base + weight * lower_delta,
                    prior, base)


def _relative_gap(figures: list[Figure]) -> float:
    return max((f.upper - f.lower) / f.upper for f in figures if f.upper > 0.0)


def _figures_of(run: ComposedRun, alphas: np.ndarray) -> list[Figure]:
    """TPR bounds at each α, then the advantage, each checked lower ≤ upper."""
    uppers, lowers = tpr_upper(run, alphas), tpr_lower(run, alphas)
    figures = [_outward("tpr", float(u), float(low), float(a), float(a))
               for a, u, low in zip(alphas, uppers, lowers)]
    upper_tv, lower_tv = _delta_bounds_at(run, 0.0)
    figures.append(_outward("advantage", upper_tv, lower_tv))
    for figure in figures:
        check_consistent(figure.upper, figure.lower, f"{figure.name} at {figure.at}")
    return figures


def composed_for_risk(schedule, probabilities, tolerance: float = DEFAULT_TOLERANCE,
                      grid_step: float | None = None):
    """(ComposedRun, TPR and advantage figures at ``probabilities``): the grid starts 8×
    coarser than pb's first grid and is refined (a predicted step, at most 4 times, within
    the work limit) until every figure's (upper − lower)/upper ≤ ``tolerance``. Epoch
    samplers: one run (risk_epoch.py); their gap is the bounds', not the grid's."""
    alphas = np.array(list(probabilities), dtype=float)
    failure = failure_for(probabilities)
    smallest = min(failure, 1e-11)
    if is_epoch_schedule(schedule):  # no pair per step: certified profiles (risk_epoch.py)
        run = epoch_composed_run(schedule, alphas, failure, smallest)
        return run, _figures_of(run, alphas)
    if grid_step is not None:
        run = composed_directions(schedule, failure, grid_step, smallest)
        return run, _figures_of(run, alphas)
    first, finest = default_grid_step(schedule, smallest)
    step = 8.0 * first
    for _ in range(5):
        run = composed_directions(schedule, failure, max(step, finest), smallest)
        figures = _figures_of(run, alphas)
        gap = _relative_gap(figures)
        if (gap <= tolerance or step <= max(finest, 1e-7)
                or 2 * run.fft_points > REFINE_POINTS_LIMIT):
            break
        # the gap falls like h^1.5 or faster: aim at half the tolerance
        step *= min(0.5, max(1 / 16, (0.5 * tolerance / gap) ** (1 / 1.5)))
    return run, figures


def risk_bounds(schedule, fprs=DEFAULT_FPRS, prior: float = 0.5, baseline: float | None = None,
                tolerance: float = DEFAULT_TOLERANCE, grid_step: float | None = None) -> RiskBounds:
    """Certified risk figures for a DP-SGD ``schedule`` (module doc)."""
    fprs = [check_probability(value, "--fpr") for value in fprs]
    if not fprs:
        raise DpcalcError("--fpr needs at least one false-positive rate")
    prior = check_range(prior, "--prior", 0.0, 1.0)
    tolerance = check_range(tolerance, "--tolerance", 0.0, 1.0)
    if baseline is not None:
        baseline = check_probability(baseline, "--baseline")
    alphas = [*fprs, *([baseline] if baseline is not None else [])]
    run, figures = composed_for_risk(schedule, [*alphas, min(prior, 1.0 - prior)], tolerance,
                                     grid_step)
    figures = figures[:len(alphas)] + [figures[-1]]
    advantage = figures.pop()
    reconstruction = None
    if baseline is not None:
        last = figures.pop()
        reconstruction = Figure("reconstruction", last.upper, last.lower, baseline)
    posterior = posterior_bounds(run, prior)
    check_consistent(posterior.upper, posterior.lower, "posterior success")
    details = {"grid_step": run.grid_step, "rounding_slack": run.slack,
               "rounding_failure": run.failure, "fft_points": run.fft_points,
               "sources": list(run.sources)}
    return RiskBounds(figures, advantage, posterior, reconstruction, gdp_mu_bounds(run), prior,
                      baseline, details, run)
