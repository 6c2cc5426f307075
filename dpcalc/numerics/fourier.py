"""Real FFTs for the compositions, from numpy.fft (no scipy.fft import at start-up).

numpy ≥ 2.0 and scipy share the C++ pocketfft: the float64 transforms are the same
(bit-identical here), and both compute long-double inputs in long double, which
fft_error.py uses to measure a transform's error. numpy 1.x computes every transform in
float64, so long-double references come from scipy there (:func:`rfft_long`, :func:`irfft_long`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["irfft", "irfft_long", "next_fast_len", "rfft", "rfft_long"]

rfft = np.fft.rfft
irfft = np.fft.irfft

_LONG = np.dtype(np.clongdouble)
_NUMPY_LONG = np.fft.rfft(np.zeros(4, dtype=np.longdouble)).dtype == _LONG


def rfft_long(values: np.ndarray, size: int) -> np.ndarray:
    """rfft computed in long double (the input is converted)."""
    values = np.asarray(values, dtype=np.longdouble)
    if _NUMPY_LONG:
        return np.fft.rfft(values, size)
    from scipy import fft as scipy_fft

    return scipy_fft.rfft(values, size)


def irfft_long(spectrum: np.ndarray, size: int) -> np.ndarray:
    """irfft computed in long double (the input is converted)."""
    spectrum = np.asarray(spectrum, dtype=np.clongdouble)
    if _NUMPY_LONG:
        return np.fft.irfft(spectrum, size)
    from scipy import fft as scipy_fft

    return scipy_fft.irfft(spectrum, size)


def next_fast_len(target: int) -> int:
    """The smallest 2^a·3^b·5^c ≥ ``target`` (pocketfft's fast sizes for real transforms;
    the same numbers as scipy.fft.next_fast_len(target, real=True))."""
    target = int(target)
    if target <= 6:
        return max(target, 1)
    best = 1 << (target - 1).bit_length()  # the power of two at or above
    power_of_five = 1
    while power_of_five < best:
        power_of_three = power_of_five
        while power_of_three < best:
            # the smallest power of two times this 3^b·5^c reaching the target
            quotient = -(-target // power_of_three)
            candidate = power_of_three << (quotient - 1).bit_length()
            best = min(best, candidate)
            power_of_three *= 3
        power_of_five *= 5
    return best
