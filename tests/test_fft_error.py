"""The a priori FFT error bound (fft_error.py, Higham 2002 Thm 24.2 with a ×4 mixed-radix
margin) against the error actually made, measured with a long-double transform as the
reference. The theorem covers radix-2 only; this checks the margin on pocketfft's mixed
radices (5-smooth sizes from next_fast_len) with the shapes pb composes."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import fft as sp_fft

from dpcalc.pld.fft_error import _MEASURE, fft_relative_error, full_spectrum_weights

pytestmark = pytest.mark.skipif(not _MEASURE, reason="no extended long double on this platform")


def _pmfs(size: int, rng: np.random.Generator):
    x = np.arange(size)
    gaussian = np.exp(-0.5 * ((x - 0.4 * size) / (0.05 * size)) ** 2)
    spiky = np.zeros(size)
    spiky[rng.integers(0, size, 20)] = rng.random(20)
    spiky[size // 3] = 1.0
    heavy = rng.random(size) ** 8
    return [shape / shape.sum() for shape in (gaussian, spiky, heavy)]


@pytest.mark.parametrize("requested", [1000, 4097, 30_001, 250_000, 1_000_003])
def test_inverse_and_forward_errors_stay_far_below_the_a_priori_bound(requested):
    size = sp_fft.next_fast_len(requested, real=True)
    rng = np.random.default_rng(size)
    r = fft_relative_error(size)
    for pmf in _pmfs(size, rng):
        # forward: ‖ŷ − Fx‖₂ ≤ r‖Fx‖₂ (the rfft half with its multiplicities)
        spectrum = sp_fft.rfft(pmf)
        reference = sp_fft.rfft(pmf.astype(np.longdouble))
        weights = full_spectrum_weights(size, spectrum.size)
        error = math.sqrt(float(np.sum(weights * np.abs(spectrum - reference) ** 2)))
        norm = math.sqrt(float(np.sum(weights * np.abs(reference) ** 2)))
        assert error <= 0.01 * r * norm
        # inverse, per entry: |fl(F⁻¹W) − F⁻¹W| ≤ r‖W‖₂/√n (fft_error.inverse_error)
        powered = spectrum**3
        back = sp_fft.irfft(powered, size)
        exact = sp_fft.irfft(powered.astype(np.clongdouble), size)
        entry_bound = r * math.sqrt(float(np.sum(weights * np.abs(powered) ** 2))) / math.sqrt(size)
        assert float(np.max(np.abs(back - exact))) <= 0.01 * entry_bound
