"""Composition as a narrow body plus rare jumps: small sampling rates at tiny δ.

At small q one step's privacy loss is a narrow body near 0 (most batches miss the record)
with a long right tail of rare large losses. One grid cannot serve both: the body needs a
step far below its width, the composed window spans many jumps. So each step's loss is
split at a threshold c: the body (L ≤ c) on a fine grid, the jumps (L > c) on a coarse one.

Coupling (one phase of T steps): a step is "body" with probability m_B (value B ~ the
normalised body b̄), a finite jump H (P-masses t), or special (+∞ for the upper, dropped
for the lower). With J jumps, S = Σ_{non-jump} B + Σ H. For J ≤ K, T − K of the T − J
body draws form X ~ b̄^{*(T−K)}, independent of the jumps, and the other K − J are extra
body draws, so S = X + Σ_{J} H + Σ_{K−J} B exactly. Its law is
    b̄^{*(T−K)} ∗ Σ_{j≤K} C(T, j)·t^{*j} ∗ b^{*(K−j)}·m_B^{T−K}      (b = m_B·b̄),
the second factor a polynomial in the transforms of t and b (Horner's scheme, degree K).
Configurations with J > K go to +∞ in the upper bound (their probability is a binomial
tail, added to the +∞ atom) and are dropped in the lower one (δ only falls). X is composed
on the fine grid and moved to the coarse one (connect-the-dots for the upper: dominating
for every ε by Jensen in e^{−ℓ}, so still after mixing over the rest; down for the lower);
the extra body draws are connect-the-dots (upper) or rounded (lower) onto the coarse grid.
The lower's roundings — T − K fine ones, at most K per jump and extra body draw — enter
one Chernoff slack η (chernoff.rounding_slack). Everything is tilted by the same e^{θℓ}
(tilt.py), so the region near ε is the bulk of what the FFTs compute. Jumps rarer than
TRUNCATION_SHARE·δ in all are cut: sent to +∞ (upper) or rounded down to the cut (lower).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from dpcalc.accounting import fourier
from dpcalc.accounting.special_functions import binomial_upper_tail, gammaln

from dpcalc.accounting.chernoff import _min_over_lambda, rounding_slack
from dpcalc.accounting.discretise import (_bucket_masses, _loss_error, _pair_log_error,
                                         centred_rounding, connect_the_dots, entry_error)
from dpcalc.accounting.fft_compose import compose, raised_atom, with_input_errors
from dpcalc.accounting.fft_error import (EXACT_INPUT, UNIT_ROUNDOFF, InputError, fft_relative_error,
                                         full_spectrum_weights, input_error, input_error_terms)
from dpcalc.accounting.pld import LOWER, UPPER, ComposedPld, DiscretePld, GridTooLarge
from dpcalc.accounting.tilt import saddle_tilt, tilt, tilted_input_errors, tilted_tail_mass, untilt

# Expected jumps (in the tilted measure) above the threshold, and how many are enumerated.
JUMP_COUNT_TARGET = 12.0
MAX_ENUMERATED_JUMPS = 96
# Jumps beyond the loss where they add this share of δ in all are cut (truncation_loss);
# the upper's configurations with more than K jumps may add as much again.
TRUNCATION_SHARE = 1e-4
# Grid points: one step's body, the composed body window, the coarse window.
_STEP_POINTS = 1 << 17
BODY_POINTS = 1 << 20
COARSE_POINTS = 1 << 20


class NothingToSplit(ValueError):
    """Some phase has no loss above the threshold on the coarse grid: use the plain engine."""


class BodyTooLarge(GridTooLarge):
    """The body's composed window needs more than BODY_POINTS fine grid points."""


class CoarseTooLarge(GridTooLarge):
    """The coarse window needs more than COARSE_POINTS points."""


@dataclass
class StepSplit:
    """One phase's step split at the threshold, for one bound (module doc)."""

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
    log_p, log_q, _, log_above = _bucket_masses(pair, direction, edges)
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


# --- the jump polynomial on the coarse grid ---------------------------------------------
@dataclass
class JumpPart:
    """One phase's tilted per-draw laws on the coarse grid from the origin ℓ0 (the body's
    lowest coarse point) and the weights a_j ∝ C(T, j) M_t^j M_b^{K−j}, j = 0..K."""

    jump_logs: np.ndarray   # ln(tilted jump masses), at coarse index jump_first + i
    log_jump_mass: float    # ln M_t
    body_logs: np.ndarray   # ln(tilted body masses), at coarse index ℓ0 + i
    log_body_mass: float    # ln M_b
    log_weights: np.ndarray  # ln a_j (unnormalised)
    enumerated: int         # K

    @property
    def log_scale(self) -> float:
        peak = float(self.log_weights.max())
        return peak + math.log(float(np.exp(self.log_weights - peak).sum()))


def _log_sum(logs: np.ndarray) -> float:
    """ln Σ exp(logs); −∞ for an empty or all-zero mass."""
    top = float(np.max(logs)) if logs.size else -math.inf
    if top == -math.inf:
        return -math.inf
    return top + math.log(float(np.exp(logs - top).sum()))


def jump_part(split: StepSplit, theta: float, coarse: float, enumerated: int) -> JumpPart:
    origin = split.body_coarse.offset
    with np.errstate(divide="ignore"):
        jump_logs = np.log(split.jumps) + theta * (split.jump_first + np.arange(split.jumps.size)) * coarse
        body_logs = np.log(split.body_coarse.pmf) + theta * (origin + np.arange(split.body_coarse.pmf.size)) * coarse
    log_mt, log_mb = _log_sum(jump_logs), _log_sum(body_logs)
    js = np.arange(enumerated + 1)
    log_weights = (gammaln(split.steps + 1) - gammaln(js + 1) - gammaln(split.steps - js + 1)
                   + js * log_mt + (enumerated - js) * log_mb)
    return JumpPart(jump_logs, log_mt, body_logs, log_mb, log_weights, enumerated)


def enumerated_jumps(split: StepSplit, theta: float, coarse: float, delta: float) -> int:
    """K: the θ-tilted jump count's mean plus five standard deviations and five (the lower
    drops the rest: ~1e-7 of the tilted mass), and at least the count beyond which the
    untilted binomial tail is ≤ TRUNCATION_SHARE·δ (the upper sends it to +∞); at most
    MAX_ENUMERATED_JUMPS and T."""
    part = jump_part(split, theta, coarse, 0)
    if part.log_jump_mass == -math.inf:
        return 0
    log_share = part.log_jump_mass - np.logaddexp(part.log_jump_mass, part.log_body_mass)
    mean = split.steps * math.exp(log_share)
    count = math.ceil(mean + 5 * math.sqrt(mean) + 5)
    rate = min(1.0, split.jump_mass)
    while count < min(split.steps, MAX_ENUMERATED_JUMPS) and binomial_upper_tail(count, split.steps, rate) > TRUNCATION_SHARE * delta:
        count += max(1, count // 4)
    return int(min(split.steps, MAX_ENUMERATED_JUMPS, count))


def _polynomial(split: StepSplit, part: JumpPart, size: int):
    """Z̃ = Σ_{j≤K} a_j t̂^j b̂^{K−j} / Σ a_j on an FFT of ``size`` points (normalised t̂, b̂,
    origin K·ℓ0), by Horner's scheme in t̂: (Z̃, error bound per coefficient)."""
    origin, count = split.body_coarse.offset, part.enumerated
    positions = split.jump_first - origin + np.arange(part.jump_logs.size)
    if positions.max() >= size or part.body_logs.size > size:
        raise CoarseTooLarge(int(max(positions.max(), part.body_logs.size) + 1))
    placed = np.zeros(size)
    placed[positions] = np.exp(part.jump_logs - part.log_jump_mass)
    jump_hat = fourier.rfft(placed, size)
    body_hat = fourier.rfft(np.exp(part.body_logs - part.log_body_mass), size)
    weights = np.exp(part.log_weights - part.log_scale)
    total = np.full(jump_hat.size, weights[count], dtype=complex)
    power = np.ones(jump_hat.size, dtype=complex)
    scaled = np.empty_like(power)
    for j in range(count - 1, -1, -1):  # R_j = a_j b̂^{K−j} + t̂·R_{j+1}, in place
        np.multiply(power, body_hat, out=power)
        np.multiply(jump_hat, total, out=total)
        total += np.multiply(weights[j], power, out=scaled)
    # t̂, b̂ (|·| ≤ 1) each carry ≤ r + their inputs' round-off per coefficient, so a term of
    # degree K moves by ≤ K·e·(1 + e)^K of its weight (weights sum to 1); Horner's scheme and
    # the powers add ≤ 4(K + 1)u.
    finite = np.concatenate([part.jump_logs - part.log_jump_mass, part.body_logs - part.log_body_mass])
    magnitude = float(np.max(np.abs(finite[np.isfinite(finite)]))) + abs(part.log_jump_mass) \
        + abs(part.log_body_mass) + 2.0
    entry = (fft_relative_error(size) + 16.0 * UNIT_ROUNDOFF + 2.0 * UNIT_ROUNDOFF * magnitude
             + split.body_coarse.entry_error)
    error = count * entry * math.exp(min(count * entry, 700.0)) + 4 * (count + 1) * UNIT_ROUNDOFF
    return total, error


def _jump_window(split: StepSplit, part: JumpPart, coarse: float, log_tau: float) -> int:
    """Coarse points from the origin holding all but τ of the tilted jump part: Chernoff
    with its exact MGF Σ_j a_j M_t(λ)^j M_b(λ)^{K−j} / Σ a_j."""
    origin, count = split.body_coarse.offset, part.enumerated
    jumps = DiscretePld(coarse, split.jump_first - origin, np.exp(part.jump_logs - part.log_jump_mass), 0.0)
    body = DiscretePld(coarse, 0, np.exp(part.body_logs - part.log_body_mass), 0.0)
    weights = part.log_weights - part.log_scale
    js = np.arange(count + 1)[:, None]

    def bound_at(lambdas):
        log_mgf = weights[:, None] + js * jumps.log_mgf(lambdas)[None, :] \
            + (count - js) * body.log_mgf(lambdas)[None, :]
        top = log_mgf.max(axis=0)
        return (top + np.log(np.exp(log_mgf - top).sum(axis=0)) - log_tau) / lambdas

    span = count * (split.jump_first - origin + split.jumps.size)
    scale = coarse * max(1.0, math.sqrt(count)) * (split.jump_first - origin + 1)
    hi = _min_over_lambda(bound_at, math.sqrt(-2 * log_tau) / scale)
    return int(min(span, math.ceil(hi / coarse) if math.isfinite(hi) else span))


# --- the whole composition -------------------------------------------------------------
def _coarsen_tilted(masses: np.ndarray, first: int, ratio: int, fine: float, theta: float,
                    bound: str) -> tuple[np.ndarray, int]:
    """Tilted masses on the fine grid moved onto the coarse one: upper by connect-the-dots
    between the two coarse neighbours a ≤ ℓ < b (weights from the untilted masses), lower
    down to a. Moving untilted mass from ℓ to a multiplies its tilted weight by e^{θ(a−ℓ)}.
    Returns (coarse masses, coarse index of the first)."""
    fine_index = first + np.arange(masses.size)
    below = np.floor_divide(fine_index, ratio)
    offset_in = (fine_index - below * ratio) * fine      # ℓ − a ∈ [0, H)
    coarse = ratio * fine
    start = int(below[0])
    positions = below - start
    if bound == LOWER:
        moved = masses * np.exp(-theta * offset_in)
        return np.bincount(positions, weights=moved, minlength=int(positions[-1]) + 1), start
    to_upper = -np.expm1(-offset_in) / -math.expm1(-coarse)
    lower_part = masses * (1.0 - to_upper) * np.exp(-theta * offset_in)
    upper_part = masses * to_upper * np.exp(theta * (coarse - offset_in))
    out = np.bincount(positions, weights=lower_part, minlength=int(positions[-1]) + 2)
    out[1:] += np.bincount(positions, weights=upper_part, minlength=int(positions[-1]) + 1)[:out.size - 1]
    return out, start


def _fine_body(splits, counts, theta: float, window_tail: float, bound: str, ratio: int):
    """X: the body's T − K steps per phase, tilted, composed on the fine grid, made safe for
    ``bound`` (float noise added or removed) and moved to the coarse grid: (coarse masses,
    coarse index of the first, log scale, log-scale size, body (pld, steps) list, the
    factor by which the tilts' own rounding may raise X's mass outside its window)."""
    plds = [(s.body, s.steps - count) for s, count in zip(splits, counts) if s.steps > count]
    if not plds:
        return np.array([1.0]), 0, 0.0, 0.0, plds, 1.0
    tilted = tilt(plds, theta)
    try:
        inner = compose(tilted.plds, window_tail, BODY_POINTS, tilted_input_errors(tilted))
    except GridTooLarge as too_large:
        raise BodyTooLarge(too_large.points_needed) from None
    if bound == UPPER:
        safe = np.maximum(inner.pmf, 0.0) + inner.noise_floor
    else:
        safe = np.maximum(inner.pmf - inner.noise_floor, 0.0)
    fine = plds[0][0].grid_step
    masses, first = _coarsen_tilted(safe, inner.offset, ratio, fine, theta, bound)
    growth = 1.0 + input_error_terms(zip(tilted_input_errors(tilted), [t for _, t in plds]))[0]
    return masses, first, tilted.log_scale, tilted.log_scale_size, plds, growth


def split_composition(phases, direction: str, bound: str, grids: SplitGrids, theta: float,
                      half_width: float, tail_mass: float, valid_from: float,
                      failure: float, delta: float):
    """(composed PLD on the coarse grid, slack): for the upper, the law of S's upper variable
    (module doc), slack 0; for the lower, of the lower variable before the rounding slack
    η (chance ``failure`` of exceeding it), read at ε + η: δ_true(ε) ≥ δ(ε + η) − failure.
    Certified for ε ≥ ``valid_from``."""
    splits = [split_step(pair, direction, bound, grids, half_width, steps, truncation)
              for (pair, steps), truncation in zip(phases, grids.truncations)]
    if any(not np.any(s.jumps > 0) for s in splits):
        raise NothingToSplit
    coarse = grids.coarse
    counts = [enumerated_jumps(s, theta, coarse, delta) for s in splits]
    parts = [jump_part(s, theta, coarse, count) for s, count in zip(splits, counts)]
    body_plds = [(s.body, s.steps - count) for s, count in zip(splits, counts) if s.steps > count]
    body_tilt = tilt(body_plds, theta) if body_plds else None
    # Σ_i [(T_i − K_i) ln m_B + ln Σ_j a_j]: the body draws' and the jump part's scales
    part_scales = [p.log_scale + (s.steps - p.enumerated) * math.log(s.body_mass)
                   for s, p in zip(splits, parts)]
    log_scale = (body_tilt.log_scale if body_tilt else 0.0) + sum(part_scales)
    slack = 0.0
    if bound == LOWER:  # the body's T − K roundings, and at most K of each jump's and extra body draw's
        at_most = [(pld, count) for s, count in zip(splits, counts) if count
                   for pld in (s.jump_rounding, s.body_coarse)]
        slack = rounding_slack(body_plds, failure, at_most)
        valid_from = valid_from + slack  # the lower is read at ε + slack (buckets.py)
    # every window leaves out at most τ̂/(phases + 1) of tilted mass (tilt.tilted_tail_mass),
    # sized where the composition is read: from valid_from (+ the slack, for the lower) on
    window_tail = tilted_tail_mass(tail_mass, log_scale, theta, valid_from) / (1 + len(splits))
    # the jump parts' windows first: where they alone exceed the coarse cap, the body's
    # (costlier) composition is not needed to know that the grid must coarsen
    jump_points = sum(_jump_window(split, part, coarse, math.log(window_tail))
                      for split, part in zip(splits, parts))
    if jump_points > COARSE_POINTS:
        raise CoarseTooLarge(jump_points)
    x_masses, offset, log_body, log_body_size, _, growth = _fine_body(
        splits, counts, theta, window_tail, bound, grids.ratio)
    needed = x_masses.size + jump_points
    offset += sum(part.enumerated * split.body_coarse.offset for split, part in zip(splits, parts))
    if needed > COARSE_POINTS:
        raise CoarseTooLarge(needed)
    size = fourier.next_fast_len(needed + 64)
    product = fourier.rfft(x_masses, size)
    product_error = np.full(product.size, fft_relative_error(size) * float(x_masses.sum()))
    for split, part in zip(splits, parts):
        spectrum, error = _polynomial(split, part, size)
        growth += error  # the jump part's own rounding may raise its mass outside its window
        product_error = product_error * (np.abs(spectrum) + error) + np.abs(product) * error
        product = product * spectrum
    weights = full_spectrum_weights(size, product.size)
    composed = fourier.irfft(product, size)[:needed]
    # per entry: the spectrum's error and the products' round-off through the inverse
    # transform, plus the inverse transform's own (componentwise, r·(1/n)Σ|F|)
    absolute = (float(np.sum(weights * (product_error + 4 * UNIT_ROUNDOFF * np.abs(product))))
                + fft_relative_error(size) * float(np.sum(weights * np.abs(product)))) / size
    noise = absolute + 8.0 * UNIT_ROUNDOFF * sum(s.steps for s in splits) * np.abs(composed)
    log_scale = log_body + sum(part_scales)
    log_scale_size = log_body_size + sum(abs(scale) + 2.0 * s.steps for s, scale in zip(splits, part_scales))
    infinity = 0.0
    if bound == UPPER:  # specials, and configurations with more than K jumps, at +∞
        finite = sum(s.steps * math.log1p(-s.special) for s in splits)
        infinity = min(1.0, -math.expm1(finite) + sum(
            binomial_upper_tail(count, s.steps, min(1.0, raised_atom(s.jump_mass, s.input_error.relative)
                                                    + s.input_error.small))
            for s, count in zip(splits, counts)
            if count < s.steps))
    inner = ComposedPld(coarse, offset, composed, 0.0, 0.0, noise)
    result = untilt(inner, theta, log_scale, log_scale_size, window_tail * (growth + len(splits)),
                    infinity, valid_from)
    # everything above composed the computed pieces: their own rounding (fft_error doc)
    return with_input_errors(result, [(s.input_error, s.steps) for s in splits]), slack


# --- grids and the bounds --------------------------------------------------------------
def choose_grids(phases, direction: str, single_steps, theta: float, threshold: float,
                 target: float, tolerance: float, failure: float, half_width: float,
                 truncations: tuple) -> SplitGrids:
    """Fine and coarse grids: the fine one resolves the body (≤ its spread/16) and keeps the
    body's rounding slack within 5% of the tolerated gap, within BODY_POINTS; the coarse
    one keeps the other roundings within 10% of it."""
    total = sum(steps for _, steps in phases)
    lows = [pair.loss_range(direction, half_width)[0] for pair, _ in phases]
    spread, tilted_spread = math.inf, 0.0
    for pld, steps in single_steps:
        body = pld.losses <= threshold
        weights = pld.pmf[body] / pld.pmf[body].sum()
        mean = float(np.sum(weights * pld.losses[body]))
        spread = min(spread, math.sqrt(float(np.sum(weights * (pld.losses[body] - mean) ** 2))))
        tilted = weights * np.exp(theta * (pld.losses[body] - threshold))
        tilted /= tilted.sum()
        tilted_mean = float(np.sum(tilted * pld.losses[body]))
        tilted_spread += steps * float(np.sum(tilted * (pld.losses[body] - tilted_mean) ** 2))
    window = 24.0 * math.sqrt(tilted_spread) + 40.0 * threshold
    slack_step = 0.05 * tolerance * target / math.sqrt(total * math.log(1.0 / failure) / 3.0)
    fine = max(window / (BODY_POINTS / 2), (threshold - min(lows)) / _STEP_POINTS,
               min(spread / 16.0, slack_step), 1e-12)
    count = JUMP_COUNT_TARGET + 5 * math.sqrt(JUMP_COUNT_TARGET) + 5
    coarse_target = min(0.1 * tolerance * target / count, threshold / 2.0)
    ratio = max(1, int(coarse_target / fine))
    return SplitGrids(fine, ratio, max(1, math.ceil(threshold / (fine * ratio))), truncations)


def _truncations(phases, direction: str, half_width: float, delta: float) -> tuple:
    """Per phase, the loss beyond which its jumps are cut (truncation_loss)."""
    return tuple(truncation_loss(pair, direction, steps, TRUNCATION_SHARE * delta / len(phases),
                                 pair.loss_range(direction, half_width)[1])
                 for pair, steps in phases)


def _below(single_steps, truncations: tuple):
    """The one-step PLDs without their losses above each phase's cut: the laws the split
    composition tilts (the cut ones go to +∞ or are rounded down, module doc)."""
    kept = []
    for (pld, steps), cut in zip(single_steps, truncations):
        pmf = np.where(pld.losses <= cut, pld.pmf, 0.0) if math.isfinite(cut) else pld.pmf
        kept.append((DiscretePld(pld.grid_step, pld.offset, pmf, 0.0), steps))
    return kept


def _aimed(phases, direction: str, single_steps, target: float, tolerance: float,
           failure: float, half_width: float, delta: float):
    """(θ, threshold, grids) for a split composition aimed at ε ≈ ``target``; None when
    one step's loss has no rare large part to split off. θ is the saddle point of the laws
    the split composes, cut at the truncation: the cut losses (P-mass ≤ TRUNCATION_SHARE·δ
    in all) would otherwise carry the tilted mean at tiny δ while the composed mass sits
    far below ``target``, where the body's float noise swamps the answer."""
    truncations = _truncations(phases, direction, half_width, delta)
    kept = _below(single_steps, truncations)
    theta = saddle_tilt(kept, target)
    threshold = choose_threshold(kept, theta)
    if threshold is None:
        return None
    return theta, threshold, choose_grids(phases, direction, kept, theta, threshold,
                                          target, tolerance, failure, half_width, truncations)


def _compose_split(phases, direction: str, bound: str, aimed, delta: float, failure: float,
                   tail_mass: float, half_width: float, valid_from: float):
    """One split composition of ``bound`` with the grids of ``aimed`` = (θ, threshold, grids),
    coarsened until it fits: (composed, slack), or None where nothing splits or it never fits."""
    theta, threshold, grids = aimed
    for _ in range(8):
        try:
            return split_composition(phases, direction, bound, grids, theta, half_width,
                                     tail_mass, valid_from, failure, delta)
        except BodyTooLarge as too_large:
            grown = 1.05 * too_large.points_needed / BODY_POINTS
            ratio = max(1, int(grids.ratio / grown))
            fine = grids.fine * grown
            grids = SplitGrids(fine, ratio, max(1, math.ceil(threshold / (fine * ratio))),
                               grids.truncations)
        except CoarseTooLarge as too_large:
            ratio = math.ceil(grids.ratio * 1.05 * too_large.points_needed / COARSE_POINTS)
            grids = SplitGrids(grids.fine, ratio,
                               max(1, math.ceil(threshold / (grids.fine * ratio))),
                               grids.truncations)
        except NothingToSplit:
            return None
    return None


# The upper composition is aimed again, once, where its bound lands below this fraction
# of its aim (split_bounds).
_REAIM_BELOW = 0.5


def split_bounds(phases, direction: str, delta: float, failure: float, tail_mass: float,
                 half_width: float, single_steps, target: float, valid_from: float,
                 tolerance: float) -> tuple[float, float] | None:
    """Certified (upper, lower) ε of one direction by the body-and-jumps composition aimed
    at ε ≈ ``target`` (each kept only where valid: ≥ ``valid_from``, else ∞ / 0); None
    when one step's loss has no rare large part to split off or the grids do not fit.
    Where the upper bound lands below half of ``target``, the upper composition is aimed
    again at it (keeping the smaller bound), and where it lands below (1 − tolerance) of the
    aim, the lower composition is aimed at it: any aim gives certified bounds, a closer one
    tighter ones."""
    aimed = _aimed(phases, direction, single_steps, target, tolerance, failure, half_width, delta)
    if aimed is None:
        return None
    found = _compose_split(phases, direction, UPPER, aimed, delta, failure, tail_mass,
                           half_width, valid_from)
    if found is None:
        return None
    upper = found[0].epsilon(delta, UPPER)
    upper = upper if upper >= valid_from else math.inf
    if valid_from <= upper < _REAIM_BELOW * target:  # a loose aim (e.g. rdp's at small q):
        # its tilt and grids were chosen for ε near the aim, not near this bound
        again = _aimed(phases, direction, single_steps, upper, tolerance, failure, half_width,
                       delta)
        found = again and _compose_split(phases, direction, UPPER, again, delta, failure,
                                         tail_mass, half_width, valid_from)
        if found:
            value = found[0].epsilon(delta, UPPER)
            upper = min(upper, value) if value >= valid_from else upper
            aimed, target = again, upper
    if valid_from <= upper < (1.0 - tolerance) * target:
        aimed = _aimed(phases, direction, single_steps, upper, tolerance, failure, half_width,
                       delta) or aimed
    found = _compose_split(phases, direction, LOWER, aimed, delta, failure, tail_mass,
                           half_width, valid_from)
    if found is None:
        return None
    composed, slack = found
    raw = composed.loss_quantile(delta + failure, LOWER)
    return upper, (max(0.0, raw - slack) if raw >= composed.valid_from else 0.0)
