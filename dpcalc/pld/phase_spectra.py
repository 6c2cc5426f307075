"""Composition of many distinct phases at the cost of one: their spectra only where the
composition lives.

fft_compose.compose transforms every phase's one-step pmf on the whole circle of the
composed window (N ~ 10^5 points), measures each transform's error in long double and
raises it to its power: a few tens of ms per phase. After T ≳ 10^4 steps the composed
spectrum W_k = Π_i z_{i,k}^{T_i} is negligible beyond a few dozen of its N/2 coefficients
(|W_k| ≈ e^{−(2πk s/N)²/2}, s the composed spread in grid points). So here each phase's
spectrum z_{i,k} is computed only for k ≤ K from its block moments
(compact.BlockMoments), and the rest is bounded:

1. Low frequencies. z_k = Σ_l p_l e^{−iθ_k l}, θ_k = 2πk/N, is, block by block (Taylor),
   Σ_β e^{−iθ_k c_β} Σ_{n<M} (−i x_k)ⁿ/n!·μ_{β,n} with x_k = θ_k B/2, and remainder
   ≤ x_k^M/M!·e^{x_k}·Σp. The n = 0, 1 terms, which carry all but x_k²/2 of it, are summed in
   long double for the lowest frequencies (where the composition's float error is decided:
   its growth factors are largest there), the rest in float64. Each coefficient gets an
   a priori bound on its error (:func:`low_spectrum`, γ_n bounds of Higham 2002, §3.1, the
   cosine table within 15u, the final roundings to float64), which fft_error's
   CompositionErrorBound propagates through the powers and products like a measured one.
2. High frequencies. The pmf folded modulo a circle of M = N/8 points has the exact DTFT
   of the pmf at θ_l = 2πl/M (aliasing), one short FFT; between two samples
   |z(θ)| ≤ max(|z(θ_l)|, |z(θ_{l+1})|) + Var·(2π/M)²/8 (linear interpolation of
   z(θ)e^{iθ·mean}, whose second derivative is at most the variance Var of the pmf in grid
   units). So |W_k| ≤ Π_i M̄_i^{T_i} for every k, and the coefficients beyond K are left
   out of the composition (taken as 0) with that bound added, per entry of the inverse
   transform, as (1/N)·Σ_{k>K} w_k·|W_k| (:func:`dropped_bound`). K is the smallest of
   16, 32, … that makes this negligible (_DROPPED).

The composed spectrum is then inverted and read as fft_compose.compose's (read_back: its
window, pad check, inverse-transform error and input rounding are the same). Phases that are
not CompactPld, or whose series would need more terms than they hold, go to
fft_compose.compose.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from dpcalc.numerics import fourier
from dpcalc.pld.compact import CompactPld
from dpcalc.pld.fft_compose import _window, compose, infinity_upper, read_back
from dpcalc.pld.fft_error import (SMALL_ENTRY, UNDERFLOWED, UNIT_ROUNDOFF, CompositionErrorBound,
                                  InputError, entry_relative_error, fft_relative_error,
                                  full_spectrum_weights, input_error_terms)
from dpcalc.pld.phase_batch import BLOCK, LONG_TERMS, MAX_TERMS, PhaseBatch, PhasePlds
from dpcalc.pld.pld import MAX_FFT_POINTS, ComposedPld, GridTooLarge

_LONG_ROUNDOFF = float(np.finfo(np.longdouble).eps) / 2.0
# A long double too short to help (e.g. MSVC's is float64): the float64 bound everywhere.
_LONG_HELPS = _LONG_ROUNDOFF <= 2.0**-63
_LONG_PI = np.longdouble("3.14159265358979323846264338327950288419716939937510")
# The lowest frequencies get their first LONG_TERMS series terms summed in long double,
# up to where the composed spectrum falls below _LONG_SHARE/depth (_long_count).
_LONG_SHARE = 1e-3
# _long_heads works on about this many (frequency, block) long doubles at a time.
_LONG_CHUNK = 1 << 14
# Blocks lighter than this stay in float64 (their error, ~1e3·u·1e-13, is negligible).
_HEAVY_BLOCK = 1e-13
# Ladder of K; the series' remainder must stay below _TRUNCATION per unit mass.
_K_LADDER = (16, 32, 64, 128, 256, 512)
_TRUNCATION = 1e-19
# The left-out coefficients may add at most this to every entry of the composition.
_DROPPED = 1e-22
# The high-frequency bound's circle: about N/_FOLD points (a power of two).
_FOLD = 8
# Phases folded and transformed together for the high-frequency bound; it stops taking
# phases once K = _K_LADDER[_ENOUGH] coefficients are shown enough.
_CHUNK = 32
_ENOUGH = 2
# Below this many phases fft_compose.compose is as cheap.
MIN_PHASES = 2


def compact_input_error(pld: CompactPld) -> InputError:
    """fft_error.input_error of the dense pmf, from the non-zero entries (every other
    entry is an exact 0, counted as UNDERFLOWED as input_error counts it)."""
    values = pld.values
    large = values >= SMALL_ENTRY
    smallest = float(values[large].min()) if np.any(large) else 1.0
    relative = entry_relative_error(max(0.0, -math.log(smallest)), pld.entry_error)
    rest = pld.size - int(np.count_nonzero(large))
    small = 0.0
    if rest:
        worst = entry_relative_error(746.0, pld.entry_error)
        small = worst * float(np.sum(values[~large])) + UNDERFLOWED * rest
    return InputError(relative / (1.0 - relative), small, float(values.sum()))


def compact_input_errors(batch: PhaseBatch) -> list[InputError]:
    """compact_input_error of every phase of ``batch``, from its entries at once."""
    values, starts = batch.values, batch.entry_starts
    large = values >= SMALL_ENTRY
    smallest = np.minimum.reduceat(np.where(large, values, np.inf), starts)
    counted = np.add.reduceat(large.astype(np.int64), starts)
    small_mass = np.add.reduceat(np.where(large, 0.0, values), starts)
    out = []
    for pld, low, count, small, mass in zip(batch.plds, smallest.tolist(), counted.tolist(),
                                            small_mass.tolist(), batch.mass.tolist()):
        low = low if math.isfinite(low) else 1.0
        relative = entry_relative_error(max(0.0, -math.log(low)), pld.entry_error)
        rest = pld.size - count
        absolute = 0.0
        if rest:
            worst = entry_relative_error(746.0, pld.entry_error)
            absolute = worst * small + UNDERFLOWED * rest
        out.append(InputError(relative / (1.0 - relative), absolute, mass))
    return out


def spectrum_terms(values: np.ndarray, errors: np.ndarray):
    """(ln M, the size of ln ẑ) per coefficient (fft_error.CompositionErrorBound.phase_terms,
    element-wise: any shape) of spectra ``values`` within ``errors`` of the exact ones."""
    modulus = np.abs(values)
    with np.errstate(divide="ignore"):
        log_bound = np.log(np.maximum(modulus, np.minimum(1.0, modulus + errors)))
        log_modulus = np.log(modulus)
    log_size = np.sqrt(np.where(np.isfinite(log_modulus), log_modulus, 0.0) ** 2
                       + np.angle(values) ** 2)
    return log_bound, log_size


def stacked_power(values: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """fft_compose._power of every row of ``values`` by its ``steps`` (the same element-wise
    power, the entries that underflow anyway left at 0)."""
    exponents = np.asarray(steps, dtype=np.int64)[:, None]
    with np.errstate(divide="ignore"):
        log_modulus = 0.5 * np.log(values.real**2 + values.imag**2)
    alive = (exponents * log_modulus > -745.0) | (exponents == 1)
    return np.power(values, exponents, out=np.zeros_like(values), where=alive)


class StackedErrorBound(CompositionErrorBound):
    """fft_error.CompositionErrorBound of phases whose forward errors are per coefficient
    (low_spectra: ``measured``, no L2 part), its sums over the phases taken at once:
    absolute() and input_terms() give what add_phase phase by phase would (the same terms,
    summed in another order: the float error of that is far below the margins)."""

    def __init__(self, size: int, count: int, dropped: float, steps: np.ndarray,
                 measured: np.ndarray, log_bounds: np.ndarray, log_sizes: np.ndarray,
                 input_errors):
        super().__init__(size, index=np.arange(count))
        self.dropped = dropped
        self.steps = np.asarray(steps, dtype=float)
        self.measured, self.log_bounds = measured, log_bounds
        self.log_rounding = self.steps @ log_sizes + 2.0 * self.steps.size
        self.input_errors = list(zip(input_errors, self.steps.astype(int).tolist()))

    def absolute(self, spectrum: np.ndarray, include_inverse: bool = True) -> float:
        size = self.size
        weights = full_spectrum_weights(size, spectrum.size)[self.index]
        spectrum = spectrum[self.index]
        total_log = self.steps @ self.log_bounds
        # Σ_i Σ_k w_k |δz_{i,k}| T_i M_{i,k}^{T_i−1} Π_{j≠i} M_{j,k}^{T_j} (fft_error item 2)
        growth = self.steps[:, None] * np.exp(total_log[None, :] - self.log_bounds)
        propagated = float(np.sum(weights[None, :] * self.measured * growth))
        modulus = np.abs(spectrum)
        rounding = 3.0 * UNIT_ROUNDOFF * float(np.sum(weights * modulus * self.log_rounding))
        inverse = (self.relative_fft * math.sqrt(float(np.sum(weights * modulus**2)))
                   / math.sqrt(size) if include_inverse else 0.0)
        return ((propagated + rounding) / size + inverse + 1e-300 + self.input_terms()[1]
                + self.dropped)

    def input_terms(self) -> tuple[float, float]:
        found = self.__dict__.get("_terms")
        if found is None:
            found = self.__dict__["_terms"] = input_error_terms(self.input_errors)
        return found


def _series_terms(reach: float) -> int | None:
    """The fewest terms M with reach^M/M!·e^reach ≤ _TRUNCATION (None beyond the batch's)."""
    term = math.exp(reach)
    for count in range(1, TERMS_AVAILABLE + 1):
        term *= reach / count
        if term <= _TRUNCATION:
            return count
    return None


TERMS_AVAILABLE = MAX_TERMS


_TABLES: dict = {}


def _table(size: int, count: int, blocks: int, long: bool):
    """cos and sin of θ_k c_β for k < count and block numbers β < blocks (θ_k = 2πk/size,
    2c_β = (2β + 1)B − 1 reduced exactly mod 2·size), in float64 (within 15u: the angle's
    rounding ≤ 2π·2u and the functions' own) or long double, kept for the compositions that
    share the circle."""
    key = (size, count, long)
    found = _TABLES.get(key)
    if found is None or found[0].shape[1] < blocks:
        blocks = max(blocks, 2 * (found[0].shape[1] if found is not None else 0))
        twice = (2 * np.arange(blocks, dtype=np.int64) + 1) * BLOCK - 1
        turns = (np.arange(count, dtype=np.int64)[:, None] * twice[None, :]) % (2 * size)
        if long:
            angle = (_LONG_PI / size) * turns.astype(np.longdouble)
        else:
            angle = (math.pi / size) * turns
        found = (np.cos(angle), np.sin(angle))
        if len(_TABLES) > 16:
            _TABLES.clear()
        _TABLES[key] = found
    return found


def low_spectra(batch: PhaseBatch, size: int, count: int, terms: int):
    """(z, bound on |ẑ − z|) for every phase (rows) at k = 0..count−1 on the circle of
    ``size`` points, z the exact DTFT of the phase's pmf (its first entry at index 0), from
    the block moments (module doc, item 1). The long double sums run over the blocks of
    more than _HEAVY_BLOCK mass; the light ones stay in float64 (their error is their mass
    times the float64 sums' bound)."""
    batch.ensure_terms(terms)
    cosine, sine = _table(size, count, int(batch.blocks.max()) + 1, False)
    k = np.arange(count)
    x = (math.pi * BLOCK / size) * k  # θ_k·B/2
    n = np.arange(terms)
    factorial = np.cumprod(np.r_[1.0, np.arange(1, terms)])
    weights = x[:, None] ** n[None, :] / factorial[None, :] \
        * np.array([1.0, -1j, -1.0, 1j])[n % 4][None, :]  # (−i x)ⁿ/n!
    exp_x = np.exp(x)
    truncation = x**terms / (factorial[-1] * terms) * exp_x
    phases = len(batch.plds)
    heavy = batch.block_mass > _HEAVY_BLOCK
    light_mass = np.bincount(batch.phase_of_block, weights=np.where(heavy, 0.0, batch.block_mass),
                             minlength=phases)
    values = np.empty((phases, count), dtype=complex)
    error = np.empty((phases, count))
    tails = np.empty((phases, count), dtype=complex)  # all but the heavy blocks' n < LONG_TERMS
    depths = np.empty(phases)
    for phase in range(phases):
        rows = batch.phase_blocks(phase)
        blocks, mu = batch.blocks[rows], batch.mu[rows, :terms]
        table_cos, table_sin = cosine[:, blocks], sine[:, blocks]
        sums = table_cos @ mu - 1j * (table_sin @ mu)  # Σ_β e^{−iθc_β} μ_{β,n}
        parts = weights * sums
        depths[phase] = 2 * blocks.size + BLOCK + 4 * terms + 25  # complex sums, products, table
        values[phase] = parts.sum(axis=1)
        light = ~heavy[rows]
        light_mu = mu[light, :LONG_TERMS]
        light_sums = table_cos[:, light] @ light_mu - 1j * (table_sin[:, light] @ light_mu)
        tails[phase] = (parts[:, LONG_TERMS:].sum(axis=1)
                        + (weights[:, :LONG_TERMS] * light_sums).sum(axis=1))
        error[phase] = ((depths[phase] * UNIT_ROUNDOFF * exp_x + truncation) * batch.mass[phase]
                        + UNIT_ROUNDOFF * np.abs(values[phase]))
    long_count = _long_count(values, batch.steps, depths.max()) if _LONG_HELPS else 0
    if long_count:
        # the heavy blocks' n < LONG_TERMS in long double, the rest added to it there: one
        # final rounding, within u of each component, so within u|z|
        heads = _long_heads(batch, heavy, x[:long_count], size)
        total = heads.T + tails[:, :long_count].astype(np.clongdouble)
        values[:, :long_count] = total.astype(np.complex128)
        x_low = x[:long_count]
        rest = exp_x[:long_count] - sum(x_low**m / math.factorial(m) for m in range(LONG_TERMS))
        long_depth = 2 * np.bincount(batch.phase_of_block, minlength=phases) + BLOCK + 60
        error[:, :long_count] = (
            depths[:, None] * UNIT_ROUNDOFF * (rest[None, :] * batch.mass[:, None]
                                               + exp_x[None, :long_count] * light_mass[:, None])
            + (long_depth[:, None] * _LONG_ROUNDOFF * exp_x[None, :long_count]
               + truncation[None, :long_count]) * batch.mass[:, None]
            + UNIT_ROUNDOFF * np.abs(values[:, :long_count]))
    return values, 1.01 * error


def _long_count(values: np.ndarray, steps: np.ndarray, depth: float) -> int:
    """How many of the lowest frequencies get the long double sums: the fewest L such that
    the coefficients from L on carry at most _LONG_SHARE/depth of the composed spectrum's
    Σ_k|W_k| (|W_k| ≈ Π_i |z_{i,k}|^{T_i}): fft_error's growth factors follow |W_k|, so
    the float64 sums' error (≤ depth·u) there adds at most _LONG_SHARE·u to the bound."""
    with np.errstate(divide="ignore"):
        composed = np.exp(np.minimum(steps @ np.log(np.abs(values)), 0.0))
    beyond = np.cumsum(composed[::-1])[::-1]  # Σ_{k' ≥ k}
    enough = np.flatnonzero(beyond <= _LONG_SHARE / depth * beyond[0])
    return int(enough[0]) if enough.size else values.shape[1]


def _long_heads(batch: PhaseBatch, heavy: np.ndarray, x: np.ndarray, size: int) -> np.ndarray:
    """(k, phase): Σ_β e^{−iθ_k c_β} Σ_{n<LONG_TERMS} (−i x_k)ⁿ/n!·μ_{β,n} in long double,
    over the ``heavy`` blocks.

    With LONG_TERMS = 3, Σ_n (−i x)ⁿ/n!·μ_n = A − iB (A = μ_0 − x²μ_2/2, B = xμ_1) and
    (cos − i sin)(A − iB) = (cos A − sin B) − i(sin A + cos B): the six sums
    C_n = Σ_β cos(θc_β)μ_{β,n}, S_n = Σ_β sin(θc_β)μ_{β,n} per phase (one long double
    product and one sum over the phase's blocks each), then
    real = C_0 − (x²/2)C_2 − xS_1, imaginary = −(S_0 − (x²/2)S_2 + xC_1). Each entry is the
    same sum of the same products as term by term, regrouped: at most blocks + 8 long
    double operations deep, inside low_spectra's long_depth (2·blocks + B + 60)."""
    assert LONG_TERMS == 3
    table_cos, table_sin = _table(size, x.size, int(batch.blocks.max()) + 1, True)
    out = np.zeros((x.size, len(batch.plds)), dtype=np.clongdouble)
    xl = x.astype(np.longdouble)[:, None]
    half_square = xl * xl / 2
    # phase by phase in chunks (cache-sized long double temporaries; the sums are per phase)
    for _, rows, _ in batch.phase_chunks(max(1, _LONG_CHUNK // max(1, x.size))):
        chosen = heavy[rows]
        blocks = batch.blocks[rows][chosen]
        if not blocks.size:
            continue
        owner = batch.phase_of_block[rows][chosen]
        cosine, sine = table_cos[:, blocks], table_sin[:, blocks]
        starts = np.flatnonzero(np.r_[True, np.diff(owner) != 0])
        mu = batch.mu_long[rows][chosen]

        def sums(table, n):
            return np.add.reduceat(table * mu[:, n][None, :], starts, axis=1)

        real = sums(cosine, 0) - half_square * sums(cosine, 2) - xl * sums(sine, 1)
        imaginary = -(sums(sine, 0) - half_square * sums(sine, 2) + xl * sums(cosine, 1))
        out[:, owner[starts]] = real + 1j * imaginary
    return out


def high_bound(batch: PhaseBatch, circle: int, phases) -> np.ndarray:
    """Σ_i T_i ln M̄_i(l) over ``phases``, M̄_i(l) ≥ |z_i(θ)| for θ ∈ [θ_l, θ_{l+1}],
    θ_l = 2πl/circle, l = 0..circle/2 − 1 (module doc, item 2; ``circle`` even)."""
    total = np.zeros(circle // 2)
    for low in range(0, len(phases), _CHUNK):
        chunk = np.asarray(phases[low:low + _CHUNK])
        local, index, values = batch.phase_entries(chunk)
        folded = np.bincount(local * circle + index % circle, weights=values,
                             minlength=chunk.size * circle)
        folded = folded.reshape(chunk.size, circle)
        modulus = np.abs(fourier.rfft(folded, axis=1))
        # the FFT's error: Higham 2002, Thm 24.2 (fft_error.fft_relative_error), an L2 bound
        error = fft_relative_error(circle) * np.sqrt(circle * np.sum(folded * folded, axis=1))
        variance = batch.phase_variance[chunk] / batch.step**2
        slack = (variance * (1.0 + 1e-9) + 1e-300) * (2.0 * math.pi / circle) ** 2 / 8.0
        top = np.maximum(modulus[:, :-1], modulus[:, 1:])[:, : circle // 2]
        with np.errstate(divide="ignore"):
            bound = np.log(np.minimum(1.0, top + (error + slack)[:, None]))
        total += batch.steps[chunk] @ bound
    return total


def dropped_bound(log_bound: np.ndarray, circle: int, size: int, first: int) -> float:
    """(1/N)·Σ_{k=first}^{N/2} w_k·exp(log_bound at k's interval): what the coefficients
    from ``first`` on can add to any entry of the inverse transform (w_k ≤ 2)."""
    counts = _interval_counts(circle, size, first)
    return 2.0 * float(np.sum(counts * np.exp(np.minimum(log_bound, 0.0)))) / size


@functools.lru_cache(maxsize=64)
def _interval_counts(circle: int, size: int, first: int) -> np.ndarray:
    """How many k ≥ ``first`` (k ≤ N/2) fall in each interval of the high-frequency bound's
    circle (kept: the compositions of a growing run ask again with the same three)."""
    intervals = np.arange(circle // 2)
    low = np.maximum(np.ceil(intervals * size / circle), first)
    high = np.minimum(np.floor((intervals + 1) * size / circle), size // 2)
    counts = np.maximum(high - low + 1, 0.0)
    counts.flags.writeable = False
    return counts


def compose_many(plds_with_steps, tail_mass: float, max_points: int = MAX_FFT_POINTS,
                 inverse_budget: float = 0.0) -> ComposedPld:
    """fft_compose.compose for many CompactPld phases (module doc); the same result with a
    bound of the same kind, without an N-point transform per phase."""
    if (len(plds_with_steps) < MIN_PHASES
            or not all(isinstance(pld, CompactPld) for pld, _ in plds_with_steps)):
        return compose(plds_with_steps, tail_mass, max_points, inverse_budget=inverse_budget)
    if not isinstance(plds_with_steps, PhasePlds):
        plds_with_steps = PhasePlds(plds_with_steps)
    batch = plds_with_steps.batch
    step = batch.step
    support_lo, lo_index, needed, whole = _window(plds_with_steps, tail_mass)
    window_mass = 0.0 if whole else 2 * tail_mass
    if needed > max_points:
        raise GridTooLarge(needed)
    size = fourier.next_fast_len(needed + max(64, needed // 32))
    found = _choose_count(batch, size)
    if found is None:
        return compose(plds_with_steps, tail_mass, max_points, inverse_budget=inverse_budget)
    count, terms, dropped = found
    values, errors = low_spectra(batch, size, count, terms)
    log_bounds, log_sizes = spectrum_terms(values, errors)
    error_bound = StackedErrorBound(size, count, dropped, batch.steps, errors, log_bounds,
                                    log_sizes, compact_input_errors(batch))
    product = np.prod(stacked_power(values, batch.steps), axis=0)  # in order, as compose does
    log_finite_mass = 0.0
    for pld, steps in zip(batch.plds, batch.steps.astype(int).tolist()):
        infinity = infinity_upper(pld)
        log_finite_mass += steps * math.log1p(-infinity) if infinity < 1 else -math.inf
    spectrum = np.zeros(size // 2 + 1, dtype=complex)
    spectrum[:count] = product
    return read_back(spectrum, error_bound, step, support_lo, lo_index, needed, tail_mass,
                     window_mass, -math.expm1(log_finite_mass), inverse_budget)


def _choose_count(batch: PhaseBatch, size: int):
    """(K, series terms, dropped bound) for the smallest K of _K_LADDER whose left-out
    coefficients add at most _DROPPED per entry; None when none does. The high-frequency
    bound takes the phases of largest T·Var first, and stops as soon as K =
    _K_LADDER[_ENOUGH] is shown enough (the other phases' M̄ ≤ 1 can only lower the bound)."""
    circle = max(64, 1 << max(0, (size // _FOLD).bit_length() - 1))
    spread = batch.phase_variance * batch.steps
    order = np.argsort(-spread, kind="stable")
    total = np.zeros(circle // 2)
    for low in range(0, order.size, _CHUNK):
        total += high_bound(batch, circle, np.sort(order[low:low + _CHUNK]))
        if dropped_bound(total, circle, size, _K_LADDER[_ENOUGH]) <= _DROPPED:
            break
    for count in _K_LADDER:
        if count > size // 2:
            return None
        dropped = dropped_bound(total, circle, size, count)
        if dropped > _DROPPED:
            continue
        terms = _series_terms(math.pi * BLOCK * count / size)
        return None if terms is None else (count, terms, dropped)
    return None
