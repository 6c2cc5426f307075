"""What the pipeline costs (issue 29, item 6): for a run whose sampler is a data loader's
(shuffle, shuffle-once, sequential, once-per-epoch) or a fixed-size draw, the certified ε of
the same run — same B, N, σ, steps or epochs — under Poisson sampling and under
balls-in-bins: one extra pb call each. Each is a certificate for ITS sampler only, shown as
the price of the pipeline choice, never as this run's ε."""
from __future__ import annotations

from dataclasses import replace

from dpcalc.accountants.registry import get_accountant
from dpcalc.accountants.result import interval_text
from dpcalc.models.samplers import (BALLS_IN_BINS, FIXED, ONCE_PER_EPOCH, POISSON, SEQUENTIAL,
                                    SHUFFLE, SHUFFLE_ONCE, SAMPLING_LABELS)

PRICED_SAMPLINGS = (SHUFFLE, SHUFFLE_ONCE, SEQUENTIAL, ONCE_PER_EPOCH, FIXED)
ALTERNATIVES = (POISSON, BALLS_IN_BINS)


def alternatives(given, run, delta: float, result, tolerance: float = 0.01) -> list[dict]:
    """[{"sampling", "adjacency", "steps", "epsilon_upper", "epsilon_lower", "model"}, …] for
    Poisson and balls-in-bins on the same run (the flags ``given``, the validated ``run``),
    under the adjacency of the certificate shown (the run's, or the nearest certified
    model's when the run has none: ``result.details["nearest_model"]``); [] where not
    priced (other samplers, several phases)."""
    schedule = run.schedule
    if not schedule.is_single_phase or schedule.phases[0].sampling not in PRICED_SAMPLINGS:
        return []
    nearest = result.details.get("nearest_model") if result.epsilon is None else None
    adjacency = nearest["adjacency"] if nearest else schedule.adjacency
    accountant = get_accountant("pb", tolerance=tolerance)
    found = []
    for sampling in ALTERNATIVES:
        other = replace(given, pipeline=None, sampling=sampling, adjacency=adjacency,
                        drop_last=False, unit=None, max_batch_size=None).schedule()
        answer = accountant.epsilon(other.schedule, delta)
        found.append({"sampling": sampling, "adjacency": adjacency,
                      "steps": other.schedule.total_steps, "epsilon_upper": answer.epsilon,
                      "epsilon_lower": answer.epsilon_lower,
                      "model": other.schedule.phases[0].model})
    return found


def price_line(run, result, found: list[dict]) -> str:
    """One line: this run's certified ε against the same run under each alternative."""
    phase = run.schedule.phases[0]
    nearest = result.details.get("nearest_model") if result.epsilon is None else None
    here = (interval_text(result.epsilon_lower, result.epsilon) if nearest is None else
            f"{interval_text(nearest['epsilon_lower'], nearest['epsilon_upper'])} "
            f"({nearest['adjacency']}, the nearest certified model)")
    others = "; ".join(f"{SAMPLING_LABELS[item['sampling']].split(' (')[0]} "
                       f"{interval_text(item['epsilon_lower'], item['epsilon_upper'])}"
                       for item in found)
    return (f"What the pipeline costs: certified ε of the same run (same B, N, σ, steps or "
            f"epochs; {found[0]['adjacency']} adjacency) — {phase.sampling} {here}; {others}. "
            "Each holds for its own sampler only: switching the data loader changes ε.")


__all__ = ["ALTERNATIVES", "PRICED_SAMPLINGS", "alternatives", "price_line"]
