"""The input pmfs' own rounding (fft_error.input_error, input_error_terms).

A bucket mass is exp of a log within about an ulp of itself, so a pmf entry p carries a
relative error growing with |ln p|: up to ~150u at p ≈ 1e-30 (measured below), against the
16u per entry the composition's error bound used to assume. Checked against the entries of
the same connect-the-dots split built from 60-digit masses, and the composition terms
against brute-force convolution of perturbed pmfs."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpcalc.numerics.log_masses import bucket_masses as _bucket_masses
from dpcalc.pld.discretise import (_loss_error, _pair_log_error, connect_the_dots, discretise)
from dpcalc.pld.fft_compose import compose, infinity_upper
from dpcalc.pld.fft_error import (SMALL_ENTRY, InputError, input_error, input_error_terms)
from dpcalc.models.mixture import GaussianMixturePair
from dpcalc.pld.pld import DiscretePld
from test_split_float_error import _exact_log_masses

U = 2.0**-53


def _exact_entries(pair, q, sigma, direction, step, first, last):
    """The connect-the-dots entries from 60-digit masses of the same float buckets, split by
    the code's effective shares to_right/mass (the certified pmf is the exact masses split
    so: those shares are never below the exact ones, tests/test_split_float_error.py, and
    mass − to_right may cancel next to an atom); entries next to a bucket without finite
    roots are None."""
    grid = np.arange(first, last + 1) * step
    log_p, log_q, _, _ = _bucket_masses(pair, direction, grid)
    margin = _loss_error(log_p, log_q, grid[:-1], step, _pair_log_error(pair, direction, grid))
    with np.errstate(invalid="ignore"):
        offsets = np.clip(log_p - log_q - grid[:-1] + margin, 0.0, step)
    offsets = np.where(np.isfinite(offsets), offsets, step)
    mass = np.exp(log_p)
    to_right = np.minimum(mass * (-np.expm1(-offsets)) / (-math.expm1(-step)), mass)
    exact = _exact_log_masses(pair, q, sigma, direction, grid)
    with mp.workdps(60):
        entries = [mp.mpf(0)] * grid.size
        for k, logs in enumerate(exact):
            if logs is None:
                entries[k] = entries[k + 1] = None
                continue
            exact_mass = mp.e ** logs[0]
            share = mp.mpf(to_right[k]) / mp.mpf(mass[k]) if mass[k] > 0 else mp.mpf(1)
            if entries[k + 1] is not None:
                entries[k + 1] += exact_mass * share
            if entries[k] is not None:
                entries[k] += exact_mass * (1 - share)
    return entries


@pytest.mark.parametrize("q,sigma,step,direction", [(0.01, 1.0, 0.02, "remove"),
                                                    (0.01, 1.0, 0.02, "add"),
                                                    (0.3, 2.0, 0.01, "remove")])
def test_pmf_entries_are_within_their_input_error(q, sigma, step, direction):
    pair = GaussianMixturePair.subsampled_gaussian(q, sigma)
    low, high = pair.loss_range(direction, 20.0)  # tails far below 1e-30
    first, last = math.floor(low / step), math.ceil(high / step)
    pmf, _, _ = connect_the_dots(pair, direction, step, first, last)
    bound = input_error(pmf)
    worst, small = 0.0, mp.mpf(0)
    for computed, exact in zip(pmf, _exact_entries(pair, q, sigma, direction, step, first, last)):
        if exact is None:
            continue
        if computed >= SMALL_ENTRY:
            worst = max(worst, abs(float((mp.mpf(computed) - exact) / exact)))
        else:
            small += abs(mp.mpf(computed) - exact)
    assert np.any((pmf > 0) & (pmf < SMALL_ENTRY))  # both parts of the bound are exercised
    assert worst <= bound.relative
    assert float(small) <= bound.small
    assert worst > 16 * U  # the old assumption of 16u per entry did not hold
    assert bound.relative <= 4 * max(worst, 80 * U)  # and the new bound is not loose


def _convolve_power(pmfs_with_steps):
    out = np.array([1.0])
    for pmf, steps in pmfs_with_steps:
        for _ in range(steps):
            out = np.convolve(out, pmf)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_composition_terms_bound_every_perturbation(seed):
    """|exact^{*T} − computed^{*T}| ≤ rel·computed^{*T} + abs entrywise, for exact pmfs
    within (r, S) of the computed ones; large r so that (1+r)^T − 1 ≠ rT matters."""
    rng = np.random.default_rng(seed)
    phases = []
    for steps in (3, 2):
        computed = rng.random(6) * np.array([1, 1, 1, 1, 1e-3, 1e-3])
        computed /= computed.sum()
        large = computed >= 1e-2
        relative, small = 0.05, 0.01
        # the worst case: every large entry up by r, the small part's budget on one entry
        exact = np.where(large, computed * (1 + relative), computed)
        exact[np.flatnonzero(~large)[seed % 2]] += small
        error = InputError(relative, small, float(computed.sum()))
        phases.append((computed, exact, steps, error))
    rel, absolute = input_error_terms([(error, steps) for _, _, steps, error in phases])
    composed = _convolve_power([(c, steps) for c, _, steps, _ in phases])
    exact = _convolve_power([(e, steps) for _, e, steps, _ in phases])
    assert np.all(np.abs(exact - composed) <= rel * composed + absolute + 1e-15)
    # the relative part alone (no small entries moved) reaches its term: r·ΣT is not enough
    scaled = _convolve_power([(c * 1.05, steps) for c, _, steps, _ in phases])
    assert np.all(np.abs(scaled - composed) <= rel * composed * (1 + 1e-12))
    assert np.any(np.abs(scaled - composed) > 0.05 * 5 * composed)


def test_one_step_and_composed_noise_floors_hold_the_input_error():
    """compose() at T = 1 used to report no noise at all; now its floor is r·p + S, and a
    T-fold one holds at least ((1 + r)^T − 1)·|p^{*T}|."""
    pair = GaussianMixturePair.subsampled_gaussian(0.01, 1.0)
    pld = discretise(pair, "remove", 1e-3, 12.0, "upper")
    error = input_error(pld.pmf, pld.entry_error)
    one = compose([(pld, 1)], 1e-12)
    assert np.all(one.noise_floor >= error.relative * pld.pmf + error.small)
    assert error.relative > 100 * U
    many = compose([(pld, 50)], 1e-12)
    assert np.all(many.noise_floor >= math.expm1(50 * math.log1p(error.relative)) * np.abs(many.pmf))
    assert infinity_upper(pld) > pld.infinity_mass > 0


def test_entries_below_the_cut_are_bounded_in_all_and_zeros_count():
    pmf = np.array([0.5, 0.25, 1e-12, 1e-40, 0.0])
    error = input_error(pmf)
    assert error.relative == pytest.approx(16 * U + 4 * U * (-math.log(1e-12) + math.log(3) + 1),
                                           rel=1e-12)
    assert error.small >= 1e-40 * 3000 * U + 1e-300  # the tiny entry at |ln p| ≤ 746, the zero
    assert input_error(pmf, 1e-10).relative > error.relative + 1e-10 * 0.99
    assert DiscretePld(1.0, 0, pmf, 0.0).entry_error == 0.0
