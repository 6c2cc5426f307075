"""T-fold composition of discrete PLDs by one FFT over a Chernoff window.

Mass outside the window wraps around inside it; the upper bound adds τ to the +∞ atom,
the lower bound subtracts it (accounting-methods.md §2, the FFT trap). The float error
of every entry is bounded a priori or measured (fft_error.py).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from dpcalc.numerics import fourier

from dpcalc.pld.chernoff import _chernoff_window
from dpcalc.pld.fft_error import (UNDERFLOWED, CompositionErrorBound, InputError,
                                  entry_relative_error, input_error, input_error_terms,
                                  widened_window)
from dpcalc.pld.pld import MAX_FFT_POINTS, ComposedPld, DiscretePld, GridTooLarge


# The inverse transform's a priori error bound is used as it is while it is at most this
# share of the floor's other terms (read_back).
_INVERSE_SHARE = 1e-3


def _power(values: np.ndarray, exponent: int) -> np.ndarray:
    """values**exponent, skipping the entries that underflow to 0 anyway."""
    if exponent == 1:
        return values
    with np.errstate(divide="ignore"):
        log_modulus = 0.5 * np.log(values.real**2 + values.imag**2)
    alive = exponent * log_modulus > -745.0
    out = np.zeros_like(values)
    out[alive] = values[alive] ** exponent
    return out


def pld_input_error(pld: DiscretePld) -> InputError:
    """How far the computed pmf of ``pld`` may be from its exact one (fft_error.input_error)."""
    return input_error(pld.pmf, pld.entry_error)


def infinity_upper(pld: DiscretePld) -> float:
    """The +∞ atom at the top of its own rounding (an upper bound on the exact one; only
    upper-bound PLDs have a +∞ atom, the lower ones' is 0)."""
    return raised_atom(pld.infinity_mass, pld.entry_error)


def raised_atom(mass: float, extra: float = 0.0) -> float:
    """A computed probability mass at the top of its rounding (entry_relative_error, and
    an absolute floor below the normal range)."""
    if not 0.0 < mass < 1.0:
        return mass
    return min(1.0, mass * (1.0 + entry_relative_error(-math.log(mass), extra)) + UNDERFLOWED)


def single_step(pld: DiscretePld, error: InputError | None = None) -> ComposedPld:
    """One step, nothing composed: the pmf with its own rounding (``error``, default
    pld_input_error) as the noise floor. The +∞ atom is raised to the top of its rounding:
    only upper-bound PLDs have one."""
    relative, absolute = input_error_terms([(pld_input_error(pld) if error is None else error, 1)])
    return ComposedPld(pld.grid_step, pld.offset, pld.pmf.copy(), infinity_upper(pld), 0.0,
                       relative * np.abs(pld.pmf) + absolute)


def with_input_errors(composed: ComposedPld, errors_with_steps) -> ComposedPld:
    """``composed``, a composition of computed pmfs, with their own rounding
    (``errors_with_steps``: (InputError, T_i) pairs) added to its noise floor."""
    relative, absolute = input_error_terms(errors_with_steps)
    noise = np.minimum(composed.noise_floor * (1.0 + relative) + relative * np.abs(composed.pmf)
                       + absolute, 1.0)
    return dataclasses.replace(composed, noise_floor=noise, window_mass=min(
        1.0, widened_window(composed.window_mass, relative, absolute)))


def compose(plds_with_steps: list[tuple[DiscretePld, int]], tail_mass: float,
            max_points: int = MAX_FFT_POINTS,
            input_errors: list[InputError] | None = None,
            inverse_budget: float = 0.0) -> ComposedPld:
    """T-fold self-composition of each PLD, then their product, by one FFT.

    ``tail_mass`` τ: the window is chosen so that at most τ of the composed mass lies on
    each side of it (Chernoff); 2τ is then reported as ``window_mass``.
    ``input_errors``: how far each pmf may be from the exact one (default: pld_input_error).
    ``inverse_budget``: a per-entry error the caller can absorb (read_back).
    """
    step = plds_with_steps[0][0].grid_step
    if len(plds_with_steps) == 1 and plds_with_steps[0][1] == 1:
        return single_step(plds_with_steps[0][0], input_errors[0] if input_errors else None)
    if input_errors is None:
        input_errors = [pld_input_error(pld) for pld, _ in plds_with_steps]
    support_lo, lo_index, needed, whole = _window(plds_with_steps, tail_mass)
    window_mass = 0.0 if whole else 2 * tail_mass
    if needed > max_points:
        raise GridTooLarge(needed)
    # A pad beyond the window: its positions hold at most 2τ of true mass, so what the FFT
    # puts there measures its own float error.
    size = fourier.next_fast_len(needed + max(64, needed // 32))
    spectrum = None
    log_finite_mass = 0.0
    error_bound = CompositionErrorBound(size)
    for (pld, steps), error in zip(plds_with_steps, input_errors):
        folded = pld.pmf
        if folded.size > size:
            folded = np.bincount(np.arange(folded.size) % size, weights=folded, minlength=size)
        transformed = fourier.rfft(folded, size)
        error_bound.add_phase(folded, transformed, steps, error)
        transformed = _power(transformed, steps)
        spectrum = transformed if spectrum is None else spectrum * transformed
        infinity = infinity_upper(pld)
        log_finite_mass += steps * math.log1p(-infinity) if infinity < 1 else -math.inf
    return read_back(spectrum, error_bound, step, support_lo, lo_index, needed, tail_mass,
                     window_mass, -math.expm1(log_finite_mass), inverse_budget)


def _window(plds_with_steps, tail_mass: float) -> tuple[int, int, int, bool]:
    """(first support index, first window index, window points, whether the window holds
    the whole support) of the composition: Chernoff, at most τ outside on each side."""
    step = plds_with_steps[0][0].grid_step
    support_lo = sum(steps * p.offset for p, steps in plds_with_steps)
    support_hi = sum(steps * (p.offset + p.points - 1) for p, steps in plds_with_steps)
    lo, hi = _chernoff_window(plds_with_steps, math.log(tail_mass))
    # a side without a Chernoff bound (±∞) keeps the whole support: nothing cut there
    lo_index = max(support_lo, math.floor(lo / step)) if math.isfinite(lo) else support_lo
    hi_index = min(support_hi, math.ceil(hi / step)) if math.isfinite(hi) else support_hi
    return (support_lo, lo_index, hi_index - lo_index + 1,
            lo_index == support_lo and hi_index == support_hi)


def window_points(plds_with_steps, tail_mass: float) -> int:
    """The points compose() would take for these PLDs, without composing them."""
    if len(plds_with_steps) == 1 and plds_with_steps[0][1] == 1:
        return plds_with_steps[0][0].pmf.size
    return _window(plds_with_steps, tail_mass)[2]


def read_back(spectrum: np.ndarray, error_bound: CompositionErrorBound, step: float,
              support_lo: int, lo_index: int, needed: int, tail_mass: float, window_mass: float,
              infinity: float, inverse_budget: float = 0.0) -> ComposedPld:
    """The composed PLD on the window [lo_index, lo_index + needed) from its spectrum, with
    the float-error bound of every entry. ``inverse_budget``: a per-entry error of the
    inverse transform that adds at most ~1e4·τ to δ where the caller reads it (tilt.py)."""
    size = error_bound.size
    circular = fourier.irfft(spectrum, size)
    # circular[m] holds the mass of S with (S_index − support_lo) ≡ m (mod size).
    start = (lo_index - support_lo) % size
    window = (start + np.arange(needed)) % size if start + needed > size else slice(start, start + needed)
    composed = circular[window]
    pad_peak = _pad_peak(circular, start, needed)
    # Float error of every entry: the a priori bound of fft_error.py (absolute, plus a
    # relative term for the rounded inputs). The pad beyond the window holds at most 2τ of
    # true mass; what the FFT puts there must lie within the bound (a cross-check, kept as a
    # floor so a bound that failed could never be smaller than an error actually seen).
    measured = max(0.0, pad_peak - 2 * tail_mass)
    absolute = max(error_bound.absolute(spectrum, include_inverse=False), measured,
                   float(max(0.0, -composed.min())))
    # The inverse transform's own error is measured only when its a priori bound could add
    # more than 1e4·τ (about 1e-5·δ) to δ over the whole window (or where the caller reads
    # it: ``inverse_budget``) and more than 1e-3 of the rest of the floor; below either, the
    # a priori bound itself is added (an upper bound too, Higham 2002 Thm 24.2:
    # fft_error.py item 3).
    budget = max(1e4 * tail_mass / needed, inverse_budget, _INVERSE_SHARE * absolute)
    inverse = error_bound.inverse_error(spectrum, circular, budget)
    if np.ndim(inverse):
        inverse = inverse[window]
    # the inputs' rounding: relative to the exact composition of the computed pmfs, which is
    # within absolute + inverse of ``composed`` (its absolute part is in ``absolute``)
    relative, input_absolute = error_bound.input_terms()
    noise_floor = (absolute + inverse) * (1.0 + relative) + relative * np.abs(composed)
    return ComposedPld(step, lo_index, composed, infinity,
                       widened_window(window_mass, relative, input_absolute), noise_floor)


def _pad_peak(circular: np.ndarray, start: int, needed: int) -> float:
    """max |entry| of the circle outside the window [start, start + needed) (mod size)."""
    size = circular.size
    end = start + needed
    if needed >= size:
        return 0.0
    if end <= size:
        parts = (circular[end:], circular[:start])
    else:
        parts = (circular[end - size:start],)
    return max((float(np.abs(part).max()) for part in parts if part.size), default=0.0)
