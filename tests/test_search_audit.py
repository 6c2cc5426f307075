"""Searches that give up must answer from their safe side (issue 30 §2: every search and
bracket besides risk μ's): never ∞ or an unverified value as a lower bound, never 0, the
search start or an unverified value as an upper bound, never NaN taken for a number.

Each test gives a real input on which a search stopped at its cap or met a non-number, with
an independent oracle (a closed form) where one exists.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpcalc.audit.bounds import one_run_epsilon_lower, one_run_p_value


# ---------------------------------------------------------------- audit: one-run ε lower bound
def _all_correct_crossing(guesses: int, beta: float) -> float:
    """The ε where P[Binomial(r, e^ε/(1 + e^ε)) ≥ r] = p^r = β (δ = 0, every guess right):
    r·ln(1 + e^{−ε}) = ln(1/β), so ε = −ln(expm1(ln(1/β)/r)). A closed form: the exact
    crossing of the p-value of Steinke et al. 2023 (Cor. 5.4 at δ = 0)."""
    return -math.log(math.expm1(math.log(1.0 / beta) / guesses))


def test_one_run_lower_bound_past_the_doubling_cap_is_verified():
    """The search doubled ε while the p-value stayed ≤ β and, once the next doubling passed
    MAX_AUDIT_EPSILON (60), returned 60 unverified; with r = 10^15 guesses all right the
    p-value is ≤ β at ε = 32 but not at 60 (the crossing is 33.44), so 60 was a certified
    LOWER bound above the truth. (Before that the int32 binomial tail gave NaN here, read as
    p = 1, and the bound was 0.)"""
    guesses = 10**15
    crossing = _all_correct_crossing(guesses, 0.05)
    assert 33.0 < crossing < 34.0
    found = one_run_epsilon_lower(guesses, guesses, guesses, 0.0, 0.05)
    assert found <= crossing
    assert found >= crossing - 1e-6


def test_one_run_lower_bound_at_the_cap_when_the_p_value_allows_it():
    # r = 10^30 guesses all right: the crossing is ε ≈ 65.4 > 60, so 60 itself is certified
    guesses = 10**30
    assert _all_correct_crossing(guesses, 0.05) > 60.0
    assert one_run_epsilon_lower(guesses, guesses, guesses, 0.0, 0.05) == 60.0


@pytest.mark.parametrize("guesses,epsilon", [(10**9, 20.0), (10**6, 14.0), (3 * 10**9, 21.0),
                                             (10**15, 33.0)])
def test_one_run_p_value_not_below_the_closed_form(guesses, epsilon):
    """P[W ≥ r] = p^r exactly (δ = 0): the p-value must not be smaller (a smaller p-value
    rejects more ε: the lower bound would be too high). bdtrc(r − 1, r, p) took p = e^ε/(1 +
    e^ε) rounded to a double, whose 1 − p is off by up to 1e-16·e^ε relative (9.5e-8 low at
    r = 10^9, ε = 20), and returned NaN above 2^31 − 1 trials."""
    exact = math.exp(-guesses * math.log1p(math.exp(-epsilon)))
    found = one_run_p_value(epsilon, 0.0, guesses, guesses, guesses)
    assert found >= exact * (1.0 - 1e-12)
    assert found == pytest.approx(exact, rel=1e-9)


# ------------------------------------------------------- Gaussian solvers with δ near 1
def _delta_exact(epsilon: float, mu: float):
    """Balle & Wang 2018, Thm 8 in 80-digit arithmetic (an mpf: near δ = 1 the excess over
    the target is below a double's resolution of 1 − δ)."""
    import mpmath

    with mpmath.workdps(80):
        eps, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        return mpmath.ncdf(-eps / m + m / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / m - m / 2)


def test_gdp_epsilon_near_delta_one_is_safe():
    """gdp_epsilon aimed 1e-10·(1 − δ) below δ, less than the ~3e-16 absolute float error of
    δ(ε) near 1: at δ = 1 − 1e-13, μ = 15 the ε returned had a true δ 3.2e-17 above the
    target (ε 6e-4 too small)."""
    import mpmath

    from dpcalc.models.gaussian import gdp_epsilon

    delta = 1.0 - 1e-13
    epsilon = gdp_epsilon(delta, 15.0)
    assert _delta_exact(epsilon, 15.0) <= mpmath.mpf(delta)


def test_epoch_sampler_upper_near_delta_one_is_safe():
    """The same through `dpcalc epsilon`'s shuffle bound: one epoch, zero-out, σ = 1/15 is
    exactly μ = 15-GDP, whose certified upper ε at δ = 1 − 1e-13 was too small."""
    import mpmath

    from dpcalc.accountants.epoch_samplers import epoch_upper, upper_mu
    from dpcalc.models.schedule import Phase

    phase = Phase(0.01, 1.0 / 15.0, 100, "shuffle", "zero-out")
    mu, epochs = upper_mu(phase)
    assert epochs == 1
    delta = 1.0 - 1e-13
    upper, _, _ = epoch_upper(phase, delta)
    assert _delta_exact(upper, mu) <= mpmath.mpf(delta)


@pytest.mark.parametrize("epsilon,gap", [(0.6660332117483914, 5.626250132451105e-09),
                                         (0.016383709568225657, 4.056791547135674e-08),
                                         (0.2502420586779647, 4.6629367034256575e-15),
                                         (0.28647940542256056, 9.497737374353221e-09)])
def test_analytic_sigma_near_delta_one_is_safe(epsilon, gap):
    """analytic_gaussian_sigma, same margin: σ whose true δ was 2e-17 to 5e-17 above δ."""
    import mpmath

    from dpcalc.models.gaussian_sigma import analytic_gaussian_sigma

    delta = 1.0 - gap
    sigma = analytic_gaussian_sigma(epsilon, delta)
    assert _delta_exact(epsilon, 1.0 / sigma) <= mpmath.mpf(delta)


def test_profile_margin_covers_the_float_error_of_the_profile():
    """The solvers' allowance (gaussian._log_profile_margin) against 50-digit δ(ε) on every
    branch of _log_delta_nonnegative: computed δ·(1 + r) ≥ true δ."""
    import mpmath

    from dpcalc.models.gaussian import _log_delta_nonnegative, _log_profile_margin

    rng = np.random.default_rng(2026)
    checked = 0
    for _ in range(1500):
        mu = float(10 ** rng.uniform(-5, 2.5))
        kind = rng.integers(3)
        if kind == 0:  # a ≥ 0, ε < 1
            epsilon = float(rng.uniform() ** 4 * min(1.0, mu * mu / 2))
        elif kind == 1:  # a ≥ 0, ε ≥ 1 (μ ≥ √2)
            if mu * mu / 2 <= 1.0:
                continue
            epsilon = float(rng.uniform(1.0, mu * mu / 2))
        else:  # tail
            epsilon = float(mu * mu / 2 + mu * rng.uniform(0, 30))
        log_value = _log_delta_nonnegative(epsilon, mu)
        if not math.isfinite(log_value):
            continue
        with mpmath.workdps(50):
            eps, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
            exact = mpmath.ncdf(-eps / m + m / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / m - m / 2)
            raised = mpmath.exp(mpmath.mpf(log_value) + mpmath.mpf(_log_profile_margin(epsilon, mu)))
        assert raised >= exact, (mu, epsilon)
        checked += 1
    assert checked > 1000


# ------------------------------------------------ Chernoff windows that find no finite bound
def _far_atom_pld():
    """One step's PLD: loss 0 with mass 1 − 1e-6, loss 10 with 1e-6 (grid 1e-3). Its standard
    deviation is 0.01, so mean ± 50 standard deviations misses the atom entirely."""
    from dpcalc.pld.pld import DiscretePld

    pmf = np.zeros(10001)
    pmf[0], pmf[-1] = 1.0 - 1e-6, 1e-6
    return DiscretePld(1e-3, 0, pmf, 0.0)


def test_window_without_a_chernoff_bound_keeps_the_whole_support(monkeypatch):
    """Where no λ gives a finite Chernoff bound, _chernoff_window fell back to mean ± 50
    standard deviations, which bounds nothing, while compose() still reported 2τ outside the
    window: here 2e-6 of mass was cut and δ_upper(5) came out 2e-12 instead of ≥ 1.99e-6.
    The fallback now keeps the whole support (the exact composition)."""
    from dpcalc.pld import chernoff
    from dpcalc.pld.fft_compose import compose
    from dpcalc.pld.pld import UPPER

    monkeypatch.setattr(chernoff, "_min_over_lambda", lambda bound_at, guess: math.inf)
    composed = compose([(_far_atom_pld(), 2)], 1e-12)
    # S = L1 + L2 ∈ {0, 10, 20}: δ(5) = Σ P(S = s)(1 − e^{5 − s}) over s > 5
    p = 1e-6
    exact = 2 * p * (1 - p) * -math.expm1(-5.0) + p * p * -math.expm1(-15.0)
    assert composed.delta(5.0, UPPER) >= exact


def test_curve_window_without_a_chernoff_bound_keeps_the_whole_support(monkeypatch):
    """The same stand-in in the curve engine's tabulated windows (curve_compose)."""
    from dpcalc.pld import curve_compose

    monkeypatch.setattr(curve_compose, "minimise",
                        lambda cumulant, lambdas, steps, log_term: np.full(steps.size, np.inf))
    pld = _far_atom_pld()
    for count, support_lo, lo_index, points, window_mass in curve_compose._layout(
            pld, np.array([2, 3]), 1e-12, 1 << 22):
        assert lo_index == support_lo
        assert points == count * (pld.pmf.size - 1) + 1  # every composed loss value
        assert window_mass == 0.0


# ------------------------------------------------ allocation: the ε search meets a NaN
def test_allocation_epsilon_search_takes_nan_for_above_the_target():
    """allocation._solve_epsilons grew its bracket while δ(high) > target: a NaN compared
    False and stopped the growth there, so ε = 1 came back as a certified upper bound for a
    profile that certified nothing. NaN must count as not meeting the target (the safe
    side, as in its bisection): no finite ε then, ∞."""
    from dpcalc.accountants.allocation import _solve_epsilons

    def deltas_of(epsilons):
        epsilons = np.asarray(epsilons, dtype=float)
        return np.where(epsilons == 0.0, 1.0, np.nan)

    assert _solve_epsilons(deltas_of, [1e-5]).tolist() == [math.inf]

    def half_nan(epsilons):  # a real profile up to ε = 4.5, NaN beyond
        epsilons = np.asarray(epsilons, dtype=float)
        return np.where(epsilons <= 4.5, np.exp(-epsilons), np.nan)

    found = _solve_epsilons(half_nan, [math.exp(-2.5), 1e-5])
    assert found[0] == pytest.approx(2.5, rel=1e-8) and found[0] >= 2.5
    assert found[1] == math.inf


# ------------------------------------------------ the μ search's FPR range, as printed
def _gdp_only_bounds(fpr_range):
    from types import SimpleNamespace

    from dpcalc.risk.bounds import Figure
    from dpcalc.risk.gdp_mu import GdpBounds

    figure = Figure("tpr", 0.5, 0.1, 0.01)
    return SimpleNamespace(tpr=[figure], advantage=Figure("advantage", 0.5, 0.1),
                           posterior=Figure("posterior_success", 0.7, 0.6, 0.5), prior=0.5,
                           reconstruction=None, details={},
                           gdp=GdpBounds(1.5, 1.4, 20.0, fpr_range))


def test_risk_note_shows_the_certified_fpr_range_rounded_inward():
    """The μ is certified on the FPRs whose tangent points lie in the ε range checked; the
    note printed the ends rounded to nearest (.3g / .12g), a wider range than certified
    (0.0123456 shown as 0.0123)."""
    from dpcalc.cli.risk import risk_records

    record = [r for r in risk_records(_gdp_only_bounds((0.0123456, 0.98765432109876)))
              if r["measure"] == "gdp_mu"][0]
    assert "for every FPR in [0.0124, 0.987654321098]" in record["notes"][0]
    assert record["fpr_range"] == [0.0123456, 0.98765432109876]  # JSON keeps the floats


def test_statement_shows_the_certified_fpr_range_rounded_inward():
    from dpcalc.cli.output.statement import _risk_lines

    line = _risk_lines([{"measure": "gdp_mu", "upper": 1.5, "lower": 1.4, "at": None,
                         "fpr_range": [0.0123456, 0.9]}])[0]
    assert "for every FPR in [0.013, 0.9]" in line  # both ends, each rounded inward
    line = _risk_lines([{"measure": "gdp_mu", "upper": 1.5, "lower": 1.4, "at": None,
                         "fpr_range": [0.0123456, 0.99999999749]}])[0]
    assert "[0.013, 0.99999999749]" in line


@pytest.mark.parametrize("mu", [30.0, 316.0, 1e4, 1e5])
def test_gaussian_profile_margin_holds_where_a_is_near_zero(mu):
    """At ε ≈ μ²/2 (a = −ε/μ + μ/2 ≈ 0) a's rounding error is ~u·μ/2, not u·|a|: the margin
    once vanished there and left gdp_delta_upper 2.5e-13 below the exact δ at μ = 1e4
    (independent review). Against 80-digit values, on both sides of a = 0."""
    import mpmath as mp

    from dpcalc.models.gaussian import (_log_delta_nonnegative, _log_profile_margin,
                                        gdp_delta_upper)

    with mp.workdps(80):
        for k in range(-20, 21, 2):
            epsilon = mu * mu / 2 + k * 1e-3 * mu
            e, m = mp.mpf(epsilon), mp.mpf(mu)
            exact = mp.ncdf(-e / m + m / 2) - mp.e**e * mp.ncdf(-e / m - m / 2)
            raised = mp.e**(mp.mpf(_log_delta_nonnegative(epsilon, mu))
                            + mp.mpf(_log_profile_margin(epsilon, mu)))
            assert raised >= exact, (epsilon, float((exact - raised) / exact))
            assert mp.mpf(gdp_delta_upper(epsilon, mu)) >= exact


@pytest.mark.parametrize("mu", [1e-9, 1e-7, 1e-3, 0.5, 3.0, 30.0, 316.0, 1e4])
def test_gdp_delta_lower_and_upper_bracket_the_exact_profile(mu):
    """The μ search checks δ_U ≤ gdp_delta_lower and rules μ out only above gdp_delta_upper:
    both must bracket the 80-digit δ_μ(ε) from tiny δ to δ near 1 (the plain log form the
    search used before was 1e-6 off at μ = 1e-9: independent review)."""
    import mpmath as mp

    from dpcalc.models.gaussian import gdp_delta_lower, gdp_delta_upper

    top = mu * mu / 2 + 12 * mu + 40 * mu * mu + 1e-3
    epsilons = np.concatenate([np.geomspace(1e-12, top, 120), [0.0]])
    lower, upper = gdp_delta_lower(epsilons, mu), gdp_delta_upper(epsilons, mu)
    with mp.workdps(80):
        m = mp.mpf(mu)
        for epsilon, low, high in zip(epsilons, lower, upper):
            e = mp.mpf(float(epsilon))
            exact = mp.ncdf(-e / m + m / 2) - mp.e**e * mp.ncdf(-e / m - m / 2)
            assert mp.mpf(float(low)) <= exact <= mp.mpf(float(high)), (epsilon, low, high)
            if exact > 1e-200:  # not vacuous: within 1e-6 relative (or absolute near 1)
                assert float(exact) - low <= 1e-6 * float(exact) + 1e-12
