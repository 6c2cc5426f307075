"""The T-fold compositions of one discrete PLD for many T from one forward transform.

One forward FFT of length N = 2^k·m serves every T: the length-n DFT (n = N/2^i) of the
pmf folded modulo n is the length-N DFT read at every 2^i-th frequency,
    DFT_n(fold_n p)[j] = Σ_s p_s e^{−2πi j s/n} = DFT_N(p)[2^i·j],
so each T is raised and inverted on the shortest n of that family that holds its window
and pad (a short transform for a small T). The exact composition on a circle of length n
holds the mass of S at (S − support_lo) mod n, as fft_compose.compose; the window of
every T fits its own n, so nothing wraps onto the window but the ≤ 2τ outside it
(accounting-methods.md §2). The float-error terms of the forward transform (fft_error.py)
are per coefficient (measured, ln M_k, |ln ẑ_k|), read at the same frequencies, or an L2
bound over all N coefficients, which bounds every subset of them.
"""
from __future__ import annotations

import math

import numpy as np
from dpcalc.numerics import fourier

from dpcalc.pld.fft_compose import infinity_upper, pld_input_error, read_back, single_step
from dpcalc.pld.fft_error import CompositionErrorBound, InputError, widened_window
from dpcalc.pld.pld import MAX_FFT_POINTS, ComposedPld, DiscretePld, GridTooLarge
from dpcalc.pld.spectral_readout import SpectralTail

# N = 2^_HALVINGS·m: each T may use N, N/2, …, N/2^_HALVINGS points.
_HALVINGS = 3
_LAMBDAS_PER_DECADE = 24


def lambda_table(guesses: np.ndarray, per_decade: int = _LAMBDAS_PER_DECADE) -> np.ndarray:
    """λ from 1/4096 of the smallest to 4096 times the largest Gaussian optimum (few
    steps of a bounded error want a large λ)."""
    low, high = float(guesses.min()) / 4096.0, float(guesses.max()) * 4096.0
    count = max(8, int(math.ceil(math.log10(high / low) * per_decade)))
    return np.geomspace(low, high, count)


_CHORD_STRIDE = 4


def chord_upper(cumulant, lambdas: np.ndarray, stride: int = _CHORD_STRIDE) -> np.ndarray:
    """Upper bounds on the cumulant K at every λ of the table, from K computed at every
    ``stride``-th λ only (and the last): K(λ) = ln E e^{λX} is convex in λ, so between two
    computed λ its chord lies above it, and a Chernoff bound from an upper bound on K is
    still a bound. The MGF over a one-step PMF is the costly part of a curve's windows and
    slacks (half of a small-T curve's time); the chords lose a little where the minimum
    falls between computed λ, where the objective is flat."""
    index = np.unique(np.append(np.arange(0, lambdas.size, stride), lambdas.size - 1))
    known = cumulant(lambdas[index])
    if not np.all(np.isfinite(known)):  # an infinite K: no chord; compute every λ
        return cumulant(lambdas)
    return np.interp(lambdas, lambdas[index], known)


def minimise(cumulant: np.ndarray, lambdas: np.ndarray, steps: np.ndarray,
             log_term: float) -> np.ndarray:
    """Per T: min over the table of (T·K(λ) + log_term)/λ (∞ where no λ is finite).
    Every λ > 0 gives a valid Chernoff bound, so the minimum over any table is one."""
    values = (steps[:, None] * cumulant[None, :] + log_term) / lambdas[None, :]
    values = np.where(np.isfinite(values), values, np.inf)
    return values.min(axis=1)


# Without a span, the windows' λ table spans every step count pb allows, so it is
# tabulated once per pld and serves every subset of T drawn from it.
_WINDOW_STEPS = (1, 10**9)


def _window_cumulants(pld: DiscretePld, log_tau: float, span: tuple[int, int] | None = None):
    """(λ table, K(λ), K(−λ)) of one step's finite loss for T in ``span`` (smallest,
    largest; default: every T pb allows), cached on the pld. A table over fewer λ is as
    valid (every λ > 0 gives a Chernoff bound) and costs less MGF work."""
    span = _WINDOW_STEPS if span is None else (int(span[0]), int(span[1]))
    key = ("_window_cumulants", log_tau, span)
    if key not in pld.__dict__:
        variance = float(np.sum(pld.pmf * (pld.losses - np.sum(pld.pmf * pld.losses)) ** 2))
        scales = np.sqrt(np.array(span) * max(variance, 0.0)) + pld.grid_step
        lambdas = lambda_table(math.sqrt(-2.0 * log_tau) / scales, _LAMBDAS_PER_DECADE // 2)
        pld.__dict__[key] = (lambdas, chord_upper(pld.log_mgf, lambdas),
                             chord_upper(lambda values: pld.log_mgf(-values), lambdas))
    return pld.__dict__[key]


def tabulated_windows(pld: DiscretePld, steps: np.ndarray, log_tau: float,
                      span: tuple[int, int] | None = None) -> list[tuple]:
    """Per T: loss values (lo, hi) with P(S_T < lo) ≤ τ and P(S_T > hi) ≤ τ (Chernoff, as
    chernoff._chernoff_window, over one table of λ; a table half as dense as the slacks'
    costs the window at most ~0.5% of its width and half the MGF work); −∞ / +∞ on a side
    where no λ gave a finite bound (the whole support is kept there, as _chernoff_window)."""
    lambdas, above, below = _window_cumulants(pld, log_tau, span)
    hi = minimise(above, lambdas, steps, -log_tau)
    lo = -minimise(below, lambdas, steps, -log_tau)
    hi = np.where(np.isfinite(hi), hi, np.inf)
    lo = np.where(np.isfinite(lo), lo, -np.inf)
    return list(zip(lo.tolist(), hi.tolist()))


def _layout(pld: DiscretePld, steps: np.ndarray, tail_mass: float, max_points: int,
            span: tuple[int, int] | None = None) -> list[tuple]:
    """Per T: (T, support_lo, lo_index, window points, window mass) as fft_compose.compose."""
    step = pld.grid_step
    layout = []
    windows = tabulated_windows(pld, steps, math.log(tail_mass), span)
    for count, (lo, hi) in zip(steps.tolist(), windows):
        support_lo, support_hi = count * pld.offset, count * (pld.offset + pld.pmf.size - 1)
        # a side without a Chernoff bound (±∞) keeps the whole support: nothing cut there
        lo_index = max(support_lo, math.floor(lo / step)) if math.isfinite(lo) else support_lo
        hi_index = min(support_hi, math.ceil(hi / step)) if math.isfinite(hi) else support_hi
        whole = lo_index == support_lo and hi_index == support_hi
        layout.append((count, support_lo, lo_index, hi_index - lo_index + 1,
                       0.0 if whole else 2 * tail_mass))
    needed = max(entry[3] for entry in layout)
    if needed > max_points:
        raise GridTooLarge(needed)
    return layout


def _padded(points: int) -> int:
    """Window plus the pad whose content measures the FFT's own error (fft_compose)."""
    return points + max(64, points // 32)


# exp(x) is exactly 0 in float64 below ln(2^-1075) ≈ −745.13
_UNDERFLOW = -745.2


class _Strided:
    """The length-n = N/stride view of one forward transform: its coefficients and their
    error terms, with the coefficients ordered by ln M_k (largest first) so that each T
    touches only those whose powers do not underflow."""

    def __init__(self, transformed: np.ndarray, terms: tuple, stride: int, input_error: InputError):
        measured, bound, log_bound, log_size = terms
        self.input_error = input_error
        self.spectrum = transformed[::stride]
        self.measured = None if measured is None else measured[::stride]
        self.bound = bound
        self.log_bound = log_bound[::stride]
        self.log_size = log_size[::stride]
        with np.errstate(divide="ignore"):
            self.log_modulus = np.log(np.abs(self.spectrum))
        self.order = np.argsort(-self.log_bound, kind="stable")
        self.sorted_negative = -self.log_bound[self.order]

    def power(self, count: int, size: int):
        """(spectrum**count, its error bound) on the circle of ``size`` points.

        Only the coefficients with (count − 1)·ln M_k > _UNDERFLOW are touched: for the
        others the growth factor count·M^(count−1) of fft_error.absolute and the power
        |ẑ|^count ≤ M^count are exactly 0 in float64, as they would be if computed."""
        alive_count = int(np.searchsorted(self.sorted_negative, -_UNDERFLOW / (count - 1), side="left"))
        index = self.order[:alive_count]
        values = self.spectrum[index]
        # as fft_compose._power: entries whose power underflows are left at 0
        live = count * self.log_modulus[index] > -745.0
        powered = np.zeros_like(self.spectrum)
        powered[index[live]] = values[live] ** count
        error_bound = CompositionErrorBound(size, index=index)
        terms = (None if self.measured is None else self.measured[index], self.bound,
                 self.log_bound[index], self.log_size[index])
        error_bound.add_phase(None, None, count, self.input_error, terms)
        return powered, error_bound


def composed_powers(pld: DiscretePld, steps: np.ndarray, tail_mass: float,
                    max_points: int = MAX_FFT_POINTS, span: tuple[int, int] | None = None):
    """Yield (position in ``steps``, T-fold composition of ``pld``) for every T, one at a
    time (the caller reads each out and drops it); ``span``: the (smallest, largest) T this
    pld will be asked for, over all calls (sizes its windows' λ table)."""
    layout = _layout(pld, steps, tail_mass, max_points, span)
    scale = 1 << _HALVINGS
    base = fourier.next_fast_len(-(-_padded(max(entry[3] for entry in layout)) // scale))
    size = scale * base
    folded = pld.pmf
    if folded.size > size:
        folded = np.bincount(np.arange(folded.size) % size, weights=folded, minlength=size)
    transformed = fourier.rfft(folded, size)
    terms = CompositionErrorBound(size).phase_terms(folded, transformed)
    input_error = pld_input_error(pld)
    views: dict[int, _Strided] = {}
    for position, (count, support_lo, lo_index, points, window_mass) in enumerate(layout):
        if count == 1:  # one step: nothing to compose
            yield position, single_step(pld, input_error)
            continue
        stride = 1
        while stride < scale and size // (2 * stride) >= _padded(points):
            stride *= 2
        # length n = size/stride: its rfft coefficients are every stride-th of length N
        if stride not in views:
            views[stride] = _Strided(transformed, terms, stride, input_error)
        circle = size // stride
        spectrum, error_bound = views[stride].power(count, circle)
        top = infinity_upper(pld)
        infinity = 1.0 if top >= 1 else -math.expm1(count * math.log1p(-top))
        inverse = (spectrum, error_bound, pld.grid_step, support_lo, lo_index, points, tail_mass,
                   window_mass, infinity)
        if error_bound.index.size > circle // _SPECTRAL_SHARE:
            yield position, read_back(*inverse)
            continue
        relative, input_absolute = error_bound.input_terms()
        tail = SpectralTail(spectrum[error_bound.index], error_bound.index, circle,
                            (lo_index - support_lo) % circle, points, lo_index, pld.grid_step,
                            infinity, widened_window(window_mass, relative, input_absolute),
                            error_bound.absolute(spectrum, include_inverse=False), relative)
        yield position, Spectral(tail, inverse)


# Read from the spectrum where at most 1/_SPECTRAL_SHARE of the circle's coefficients live.
_SPECTRAL_SHARE = 64


class Spectral:
    """A composition read from its spectrum (spectral_readout.py); ``composed()`` inverts
    it (fft_compose.read_back) where that read-out declines."""

    def __init__(self, tail: SpectralTail, inverse: tuple):
        self.tail, self._inverse = tail, inverse

    def composed(self) -> ComposedPld:
        return read_back(*self._inverse)


def tabulated_slacks(pld: DiscretePld, steps: np.ndarray, failure: float) -> np.ndarray:
    """Per T: η with P(Σ_{t≤T} E_t > η) ≤ failure (chernoff.rounding_slack for one pld)."""
    spreads = pld.grid_step * np.sqrt(np.maximum(steps, 1) / 12.0)
    lambdas = lambda_table(math.sqrt(2.0 * math.log(1.0 / failure)) / spreads)
    return minimise(chord_upper(pld.rounding_log_mgf, lambdas), lambdas, steps,
                    -math.log(failure))
