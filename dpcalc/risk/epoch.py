"""Risk figures for the epoch samplers (shuffle, shuffle-once, balls-in-bins, sequential,
once-per-epoch): the
:class:`~dpcalc.pb.composed.ComposedRun` that risk.py reads, built from the
certified bounds of epoch_samplers.py instead of one dominating pair per step.

risk.py needs, per neighbouring direction, an upper profile δ_up(ε) ≥ δ_true(ε) and a lower
profile D(ε) ≤ δ_true(ε) of the form composed.py describes. For an epoch sampler:

UPPER (the same profile for every direction: it bounds both orders of a neighbouring pair).
- Every epoch model: the run is μ-GDP with μ = Δ√E/σ (E epochs touched, Δ = 2 for
  replace-one, 1 otherwise; epoch_samplers.py: Dong, Roth, Su 2022, Cor. 3.3, mixed over the
  batch randomness by joint convexity). Its profile is the closed form of Balle & Wang 2018,
  Thm 8, symmetric in the two orders, and its trade-off curve is G_μ(α) = Φ(Φ⁻¹(α) + μ)
  (Dong, Roth, Su 2022, Def. 2.7 / Cor. 2.13): the infimum (1) of risk.py taken over the
  breakpoints ε_t = μt − μ²/2 (the tangent point of G_μ at α = Φ(−t), or at 1 − Φ(−t − μ)
  for the second branch) is G_μ exactly at the FPRs asked, whose tangent points are added,
  and within a relative ~1e-6 between them; μ itself is the certified GDP μ, for every FPR.
- Shuffle and shuffle-once ending inside an epoch: also the Gaussian-DP mixture over the
  epochs that hold the record (epoch_orders.py (B), Prop. 1), read at the E-fold profile's
  breakpoints as certified points (below).
- Balls-in-bins: also the bounds of accountants/allocation.py (exact Rényi DP, the
  recursive bound, Feldman & Shenfeld 2025's decomposition; replace-one their chain through
  D∖{x}, the same for both orders) — the same certified upper ε(δ)
  that `dpcalc epsilon` reports, read at a grid of δ: each (ε_k, δ_k) certifies
  δ_true(ε) ≤ δ_k for every ε ≥ ε_k (δ_true is non-increasing). The profile is the
  smaller of the two at every ε. Any finite set of certified points gives a valid bound
  (risk.py), so the grid only costs tightness.

LOWER. The max-of-outputs pairs of Chua et al. 2024 (ICML, §4; max_pair.py) with the
epoch_samplers.py instances, composed over the epochs by pb's certified lower composition
(composed.py): a post-processing of the true run, so its lower profile bounds the run's
δ_true from below. Replace-one has two instances; each is kept as its own pair of
directions, and risk.py takes the largest lower bound over directions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.pb.composed import (ComposedRun, DirectionProfiles, composed_phases, phases_grid_step)
from dpcalc.accountants.epoch_samplers import (_LOWER_METHOD, _allocation, epoch_not_applicable,
                                               lower_instances, sensitivity, upper_mu)
from dpcalc.models.epoch_orders import epoch_count_law, mixture_delta_upper
from dpcalc.models.gaussian import gdp_delta_upper
from dpcalc.errors import DpcalcError

# t-grid of the GDP breakpoints ε = μt − μ²/2: spacing and reach beyond |Φ⁻¹(1e-12)| ≈ 7.03.
_T_STEP = 1e-3
_T_REACH = 8.0
# δ grid of the random-allocation points: 20 per decade from 0.89 down to this.
_ALLOCATION_SMALLEST = 1e-16
_ALLOCATION_PER_DECADE = 20
# points above this ε are dropped (e^ε overflows; the last kept δ bounds every larger ε)
_MAX_EXPONENT = 700.0


@dataclass(frozen=True)
class PointsProfile:
    """A certified upper profile (composed.py's ``upper``): the μ-GDP closed form, lowered
    where smaller to the certified points (ε_k, δ_k) joined by chords in s = e^ε. The chords
    are certified: δ_true(ε) = sup_S P(S) − e^ε Q(S) is convex in e^ε (a supremum of affine
    functions), so between two points it lies below its own chord, and that chord below the
    one through (ε_k, δ_k); beyond the last point δ_true is non-increasing."""

    breakpoints: np.ndarray
    values: np.ndarray
    floor: float
    mu: float
    point_epsilons: np.ndarray
    point_deltas: np.ndarray

    def at(self, epsilons) -> np.ndarray:
        points = np.atleast_1d(np.asarray(epsilons, dtype=float))
        values = np.minimum(1.0, gdp_delta_upper(np.maximum(points, 0.0), self.mu))
        if self.point_epsilons.size:
            scale = np.exp(np.minimum(points, _MAX_EXPONENT))
            chords = np.interp(scale, np.exp(self.point_epsilons), self.point_deltas, left=1.0,
                               right=float(self.point_deltas[-1]))
            values = np.minimum(values, chords)
        return values


def _gdp_breakpoints(mu: float, alphas) -> np.ndarray:
    """ε ≥ 0 where the tangent of G_μ touches: the t-grid and the FPRs asked (module doc)."""
    from dpcalc.numerics.special_functions import ndtri

    tangents = -ndtri(np.asarray(list(alphas), dtype=float))  # t = −Φ⁻¹(α)
    t_grid = np.arange(0.5 * mu, _T_REACH + mu, _T_STEP)
    # first branch: ε = μt − μ²/2 ≥ 0; second branch: ε = μt′ − μ²/2 with t′ = μ − t
    epsilons = np.concatenate([mu * t_grid, mu * tangents, mu * (mu - tangents)]) - 0.5 * mu * mu
    return np.unique(np.concatenate([[0.0], epsilons[np.isfinite(epsilons) & (epsilons > 0.0)]]))


def _allocation_points(phase) -> tuple[np.ndarray, np.ndarray]:
    """Certified (ε_k, δ_k) of the random-allocation bound, sorted by ε, δ_k made
    non-increasing (a smaller δ certified at a smaller ε holds at every larger ε): δ_k on a
    geometric grid, and the smallest δ certified at ε = 0 (the advantage) to 1e-3 in ln δ."""
    allocation = _allocation(phase, _ALLOCATION_SMALLEST)
    if allocation is None:
        return np.empty(0), np.empty(0)
    top = int(-math.log10(_ALLOCATION_SMALLEST) * _ALLOCATION_PER_DECADE)
    deltas = list(10.0 ** (-np.arange(1, top + 1) / _ALLOCATION_PER_DECADE))
    epsilons = list(allocation.epsilons(deltas))
    # ε = 0 is certified at δ_k, not at δ_{k+1}: bisect ln δ between them
    zero = [delta for delta, epsilon in zip(deltas, epsilons) if epsilon <= 0.0]
    if zero:
        high = math.log(min(zero))
        low = high - math.log(10.0) / _ALLOCATION_PER_DECADE
        while high - low > 1e-3:
            middle = 0.5 * (low + high)
            low, high = ((low, middle) if allocation.epsilon(math.exp(middle)) <= 0.0
                         else (middle, high))
        deltas.append(math.exp(high))
        epsilons.append(0.0)
    points, values = np.array(epsilons), np.array(deltas)
    keep = points <= _MAX_EXPONENT
    order = np.argsort(points[keep], kind="stable")
    return points[keep][order], np.minimum.accumulate(values[keep][order])


def _mixture_points(phase, alphas) -> tuple[np.ndarray, np.ndarray]:
    """Certified (ε_k, δ_k) of the Gaussian-DP mixture over the epochs that hold the record
    (epoch_orders.py (B): a partial last epoch of shuffle or shuffle-once), at the E-fold
    profile's breakpoints; none where that law is a point mass."""
    law = epoch_count_law(phase)
    if len(law) == 1:
        return np.empty(0), np.empty(0)
    mu, _ = upper_mu(phase)
    points = _gdp_breakpoints(mu, alphas)
    points = points[points <= _MAX_EXPONENT]
    values = mixture_delta_upper(points, law, sensitivity(phase) / phase.noise_multiplier)
    return points, np.minimum.accumulate(values)


def epoch_upper_profile(phase, alphas) -> PointsProfile:
    """The certified upper profile of one epoch-sampler phase (module doc)."""
    mu, _ = upper_mu(phase)
    point_epsilons, point_deltas = _allocation_points(phase)
    if not point_epsilons.size:
        point_epsilons, point_deltas = _mixture_points(phase, alphas)
    breakpoints = np.unique(np.concatenate([_gdp_breakpoints(mu, alphas), point_epsilons]))
    probe = PointsProfile(breakpoints, np.empty(0), 0.0, mu, point_epsilons, point_deltas)
    values = np.maximum.accumulate(probe.at(breakpoints)[::-1])[::-1]
    return PointsProfile(breakpoints, values, 0.0, mu, point_epsilons, point_deltas)


def epoch_upper_note(phase, upper: PointsProfile) -> str:
    """What the upper profile is, in one line."""
    mu, epochs = upper_mu(phase)
    note = (f"upper bounds: the run is μ-GDP with μ = {sensitivity(phase):g}·√{epochs}/σ = "
            f"{mu:.6g} ({epochs}-fold Gaussian without amplification by the sampler; Dong, Roth, "
            "Su 2022 Cor. 3.3)")
    if upper.point_epsilons.size and len(epoch_count_law(phase)) > 1:
        note += ("; lowered by its mixture over the epochs that hold the record (a partial "
                 "last epoch: Prop. 1, dpcalc.models.epoch_orders)")
    elif upper.point_epsilons.size:
        note += ("; lowered by the random-allocation bound (Feldman & Shenfeld 2025) where "
                 "smaller")
    return note


def _lower_directions(phase, failure: float, smallest: float, upper: PointsProfile):
    """Lower profiles of every explicit instance (module doc), keyed '<direction> (instance i)'."""
    directions, reverse, runs = {}, {}, []
    for index, phases in enumerate(lower_instances(phase)):
        step, _ = phases_grid_step(phases, smallest)
        run = composed_phases(phases, failure, step, smallest, upper=False)  # upper: PointsProfile
        runs.append(run)
        tag = f" (instance {index + 1})"
        for direction, profiles in run.directions.items():
            directions[direction + tag] = DirectionProfiles(direction + tag, upper,
                                                            profiles.lower, profiles.lower_for)
            reverse[direction + tag] = run.reverse[direction] + tag
    return directions, reverse, runs


def epoch_composed_run(schedule, probabilities, failure: float, smallest: float) -> ComposedRun:
    """The ComposedRun of a one-phase epoch-sampler ``schedule`` (module doc); the FPRs in
    ``probabilities`` get exact tangent points on the GDP part of the upper profile."""
    reason = epoch_not_applicable(schedule)
    if reason is not None:
        raise DpcalcError(reason.replace("not applicable: ", "", 1))
    phase = schedule.phases[0]
    upper = epoch_upper_profile(phase, probabilities)
    directions, reverse, runs = _lower_directions(phase, failure, smallest, upper)
    notes = (epoch_upper_note(phase, upper),
             f"lower bounds: {_LOWER_METHOD[phase.sampling].removeprefix('certified lower: ')}"
             "; the gap to the upper bounds is the two bounds' own (--tolerance does not "
             "narrow it)")
    return ComposedRun(directions, reverse, max(r.grid_step for r in runs),
                       max(r.slack for r in runs), failure, max(r.fft_points for r in runs),
                       gdp_mu=upper.mu, sources=notes)
