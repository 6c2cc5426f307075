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
One step's split is jump_step.py's, the jump part's polynomial jump_polynomial.py's.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.numerics import fourier
from dpcalc.pld.chernoff import rounding_slack
from dpcalc.pld.fft_compose import compose, raised_atom, with_input_errors
from dpcalc.pld.fft_error import (UNIT_ROUNDOFF, fft_relative_error, full_spectrum_weights,
                                  input_error_terms)
from dpcalc.pld.jump_polynomial import (COARSE_POINTS, TRUNCATION_SHARE, CoarseTooLarge,
                                        _jump_window, _polynomial, enumerated_jumps, jump_part)
from dpcalc.pld.jump_step import (JUMP_COUNT_TARGET, NothingToSplit, SplitGrids, choose_threshold,
                                  split_step, truncation_loss)
from dpcalc.pld.pld import LOWER, UPPER, ComposedPld, DiscretePld, GridTooLarge
from dpcalc.numerics.special_functions import binomial_upper_tail
from dpcalc.pld.tilt import saddle_tilt, tilt, tilted_input_errors, tilted_tail_mass, untilt

# Grid points: one step's body, the composed body window (the coarse one: jump_polynomial).
_STEP_POINTS = 1 << 17
BODY_POINTS = 1 << 20


class BodyTooLarge(GridTooLarge):
    """The body's composed window needs more than BODY_POINTS fine grid points."""


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
class _NoSplit(Exception):
    """The split composition cannot be aimed here (its body's moments are not finite)."""


def choose_grids(phases, direction: str, single_steps, theta: float, threshold: float,
                 target: float, tolerance: float, failure: float, half_width: float,
                 truncations: tuple) -> SplitGrids:
    """Fine and coarse grids: the fine one resolves the body (≤ its spread/16) and keeps the
    body's rounding slack within 5% of the tolerated gap, within BODY_POINTS; the coarse
    one keeps the other roundings within 10% of it. _NoSplit where the body's moments are
    not finite floats (the split composition is then not tried)."""
    total = sum(steps for _, steps in phases)
    lows = [pair.loss_range(direction, half_width)[0] for pair, _ in phases]
    spread, tilted_spread = math.inf, 0.0
    for pld, steps in single_steps:
        body = pld.losses <= threshold
        if not pld.pmf[body].sum() > 0.0:
            raise _NoSplit
        weights = pld.pmf[body] / pld.pmf[body].sum()
        mean = float(np.sum(weights * pld.losses[body]))
        spread = min(spread, math.sqrt(float(np.sum(weights * (pld.losses[body] - mean) ** 2))))
        with np.errstate(over="ignore", invalid="ignore"):
            tilted = weights * np.exp(theta * (pld.losses[body] - threshold))
        if not (math.isfinite(tilted.sum()) and tilted.sum() > 0.0):
            raise _NoSplit  # the tilt overflows or underflows every bucket of the body
        tilted /= tilted.sum()
        tilted_mean = float(np.sum(tilted * pld.losses[body]))
        tilted_spread += steps * float(np.sum(tilted * (pld.losses[body] - tilted_mean) ** 2))
    window = 24.0 * math.sqrt(tilted_spread) + 40.0 * threshold
    slack_step = 0.05 * tolerance * target / math.sqrt(total * math.log(1.0 / failure) / 3.0)
    fine = max(window / (BODY_POINTS / 2), (threshold - min(lows)) / _STEP_POINTS,
               min(spread / 16.0, slack_step), 1e-12)
    count = JUMP_COUNT_TARGET + 5 * math.sqrt(JUMP_COUNT_TARGET) + 5
    coarse_target = min(0.1 * tolerance * target / count, threshold / 2.0)
    if not (math.isfinite(fine) and math.isfinite(coarse_target) and coarse_target > 0.0):
        raise _NoSplit
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
    try:
        grids = choose_grids(phases, direction, kept, theta, threshold, target, tolerance,
                             failure, half_width, truncations)
    except _NoSplit:
        return None
    return theta, threshold, grids


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


# The upper composition is aimed again, up to _REAIMS times, while its bound lands below
# this fraction of its aim (split_bounds).
_REAIM_BELOW = 0.5
_REAIMS = 3


def split_bounds(phases, direction: str, delta: float, failure: float, tail_mass: float,
                 half_width: float, single_steps, target: float, valid_from: float,
                 tolerance: float, loose_aim: float = 0.0,
                 allowance=lambda _epsilon: 0.0) -> tuple[float, float] | None:
    """Certified (upper, lower) ε of one direction by the body-and-jumps composition aimed
    at ε ≈ ``target`` (each kept only where valid: ≥ ``valid_from``, else ∞ / 0); None
    when one step's loss has no rare large part to split off or the upper's grids do not
    fit (where only the lower's do not, the upper bound with 0).
    While the upper bound lands below half of its aim, the upper composition is aimed again
    at it (up to _REAIMS times, keeping the smallest bound), and where it lands below (1 −
    tolerance) of the aim, the lower composition is aimed at it: any aim gives certified
    bounds, a closer one tighter ones. Where the first upper bound lands below ``loose_aim``
    times ``target``, it is returned alone, with no lower bound (a caller that would rather
    aim again itself). ``allowance``: ε ↦ extra δ the lower read-out leaves
    (pb/direction_pass.lower_allowance: pruned pairs)."""
    aimed = _aimed(phases, direction, single_steps, target, tolerance, failure, half_width, delta)
    if aimed is None:
        return None
    found = _compose_split(phases, direction, UPPER, aimed, delta, failure, tail_mass,
                           half_width, valid_from)
    if found is None:
        return None
    upper = found[0].epsilon(delta, UPPER)
    upper = upper if upper >= valid_from else math.inf
    if upper < loose_aim * target:
        return upper, 0.0
    for _ in range(_REAIMS):  # a loose aim (e.g. rdp's at small q): its tilt and grids
        # were chosen for ε near the aim, not near this bound
        if not valid_from <= upper < _REAIM_BELOW * target:
            break
        again = _aimed(phases, direction, single_steps, upper, tolerance, failure, half_width,
                       delta)
        found = again and _compose_split(phases, direction, UPPER, again, delta, failure,
                                         tail_mass, half_width, valid_from)
        if not found:
            break
        value = found[0].epsilon(delta, UPPER)
        aimed, target = again, upper  # ``again`` was aimed at the bound before it
        upper = min(upper, value) if value >= valid_from else upper
    if valid_from <= upper < (1.0 - tolerance) * target:
        aimed = _aimed(phases, direction, single_steps, upper, tolerance, failure, half_width,
                       delta) or aimed
    found = _compose_split(phases, direction, LOWER, aimed, delta, failure, tail_mass,
                           half_width, valid_from)
    if found is None:  # the lower composition never fit: the certified upper bound alone
        return upper, 0.0
    composed, slack = found
    read = delta + failure + allowance(upper)
    raw = composed.loss_quantile(read, LOWER) if read < 1.0 else -math.inf
    return upper, (max(0.0, raw - slack) if raw >= composed.valid_from else 0.0)
