"""The jump part of the body-and-jumps composition (jumps.py): per phase, the tilted laws of
one jump and one extra body draw on the coarse grid, the weights of 0..K jumps, the
polynomial Σ_j a_j t̂^j b̂^{K−j} on an FFT and the window holding the part."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.numerics import fourier
from dpcalc.pld.chernoff import _min_over_lambda
from dpcalc.pld.fft_error import UNIT_ROUNDOFF, fft_relative_error
from dpcalc.pld.jump_step import COARSE_POINTS, CoarseTooLarge, StepSplit  # noqa: F401 (re-exported)
from dpcalc.pld.pld import DiscretePld
from dpcalc.numerics.special_functions import binomial_upper_tail, gammaln

# How many jumps are enumerated at most (enumerated_jumps).
MAX_ENUMERATED_JUMPS = 96
# Jumps beyond the loss where they add this share of δ in all are cut (jump_step.truncation_loss);
# the upper's configurations with more than K jumps may add as much again.
TRUNCATION_SHARE = 1e-4
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
    total = _horner(jump_hat, body_hat, np.exp(part.log_weights - part.log_scale))
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


_HORNER_CHUNK = 1 << 15  # coefficients per block: its four arrays stay in cache over the K steps


def _horner(jump_hat: np.ndarray, body_hat: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_j a_j t̂^j b̂^{K−j} per coefficient (``weights`` = a_0..a_K) by Horner's scheme in
    t̂, R_j = a_j b̂^{K−j} + t̂·R_{j+1}, in place and block by block (the same operations in
    the same order for every coefficient as one pass over the whole arrays)."""
    count = weights.size - 1
    total = np.empty(jump_hat.size, dtype=complex)
    power = np.empty(min(_HORNER_CHUNK, jump_hat.size), dtype=complex)
    scaled = np.empty_like(power)
    for start in range(0, jump_hat.size, _HORNER_CHUNK):
        block = slice(start, start + _HORNER_CHUNK)
        jumps, bodies, out = jump_hat[block], body_hat[block], total[block]
        powers, terms = power[:out.size], scaled[:out.size]
        out[:] = weights[count]
        powers[:] = 1.0
        for j in range(count - 1, -1, -1):
            np.multiply(powers, bodies, out=powers)
            np.multiply(jumps, out, out=out)
            out += np.multiply(weights[j], powers, out=terms)
    return total


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
