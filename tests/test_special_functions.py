"""The NumPy-only special functions and FFTs of the accounting core (special_functions.py,
erfcx_table.py, fourier.py) against mpmath at 40 digits and against scipy.special /
scipy.fft, which they replace at start-up."""
from __future__ import annotations

import math
import subprocess
import sys

import mpmath as mp
import numpy as np
import pytest
from scipy import fft as scipy_fft
from scipy import special as scipy_special

from dpcalc.numerics import fourier
from dpcalc.numerics import special_functions as sf
from dpcalc.numerics.erfcx_table import COEFFICIENTS, EDGES

ULP = 2.0**-53
RNG = np.random.default_rng(20261126)


def _relative_errors(values, references):
    return [abs(float((mp.mpf(float(v)) - r) / r)) for v, r in zip(values, references) if r != 0]


@pytest.fixture(autouse=True)
def _precision():
    with mp.workdps(40):
        yield


def test_erfcx_table_is_within_three_ulps_of_mpmath_on_every_interval():
    for low, high in zip(EDGES[:-1], EDGES[1:]):
        points = np.concatenate([np.linspace(low, high, 9), RNG.uniform(low, high, 6)])
        errors = _relative_errors(sf.erfcx(points), [mp.exp(mp.mpf(x) ** 2) * mp.erfc(mp.mpf(x))
                                                     for x in points])
        assert max(errors) <= 3.5 * ULP * 2, (low, high, max(errors) / ULP)
    assert len(COEFFICIENTS) == len(EDGES) - 1


def test_erfcx_asymptotic_branch_and_negative_arguments():
    points = np.array([63.0, 63.0001, 80.0, 1e3, 1e6, 1e30, -0.3, -2.0, -10.0, -26.0])
    references = [mp.exp(mp.mpf(x) ** 2) * mp.erfc(mp.mpf(x)) for x in points]
    assert max(_relative_errors(sf.erfcx(points), references)) <= 8 * ULP
    assert sf.erfcx(np.array([np.inf, -np.inf, np.nan]))[0] == 0.0
    assert sf.erfcx(-np.inf) == np.inf and np.isnan(sf.erfcx(np.nan))


@pytest.mark.parametrize("low,high", [(-40.0, -8.0), (-8.0, 0.0), (0.0, 6.0)])
def test_log_ndtr_is_as_accurate_as_scipy(low, high):
    points = np.concatenate([RNG.uniform(low, high, 300), [low, high]])
    references = [mp.log(mp.ncdf(mp.mpf(x))) if x < 0 else mp.log1p(-mp.ncdf(-mp.mpf(x)))
                  for x in points]
    ours = max(_relative_errors(sf.log_ndtr(points), references))
    theirs = max(_relative_errors(scipy_special.log_ndtr(points), references))
    assert ours <= max(4 * theirs, 8 * ULP)


def test_ndtr_erf_erfc_against_mpmath():
    points = RNG.uniform(-12.0, 8.0, 300)
    assert max(_relative_errors(sf.ndtr(points), [mp.ncdf(mp.mpf(x)) for x in points])) <= 2e-12
    small = np.exp(RNG.uniform(-30.0, 0.0, 200)) * RNG.choice([-1.0, 1.0], 200)
    assert max(_relative_errors(sf.erf(small), [mp.erf(mp.mpf(x)) for x in small])) <= 4 * ULP
    tails = RNG.uniform(0.0, 26.0, 200)
    # erfc(x) = erfcx(x)·e^{−x²}: the rounding of x² costs up to ~x² ulps, as in scipy
    errors = _relative_errors(sf.erfc(tails), [mp.erfc(mp.mpf(x)) for x in tails])
    assert all(e <= (4 + 2 * x * x) * ULP for e, x in zip(errors, tails))


def test_inverse_functions_against_mpmath():
    probabilities = np.concatenate([np.exp(RNG.uniform(-740.0, 0.0, 80)), RNG.uniform(0, 1, 80),
                                    0.5 + np.exp(RNG.uniform(-40.0, -2.0, 20))])
    references = [mp.findroot(lambda x: mp.ncdf(x) - mp.mpf(p), float(scipy_special.ndtri(p)))
                  for p in probabilities]
    assert max(_relative_errors(sf.ndtri(probabilities), references)) <= 6 * ULP
    targets = np.concatenate([RNG.uniform(-1, 1, 60), np.exp(RNG.uniform(-30, 0, 30)),
                              1 - np.exp(RNG.uniform(-30, -1, 30))])
    assert max(_relative_errors(sf.erfinv(targets), [mp.erfinv(mp.mpf(y)) for y in targets])) <= 6 * ULP
    assert list(sf.ndtri(np.array([0.0, 1.0, -0.5, 2.0]))[:2]) == [-np.inf, np.inf]
    assert np.isnan(sf.ndtri(np.array([-0.5, 2.0, np.nan]))).all()
    assert sf.erfinv(1.0) == np.inf and sf.erfinv(-1.0) == -np.inf


@pytest.mark.parametrize("name", ["erfcx", "erfc", "erf", "log_ndtr", "ndtr"])
def test_scalar_small_and_large_inputs_agree(name):
    """The plain-float path (scalars, ≤ 16 entries) and the array path agree to rounding,
    keep shapes, and return NumPy scalars for scalars (as scipy.special does)."""
    function = getattr(sf, name)
    points = np.concatenate([RNG.uniform(-45, 45, 40000), [0.0, -0.0, 0.5, -0.5, 63.0, -63.0,
                                                         1e200, -1e200, np.inf, -np.inf, np.nan]])
    whole = function(points)
    one_by_one = np.array([function(float(x)) for x in points])
    assert np.array_equal(np.isnan(whole), np.isnan(one_by_one))
    finite = np.isfinite(whole)
    assert np.array_equal(finite, np.isfinite(one_by_one))
    # (atol: subnormal results keep fewer digits)
    assert np.allclose(whole[finite], one_by_one[finite], rtol=8 * ULP, atol=1e-300)
    assert function(np.zeros((3, 4))).shape == (3, 4)
    assert isinstance(function(0.3), np.float64) and isinstance(function(np.float64(0.3)), np.float64)
    assert function(np.array(0.3)).shape == ()


def test_gammaln_and_logsumexp_match_scipy():
    points = np.concatenate([RNG.uniform(-30, 300, 500), np.arange(1, 200.0), [0.0, -1.0, -2.0]])
    np.testing.assert_allclose(sf.gammaln(points), scipy_special.gammaln(points), rtol=1e-14,
                               atol=1e-14)
    values = RNG.normal(0, 30, (7, 9))
    for axis in (None, 0, 1):
        np.testing.assert_allclose(sf.logsumexp(values, axis=axis),
                                   scipy_special.logsumexp(values, axis=axis), rtol=1e-14)
    assert sf.logsumexp(np.full(3, -np.inf)) == -np.inf and sf.logsumexp([]) == -np.inf
    assert sf.gammaln(3e305) == np.inf and sf.gammaln(np.array([3e305, 3.0]))[0] == np.inf
    assert sf.gammaln(np.array([3e305, 3.0]))[1] == pytest.approx(math.log(2.0), rel=1e-15)


def _binomial_tail(count: int, trials: int, rate: float):
    """P(X > count) in mpmath, summed from the side where the terms fall (40 digits)."""
    p, q = mp.mpf(rate), 1 - mp.mpf(rate)
    if count + 1 > trials * rate:
        j, total = count + 1, mp.mpf(0)
        term = mp.binomial(trials, j) * p**j * q ** (trials - j)
        while j <= trials and (total == 0 or term > total * mp.mpf(10) ** -30):
            total, term, j = total + term, term * (trials - j) / (j + 1) * p / q, j + 1
        return total
    j, total = count, mp.mpf(0)
    term = mp.binomial(trials, j) * p**j * q ** (trials - j)
    while j >= 0 and (total == 0 or term > total * mp.mpf(10) ** -30):
        total, term, j = total + term, term * j / (trials - j + 1) * q / p, j - 1
    return 1 - total


def test_binomial_upper_tail_is_never_below_the_truth_and_close_to_it():
    """It bounds mass pb sends to +∞, so it must not fall below P(X > k) (scipy's bdtrc
    does, by ~1e-6 relative at n = 10⁹); it stays within 1e-3 above."""
    cases = [(9_990_000, 10**7, 0.999), (499_000, 500_000, 0.998)]  # review: rates near 1
    for _ in range(60):
        trials = int(RNG.choice([1, 3, 10, 100, 10_000, 10**7, 10**9]))
        rate = float(10 ** RNG.uniform(-9, -0.05))
        mean = trials * rate
        count = int(RNG.integers(max(0, int(mean - 3 * math.sqrt(mean + 1))),
                                 min(trials - 1, int(mean + 10 * math.sqrt(mean + 1) + 20)) + 1))
        cases.append((count, trials, rate))
    for count, trials, rate in cases:
        exact = _binomial_tail(count, trials, rate)
        ours = sf.binomial_upper_tail(count, trials, rate)
        assert ours >= exact, (count, trials, rate)
        assert ours <= exact * (1 + 1e-3) + 1e-300, (count, trials, rate)
    assert sf.binomial_upper_tail(5, 5, 0.3) == 0.0 and sf.binomial_upper_tail(-1, 5, 0.3) == 1.0


def test_fft_matches_scipy_and_sizes_are_scipys():
    values = RNG.random(3000)
    for size in (3000, 3125, 4096, 6000):
        np.testing.assert_allclose(fourier.rfft(values, size), scipy_fft.rfft(values, size),
                                   rtol=0, atol=1e-12)
    for target in list(range(1, 3000)) + [int(t) for t in RNG.integers(1, 10**8, 500)]:
        assert fourier.next_fast_len(target) == scipy_fft.next_fast_len(target, real=True)
    long_values = RNG.random(500).astype(np.longdouble)
    assert fourier.rfft_long(long_values, 512).dtype == np.clongdouble
    assert fourier.irfft_long(fourier.rfft_long(long_values, 512), 512).dtype == np.longdouble


def test_one_shot_commands_do_not_import_scipy():
    """scipy.special / scipy.fft cost ~0.15 s of start-up (scipy ≥ 1.15): the pb, rdp and
    curve paths of epsilon and compare never import them. (A fixed-size run's table adds the
    price line, whose balls-in-bins figure needs scipy's incomplete gamma; plain output,
    the scripts' form, prints no price line and skips it.)"""
    code = ("import sys; from dpcalc.cli.app import main\n"
            "for args in (['epsilon', '--q', '0.01', '--sigma', '4', '--steps', '10000'],\n"
            "             ['compare', '--q', '0.01', '--sigma', '1', '--epochs', '1:20:20', '-a',\n"
            "              'pb', '-a', 'rdp', '-f', 'csv'],\n"
            "             ['epsilon', '--batch-size', '256', '--dataset-size', '60000', '--sigma',\n"
            "              '1.1', '--steps', '1000', '--sampling', 'fixed', '--adjacency', 'zero-out',\n"
            "              '--format', 'plain']):\n"
            "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('scipy.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "[]"


# --- one-step bucket masses without cancellation (gauss_intervals.py) ----------------------
def test_normal_interval_masses_keep_their_relative_accuracy():
    from dpcalc.numerics.gauss_intervals import log_normal_masses

    def exact(low, high):
        low, high = mp.mpf(low), mp.mpf(high)
        if low >= 0:
            return mp.log(mp.ncdf(-low) - mp.ncdf(-high))
        if high <= 0:
            return mp.log(mp.ncdf(high) - mp.ncdf(low))
        return mp.log(1 - mp.ncdf(low) - mp.ncdf(-high))

    draws = np.random.default_rng(20261126)  # its own: the draws do not depend on test order
    with mp.workdps(80):
        for _ in range(2000):
            low = float(draws.uniform(-38, 38))
            high = low + float(10 ** draws.uniform(-13, 1))
            got = log_normal_masses(np.array([low]), np.array([high]), 0.0, 1.0)[0]
            reference = exact(low, high)  # of the float interval itself
            assert abs(float(got - reference)) <= 4 * ULP * max(1.0, abs(float(reference)))
    ends = log_normal_masses(np.array([-np.inf, -np.inf, 1.0, 2.0]),
                             np.array([0.0, np.inf, np.inf, 1.0]), 0.0, 1.0)
    assert ends[0] == pytest.approx(math.log(0.5)) and ends[1] == 0.0 and ends[3] == -np.inf


@pytest.mark.parametrize("rate,sigma,grid_step", [(0.001, 1.0, 1e-4), (1e-6, 0.8, 1e-7),
                                                  (0.3, 2.0, 1e-9)])
def test_bucket_masses_are_exact_to_a_few_ulps_however_narrow(rate, sigma, grid_step):
    """Review finding: masses taken as differences of normal tails lose ~u·tail/mass
    (7.8e-7 relative at h = 1e-9), far above the 16u per entry the FFT's error bound
    assumes; the interval masses keep a few ulps (≤ 4e-14 here, for the float roots)."""
    from dpcalc.numerics.log_masses import bucket_masses as _bucket_masses, tail_masses as _tail_masses
    from dpcalc.models.mixture import GaussianMixturePair

    pair = GaussianMixturePair.subsampled_gaussian(rate, sigma)
    low, high = pair.loss_range("remove", 12.0)
    first = math.floor(low / grid_step)
    worst_new = worst_old = 0.0
    with mp.workdps(80):
        q, s = mp.mpf(rate), mp.mpf(sigma)
        for start in np.linspace(first, math.ceil(high / grid_step) - 3, 8).astype(int):
            edges = np.arange(start, start + 3) * grid_step
            roots = pair.inverse_loss(edges)
            new = _bucket_masses(pair, "remove", edges)[0]
            old = _tail_masses(pair, "remove", edges)[0]
            for index in range(2):
                a, b = mp.mpf(roots[index]), mp.mpf(roots[index + 1])
                if not (b > a) or not math.isfinite(roots[index]):
                    continue

                def mass(centre):
                    if a > centre:
                        return mp.ncdf(-(a - centre) / s) - mp.ncdf(-(b - centre) / s)
                    return mp.ncdf((b - centre) / s) - mp.ncdf((a - centre) / s)

                reference = mp.log((1 - q) * mass(0) + q * mass(1))
                worst_new = max(worst_new, abs(float(new[index] - reference)))
                worst_old = max(worst_old, abs(float(old[index] - reference)))
    assert worst_new <= 4e-14
    assert worst_old > 10 * worst_new  # the tail differences this replaced were far off


def test_every_pairs_own_bucket_masses_agree_with_its_tails_and_sum_to_one():
    """Each pair's log_bucket_masses (mixtures, replace-one, the splices with their atom at
    0, the displaced-null run, revealed mixtures, discrete pairs) against its own tails on
    a coarse grid, where tail differences are still accurate; P's masses sum to 1."""
    from dpcalc.numerics.log_masses import bucket_masses as _bucket_masses, tail_masses as _tail_masses
    from dpcalc.models.max_pair import DiscretePair
    from dpcalc.models.mixture import GaussianMixturePair
    from dpcalc.models.pairs import ReplaceOnePair, SymmetrisedPair
    from dpcalc.models.schedule import Phase
    from dpcalc.models.worst_case import worst_case
    from dpcalc.models.zero_out_pairs import DisplacedNullPair, fixed_zero_out_pair

    cells = RNG.dirichlet(np.ones(50), 2)
    pairs = [GaussianMixturePair.subsampled_gaussian(0.02, 1.1),
             GaussianMixturePair([0.8, 0.15, 0.05], 0.9), ReplaceOnePair(0.05, 1.3),
             SymmetrisedPair(GaussianMixturePair.subsampled_gaussian(0.05, 0.6)),
             DisplacedNullPair(0.05, 0.9), fixed_zero_out_pair(0.05, 0.9),
             worst_case(Phase(None, 1.0, 1, "truncated-poisson", "add-remove", 100, 1000,
                              110)).pair,
             DiscretePair(np.log(cells[0]), np.log(cells[1]))]
    for pair in pairs:
        for direction in pair.directions:
            low, high = pair.loss_range(direction, 8.0)
            for edges in (np.linspace(low - 0.3, high + 0.3, 301),  # 0 inside a bucket
                          np.arange(math.floor(low / 0.05) - 2, math.ceil(high / 0.05) + 3) * 0.05):
                own, tails = _bucket_masses(pair, direction, edges), _tail_masses(pair, direction, edges)
                for mine, theirs in zip(own[:2], tails[:2]):
                    assert np.array_equal(np.isfinite(mine), np.isfinite(theirs))
                    finite = np.isfinite(mine)
                    np.testing.assert_allclose(mine[finite], theirs[finite], rtol=0, atol=1e-9)
                total = np.logaddexp.reduce(np.concatenate([own[0][np.isfinite(own[0])],
                                                            [own[2], own[3]]]))
                assert total == pytest.approx(0.0, abs=1e-12), (type(pair).__name__, direction)


def test_erfcx_gap_is_within_5e_14_of_mpmath_for_every_step():
    """erfcx(u) − erfcx(u + s) against 40-digit mpmath (u + s exact). The plain difference,
    which the code took for every step ≥ 1e-3 before, loses ~u·1e-16/s: 1.4e-12 relative at
    u = 15.5, s = 1.3e-3 (gdp_delta's tail at μ = 0.0019), 8e-13 at u = 7.2."""
    from dpcalc.numerics import special_functions as special
    from dpcalc.numerics.gauss_intervals import erfcx_gap

    draws = np.random.default_rng(11)
    # with the review's worst points (u = 7 and 7.999 at step 0.03: 4.35e-14, 3.4e-14)
    u = np.concatenate([draws.uniform(0, 8, 150), draws.uniform(8, 40, 60), [7.0, 7.999, 15.5, 7.15]])
    s = np.concatenate([10 ** draws.uniform(-5, 0.5, 210), [0.03, 0.03, 1.3e-3, 1.26e-3]])

    def exact(x):
        return mp.erfc(x) * mp.exp(x * x)

    with mp.workdps(40):
        reference = np.array([float(exact(mp.mpf(a)) - exact(mp.mpf(a) + mp.mpf(b))) for a, b in zip(u, s)])
    scalar = np.array([erfcx_gap(np.array([a]), b)[0] for a, b in zip(u, s)])
    assert np.max(np.abs(erfcx_gap(u, s) - reference) / reference) <= 5e-14
    assert np.max(np.abs(scalar - reference) / reference) <= 5e-14
    plain = special.erfcx(u[-2:]) - special.erfcx(u[-2:] + s[-2:])
    assert np.max(np.abs(plain - reference[-2:]) / reference[-2:]) > 3e-13
