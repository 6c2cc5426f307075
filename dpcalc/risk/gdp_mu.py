"""The Gaussian-DP μ of a composed run, certified on both sides (Dong, Roth, Su 2022):
the smallest μ with δ_d(ε) ≤ δ_μ(ε) for every direction d on the checked ε range (upper,
from the upper profiles), and the largest μ some lower-profile point rules out (lower).
Both searches return the side they can certify when they give up (_bisect_mu)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.models.gaussian import gdp_delta_lower, gdp_delta_upper
from dpcalc.numerics.special_functions import log_ndtr
from dpcalc.pb.buckets import check_consistent
from dpcalc.pb.composed import ComposedRun
from dpcalc.risk.tradeoff import _MAX_EXPONENT, symmetric_upper_profile, upper_curves

_GDP_DELTA_FLOOR = 1e-10   # μ is certified where the profile is above this
_GDP_POINTS = 4000         # breakpoints kept for the μ search (every interval still covered)
_GDP_MIN_MU = 1e-9        # the μ searches start here (a μ below it is reported as this)
_GDP_FIRST_HIGH = 64.0     # their first upper end, raised 8× at a time up to _GDP_LIMIT_MU
_GDP_LIMIT_MU = 1e8        # ε ~ μ²/2 = 5e15 there: past every run the engine composes
# δ values within this of 1 cannot be told apart from 1 in float: the upper μ is checked
# from the first breakpoint where δ_U is below 1 − this (gdp_mu_bounds)
_GDP_NEAR_ONE = 1e-8
_GDP_FAILURE = 1e-4 * _GDP_DELTA_FLOOR  # the rounding failure of the lower profile μ reads
_UNIT_ROUNDOFF = 2.0**-53


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
    are, i.e. δ_U(a) ≤ δ_μ(b) + Φ(−ε_b/μ − μ/2)(e^b − e^a) and δ_U(b) ≤ δ_μ(b). Both sides
    are certified lower values: δ_μ(b) from gdp_delta_lower (its float error bounded), the
    rise formed in logs (e^b overflows past ε = 709; capped at e^700, far above any δ ≤ 1)
    and lowered by a bound on the logs' rounding, 8u per unit of their magnitudes."""
    for lefts, rights, at_left, at_right in checks:
        at_b = gdp_delta_lower(rights, mu)
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = log_ndtr(-rights / mu - mu / 2.0)
            gap = np.log(-np.expm1(np.minimum(lefts - rights, 0.0)))
            log_rise = tail + rights + gap
            slack = 8.0 * _UNIT_ROUNDOFF * (np.abs(tail) + np.abs(rights) + np.abs(gap) + 4.0)
            rise = np.exp(np.minimum(log_rise - np.nan_to_num(slack, nan=np.inf), _MAX_EXPONENT))
        tangent = at_b + np.nan_to_num(rise, nan=0.0)
        if np.any(at_left > tangent) or np.any(at_right > at_b):
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
        at_b = gdp_delta_lower(rights, first)
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
    from dpcalc.numerics.special_functions import ndtr

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
    def not_ruled_out(mu: float) -> bool:  # δ_true(ε_j) ≥ D_j > δ_μ(ε_j) rules μ out
        with np.errstate(divide="ignore"):  # δ_μ's certified upper value (gdp_delta_upper)
            return all(not np.any(values > np.log(gdp_delta_upper(points, mu)))
                       for points, values in lower_checks)

    ruled_out, _ = _bisect_mu(not_ruled_out)
    return ruled_out
