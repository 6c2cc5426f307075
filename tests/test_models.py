"""The sampler/adjacency core: each model's dominating pair against independent oracles.

- Poisson, replace-one: dp_accounting's PLD with neighboring_relation=REPLACE_ONE.
- fixed-size, add/remove: the Poisson pair with shift 2 (σ/2) in dp_accounting.
- fixed-size, replace-one: for one step and ε ≥ 0 the profile of ((1−γ)N(0)+γN(2), N(0))
  in closed form (accounting-methods.md §2 at σ/2), mirrored below 0.
- rdp for replace-one (Wang, Balle, Kasiviswanathan 2019) ≥ the Rényi divergence of the
  dominating pair by numerical integration, and ≥ pb.
- Poisson, add/remove: unchanged to every printed digit (values of dpcalc 0.1).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_ndtr, ndtr

from dpcalc.pb.buckets import delta_bounds, schedule_phases
from dpcalc.models.pairs import ReplaceOnePair, SymmetrisedPair
from dpcalc.models.mixture import GaussianMixturePair
from dpcalc.accountants.rdp_replace import rdp_replace_one
from dpcalc.accountants.registry import get_accountant
from dpcalc.models.schedule import Schedule
from dpcalc.cli.output.render import show_lower, show_upper

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

PB = get_accountant("pb")

# (q, σ, T): ten configurations, small q to q = 0.5, few to many steps
REPLACE_GRID = [(0.01, 1.0, 1000), (0.01, 4.0, 10_000), (256 / 60_000, 1.1, 3000), (0.04, 1.5, 500),
                (0.1, 2.0, 200), (0.2, 3.0, 100), (0.5, 5.0, 30), (0.002, 0.8, 5000),
                (0.05, 0.9, 300), (0.3, 10.0, 1000), (1e-3, 1.0, 20_000)]


def dp_accounting_epsilon(event, steps, delta, relation=None):
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    relation = relation or dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    accountant = pld_privacy_accountant.PLDAccountant(neighboring_relation=relation,
                                                      value_discretization_interval=1e-4)
    accountant.compose(event, steps)
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize("q,sigma,steps", REPLACE_GRID)
def test_poisson_replace_one_agrees_with_dp_accounting(q, sigma, steps):
    dp_accounting = pytest.importorskip("dp_accounting")
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    oracle = dp_accounting_epsilon(event, steps, 1e-5, dp_accounting.NeighboringRelation.REPLACE_ONE)
    result = PB.epsilon(Schedule.single(q, sigma, steps, "poisson", "replace-one"), 1e-5)
    assert result.epsilon == pytest.approx(oracle, rel=0.005)
    # dp_accounting's pessimistic estimate is an upper bound: our lower bound sits below it
    assert result.epsilon_lower <= oracle * (1 + 1e-9)
    assert result.epsilon - result.epsilon_lower <= 0.01 * result.epsilon + 1e-6


@pytest.mark.parametrize("q,sigma,steps", REPLACE_GRID[:6])
def test_fixed_add_remove_is_the_poisson_pair_with_shift_two(q, sigma, steps):
    dp_accounting = pytest.importorskip("dp_accounting")
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma / 2))
    oracle = dp_accounting_epsilon(event, steps, 1e-5)
    result = PB.epsilon(Schedule.single(q, sigma, steps, "fixed", "add-remove"), 1e-5)
    assert result.epsilon == pytest.approx(oracle, rel=0.005)
    assert result.epsilon_lower <= oracle * (1 + 1e-9)
    poisson = PB.epsilon(Schedule.single(q, sigma, steps), 1e-5)
    assert result.epsilon_lower > poisson.epsilon  # displacement costs: never the Poisson figure


def _remove_profile(epsilon: float, rate: float, sigma: float) -> float:
    """One step of ((1−γ)N(0, s²) + γN(1, s²), N(0, s²)), s = σ/2, at ε ≥ 0 (notes §2)."""
    s = sigma / 2
    x = s * s * (math.log(math.expm1(epsilon) + rate) - math.log(rate)) + 0.5
    return ((1 - rate) * ndtr(-x / s) + rate * ndtr(-(x - 1) / s) - math.exp(epsilon) * ndtr(-x / s))


@pytest.mark.parametrize("rate,sigma", [(0.01, 1.0), (0.1, 2.0), (0.3, 0.7)])
def test_fixed_replace_one_single_step_is_the_symmetrised_shift_two_pair(rate, sigma):
    schedule = Schedule.single(rate, sigma, 1, "fixed", "replace-one")
    for epsilon in (0.0, 0.05, 0.5, 1.5, 3.0):
        exact = _remove_profile(epsilon, rate, sigma)
        bounds = delta_bounds(schedule_phases(schedule), epsilon)
        assert bounds.lower <= exact * (1 + 1e-9) + 1e-15
        assert exact * (1 - 1e-12) <= bounds.upper <= exact * 1.01 + 1e-12  # ulps of the formula
    # the mirrored half: δ(−ε) = 1 − e^{−ε} + e^{−ε} δ(ε) (a symmetric pair)
    pair = SymmetrisedPair(GaussianMixturePair.subsampled_gaussian(rate, sigma / 2))
    grid = np.array([0.3, 1.0])
    p_above, _, q_above, _ = pair.log_tails("replace", grid)
    p_neg_above, _, q_neg_above, _ = pair.log_tails("replace", -grid)
    for index, epsilon in enumerate(grid):
        # P(L > −e) = 1 − Q_R(L_R > e), i.e. the mirror of Q's upper tail
        assert math.exp(p_neg_above[index]) == pytest.approx(-math.expm1(q_above[index]), rel=1e-12)
        assert math.exp(q_neg_above[index]) == pytest.approx(-math.expm1(p_above[index]), rel=1e-12)


def _renyi_by_quadrature(log_p, log_q, alpha: float, lower: float, upper: float) -> float:
    """D_α(P‖Q) = ln ∫ p^α q^{1−α} / (α − 1), by adaptive quadrature."""
    value, _ = integrate.quad(lambda x: math.exp(alpha * log_p(x) + (1 - alpha) * log_q(x)),
                              lower, upper, limit=400, epsabs=0, epsrel=1e-12)
    return math.log(value) / (alpha - 1)


def _log_mixture(weights, means, sigma):
    def density(x):
        terms = [math.log(w) - 0.5 * ((x - m) / sigma) ** 2 for w, m in zip(weights, means) if w > 0]
        top = max(terms)
        return top + math.log(sum(math.exp(t - top) for t in terms)) - math.log(sigma * math.sqrt(2 * math.pi))
    return density


@pytest.mark.parametrize("rate,sigma", [(0.01, 1.0), (0.1, 2.0), (0.05, 0.8)])
def test_replace_one_rdp_is_above_the_renyi_divergence_of_both_pairs(rate, sigma):
    orders = np.array([1.5, 2.0, 3.0, 4.5, 8.0])
    bound = rdp_replace_one(rate, sigma, orders)
    antipodal = (_log_mixture([1 - rate, rate], [0, 1], sigma),
                 _log_mixture([1 - rate, rate], [0, -1], sigma))
    shift_two = (_log_mixture([1 - rate, rate], [0, 2], sigma), _log_mixture([1.0], [0], sigma))
    for alpha, value in zip(orders, bound):
        for log_p, log_q in (antipodal, shift_two, shift_two[::-1]):
            exact = _renyi_by_quadrature(log_p, log_q, alpha, -12 * sigma - 2, 12 * sigma + 2)
            assert value >= exact * (1 - 1e-9)


@pytest.mark.parametrize("rate", [1e-8, 1e-4, 0.01])
def test_replace_one_rdp_at_integer_orders_is_the_theorem_rounded_up_not_inflated(rate):
    """Wang, Balle, Kasiviswanathan 2019, Thm 9 at integer α, in mpmath: dpcalc's value is
    never below it and, at tiny rates, not inflated by an absolute rounding allowance (the
    review found 22–60× at γ = 1e-8)."""
    mpmath = pytest.importorskip("mpmath")
    sigma, sensitivity = 1.0, 2.0
    orders = np.array([2.0, 3.0, 5.0, 12.0])
    with mpmath.workdps(40):
        g, scale = mpmath.mpf(rate), mpmath.mpf(sensitivity) ** 2 / (2 * mpmath.mpf(sigma) ** 2)
        second = min(4 * mpmath.expm1(2 * scale), 2 * mpmath.exp(2 * scale))
        for alpha, value in zip(orders, rdp_replace_one(rate, sigma, orders, sensitivity)):
            a = int(alpha)
            total = 1 + g**2 * mpmath.binomial(a, 2) * second + sum(
                g**j * mpmath.binomial(a, j) * 2 * mpmath.exp((j - 1) * j * scale)
                for j in range(3, a + 1))
            exact = float(mpmath.log(total) / (a - 1))
            cap = alpha * sensitivity**2 / (2 * sigma**2)
            assert value >= min(exact, cap)
            assert value <= min(exact, cap) * (1 + 1e-9)


@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_rdp_is_never_below_pb_under_replace_one(sampling):
    for q, sigma, steps in REPLACE_GRID[:5]:
        schedule = Schedule.single(q, sigma, steps, sampling, "replace-one")
        rdp = get_accountant("rdp").epsilon(schedule, 1e-5).epsilon
        assert rdp >= PB.epsilon(schedule, 1e-5).epsilon_lower


def test_replace_one_pair_inverse_and_tails_are_consistent():
    pair = ReplaceOnePair(0.02, 0.9)
    x = np.linspace(-6, 7, 41)
    assert np.allclose(pair.inverse_loss(pair.loss(x)), x, rtol=1e-12, atol=1e-12)
    p_above, p_below, q_above, q_below = pair.log_tails("replace", pair.loss(x))
    sigma = 0.9
    expected_p = np.logaddexp(math.log(0.98) + log_ndtr(-x / sigma), math.log(0.02) + log_ndtr(-(x - 1) / sigma))
    expected_q = np.logaddexp(math.log(0.98) + log_ndtr(-x / sigma), math.log(0.02) + log_ndtr(-(x + 1) / sigma))
    assert np.allclose(p_above, expected_p, rtol=1e-10) and np.allclose(q_above, expected_q, rtol=1e-10)
    assert np.allclose(np.logaddexp(p_above, p_below), 0.0, atol=1e-12)


# dpcalc 0.1's Poisson add/remove results (pb upper, lower), printed to 5 digits — except
# one: δ = 1e-8 with 1e5 steps, whose upper bound 2.2527 rested on a float-error estimate
# measured in the FFT pad; the proven bound of fft_error.py gives 2.2531 (+0.02%). Its fifth
# digit is the FFT's float-noise allowance (2.25251 read without it), which moves with the
# last bits of the one-step masses: 2.253014 from scipy's tail differences, 2.252993 from
# NumPy's, 2.253071 from the cancellation-free bucket masses (gauss_intervals.py) — each
# certified for the masses it composed; only the last ones are accurate to a few ulps.
UNCHANGED = {
    (0.01, 4.0, 10_000, 1e-5): ("0.947", "0.94663"),
    (256 / 60_000, 1.1, 14_063, 1e-5): ("2.3819", "2.3807"),
    (0.04, 1.5, 2250, 1e-5): ("6.7689", "6.7683"),
    (0.1, 0.8, 300, 1e-6): ("21.512", "21.51"),
    (0.001, 1.0, 100_000, 1e-8): ("2.2531", "2.2434"),
    (1.0, 2.0, 50, 0.1): ("9.9382", "9.936"),
    (0.5, 3.0, 7, 1e-10): ("3.2539", "3.2537"),
    (0.02, 0.6, 5000, 1e-5): ("33.895", "33.857"),  # each direction on its own grid
}


@pytest.mark.parametrize("config", list(UNCHANGED))
def test_poisson_add_remove_results_are_unchanged_to_every_printed_digit(config):
    q, sigma, steps, delta = config
    result = PB.epsilon(Schedule.single(q, sigma, steps), delta)
    assert (show_upper(result.epsilon), show_lower(result.epsilon_lower)) == UNCHANGED[config]


def test_adaptive_clipping_effective_noise_multiplier_round_trip():
    """Andrew et al. 2021 §3: z = (z_Δ⁻² + (2σ_b)⁻²)^(−1/2) and its inverse."""
    from dpcalc import adaptive_clipping_noise_multiplier, update_noise_multiplier
    from dpcalc.errors import DpcalcError

    # 100 clients per round, σ_b = 100/20 = 5: z_Δ = (1 − 1/100)^(−1/2) for a target z = 1
    assert update_noise_multiplier(1.0, 5.0) == pytest.approx(1 / math.sqrt(0.99), rel=1e-15)
    for z_update, sigma_count in [(0.7, 2.0), (1.1, 5.0), (3.0, 50.0)]:
        z = adaptive_clipping_noise_multiplier(z_update, sigma_count)
        assert z < z_update  # the count costs a little privacy: less noise per unit released
        assert update_noise_multiplier(z, sigma_count) == pytest.approx(z_update, rel=1e-12)
    with pytest.raises(DpcalcError, match="clipped_count_stddev must exceed"):
        update_noise_multiplier(3.0, 1.0)
