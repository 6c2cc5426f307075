"""One step's loss split at a threshold c for the body-and-jumps composition (jumps.py):
the body (L ≤ c) on a fine grid, the jumps (c < L ≤ the cut) on a coarse one, each made
safe for its bound as the module doc of jumps.py says, and the threshold itself."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcalc.numerics.log_masses import bucket_masses
from dpcalc.pld.discretise import (_loss_error, _pair_log_error, centred_rounding, connect_the_dots,
                                   entry_error)
from dpcalc.pld.fft_compose import raised_atom
from dpcalc.pld.fft_error import EXACT_INPUT, UNIT_ROUNDOFF, InputError, input_error
from dpcalc.pld.pld import LOWER, UPPER, DiscretePld, GridTooLarge

# Expected jumps (in the tilted measure) above the threshold.
JUMP_COUNT_TARGET = 12.0
# Points of the coarse window (jump_polynomial.py); one step's jump grid must fit in it.
COARSE_POINTS = 1 << 20


class CoarseTooLarge(GridTooLarge):
    """The coarse window (or one step's jump grid) needs more than COARSE_POINTS points."""


class NothingToSplit(ValueError):
    """Some phase has no loss above the threshold on the coarse grid: use the plain engine."""


@dataclass
class StepSplit:
    """One phase's step split at the threshold, for one bound (jumps.py's module doc)."""

    body: DiscretePld          # normalised body on the fine grid (lower: with rounding errors)
    body_coarse: DiscretePld   # m_B·b̄ on the coarse grid (lower: with rounding errors)
    jumps: np.ndarray          # finite jump P-masses on the coarse grid
    jump_first: int            # coarse index of jumps[0]
    special: float             # +∞ mass (upper) or dropped mass (lower)
    steps: int
    jump_rounding: DiscretePld | None = None  # lower: the jumps' rounding errors (given a jump)
    body_mass: float = 1.0     # m_B: the sum the fine body was normalised by
    # how far the step's computed pieces (body, jumps, +∞) may be from the exact ones
    input_error: InputError = EXACT_INPUT

    @property
    def jump_mass(self) -> float:
        return float(self.jumps.sum())


@dataclass
class SplitGrids:
    """The two grids, the threshold (in coarse steps) and the per-phase cut of the jumps."""

    fine: float
    ratio: int
    threshold: int
    truncations: tuple = field(default=())

    @property
    def coarse(self) -> float:
        return self.fine * self.ratio


def truncation_loss(pair, direction: str, steps: int, budget: float, high: float) -> float:
    """The smallest loss e ≤ ``high`` (on a fine log grid) with T·P(L > e) ≤ ``budget``."""
    if high <= 0.0:
        return high
    grid = high * np.geomspace(1e-6, 1.0, 400)
    log_above = pair.log_tails(direction, grid)[0]
    rare = np.flatnonzero(log_above + math.log(steps) <= math.log(budget))
    return float(grid[rare[0]]) if rare.size else high


def _coarsen(masses: np.ndarray, first: int, ratio: int, fine: float, bound: str,
             errors: np.ndarray | None = None) -> DiscretePld:
    """Fine-grid masses (first index ``first``) on the coarse grid: connect-the-dots between
    the two coarse neighbours (upper), or to the nearest coarse point with each fine
    bucket's total rounding error, coarse point − fine point + fine error (lower)."""
    fine_index = first + np.arange(masses.size)
    if bound == UPPER:
        below = np.floor_divide(fine_index, ratio)
        offset_in = (fine_index - below * ratio) * fine
        to_upper = -np.expm1(-offset_in) / -math.expm1(-ratio * fine)
        start = int(below[0])
        pmf = np.bincount(below - start, weights=masses * (1.0 - to_upper),
                          minlength=int(below[-1] - start) + 2)
        pmf[1:] += np.bincount(below - start, weights=masses * to_upper,
                               minlength=int(below[-1] - start) + 1)[:pmf.size - 1]
        return DiscretePld(ratio * fine, start, pmf, 0.0, entry_error=_summed_error(2 * ratio))
    nearest = np.floor_divide(fine_index + ratio // 2, ratio)
    start = int(nearest[0])
    pmf = np.bincount(nearest - start, weights=masses)
    total_errors = (nearest * ratio - fine_index) * fine + errors
    return DiscretePld(ratio * fine, start, pmf, 0.0, masses / masses.sum(), total_errors,
                       _summed_error(ratio + 1))


def _summed_error(terms: int) -> float:
    """Relative error of a coarse entry summing ``terms`` fine pieces one by one, against
    the exact sum of the computed pieces: (terms − 1)u for the sum and 4u for each piece's
    connect-the-dots share (its direction unknown, so it is bounded as a mass error)."""
    return (terms + 4) * UNIT_ROUNDOFF


def _step_input_error(parts: list[np.ndarray], extra: float) -> InputError:
    """The InputError of one step's computed pieces taken together (fft_error.input_error)."""
    errors = [input_error(part, extra) for part in parts if part.size]
    return InputError(max(e.relative for e in errors), sum(e.small for e in errors),
                      sum(e.mass for e in errors))


def split_step(pair, direction: str, bound: str, grids: SplitGrids, half_width: float,
               steps: int, truncation: float = math.inf) -> StepSplit:
    """Body (L ≤ c) on the fine grid, jumps (c < L ≤ truncation) on the coarse one."""
    fine, ratio, threshold, coarse = grids.fine, grids.ratio, grids.threshold, grids.coarse
    low, high = pair.loss_range(direction, half_width)
    high = min(high, truncation)
    first = min(math.floor(low / fine), threshold * ratio - 1)
    top = threshold * ratio
    last_coarse = max(math.ceil(high / coarse), threshold + 1)
    if last_coarse - threshold + 1 > COARSE_POINTS:
        # the jumps could never be placed in the coarse window (_polynomial): say so before
        # the grid is built (at q = 1e-8 it would be ~2e9 points, 14 GiB; issue 30 §3), and
        # the caller coarsens the grid (jumps._compose_split)
        raise CoarseTooLarge(last_coarse - threshold + 1)
    extra = entry_error(pair, direction, np.array([-np.inf, np.inf]))
    if bound == UPPER:
        body, below, _ = connect_the_dots(pair, direction, fine, first, top)
        body[0] += below  # losses below the body's grid rounded up to its first point
        jumps, _, above = connect_the_dots(pair, direction, coarse, threshold, last_coarse)
        body_mass = float(body.sum())
        special = raised_atom(above, extra)  # the +∞ mass at the top of its rounding
        return StepSplit(DiscretePld(fine, first, body / body_mass, 0.0),
                         _coarsen(body, first, ratio, fine, UPPER), jumps, threshold, special, steps,
                         body_mass=body_mass, input_error=_step_input_error([body, jumps], extra))
    body, errors, below, _ = centred_rounding(pair, direction, fine, first, top)
    body_mass = float(body.sum())
    normalised = body / body_mass
    # jump buckets (c + h/2, c + H/2], then (e_k − H/2, e_k + H/2] centred on the coarse
    # points e_k = c + kH, each bucket's exact loss rounded to its point (errors in
    # [−H/2, H/2], ≤ 0 for the first); losses above the grid rounded down to its top
    points = np.arange(threshold, last_coarse + 1) * coarse
    edges = np.concatenate([[(top + 0.5) * fine], points + 0.5 * coarse])
    log_p, log_q, _, log_above = bucket_masses(pair, direction, edges)
    jumps = np.exp(log_p)
    with np.errstate(invalid="ignore"):  # at the safe end of the loss's float error
        jump_errors = (np.clip(points - (log_p - log_q), -0.5 * coarse, 0.5 * coarse)
                       + _loss_error(log_p, log_q, points, coarse,
                                     _pair_log_error(pair, direction, edges)))
    jump_errors = np.where(np.isfinite(jump_errors), jump_errors, 0.0)
    jump_errors[0] = min(jump_errors[0], 0.0)  # the exact one is ≤ 0 (see above)
    above = math.exp(log_above)
    mass = float(jumps.sum()) + above
    # given a jump, the errors' law (the top's rounded-down mass has error ≤ 0: bound 0)
    jump_rounding = DiscretePld(coarse, threshold, np.append(jumps[:-1], jumps[-1] + above) / mass,
                                0.0, np.append(jumps, above) / mass, np.append(jump_errors, 0.0))
    jumps[-1] += above
    return StepSplit(DiscretePld(fine, first, normalised, 0.0, normalised, errors),
                     _coarsen(body, first, ratio, fine, LOWER, errors), jumps, threshold,
                     below, steps, jump_rounding, body_mass, _step_input_error([body, jumps], extra))


def choose_threshold(single_steps, theta: float) -> float | None:
    """The smallest loss c > 0 on the grid of ``single_steps`` (one-step PLDs with their
    steps) above which the θ-tilted runs expect at most JUMP_COUNT_TARGET jumps in all;
    None when no loss is that rare (nothing to split)."""
    candidates = np.unique(np.concatenate([pld.losses[pld.losses > 0] for pld, _ in single_steps]))
    if candidates.size == 0:
        return None
    expected = np.zeros(candidates.size)
    for pld, steps in single_steps:
        with np.errstate(divide="ignore"):
            exponents = np.log(pld.pmf) + theta * pld.losses
        weights = np.exp(exponents - exponents.max())
        weights /= weights.sum()
        above = np.append(np.cumsum(weights[::-1])[::-1][1:], 0.0)  # mass strictly above ℓ_i
        index = np.searchsorted(pld.losses, candidates, side="right") - 1
        expected += steps * np.where(index >= 0, above[np.maximum(index, 0)], 1.0)
    rare = np.flatnonzero(expected <= JUMP_COUNT_TARGET)
    if rare.size == 0 or rare[0] == candidates.size - 1:
        return None
    return float(candidates[rare[0]])
