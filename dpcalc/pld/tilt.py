"""Exponentially tilted composition: accurate δ(ε) far in the tail, where a plain FFT
composition is swamped by its own round-off."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.pld.fft_compose import compose, infinity_upper, pld_input_error, with_input_errors
from dpcalc.pld.fft_error import UNIT_ROUNDOFF, InputError, input_error_terms
from dpcalc.pld.pld import MAX_FFT_POINTS, ComposedPld, DiscretePld


def _tilted_moments(support, theta: float) -> tuple[float, float]:
    """Mean and variance of L under the pmf tilted by e^{θL} (finite part);
    ``support`` = (log masses, losses) of the entries with mass."""
    log_masses, losses = support
    exponents = log_masses + theta * losses
    weights = np.exp(exponents - exponents.max())
    total = float(np.sum(weights))
    mean = float(np.sum(weights * losses)) / total
    variance = float(np.sum(weights * (losses - mean) ** 2)) / total
    return mean, variance


def saddle_tilt(plds_with_steps, target: float) -> float:
    """θ ≥ 0 whose tilted composition has mean ``target`` (Λ'(θ) = target).

    Λ'(θ) = Σ T·E_θ[L] is increasing (Λ is convex), with slope Λ''(θ) = Σ T·Var_θ[L]. A
    PLD's tilted mean grows roughly exponentially in θ, so plain Newton from above crawls
    (~20 steps); Newton on ln Λ' (step (ln Λ' − ln target)·Λ'/Λ'') takes a handful. Steps
    stay inside the bracket, bisection when one leaves it. Any θ ≥ 0 gives valid bounds: the
    tilt only decides where the composition is accurate."""
    supports = []
    for pld, steps in plds_with_steps:
        keep = pld.pmf > 0
        supports.append(((np.log(pld.pmf[keep]), pld.losses[keep]), steps))
    return _saddle_on(supports, target)


def tilt_onto(plds_with_steps, target: float) -> tuple[float, float]:
    """(spread ratio, Chernoff rate) of the tilt onto ``target``, at the saddle θ: the ratio
    √(Λ''(θ)/Λ''(0)), about how many times that tilt widens the composed window, and the
    rate θ·target − Λ(θ), with P(S ≥ target) ≤ e^{−rate}. On the pmfs' pooled supports
    (pld.mgf_support: the light entries summed in blocks of consecutive grid points, which
    can only raise Λ), estimates for choosing a pass, not bounds."""
    supports = [(pld.mgf_support(upward=True), steps) for pld, steps in plds_with_steps]
    theta = _saddle_on(supports, target)
    spread = [sum(steps * _tilted_moments(support, at)[1] for support, steps in supports)
              for at in (0.0, theta)]
    log_mgf = 0.0
    for (log_masses, losses), steps in supports:
        exponents = log_masses + theta * losses
        top = float(exponents.max())
        log_mgf += steps * (top + math.log(float(np.sum(np.exp(exponents - top)))))
    ratio = math.sqrt(spread[1] / spread[0]) if spread[0] > 0 else math.inf
    return ratio, theta * target - log_mgf


def _saddle_on(supports, target: float) -> float:
    """saddle_tilt on ((log masses, losses), steps) per phase."""
    def moments(theta):
        pairs = [(steps * mean, steps * variance)
                 for (mean, variance), steps in ((_tilted_moments(s, theta), steps)
                                                 for s, steps in supports)]
        return sum(m for m, _ in pairs) - target, sum(v for _, v in pairs)

    value, slope = moments(0.0)
    if value >= 0.0:
        return 0.0
    low, high = 0.0, None
    theta = 1.0
    for _ in range(100):
        value, slope = moments(theta)
        if abs(value) <= 1e-9 * (abs(target) + 1.0):
            return theta
        if value < 0.0:
            low = theta
        else:
            high = theta
        mean = value + target
        if not slope > 0.0:
            step = math.inf
        elif mean > 0.0 and target > 0.0:
            step = theta - math.log(mean / target) * mean / slope
        else:
            step = theta - value / slope
        if high is None:  # not bracketed yet: at least doubling
            theta = max(step, 2.0 * theta) if math.isfinite(step) else 4.0 * theta
            if theta > 1e8:
                return low
            continue
        if not (low < step < high):
            step = 0.5 * (low + high)
        theta = step
        if high - low <= 1e-12 * high:
            break
    return low


@dataclass
class Tilted:
    """PLDs tilted by e^{θℓ} and normalised: ``plds`` (pmf_i ∝ p_i e^{θℓ_i}); the composition
    of the originals is the composition of these times exp(``log_scale`` − θS).
    ``log_scale_size`` bounds the magnitudes summed into log_scale (for its round-off) and
    ``input_relative`` the relative error of each tilted entry against the exact tilt of
    the computed pmf (the computed pmf's own error: with_input_errors, after untilting)."""

    theta: float
    plds: list
    log_scale: float
    log_scale_size: float
    input_relative: float


def tilt(plds_with_steps, theta: float) -> Tilted:
    """Tilt each PLD by e^{θℓ} (finite part) and normalise it."""
    step = plds_with_steps[0][0].grid_step
    tilted, log_scale, log_scale_size = [], 0.0, 0.0
    input_relative = 16.0 * UNIT_ROUNDOFF
    for pld, steps in plds_with_steps:
        keep = pld.pmf > 0
        with np.errstate(divide="ignore"):
            log_masses = np.log(np.where(keep, pld.pmf, 1.0))
            exponents = np.where(keep, log_masses + theta * pld.losses, -np.inf)
        top = float(exponents.max())
        # Each tilted weight exp(ln p + θℓ − top) carries the round-off of its exponent,
        # u·(|ln p| + 2|θℓ| + |exponent − top| + |top|), and 16u for the normalisation
        # (the computed pmf's own error is added after untilting: with_input_errors).
        magnitudes = np.abs(log_masses) + 2.0 * np.abs(theta * pld.losses) + np.abs(exponents - top)
        largest = float(np.max(np.where(keep, magnitudes, 0.0))) + abs(top) + 2.0
        input_relative = max(input_relative, 16.0 * UNIT_ROUNDOFF + 2.0 * UNIT_ROUNDOFF * largest)
        weights = np.exp(exponents - top)
        log_mgf = top + math.log(float(weights.sum()))
        tilted.append((DiscretePld(step, pld.offset, weights / weights.sum(), 0.0), steps))
        log_scale += steps * log_mgf
        log_scale_size += steps * (abs(log_mgf) + abs(top))
    return Tilted(theta, tilted, log_scale, log_scale_size, input_relative)


def tilted_tail_mass(tail_mass: float, log_scale: float, theta: float, valid_from: float) -> float:
    """τ̂: tilted mass outside a window that adds at most ``tail_mass``/2 to δ(ε), untilted,
    for every ε ≥ ``valid_from`` (each unit of tilted mass at S ≥ ε weighs exp(Λ − θS))."""
    log_window = math.log(tail_mass / 2.0) - (log_scale - theta * valid_from)
    return math.exp(min(max(log_window, -690.0), math.log(0.01)))


def inverse_budget(tail_mass: float, log_scale: float, theta: float, valid_from: float,
                   step: float) -> float:
    """A per-entry error e of the tilted composition that adds at most 1e4·``tail_mass``
    (about 1e-5·δ, as fft_compose.read_back allows) to δ(ε), untilted, for every ε ≥
    ``valid_from``: entry s untilts by exp(Λ − θS_s) ≤ exp(Λ − θ·valid_from)·e^{−θhk} at the
    k-th grid point from valid_from, so all of them together by at most
    exp(Λ − θ·valid_from)/(1 − e^{−θh})."""
    log_total = (log_scale - theta * valid_from) - math.log(-math.expm1(-theta * step)) \
        if theta * step > 0.0 else math.inf
    return math.exp(min(max(math.log(max(1e4 * tail_mass, 1e-300)) - log_total, -745.0), 0.0))


def untilt(inner: ComposedPld, theta: float, log_scale: float, log_scale_size: float,
           tilted_tail: float, infinity_mass: float, valid_from: float) -> ComposedPld:
    """The composed PLD in original units from its tilted composition ``inner`` (whose
    noise floor is in tilted units): c_s = ĉ_s·exp(Λ − θS_s)."""
    losses = (inner.offset + np.arange(inner.pmf.size)) * inner.grid_step
    log_factor = np.minimum(log_scale - theta * losses, 700.0)
    factor = np.exp(log_factor)
    pmf = np.clip(inner.pmf * factor, -1.0, 1.0)
    # float error of the untilting factor: a few ulps of every magnitude in its exponent
    factor_error = 8.0 * UNIT_ROUNDOFF * (log_scale_size + np.abs(theta * losses) + 2.0)
    noise = np.minimum(inner.noise_floor * factor + np.abs(pmf) * factor_error, 1.0)
    window = min(1.0, 2 * tilted_tail * math.exp(min(log_scale - theta * valid_from, 700.0)))
    return ComposedPld(inner.grid_step, inner.offset, pmf, infinity_mass, window, noise, valid_from)


def infinity_after(plds_with_steps) -> float:
    """The +∞ atom of the composition: 1 − Π_i (1 − p_∞,i)^{T_i}, each p_∞,i at the top of
    its rounding (fft_compose.infinity_upper)."""
    log_finite = sum(steps * math.log1p(-infinity_upper(pld)) if infinity_upper(pld) < 1 else -math.inf
                     for pld, steps in plds_with_steps)
    return -math.expm1(log_finite)


def compose_tilted(plds_with_steps, theta: float, tail_mass: float, valid_from: float,
                   max_points: int = MAX_FFT_POINTS) -> ComposedPld:
    """Compose the pmfs tilted by e^{θℓ}, then untilt: c_s = ĉ_s·exp(Λ − θ S_s).

    Tilting commutes with convolution, so the composed region near S ≈ Λ'(θ) becomes the
    bulk of what the FFT computes and its round-off there is relative, not absolute. The
    untilted float error per entry is ν̂·exp(Λ − θS_s) (ν̂ measured in tilted units), and
    the mass outside the window adds at most 2τ̂·exp(Λ − θ·valid_from) to δ(ε) for every
    ε ≥ valid_from, where τ̂ is chosen so that this is ``tail_mass``.
    """
    tilted = tilt(plds_with_steps, theta)
    tilted_tail = tilted_tail_mass(tail_mass, tilted.log_scale, theta, valid_from)
    errors = tilted_input_errors(tilted)
    inner = compose(tilted.plds, tilted_tail, max_points, errors,
                    inverse_budget(tail_mass, tilted.log_scale, theta, valid_from,
                                   plds_with_steps[0][0].grid_step))
    # the tilts' own rounding may raise the mass outside the window by this factor
    growth = 1.0 + input_error_terms(zip(errors, [steps for _, steps in plds_with_steps]))[0]
    untilted = untilt(inner, theta, tilted.log_scale, tilted.log_scale_size, tilted_tail * growth,
                      infinity_after(plds_with_steps), valid_from)
    return with_input_errors(untilted, [(pld_input_error(pld), steps) for pld, steps in plds_with_steps])


def tilted_input_errors(tilted: Tilted) -> list[InputError]:
    """The tilted pmfs' error against the exact tilts of the computed ones (normalised)."""
    relative = tilted.input_relative
    return [InputError(relative / (1.0 - relative), 0.0, 1.0)] * len(tilted.plds)
