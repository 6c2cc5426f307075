"""A priori bound on the float error of the FFT composition in fft_compose.compose.

The composition computes c = F⁻¹(Π_i F(p_i)^{T_i}) in float64 (unnormalised DFT of size n,
rfft/irfft). Three error sources, each bounded from the data actually used:

1. Forward transforms. Higham 2002, "Accuracy and Stability of Numerical Algorithms",
   Thm 24.2: the computed FFT ŷ of x satisfies ‖ŷ − Fx‖₂ ≤ r‖Fx‖₂ with
   r = L·η/(1 − L·η), L = ⌈log₂ n⌉, η = μ + γ₄(√2 + μ), γ₄ = 4u/(1 − 4u), μ ≤ u the error
   of the twiddle factors (u the unit roundoff). The theorem is proven for radix-2
   Cooley–Tukey with twiddles accurate to μ; scipy's pocketfft uses radices 4/2/3/5 on
   n = 2^a 3^b 5^c and builds twiddles from two table entries (μ ≈ 2–3u): r is taken FOUR
   times larger as a margin for that, which is NOT a proof. Measured (long double as the
   reference, tests/test_fft_error.py and an independent review on 18 cases of 1 080 to
   1 093 500 points): the largest entry error stays below 0.3% of this bound. By Parseval ‖Fp‖₂ = √n‖p‖₂, so
   the error vector δz_i of phase i has ‖δz_i‖₂ ≤ D_i = r√n‖p_i‖₂ (a priori). Where the
   platform has an extended long double (64-bit mantissa) and n ≤ 2^21, the error is
   measured instead, coefficient by coefficient: |δz_k| ≤ |ẑ_k − ẑ_ld,k| + |ẑ_ld,k − z_k|,
   ẑ_ld the same transform in long double, whose own error has L2 norm ≤ r_ld‖ẑ_ld‖₂ —
   far tighter than the a priori D_i, for one long-double transform of the single-step pmf.
2. Powers and products. For each coefficient k the exact value is Π_i z_{i,k}^{T_i} with
   |z| ≤ 1 (a characteristic function). With M_{i,k} = min(1, |ẑ_{i,k}| + D_i) ≥ |z_{i,k}|,
   |ẑ^T − z^T| ≤ T|δz|M^{T−1} (mean value bound for a^T − b^T), so the propagated error is
   Σ_i |δz_{i,k}| G_{i,k}, G_{i,k} = T_i M_{i,k}^{T_i−1} Π_{j≠i} M_{j,k}^{T_j}; summed over k
   exactly for the measured errors and by Cauchy–Schwarz (≤ D‖G_i‖₂) for L2-bounded ones. Evaluating ẑ^T as exp(T log ẑ) (numpy,
   for large T) and multiplying the phases adds a relative error of at most
   u·(3 Σ_i (T_i|log ẑ_{i,k}| + 2)) per coefficient.
3. The inverse transform: ‖fl(F⁻¹W) − F⁻¹W‖₂ ≤ r‖W‖₂/√n (Higham again, and ‖F⁻¹W‖₂ = ‖W‖₂/√n);
   where measured as in item 1, entry by entry: |fl(F⁻¹W) − F⁻¹_ld W| plus r_ld‖W‖₂/√n.

Every entry of the inverse of an error vector E is at most (1/n)Σ_k |E_k|, and every entry of
an L2 error at most its norm, so the sum of the three terms bounds the error of every entry.
Finally the input pmfs are themselves rounded (input_error): every entry p ≥ 1e-30 is within
a relative r_i of its exact value, r_i growing with the largest |ln p| (the bucket masses' logs
carry about an ulp of themselves), and the smaller entries are within S_i in all. With exact
p_i ≤ (1 + r_i)p̂_i + e_i entrywise (Σe_i ≤ S_i), and the same from below, the exact composition
differs from the composition of the computed pmfs by at most (Π(1 + r_i)^{T_i} − 1) times the
latter (a relative term, returned separately) plus the total mass of the terms holding some
e_i, Π(M_i(1 + r_i) + S_i)^{T_i} − Π(M_i(1 + r_i))^{T_i}, M_i = Σp̂_i (an absolute term).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.numerics import fourier
from dpcalc.pld.pld import PrecisionLost

UNIT_ROUNDOFF = 2.0**-53
_MIXED_RADIX_MARGIN = 4.0
_LONG_DOUBLE_ROUNDOFF = float(np.finfo(np.longdouble).eps) / 2.0
# Measure the forward error in long double only where that is precise (x86: 2^-64) and cheap.
_MEASURE = _LONG_DOUBLE_ROUNDOFF <= 2.0**-63
_MEASURE_MAX_SIZE = 1 << 21


def fft_relative_error(size: int, unit_roundoff: float = UNIT_ROUNDOFF) -> float:
    """r of Higham 2002, Thm 24.2, for a transform of ``size`` points (with the margin)."""
    u = unit_roundoff
    gamma4 = 4 * u / (1 - 4 * u)
    eta = u + gamma4 * (math.sqrt(2.0) + u)
    stages = _MIXED_RADIX_MARGIN * math.ceil(math.log2(max(size, 2)))
    return stages * eta / (1 - stages * eta)


# --- the input pmfs' own rounding (module doc, last paragraph) -------------------------
SMALL_ENTRY = 1e-30  # input entries below this get an absolute bound, not a relative one
UNDERFLOWED = 1e-300  # more than any entry computed as 0 or subnormal can hold or lose
_PIECES_PER_ENTRY = 3  # discretise.connect_the_dots: two buckets' shares and the mass below


def entry_relative_error(log_size: float, extra: float = 0.0) -> float:
    """Relative error bound of an input pmf entry p with |ln p| ≤ ``log_size``.

    Its bucket masses m are exp of logs within 4u(|ln m| + 1) (discretise._loss_error's
    model, tested against 60-digit masses). An entry summing n pieces m_t·s_t (shares
    s_t ≤ 1, so |ln m_t| ≤ |ln piece_t|) is then within Σ_t 4u|ln piece_t|·piece_t ≤
    4u·p(|ln p| + ln n) (x|ln x| is concave), plus 16u for the exp and the arithmetic.
    ``extra``: the pmf's own further relative error (DiscretePld.entry_error)."""
    u = UNIT_ROUNDOFF
    return 16.0 * u + 4.0 * u * (log_size + math.log(_PIECES_PER_ENTRY) + 1.0) + extra


@dataclass(frozen=True)
class InputError:
    """How far an input pmf may be from the exact one (module doc): entries ≥ SMALL_ENTRY
    within ``relative`` of themselves, the others within ``small`` in all; ``mass`` = Σp̂."""

    relative: float
    small: float
    mass: float


EXACT_INPUT = InputError(0.0, 0.0, 1.0)


def input_error(pmf: np.ndarray, extra: float = 0.0) -> InputError:
    """The InputError of a computed pmf of the entry_relative_error model (unnormalised
    bucket masses, split), with ``extra`` its own further relative error."""
    large = pmf >= SMALL_ENTRY
    smallest = float(np.min(pmf, where=large, initial=1.0))
    relative = entry_relative_error(max(0.0, -math.log(smallest)), extra)
    rest = pmf.size - int(np.count_nonzero(large))
    small = 0.0
    if rest:
        worst = entry_relative_error(746.0, extra)  # |ln p| ≤ 745 for p > 0
        small = worst * float(np.sum(pmf, where=~large)) + UNDERFLOWED * rest
    return InputError(relative / (1.0 - relative), small, float(pmf.sum()))


def input_error_terms(errors_with_steps) -> tuple[float, float]:
    """(relative, absolute) per-entry terms of the composition of the inputs, each taken
    T_i times (module doc): Π(1 + r_i)^{T_i} − 1 and Π(M_i(1+r_i) + S_i)^{T_i} − Π(M_i(1+r_i))^{T_i}."""
    log_relative = log_mass = log_small = 0.0
    for error, steps in errors_with_steps:
        log_relative += steps * math.log1p(error.relative)
        scaled = error.mass * (1.0 + error.relative)
        log_mass += steps * math.log(scaled) if scaled > 0 else 0.0
        log_small += steps * math.log1p(error.small / scaled) if scaled > 0 else 0.0
    absolute = math.exp(min(log_mass, 700.0)) * math.expm1(min(log_small, 700.0))
    if not log_relative < 709.0:  # e^709: the relative bound itself overflows float64
        raise PrecisionLost(f"relative float-error bound e^{log_relative:.3g} of a composition")
    return math.expm1(log_relative), absolute


def widened_window(window_mass: float, relative: float, absolute: float) -> float:
    """What the exact composition may hold outside a window where the computed one holds
    ``window_mass`` (0: the window is the whole support, the same for both): the inputs'
    rounding moves at most ``relative`` of the latter and ``absolute`` in all."""
    return window_mass * (1.0 + relative) + absolute if window_mass > 0 else 0.0


def full_spectrum_weights(size: int, half_length: int) -> np.ndarray:
    """Multiplicity of each rfft coefficient in the full (conjugate-symmetric) spectrum."""
    weights = np.full(half_length, 2.0)
    weights[0] = 1.0
    if size % 2 == 0:
        weights[-1] = 1.0
    return weights


class CompositionErrorBound:
    """Accumulates, phase by phase, what the bound needs; ``absolute()`` and
    ``relative()`` give the per-entry error bounds of the composed pmf."""

    def __init__(self, size: int, index: np.ndarray | None = None):
        self.size = size
        # The rfft coefficients the per-coefficient terms are given at (None: all). The
        # others must contribute exactly 0 in float64: their growth factor and powered
        # spectrum underflow (see curve_compose.composed_powers).
        self.index = index
        self.input_errors: list[tuple[InputError, int]] = []
        self.relative_fft = fft_relative_error(size)
        # (measured |δz_k| or None, L2 bound on the rest, T_i, log M_i) per phase
        self.phases: list[tuple] = []
        self.log_rounding = None  # Σ_i (T_i |log ẑ_i| + 2), per coefficient
        # A bound on what coefficients left out of ``index`` (taken as 0) add to any entry
        # (phase_spectra.dropped_bound); 0 where they underflow anyway.
        self.dropped = 0.0

    def forward_error(self, pmf: np.ndarray, transformed: np.ndarray):
        """(per-coefficient error measured in long double or None, L2 bound on the rest)
        for rfft(pmf) against the exact F·pmf (module doc, item 1)."""
        if _MEASURE and self.size <= _MEASURE_MAX_SIZE:
            reference = fourier.rfft_long(pmf, self.size)
            weights = full_spectrum_weights(self.size, reference.size)
            measured = np.abs((transformed - reference).astype(np.complex128)) * 1.01
            reference_norm = math.sqrt(float(np.sum(weights * np.abs(reference.astype(np.complex128)) ** 2)))
            return measured, 1.01 * fft_relative_error(self.size, _LONG_DOUBLE_ROUNDOFF) * reference_norm
        return None, self.relative_fft * math.sqrt(self.size * float(np.sum(pmf * pmf)))

    def phase_terms(self, pmf: np.ndarray, transformed: np.ndarray, forward: tuple | None = None):
        """What add_phase needs of one transform, whatever its power: (measured |δz_k| or
        None, L2 bound on the rest, ln M_k, the size of ln ẑ_k). ``forward``: its
        forward_error, when already computed."""
        measured, bound = self.forward_error(pmf, transformed) if forward is None else forward
        modulus = np.abs(transformed)
        largest = bound + (0.0 if measured is None else measured)  # ≥ |δz_k| for every k
        with np.errstate(divide="ignore"):
            # M ≥ |z| (a characteristic function: ≤ 1) and ≥ |ẑ| (which may exceed 1 by
            # round-off): the mean value bound runs over the segment between them.
            log_bound = np.log(np.maximum(modulus, np.minimum(1.0, modulus + largest)))
            log_modulus = np.log(modulus)
        log_size = np.sqrt(np.where(np.isfinite(log_modulus), log_modulus, 0.0) ** 2
                           + np.angle(transformed) ** 2)
        return measured, bound, log_bound, log_size

    def add_phase(self, pmf: np.ndarray, transformed: np.ndarray, steps: int,
                  input_error: InputError, terms: tuple | None = None) -> None:
        """``transformed`` = rfft(pmf, size), before raising it to the power ``steps``;
        ``input_error``: how far ``pmf`` may be from the exact one; ``terms``: its
        phase_terms, when already computed (one transform, many powers)."""
        self.input_errors.append((input_error, steps))
        measured, bound, log_bound, log_size = (self.phase_terms(pmf, transformed)
                                                if terms is None else terms)
        rounding = steps * log_size + 2.0
        self.log_rounding = rounding if self.log_rounding is None else self.log_rounding + rounding
        self.phases.append((measured, bound, steps, log_bound))

    def inverse_error(self, spectrum: np.ndarray, circular: np.ndarray, budget: float = 0.0):
        """Bound on |irfft(W) − F⁻¹W| per entry of ``circular`` = irfft(W) (item 3): the
        a priori one when it is within ``budget`` per entry, else measured where possible."""
        weights = full_spectrum_weights(self.size, spectrum.size)
        if self.index is None:
            norm = math.sqrt(float(np.sum(weights * np.abs(spectrum) ** 2))) / math.sqrt(self.size)
        else:  # the other coefficients are exactly 0
            norm = math.sqrt(float(np.sum(weights[self.index] * np.abs(spectrum[self.index]) ** 2))
                             ) / math.sqrt(self.size)
        a_priori = self.relative_fft * norm
        if a_priori > budget and _MEASURE and self.size <= _MEASURE_MAX_SIZE:
            reference = fourier.irfft_long(spectrum, self.size)
            measured = np.abs((circular - reference).astype(np.float64)) * 1.01
            return measured + 1.01 * fft_relative_error(self.size, _LONG_DOUBLE_ROUNDOFF) * norm
        return a_priori

    def absolute(self, spectrum: np.ndarray, include_inverse: bool = True) -> float:
        """Bound on |computed − exact| for every entry, given the computed spectrum W
        (without the inverse transform's own error unless ``include_inverse``)."""
        size = self.size
        weights = full_spectrum_weights(size, spectrum.size)
        if self.index is not None:
            weights, spectrum = weights[self.index], spectrum[self.index]
        total_log = sum(steps * log_bound for _, _, steps, log_bound in self.phases)
        propagated = 0.0
        for measured, bound, steps, log_bound in self.phases:
            growth = steps * np.exp(total_log - log_bound)  # T_i M_i^{T_i−1} Π_{j≠i} M_j^{T_j}
            # Σ_k |δz_k| G_k: exactly for the measured part, by Cauchy–Schwarz for the rest
            propagated += bound * math.sqrt(float(np.sum(weights * growth**2)))
            if measured is not None:
                propagated += float(np.sum(weights * measured * growth))
        modulus = np.abs(spectrum)
        rounding = 3.0 * UNIT_ROUNDOFF * float(np.sum(weights * modulus * self.log_rounding))
        inverse = (self.relative_fft * math.sqrt(float(np.sum(weights * modulus**2))) / math.sqrt(size)
                   if include_inverse else 0.0)
        underflow = 1e-300  # coefficients whose power underflowed to 0 (each < e^-745)
        input_absolute = self.input_terms()[1]
        return (propagated + rounding) / size + inverse + underflow + input_absolute + self.dropped

    def input_terms(self) -> tuple[float, float]:
        """(relative, absolute) per-entry error terms from the rounding of the input pmfs
        (module doc; ``absolute()`` includes the absolute one)."""
        return input_error_terms(self.input_errors)

    def relative(self) -> float:
        """The relative error per entry from the rounding of the input pmfs."""
        return self.input_terms()[0]
