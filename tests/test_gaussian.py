"""Gaussian mechanism: privacy profile, ε for δ, σ calibration.

Oracles: numerical integration of the hockey-stick divergence (scipy.integrate),
50-digit evaluation with mpmath, dp_accounting's GaussianPrivacyLoss, and a brentq
calibration on dp_accounting's profile.
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpcalc.models.gaussian import gaussian_delta, gaussian_epsilon, gdp_delta, gdp_delta_upper, gdp_epsilon
from dpcalc.models.gaussian_sigma import analytic_gaussian_sigma, classic_gaussian_is_valid, classic_gaussian_sigma
from dpcalc.errors import DpcalcError


def hockey_stick_by_integration(epsilon: float, mu: float) -> float:
    """∫ (p(x) − e^ε q(x))_+ dx for P = N(μ, 1), Q = N(0, 1), by quadrature.

    p/q = exp(μx − μ²/2) > e^ε exactly for x > ε/μ + μ/2; there the integrand is
    p(x)(1 − e^{ε − μx + μ²/2}), written with expm1 so that tiny values keep their digits.
    """
    from scipy import integrate, stats

    start = epsilon / mu + mu / 2.0

    def integrand(x: float) -> float:
        return stats.norm.pdf(x, loc=mu) * -math.expm1(epsilon - mu * x + mu * mu / 2.0)

    # The integrand lives within ~40 standard deviations of max(start, μ).
    stop = max(start, mu) + 40.0
    value, _ = integrate.quad(integrand, start, stop, epsabs=0.0, epsrel=1e-13, limit=500,
                              points=[max(start, mu)] if mu > start else None)
    return value


def delta_mpmath(epsilon: float, mu: float) -> float:
    """Balle & Wang 2018 Thm 8 in 60-digit arithmetic."""
    with mpmath.workdps(60):
        eps, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        value = mpmath.ncdf(-eps / m + m / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / m - m / 2)
        return float(value)


# ----------------------------------------------------------------- gdp_delta
@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 2.0, 6.0])
@pytest.mark.parametrize("epsilon", [-3.0, -0.2, 0.0, 0.3, 1.0, 3.0, 8.0])
def test_gdp_delta_matches_numerical_integration(mu, epsilon):
    expected = hockey_stick_by_integration(epsilon, mu)
    if expected < 1e-250:
        pytest.skip("below the range quadrature resolves")
    assert gdp_delta(epsilon, mu) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("mu", [1e-6, 1e-3, 0.1, 0.7, 1.0, 3.0, 20.0])
def test_gdp_delta_matches_high_precision_on_a_grid(mu):
    epsilons = np.concatenate([np.linspace(-10, 0, 11), np.geomspace(1e-6, 200.0, 60)])
    ours = gdp_delta(epsilons, mu)
    for epsilon, value in zip(epsilons, ours):
        expected = delta_mpmath(float(epsilon), mu)
        if expected < 1e-300:
            assert value <= 1e-290
            continue
        # μ = 1e-6 loses ~log10(1/μ) digits to the unavoidable cancellation Φ(a) − e^ε Φ(b).
        assert value == pytest.approx(expected, rel=1e-8 if mu < 1e-3 else 1e-11), (epsilon, mu)


@pytest.mark.parametrize(
    "sigma, sensitivity, epsilon",
    [(0.5, 1.0, 1.0), (1.0, 1.0, 0.5), (2.0, 1.0, 2.0), (4.0, 1.0, 0.1), (3.0, 2.5, 1.5), (0.8, 0.3, 4.0)],
)
def test_gaussian_delta_matches_dp_accounting(sigma, sensitivity, epsilon):
    from dp_accounting.pld import privacy_loss_mechanism

    oracle = privacy_loss_mechanism.GaussianPrivacyLoss(standard_deviation=sigma, sensitivity=sensitivity)
    expected = oracle.get_delta_for_epsilon(epsilon)
    assert gaussian_delta(epsilon, sigma, sensitivity) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("mu", [1e-4, 0.2, 1.0, 4.0, 30.0])
def test_gdp_delta_is_monotone_non_negative_and_never_nan(mu):
    epsilons = np.linspace(-20.0, 300.0, 64001)
    values = gdp_delta(epsilons, mu)
    assert not np.isnan(values).any()
    assert np.all(values >= 0.0) and np.all(values <= 1.0)
    assert np.all(np.diff(values) <= 0.0)


def test_gdp_delta_scalar_and_array_paths_agree():
    epsilons = np.array([-4.0, -1e-3, 0.0, 1e-9, 0.49, 0.5, 0.51, 0.999, 1.0, 1.001, 7.0, 40.0])
    for mu in (0.01, 1.0, 1.4142, 1.5, 5.0):
        array_values = gdp_delta(epsilons, mu)
        scalar_values = [gdp_delta(float(epsilon), mu) for epsilon in epsilons]
        np.testing.assert_allclose(array_values, scalar_values, rtol=1e-13, atol=0.0)
    assert isinstance(gdp_delta(1.0, 1.0), float)
    assert gdp_delta(np.ones((2, 3)), 1.0).shape == (2, 3)


def test_gdp_delta_special_values():
    assert gdp_delta(0.0, 0.0) == 0.0
    assert gdp_delta(-1.0, 0.0) == pytest.approx(1.0 - math.exp(-1.0), rel=1e-15)
    assert gdp_delta(5.0, math.inf) == 1.0
    assert gdp_delta(math.inf, 1.0) == 0.0
    assert gdp_delta(-math.inf, 1.0) == 1.0
    # δ(0) = 2Φ(μ/2) − 1 = erf(μ/(2√2)) (total variation of two Gaussians)
    assert gdp_delta(0.0, 0.3) == pytest.approx(math.erf(0.3 / (2 * math.sqrt(2))), rel=1e-14)
    assert gdp_delta(1e6, 1.0) == 0.0
    with pytest.raises(DpcalcError, match="mu"):
        gdp_delta(1.0, -0.1)
    with pytest.raises(DpcalcError, match="epsilon"):
        gdp_delta(float("nan"), 1.0)


# ---------------------------------------------------------------- gdp_epsilon
@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("target", [1e-12, 1e-20, 1e-50, 1e-100, 1e-200, 1e-300])
def test_gdp_epsilon_for_tiny_delta_is_safe_and_tight(mu, target):
    epsilon = gdp_epsilon(target, mu)
    assert math.isfinite(epsilon) and epsilon > 0.0
    assert delta_mpmath(epsilon, mu) <= target  # safe against the 60-digit profile
    # tight: a hair smaller ε already exceeds the target
    assert delta_mpmath(epsilon * (1 - 1e-8), mu) > target


@pytest.mark.parametrize("mu", [1e-3, 0.1, 1.0, 2.5, 8.0])
@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 4.0, 20.0])
def test_gdp_epsilon_round_trip(mu, epsilon):
    delta = gdp_delta(epsilon, mu)
    if not 1e-300 < delta < 1.0:
        pytest.skip("delta not representable")
    found = gdp_epsilon(delta, mu)
    assert found == pytest.approx(epsilon, rel=1e-7)
    assert gdp_delta(found, mu) <= delta


def test_gdp_epsilon_zero_when_delta_at_zero_suffices_and_bad_inputs():
    assert gdp_epsilon(0.5, 1.0) == 0.0  # δ(0) = 0.383 ≤ 0.5
    assert gdp_epsilon(0.3, 1.0) > 0.0
    assert gdp_epsilon(1e-5, 0.0) == 0.0
    with pytest.raises(DpcalcError, match="delta"):
        gdp_epsilon(0.0, 1.0)
    with pytest.raises(DpcalcError, match="delta"):
        gdp_epsilon(1.5, 1.0)


def test_gaussian_epsilon_is_gdp_with_mu_sensitivity_over_sigma():
    assert gaussian_epsilon(1e-5, 2.0, sensitivity=3.0) == gdp_epsilon(1e-5, 1.5)
    assert gaussian_delta(1.0, 4.0) == gdp_delta(1.0, 0.25)
    with pytest.raises(DpcalcError, match="--sigma"):
        gaussian_epsilon(1e-5, 0.0)


# ------------------------------------------------------------------ calibration
@pytest.mark.parametrize("epsilon", [0.0, 0.05, 0.5, 1.0, 3.0, 10.0, 50.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-10, 1e-30])
def test_analytic_sigma_is_safe_tight_and_matches_dp_accounting(epsilon, delta):
    from dp_accounting.pld import privacy_loss_mechanism
    from scipy import optimize

    sigma = analytic_gaussian_sigma(epsilon, delta)
    assert gaussian_delta(epsilon, sigma) <= delta
    assert delta_mpmath(epsilon, 1.0 / sigma) <= delta
    assert gaussian_delta(epsilon, sigma * (1 - 1e-9)) > delta

    def excess(log_sigma: float) -> float:
        loss = privacy_loss_mechanism.GaussianPrivacyLoss(standard_deviation=math.exp(log_sigma))
        return math.log(max(loss.get_delta_for_epsilon(epsilon), 1e-320)) - math.log(delta)

    if epsilon == 0.0:
        # δ(0) = erf(μ/(2√2)) exactly, so σ = 1/(2√2 erfinv(δ)) (dp_accounting's
        # Φ(a) − Φ(b) cancels here: it is off by 1e-6 at δ = 1e-10).
        from scipy import special

        assert sigma == pytest.approx(1.0 / (2 * math.sqrt(2) * special.erfinv(delta)), rel=1e-9)
    elif delta >= 1e-10:  # dp_accounting's profile is not accurate much below that
        expected = math.exp(optimize.brentq(excess, -8.0, 30.0, xtol=1e-14))
        assert sigma == pytest.approx(expected, rel=1e-8)


def test_analytic_sigma_scales_with_sensitivity():
    assert analytic_gaussian_sigma(1.0, 1e-5, sensitivity=3.0) == pytest.approx(
        3.0 * analytic_gaussian_sigma(1.0, 1e-5), rel=1e-11
    )


@pytest.mark.parametrize("epsilon", [0.05, 0.2, 0.5, 0.9])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_analytic_sigma_beats_classic_where_classic_is_valid(epsilon, delta):
    # Balle & Wang 2018 §2: the classic σ is sufficient but not necessary, so the exact
    # calibration is strictly smaller, and the classic σ meets the target (ε < 1).
    classic = classic_gaussian_sigma(epsilon, delta)
    assert classic_gaussian_is_valid(epsilon)
    assert analytic_gaussian_sigma(epsilon, delta) < classic
    assert gaussian_delta(epsilon, classic) <= delta


def test_classic_sigma_formula_and_validity():
    # Dwork & Roth 2014 Thm A.1: σ = Δ √(2 ln(1.25/δ)) / ε
    assert classic_gaussian_sigma(0.5, 1e-5, sensitivity=2.0) == pytest.approx(
        2.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-15
    )
    assert not classic_gaussian_is_valid(1.0)
    assert not classic_gaussian_is_valid(10.0)
    assert not classic_gaussian_is_valid(0.0)


def test_classic_sigma_is_unsafe_at_epsilon_10():
    # accounting-methods.md §3: at ε = 10 the classic σ's true δ is 2.3e-5 (> target 1e-5).
    sigma = classic_gaussian_sigma(10.0, 1e-5)
    true_delta = gaussian_delta(10.0, sigma)
    assert true_delta == pytest.approx(2.3e-5, rel=0.02)
    assert true_delta > 1e-5
    assert not classic_gaussian_is_valid(10.0)


def test_calibration_rejects_bad_inputs():
    with pytest.raises(DpcalcError, match="--epsilon"):
        analytic_gaussian_sigma(-1.0, 1e-5)
    with pytest.raises(DpcalcError, match="--delta"):
        analytic_gaussian_sigma(1.0, 1.0)
    with pytest.raises(DpcalcError, match="--epsilon"):
        classic_gaussian_sigma(0.0, 1e-5)


def test_module_does_not_import_scipy_optimize_at_import_time():
    import subprocess
    import sys

    code = ("import sys; import dpcalc.models.gaussian, dpcalc.models.subsampling, "
            "dpcalc.accountants.composition; "
            "bad = [m for m in ('scipy.optimize', 'scipy.stats', 'scipy.integrate') if m in sys.modules]; "
            "print(bad)")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=str(__import__('pathlib').Path(__file__).resolve().parents[1]))
    assert output.stdout.strip() == "[]"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gdp_delta_stays_monotone_when_exp_differs_in_the_last_bit(monkeypatch, seed):
    """Another CPU's exp (NumPy's SIMD one) differs in the last bit: δ must stay
    non-increasing there too (1 − e^ε + e^ε δ(−ε) went 1 − 2^-53 → 1 at μ = 30), and
    accurate for ε < 0 on both sides of its switch at δ = 1/2."""
    rng = np.random.default_rng(seed)
    exact_exp = np.exp

    def other_cpu_exp(x, *args, **kwargs):
        y = exact_exp(x, *args, **kwargs)
        return y * (1 + rng.integers(-1, 2, np.shape(y)) * 1.1e-16) if np.ndim(y) else y

    monkeypatch.setattr(np, "exp", other_cpu_exp)
    epsilons = np.linspace(-20.0, 300.0, 64001)
    for mu in (1e-4, 0.2, 1.0, 4.0, 30.0):
        assert np.all(np.diff(gdp_delta(epsilons, mu)) <= 0.0), mu
        for epsilon in (-1e-9, -1e-3, -0.69, -0.7, -3.0, -200.0):
            expected = delta_mpmath(epsilon, mu)
            assert gdp_delta(epsilon, mu) == pytest.approx(expected, rel=1e-15)
            assert gdp_delta(np.array([epsilon]), mu)[0] == pytest.approx(expected, rel=1e-15)


def test_gdp_delta_upper_is_never_below_the_profile_and_hardly_above_it():
    """The certified upper δ (epoch samplers' Gaussian figure, risk's profiles) against the
    80-digit profile at 500 random points from μ = 1e-8 to 50: never below it, and within
    1e-10 relative; gdp_delta's own error is at most 0.2 of the margin it adds."""
    draws = np.random.default_rng(5)
    checked = 0
    for index in range(500):
        mu = float(10 ** draws.uniform(-8, 1.7))
        epsilon = [float(10 ** draws.uniform(-10, 2.5)), float(draws.uniform(0, 4) * mu),
                   float(draws.uniform(0, 1) * mu * mu + draws.uniform(0, 5) * mu),
                   -float(10 ** draws.uniform(-6, 1))][index % 4]
        with mpmath.workdps(80):
            eps, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
            exact = mpmath.ncdf(-eps / m + m / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / m - m / 2)
        if exact < mpmath.mpf("1e-300"):
            continue
        value, upper = float(gdp_delta(epsilon, mu)), float(gdp_delta_upper(epsilon, mu))
        assert mpmath.mpf(upper) >= exact, (epsilon, mu)
        assert upper <= float(exact) * (1 + 1e-10) + 1e-15
        if value < 1.0:
            assert abs(float(mpmath.mpf(value) - exact)) <= 0.2 * (upper - value)
        checked += 1
    assert checked > 400
    arrays = gdp_delta_upper(np.array([0.0, 1.0, -1.0]), 0.5)
    assert np.all(arrays >= gdp_delta(np.array([0.0, 1.0, -1.0]), 0.5))


def test_gdp_delta_upper_is_finite_where_its_margin_overflows_and_floors_subnormals():
    """Review finding: the margin a·(ε/μ + μ/2 + a) overflowed, and 0·∞ made the certified δ
    NaN (`dpcalc delta --epsilon 1e300 … --sampling shuffle` printed nan, "certified")."""
    for epsilon, mu in [(1.0, 1e-300), (1e300, 1.0), (-1.0, 1e-300), (-1e-3, 1e-200)]:
        value = gdp_delta_upper(epsilon, mu)
        assert math.isfinite(value) and gdp_delta(epsilon, mu) <= value <= 1.0
    assert gdp_delta_upper(-1.0, 1e-300) == pytest.approx(-math.expm1(-1.0), rel=1e-12)
    with mpmath.workdps(60):  # δ below the normal range: the floor keeps the bound above it
        exact = mpmath.ncdf(-mpmath.mpf(0.003800005) / mpmath.mpf(1e-4) + mpmath.mpf(1e-4) / 2) \
            - mpmath.exp(mpmath.mpf(0.003800005)) * mpmath.ncdf(-mpmath.mpf(0.003800005) / mpmath.mpf(1e-4)
                                                                 - mpmath.mpf(1e-4) / 2)
    assert exact < 1e-300 and mpmath.mpf(gdp_delta_upper(0.003800005, 1e-4)) >= exact
    assert gdp_delta_upper(np.array([1.0, 1e300]), 1e-300).tolist() == [1e-300, 1e-300]
