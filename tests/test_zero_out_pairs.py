"""Fixed-size zero-out: the spliced dominating pair and the explicit run (zero_out_pairs.py).

Independent checks, by adaptive quadrature of the 1-D output densities:
- the explicit run's pair P* = (1 − γ)N(0) + γN(2) against Q* = (1 − γ)N(0) + γN(1): its
  loss tails in both orders;
- one step: every configuration of a zero-out step (x's gradient a, the displaced record's
  c, the null record 0) has both one-sided profiles at most the spliced pair's, and the
  splice is attained (its profiles are P*'s first order and the Poisson pair's), so pb's
  one-step upper bound is the exact worst case;
- many steps: the splice lies between the explicit run and the replace-one pair it
  replaced, and is much closer to the run.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize

from dpcalc.pb.buckets import delta_bounds, epsilon_bounds, schedule_phases
from dpcalc.models.mixture import ADD, REMOVE, GaussianMixturePair
from dpcalc.models.pairs import SplicedPair
from dpcalc.accountants.registry import get_accountant
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.models.zero_out_pairs import DisplacedNullPair, fixed_zero_out_pair
from dpcalc.errors import DpcalcError

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

SETTINGS = [(0.01, 1.0), (0.1, 2.0), (0.3, 0.7), (256 / 60_000, 1.1), (0.5, 4.0)]


def _density(weights_means, sigma):
    def density(x):  # a float or an array of floats
        return sum(w * np.exp(-0.5 * ((x - m) / sigma) ** 2) for w, m in weights_means) / (
            sigma * math.sqrt(2 * math.pi))
    return density


def _hockey_stick(p, q, epsilon, sigma, centres):
    """∫ (p − e^ε q)₊ by quadrature, split where p − e^ε q changes sign."""
    factor = math.exp(epsilon)
    low, high = min(centres) - 40 * sigma, max(centres) + 40 * sigma
    xs = np.linspace(low, high, 4001)
    signs = np.sign(p(xs) - factor * q(xs))
    roots = [optimize.brentq(lambda x: p(x) - factor * q(x), xs[i], xs[i + 1], xtol=1e-14)
             for i in np.flatnonzero(signs[:-1] * signs[1:] < 0)]
    edges = [low, *roots, high]
    total = 0.0
    for left, right in zip(edges[:-1], edges[1:]):
        middle = 0.5 * (left + right)
        if p(middle) > factor * q(middle):
            value, _ = integrate.quad(lambda x: p(x) - factor * q(x), left, right, limit=200,
                                      epsabs=1e-16, epsrel=1e-11)
            total += value
    return total


def _step(rate, sigma, record, displaced):
    """One fixed-size zero-out step, 1-D: (M(D), M(D′)) with x's gradient ``record``, every
    other record's ``displaced``, the null record's 0, all shifted by the common B − 1."""
    p = _density([(1 - rate, displaced), (rate, record)], sigma)
    q = _density([(1 - rate, displaced), (rate, 0.0)], sigma)
    return p, q, (displaced, record, 0.0)


@pytest.mark.parametrize("rate,sigma", SETTINGS)
def test_explicit_run_tails_match_quadrature(rate, sigma):
    pair = DisplacedNullPair(rate, sigma)
    p = _density([(1 - rate, 0.0), (rate, 2.0)], sigma)
    q = _density([(1 - rate, 0.0), (rate, 1.0)], sigma)

    def loss(x):
        return math.log(p(x)) - math.log(q(x))

    grid = np.array([-0.4, -0.05, 0.0, 0.02, 0.3, 1.0, 2.5])
    for direction, sign in ((REMOVE, 1.0), (ADD, -1.0)):
        p_above, p_below, q_above, q_below = (np.exp(t) for t in pair.log_tails(direction, grid))
        first, second = (p, q) if direction == REMOVE else (q, p)
        for index, e in enumerate(grid):
            # {x : sign·L(x) > e}: L is not monotone, so split at every crossing
            xs = np.linspace(-30 * sigma, 2 + 30 * sigma, 6001)
            inside = np.array([sign * loss(x) > e for x in xs])
            edges = [xs[0]]
            for i in np.flatnonzero(inside[:-1] != inside[1:]):
                edges.append(optimize.brentq(lambda x: sign * loss(x) - e, xs[i], xs[i + 1],
                                             xtol=1e-13))
            edges.append(xs[-1])
            mass_p = mass_q = 0.0
            for left, right in zip(edges[:-1], edges[1:]):
                if sign * loss(0.5 * (left + right)) > e:
                    mass_p += integrate.quad(first, left, right, limit=200, epsabs=1e-17)[0]
                    mass_q += integrate.quad(second, left, right, limit=200, epsabs=1e-17)[0]
            assert p_above[index] == pytest.approx(mass_p, rel=1e-7, abs=1e-15)
            assert q_above[index] == pytest.approx(mass_q, rel=1e-7, abs=1e-15)
            assert p_above[index] + p_below[index] == pytest.approx(1.0, rel=1e-12)
            assert q_above[index] + q_below[index] == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("rate,sigma", SETTINGS)
def test_splice_halves_have_equal_total_variation_and_its_profiles_are_theirs(rate, sigma):
    pair = fixed_zero_out_pair(rate, sigma)
    run, poisson = DisplacedNullPair(rate, sigma), GaussianMixturePair.subsampled_gaussian(
        rate, sigma)
    grid = np.array([0.0, 0.01, 0.2, 1.0, 3.0])
    for direction, half in ((REMOVE, run), (ADD, poisson)):
        ours, theirs = pair.log_tails(direction, grid), half.log_tails(REMOVE, grid)
        for mine, reference in zip(ours, theirs):
            np.testing.assert_allclose(mine, reference, rtol=1e-13, atol=0)
    # the atom at 0: P-mass = Q-mass (TV(P*) = γ·TV(N(2), N(1)) = TV of the Poisson pair)
    p_above, p_below, q_above, q_below = (np.exp(t) for t in pair.log_tails(REMOVE, [0.0, -1e-12]))
    assert p_below[0] - p_below[1] == pytest.approx(q_below[0] - q_below[1], rel=1e-9)


def test_a_splice_of_unequal_total_variation_is_refused():
    pair = SplicedPair(DisplacedNullPair(0.1, 1.0), GaussianMixturePair.subsampled_gaussian(0.1, 2.0))
    with pytest.raises(DpcalcError, match="equal total variation"):
        pair.log_tails(REMOVE, [0.5])


@pytest.mark.parametrize("rate,sigma", [(0.1, 1.0), (0.3, 0.7), (0.02, 2.0)])
def test_one_step_every_configuration_is_below_the_splice_which_is_attained(rate, sigma):
    """Both orders of every 1-D configuration (a, c) ∈ [−1, 1]² against pb's one-step upper
    δ; the worst configurations (a, c) = (1, −1) and (1, 1) reach it within the grid's
    error, so the one-step bound is the exact worst case."""
    schedule = Schedule((Phase(rate, sigma, 1, "fixed", "zero-out"),))
    rng = np.random.default_rng(9)
    configurations = [(1.0, -1.0), (1.0, 1.0), (-1.0, 1.0), (0.0, 1.0)]
    configurations += [tuple(rng.uniform(-1, 1, 2)) for _ in range(3)]
    for epsilon in (0.0, 0.3, 1.5):
        upper = delta_bounds([(fixed_zero_out_pair(rate, sigma), 1)], epsilon).upper
        # the sampler's own pair is this one
        assert upper == delta_bounds(schedule_phases(schedule), epsilon).upper
        worst = 0.0
        for record, displaced in configurations:
            p, q, centres = _step(rate, sigma, record, displaced)
            for first, second in ((p, q), (q, p)):
                truth = _hockey_stick(first, second, epsilon, sigma, centres)
                assert truth <= upper * (1 + 1e-9) + 1e-15, (record, displaced, epsilon)
                worst = max(worst, truth)
        assert worst >= upper * 0.99 - 1e-12  # attained: the splice is the exact worst case


@pytest.mark.parametrize("batch,size,sigma,steps", [(600, 60_000, 4.0, 10_000),
                                                    (256, 60_000, 1.1, 14_063),
                                                    (1000, 50_000, 0.7, 2000)])
def test_many_steps_the_splice_is_close_to_the_explicit_run(batch, size, sigma, steps):
    """The interval [explicit run, splice] is what pb reports; it sits well inside the
    replace-one pair's bound, which zero-out used before (gaps 63–90% on these)."""
    delta = 1e-5
    result = get_accountant("pb").epsilon(
        Schedule((Phase(None, sigma, steps, "fixed", "zero-out", batch, size),)), delta)
    replace_one = get_accountant("pb").epsilon(
        Schedule((Phase(None, sigma, steps, "fixed", "replace-one", batch, size),)), delta)
    run = epsilon_bounds([(DisplacedNullPair(batch / size, sigma), steps)], delta)
    assert result.epsilon_lower == pytest.approx(run.lower, rel=1e-12)
    assert result.epsilon_lower <= result.epsilon
    assert (result.epsilon - result.epsilon_lower) / result.epsilon < 0.11
    assert result.epsilon < 0.7 * replace_one.epsilon
