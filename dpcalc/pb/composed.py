"""The one bridge between the composition engine and the risk maths (risk.py).

risk.py needs, for each neighbouring direction of a run, two privacy profiles δ(ε) on
ε ≥ 0, each known at a finite, sorted set of breakpoints starting at ε = 0:

* ``upper`` — δ_true(ε_j) ≤ values_j at every breakpoint, and δ_true(ε) ≤ ``at(ε)`` for
  every ε ≥ 0; ``floor`` ≥ δ_true(ε) for all large ε (the profile's +∞ atom).
* ``lower`` — a function D(ε) ≤ δ_true(ε) for every ε ≥ 0, with values_j ≤ D(ε_j), such
  that D(ε) + c·e^{±ε} is monotone between consecutive breakpoints (and beyond the last)
  for every constant c. Then inf over ε ≥ 0 of D(ε) + a·e^ε and of
  1 − e^{−ε}(1 − a − D(ε)) are minima over the breakpoints: a certified lower bound needs
  no search between them.

Today both come from pb's composed privacy loss distributions (pld.py): the connect-the-dots
upper composition and the rounded lower composition with its slack η and failure f, where
δ_true(ε) ≥ δ_rounded(ε + η) − f for every real ε (buckets.delta_bounds). The profile of a
discrete PLD is p_∞ + S1_j − e^ε·S2_j on each grid interval (S1, S2 the suffix sums), so
D(ε) = δ_rounded(ε + η) − f is of the required form with breakpoints ℓ_j − η. If the
engine changes, :func:`composed_directions` is the only function to change.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable

import numpy as np

from dpcalc.pb.buckets import (_MAX_STEP_POINTS, TAIL_FRACTION, compose_fitting, initial_grid_step,
                               phase_directions, schedule_phases, tail_half_width)
from dpcalc.pld.chernoff import rounding_slack
from dpcalc.pld.pld import LOWER, UPPER, ComposedPld
from dpcalc.models.truncated import REVERSE_LARGER
from dpcalc.errors import DpcalcError

# The neighbouring direction whose pair is the same two distributions, swapped.
REVERSE_DIRECTION = {"remove": "add", "add": "remove", "replace": "replace", **REVERSE_LARGER}
# Tails sized for δ down to this (the +∞ atom then holds ~1e-24).
_SMALLEST_DELTA = 1e-15
# The closed-form μ's relative float error is a few ulps (a sum, a product, a square root);
# it is widened outward by this.
_MU_ROUNDOFF = 1e-14


@dataclass(frozen=True)
class ProfileCurve:
    """δ(ε) of one direction on one side (module doc), at ``breakpoints`` (ε ≥ 0, sorted,
    first 0) with ``values``; ``at`` evaluates anywhere on ε ≥ 0."""

    breakpoints: np.ndarray
    values: np.ndarray
    floor: float
    _curve: tuple

    def at(self, epsilons) -> np.ndarray:
        return _evaluate(self._curve, np.asarray(epsilons, dtype=float))


@dataclass(frozen=True)
class DirectionProfiles:
    """Certified upper and lower profiles of one neighbouring direction; ``lower_for(f)`` is
    the lower profile for another rounding failure f (a smaller f certifies smaller δ, at
    the cost of a larger slack η). ``upper`` is None where not computed: an explicit lower
    instance's direction, whose true profile is below the dominating pair's (the maximum
    over the other directions' upper profiles bounds it)."""

    direction: str
    upper: ProfileCurve | None
    lower: ProfileCurve
    lower_for: Callable[[float], ProfileCurve]


@dataclass(frozen=True)
class ComposedRun:
    """Every direction's profiles, the reverse of each direction, and the grid used;
    ``gdp_mu``: a μ for which the run is certified μ-GDP at every FPR, when one is known in
    closed form (risk_epoch.py); ``sources``: what the profiles are, when they are not the
    composition of one dominating pair per step."""

    directions: dict[str, DirectionProfiles]
    reverse: dict[str, str]
    grid_step: float
    slack: float
    failure: float
    fft_points: int
    gdp_mu: float | None = None
    gdp_mu_lower: float | None = None  # a μ below which the run is certified not μ-GDP
    sources: tuple[str, ...] = ()
    # what risk.py derives from the profiles, kept for its next reader (not copied by replace)
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)


def _suffix_curve(pld: ComposedPld, bound: str):
    """(p_∞, losses, S1_j = Σ_{i>j} p_i, ln S2_j = ln Σ_{i>j} p_i e^{−ℓ_i}, Σp, ln Σp e^{−ℓ})
    of the masses moved to the safe side of ``bound``; computed once per PLD and side (the
    lower profiles for other failures, lower_for, shift and lower the same sums)."""
    cache = pld.__dict__.setdefault("_suffix_curves", {})
    if bound not in cache:
        cache[bound] = _suffix_sums(pld, bound)
    return cache[bound]


def _suffix_sums(pld: ComposedPld, bound: str):
    pmf, infinity = pld._effective(bound)
    losses = (pld.offset + np.arange(pmf.size)) * pld.grid_step
    after = np.append(np.cumsum(pmf[::-1])[::-1][1:], 0.0)
    with np.errstate(divide="ignore"):
        log_terms = np.log(pmf) - losses
    log_after = np.append(np.logaddexp.accumulate(log_terms[::-1])[::-1][1:], -np.inf)
    total = float(after[0] + pmf[0]) if pmf.size else 0.0
    log_total = float(np.logaddexp(log_terms[0], log_after[0])) if pmf.size else -math.inf
    return infinity, losses, after, log_after, total, log_total


def _evaluate(curve, epsilons: np.ndarray) -> np.ndarray:
    """p_∞ + S1 − e^{ε+shift}·S2 − subtract at ε + shift, with the suffix sums of the last
    grid point ≤ ε + shift (exactly the discrete profile, shifted and lowered)."""
    (infinity, losses, after, log_after, total, log_total), shift, subtract = curve
    points = epsilons + shift
    index = np.searchsorted(losses, points, side="right") - 1
    inside = index >= 0
    safe = np.where(inside, index, 0)
    s1 = np.where(inside, after[safe], total)
    log_s2 = np.where(inside, log_after[safe], log_total)
    with np.errstate(over="ignore"):
        tail = np.where(np.isfinite(log_s2), np.exp(np.minimum(points + log_s2, 700.0)), 0.0)
    return infinity + s1 - tail - subtract


def _profile(pld: ComposedPld, bound: str, shift: float, subtract: float) -> ProfileCurve:
    suffix = _suffix_curve(pld, bound)
    curve = (suffix, shift, subtract)
    grid = suffix[1] - shift
    breakpoints = np.concatenate([[0.0], grid[grid > 0.0]])
    values = _evaluate(curve, breakpoints)
    if bound == UPPER:  # δ is non-increasing: its upper bound may be made so
        values = np.maximum.accumulate(values[::-1])[::-1]
    return ProfileCurve(breakpoints, values, float(suffix[0]) - subtract, curve)


def _lower_profile(pld: ComposedPld, single_steps, failure: float,
                   slack: float | None = None) -> ProfileCurve:
    """D(ε) = δ_rounded(ε + η) − f − (window mass): δ_true(ε) ≥ D(ε) for every ε (pld.py)."""
    eta = rounding_slack(single_steps, failure) if slack is None else slack
    return _profile(pld, LOWER, eta, failure + pld.window_mass)


def default_grid_step(schedule, smallest_delta: float = _SMALLEST_DELTA) -> tuple[float, float]:
    """(pb's first grid step for this run, the finest step one step's grid allows)."""
    return phases_grid_step(schedule_phases(schedule), smallest_delta)


def phases_grid_step(phases, smallest_delta: float = _SMALLEST_DELTA) -> tuple[float, float]:
    """:func:`default_grid_step` of a list of (pair, steps)."""
    half_width = tail_half_width(sum(steps for _, steps in phases), smallest_delta)
    widest = max(high - low for pair, _ in phases for d in pair.directions
                 for low, high in [pair.loss_range(d, half_width)])
    return initial_grid_step(phases, None, half_width), widest / _MAX_STEP_POINTS


def composed_directions(schedule, failure: float, grid_step: float | None = None,
                        smallest_delta: float = _SMALLEST_DELTA) -> ComposedRun:
    """Upper and lower profiles of every direction of ``schedule``'s dominating pairs.

    ``failure`` f: the chance allowed for the summed rounding errors of the lower
    composition to exceed their slack η; the lower profile is δ_rounded(ε + η) − f.
    One grid for both sides (coarsened per direction only if the FFT window needs it).
    Where the pairs are not attained (lower_instances.py): the dominating pairs' upper
    profiles, and the lower profiles of an explicit run (its own directions, "instance …")."""
    from dpcalc.models.lower_instances import lower_instance

    found = lower_instance(schedule)
    if found is None:
        return composed_phases(schedule_phases(schedule), failure, grid_step, smallest_delta)
    # The pair's lower profiles are not certified for the sampler: δ ≥ 0 stands in, and they
    # are not composed. The instance's upper profiles are not composed either: its true
    # profiles are below the pair's, whose upper profiles bound every direction's.
    run = composed_phases(schedule_phases(schedule), failure, grid_step, smallest_delta,
                          lower=False)
    from dpcalc.models.lower_instances import displaced_run

    directions, reverse = dict(run.directions), dict(run.reverse)
    runs = [("instance", found[0])]
    displaced = displaced_run(schedule)  # truncated Poisson, mostly cut: a second run
    if displaced is not None:
        runs.append(("displaced instance", displaced))
    fft_points, slack = run.fft_points, None
    for label, phases in runs:
        known = composed_phases(phases, failure, grid_step, smallest_delta, upper=False)
        for name, profiles in known.directions.items():
            directions[f"{label} {name}"] = replace(profiles, direction=f"{label} {name}")
            reverse[f"{label} {name}"] = f"{label} {known.reverse[name]}"
        fft_points = max(fft_points, known.fft_points)
        slack = known.slack if slack is None else max(slack, known.slack)
    return replace(run, directions=directions, reverse=reverse, slack=slack,
                   fft_points=fft_points, sources=(*run.sources, *found[1]))


def _no_lower(_failure: float = 0.0) -> ProfileCurve:
    """D(ε) = 0: the trivial lower profile (δ ≥ 0), where none is certified."""
    return ProfileCurve(np.zeros(1), np.zeros(1), 0.0,
                        ((0.0, np.zeros(1), np.zeros(1), np.full(1, -np.inf), 0.0, -np.inf),
                         0.0, 0.0))


def composed_phases(phases, failure: float, grid_step: float | None = None,
                    smallest_delta: float = _SMALLEST_DELTA, upper: bool = True,
                    lower: bool = True) -> ComposedRun:
    """:func:`composed_directions` of a list of (pair, steps) — any pairs with the
    interface buckets.py composes (e.g. max_pair.DiscretePair). ``upper``/``lower`` False:
    that side is not composed (profiles None, resp. :func:`_no_lower`), for callers that
    take it from elsewhere; the lower side then starts on the grid step asked."""
    directions = phase_directions(phases)
    total_steps = sum(steps for _, steps in phases)
    half_width = tail_half_width(total_steps, smallest_delta)
    tail_mass = TAIL_FRACTION * smallest_delta
    step = initial_grid_step(phases, grid_step, half_width)
    profiles, slack, points, used_step = {}, -math.inf, 0, step
    for direction in directions:
        upper_profile, lower_profile, lower_for, upper_step = None, _no_lower(), _no_lower, step
        if upper:
            upper_pld, _, upper_step = compose_fitting(phases, direction, step, UPPER,
                                                       half_width, tail_mass)
            upper_profile = _profile(upper_pld, UPPER, 0.0, 0.0)
            points = max(points, upper_pld.pmf.size)
        if lower:
            lower_pld, lower_steps, lower_step = compose_fitting(phases, direction, upper_step,
                                                                 LOWER, half_width, tail_mass)
            eta = rounding_slack(lower_steps, failure)
            lower_for = partial(_lower_profile, lower_pld, lower_steps)
            lower_profile = lower_for(failure, eta)
            slack = max(slack, eta)
            points = max(points, lower_pld.pmf.size)
            if not upper:
                upper_step = lower_step
        profiles[direction] = DirectionProfiles(direction, upper_profile, lower_profile,
                                                lower_for)
        used_step = max(used_step, upper_step)
    reverse = {d: REVERSE_DIRECTION.get(d) for d in directions}
    if any(r not in profiles for r in reverse.values()):
        # one order of a pair alone does not bound a test of the other order
        raise DpcalcError(f"risk bounds need both orders of the pair; got directions {directions}")
    exact_mu = _exact_gaussian_mu(phases)
    if exact_mu is None:
        return ComposedRun(profiles, reverse, used_step, slack, failure, points)
    return ComposedRun(profiles, reverse, used_step, slack, failure, points,
                       gdp_mu=exact_mu * (1.0 + _MU_ROUNDOFF),
                       gdp_mu_lower=exact_mu * (1.0 - _MU_ROUNDOFF))


def _exact_gaussian_mu(phases) -> float | None:
    """√(Σ_i T_i μ_i²) where every phase's pair is exactly a Gaussian pair of μ_i (q = 1):
    T-fold composition of G_μ is exactly G_{√T·μ} (Dong, Roth, Su 2022, Cor. 3.3), so the
    run is μ-GDP with this μ and with no smaller one. None where any pair is not Gaussian."""
    total = 0.0
    for pair, steps in phases:
        mu = getattr(pair, "gaussian_mu", None)
        if mu is None:
            return None
        total += steps * mu * mu
    return math.sqrt(total)
