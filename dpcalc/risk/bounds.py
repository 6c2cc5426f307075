"""Every risk figure of a run at once (:func:`risk_bounds`): TPR at the FPRs asked,
advantage, posterior success, reconstruction and the Gaussian-DP μ, each with its certified
lower bound, on a grid refined until the figures' gaps meet the tolerance. The maths is in
tradeoff.py (trade-off curves) and gdp_mu.py (μ)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcalc.accountants.epoch_samplers import is_epoch_schedule
from dpcalc.errors import DpcalcError
from dpcalc.params import check_range
from dpcalc.pb.buckets import REFINE_POINTS_LIMIT, check_consistent
from dpcalc.pb.composed import ComposedRun, composed_directions, default_grid_step
from dpcalc.risk.epoch import epoch_composed_run
from dpcalc.risk.gdp_mu import GdpBounds, gdp_mu_bounds
from dpcalc.risk.tradeoff import (_FAILURE_FRACTION, _ROUNDOFF, DEFAULT_FPRS, DEFAULT_TOLERANCE,
                                  _delta_bounds_at, check_probability, tpr_lower, tpr_upper)

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
