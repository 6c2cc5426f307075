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
Finally the input pmfs are themselves rounded (relative error ≤ r per entry, r = 16u for a few
operations each, more for tilted inputs — all positive), so the exact composition of the exact
pmfs is within a factor (1 ± r)^T of it: a relative term r·ΣT_i per entry (returned separately).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.accounting import fourier

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

    def __init__(self, size: int, input_relative_error: float = 16.0 * UNIT_ROUNDOFF,
                 index: np.ndarray | None = None):
        self.size = size
        # The rfft coefficients the per-coefficient terms are given at (None: all). The
        # others must contribute exactly 0 in float64: their growth factor and powered
        # spectrum underflow (see curve_compose.composed_powers).
        self.index = index
        self.input_relative_error = input_relative_error
        self.relative_fft = fft_relative_error(size)
        # (measured |δz_k| or None, L2 bound on the rest, T_i, log M_i) per phase
        self.phases: list[tuple] = []
        self.log_rounding = None  # Σ_i (T_i |log ẑ_i| + 2), per coefficient
        self.total_steps = 0

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
                  terms: tuple | None = None) -> None:
        """``transformed`` = rfft(pmf, size), before raising it to the power ``steps``;
        ``terms``: its phase_terms, when already computed (one transform, many powers)."""
        measured, bound, log_bound, log_size = (self.phase_terms(pmf, transformed)
                                                if terms is None else terms)
        rounding = steps * log_size + 2.0
        self.log_rounding = rounding if self.log_rounding is None else self.log_rounding + rounding
        self.phases.append((measured, bound, steps, log_bound))
        self.total_steps += steps

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
        return (propagated + rounding) / size + inverse + underflow

    def relative(self) -> float:
        """The relative error per entry from rounding of the input pmfs: r·ΣT_i, r the
        relative error of each input entry (16u: a few operations each; more for tilted
        inputs, whose exponents carry their own round-off)."""
        return self.input_relative_error * self.total_steps
