"""Chernoff bounds over discrete PLDs: the rounding slack of the lower bound and the
window that holds all but τ of a composed PLD's mass."""
from __future__ import annotations

import math

import numpy as np


def _min_over_lambda(bound_at, guess: float) -> float:
    """min over λ > 0 of bound_at(λ), where every value is a valid bound.

    Five λ on a log grid around ``guess`` (the optimum for a Gaussian), widened while
    the best one sits at an edge, then five more between the best one's neighbours."""
    lambdas = guess * np.geomspace(1 / 8, 8, 5)
    values = bound_at(lambdas)
    for _ in range(6):
        clean = np.where(np.isfinite(values), values, np.inf)
        best = int(np.argmin(clean))
        if 0 < best < lambdas.size - 1 or not np.isfinite(clean[best]):
            break
        extra = lambdas[-1] * np.geomspace(2, 64, 5) if best else lambdas[0] / np.geomspace(2, 64, 5)
        lambdas = np.concatenate([lambdas, extra])
        values = np.concatenate([values, bound_at(extra)])
        order = np.argsort(lambdas)
        lambdas, values = lambdas[order], values[order]
    clean = np.where(np.isfinite(values), values, np.inf)
    best = int(np.argmin(clean))
    finer = np.geomspace(lambdas[max(best - 1, 0)], lambdas[min(best + 1, lambdas.size - 1)], 5)
    clean = np.concatenate([clean, bound_at(finer)])
    clean = clean[np.isfinite(clean)]
    return float(clean.min()) if clean.size else math.inf


def rounding_slack(plds_with_steps, failure: float, at_most=()) -> float:
    """η with P(Σ_t E_t > η) ≤ failure for the summed rounding errors (Chernoff, exact MGF).

    ``at_most``: (pld, K) pairs whose errors enter a random number J ≤ K of times
    (independently of their values): E e^{λΣ} ≤ max(1, M(λ))^K bounds every J ≤ K.
    η may be negative when the rounding lowers the losses on average: the bound
    δ_true(ε) ≥ δ_rounded(ε + η) − failure holds for any real η."""
    everything = list(plds_with_steps) + list(at_most)
    step = max(pld.grid_step for pld, _ in everything)
    total = sum(steps for _, steps in everything)
    spread = step * math.sqrt(max(total, 1) / 12.0)  # if errors were uniform on ±h/2

    batch = getattr(plds_with_steps, "batch", None)  # phase_batch.PhasePlds: all at once

    def bound_at(lambdas):
        cumulant = (batch.rounding_cumulant(lambdas) if batch is not None else
                    sum(steps * pld.rounding_log_mgf(lambdas) for pld, steps in plds_with_steps))
        cumulant = cumulant + sum(count * np.maximum(pld.rounding_log_mgf(lambdas), 0.0)
                                  for pld, count in at_most)
        return (cumulant - math.log(failure)) / lambdas

    return _min_over_lambda(bound_at, math.sqrt(2 * math.log(1 / failure)) / spread)


def _chernoff_window(plds_with_steps, log_tau: float) -> tuple[float, float]:
    """Loss values (lo, hi) with P(S < lo) ≤ τ and P(S > hi) ≤ τ for the finite part of S;
    −∞ / +∞ on a side where no λ gave a finite Chernoff bound (the caller then keeps the
    whole support on that side: mean ± 50 standard deviations, the old stand-in, is no
    bound on the mass outside it, yet the window mass reported would have claimed ≤ τ)."""
    batch = getattr(plds_with_steps, "batch", None)  # phase_batch.PhasePlds: all at once
    var = (batch.variance() if batch is not None else
           sum(steps * p.loss_variance() for p, steps in plds_with_steps))
    scale = math.sqrt(max(var, 0.0)) + plds_with_steps[0][0].grid_step

    def tail_bound(sign: float) -> float:
        def bound_at(lambdas):
            cumulant = (batch.cumulant(sign * lambdas) if batch is not None else
                        sum(steps * p.log_mgf(sign * lambdas) for p, steps in plds_with_steps))
            return (cumulant - log_tau) / lambdas
        return _min_over_lambda(bound_at, math.sqrt(-2 * log_tau) / scale)

    hi = tail_bound(1.0)
    lo = -tail_bound(-1.0)
    return (lo if math.isfinite(lo) else -math.inf), (hi if math.isfinite(hi) else math.inf)
