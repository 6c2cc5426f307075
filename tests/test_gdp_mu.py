"""The Gaussian-DP μ that `risk` and `report` print: certified on both sides at any size.

Oracles:
- q = 1 is the plain Gaussian mechanism: T steps of (N(Δ, σ²), N(0, σ²)) are exactly
  μ-GDP with μ = Δ√T/σ and no smaller μ (Dong, Roth, Su 2022, Cor. 3.3), Δ = 1 for
  add/remove and zero-out, 2 for replace-one. Checked through the closed form the run
  carries, and through the numeric search with that closed form switched off (the search
  must stand on its own: it once gave up at μ = 64 and returned ∞ as the LOWER bound).
- Small μ: the exact one-step profile of the Poisson pair (accounting-methods §2, closed
  form in Φ) on a dense ε grid; the μ each point needs is a lower estimate of the true μ,
  so every certified upper bound must be at least its maximum. The search once started at
  μ = 1e-6 and returned that start as the lower bound where the truth is 1.1e-7.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from dpcalc.pb import composed
from dpcalc.risk import bounds as risk_bounds_module
from dpcalc.risk import gdp_mu as risk
from dpcalc.models.schedule import Schedule

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

FPRS = (1e-3, 1e-2, 0.1, 0.5)


def _mu_bounds(schedule):
    run, _ = risk_bounds_module.composed_for_risk(schedule, FPRS)
    return risk.gdp_mu_bounds(run)


@pytest.mark.parametrize("steps", [1, 100, 10_000, 10**6, 10**8])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_mu_at_q_one_is_the_exact_gaussian_mu(steps, sigma):
    exact = math.sqrt(steps) / sigma
    bounds = _mu_bounds(Schedule.single(1.0, sigma, steps))
    assert math.isfinite(bounds.upper) and math.isfinite(bounds.lower)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper == pytest.approx(exact, rel=1e-12)
    assert bounds.lower == pytest.approx(exact, rel=1e-12)
    assert bounds.fpr_range == (0.0, 1.0)


@pytest.mark.parametrize("adjacency, shift", [("replace-one", 2.0), ("zero-out", 1.0)])
def test_mu_at_q_one_under_other_adjacencies(adjacency, shift):
    exact = shift * math.sqrt(4096) / 1.3
    bounds = _mu_bounds(Schedule.single(1.0, 1.3, 4096, adjacency=adjacency))
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper == pytest.approx(exact, rel=1e-12)


def test_mu_of_phases_at_q_one_composes_as_a_root_sum_of_squares():
    schedule = Schedule((Schedule.single(1.0, 2.0, 300).phases[0],
                         Schedule.single(1.0, 0.7, 50).phases[0]))
    exact = math.sqrt(300 / 2.0**2 + 50 / 0.7**2)
    bounds = _mu_bounds(schedule)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper == pytest.approx(exact, rel=1e-12)


def test_a_subsampled_run_has_no_closed_form_mu():
    run, _ = risk_bounds_module.composed_for_risk(Schedule.single(0.5, 1.0, 100), FPRS)
    assert run.gdp_mu is None and run.gdp_mu_lower is None


@pytest.mark.parametrize("steps, sigma", [(1, 1.0), (100, 1.0), (10_000, 1.0), (10**6, 1.0),
                                          (10**8, 1.0), (10**7, 0.5), (1, 20.0), (1, 1000.0)])
def test_numeric_mu_search_alone_brackets_the_exact_gaussian_mu(monkeypatch, steps, sigma):
    """The numeric search, without the closed form, up to μ = 1e4: finite on both sides,
    upper ≥ exact ≥ lower, and never ∞ as a lower bound."""
    monkeypatch.setattr(composed, "_exact_gaussian_mu", lambda phases: None)
    exact = math.sqrt(steps) / sigma
    bounds = _mu_bounds(Schedule.single(1.0, sigma, steps))
    assert math.isfinite(bounds.upper) and math.isfinite(bounds.lower)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper <= 1.1 * exact  # a search that gave up would say inf
    if steps <= 10_000:  # the grid risk picks is fine enough for a lower bound here
        assert bounds.lower >= 0.99 * exact
    low, high = bounds.fpr_range
    assert 0.0 <= low < 1e-6 and high > 0.999


def _exact_poisson_profile(q, sigma, epsilon):
    """δ(ε) of one step's remove pair ((1−q)N(0)+qN(1), N(0)) at 50 digits, accounting-methods
    §2: δ(ε) = (1−q)Φ̄(x/σ) + qΦ̄((x−1)/σ) − e^ε Φ̄(x/σ), x = σ²[ln(expm1(ε) + q) − ln q] + ½."""
    import mpmath as mp

    with mp.workdps(50):
        q, sigma, epsilon = mp.mpf(q), mp.mpf(sigma), mp.mpf(epsilon)
        x = sigma**2 * (mp.log(mp.expm1(epsilon) + q) - mp.log(q)) + mp.mpf(1) / 2
        tail = lambda z: 1 - mp.ncdf(z)  # noqa: E731
        return (1 - q) * tail(x / sigma) + q * tail((x - 1) / sigma) - mp.e**epsilon * tail(x / sigma)


def _mu_needed(delta, epsilon):
    """The smallest μ with δ_μ(ε) ≥ δ (δ_μ rises in μ), bisected at 50 digits (Balle & Wang
    2018, Thm 8): an oracle independent of dpcalc's δ_μ."""
    import mpmath as mp

    with mp.workdps(50):
        low, high, epsilon = mp.mpf("1e-12"), mp.mpf(1000), mp.mpf(epsilon)
        for _ in range(70):
            middle = mp.sqrt(low * high)
            value = (mp.ncdf(-epsilon / middle + middle / 2)
                     - mp.e**epsilon * mp.ncdf(-epsilon / middle - middle / 2))
            low, high = (low, middle) if value >= delta else (middle, high)
        return float(low)


@pytest.mark.parametrize("q, sigma", [(1e-6, 10.0), (1e-4, 2.0), (1e-3, 30.0)])
def test_small_mu_lower_bound_is_not_the_search_start(q, sigma):
    """One step at a tiny rate: the true μ is ~1e-7. The remove direction's profile binds
    (the add direction's is smaller at every ε ≥ 0 here); the μ each dense ε point needs is
    ≤ the true μ, so the certified upper must be ≥ their maximum and the lower, ≤ the upper,
    well below the old start of 1e-6 where the truth is."""
    bounds = _mu_bounds(Schedule.single(q, sigma, 1))
    top = bounds.epsilon_range
    epsilons = np.linspace(top * 1e-4, top, 60)
    needed = max(_mu_needed(_exact_poisson_profile(q, sigma, eps), eps) for eps in epsilons)
    assert bounds.upper >= needed
    assert 0.0 < bounds.lower <= bounds.upper
    assert bounds.lower <= needed * (1 + 1e-3)  # not above the truth (dense grid estimate)
    if q == 1e-6:
        assert bounds.upper < 1e-6  # the truth, 1.1e-7, not the old search start


def test_bisect_gives_up_on_the_safe_side_of_each_bound():
    limit = risk._GDP_LIMIT_MU
    # nothing holds: the last failure below (a valid lower bound), inf above
    low, high = risk._bisect_mu(lambda mu: False)
    assert high == math.inf and low >= limit / 8 and math.isfinite(low)
    # everything holds: 0 below (nothing was ruled out), the start above
    low, high = risk._bisect_mu(lambda mu: True)
    assert low == 0.0 and high == risk._GDP_MIN_MU
    # a threshold far above the first bracket is found, bracketed to 1e-6
    low, high = risk._bisect_mu(lambda mu: mu >= 12345.6)
    assert low < 12345.6 <= high and high / low <= 1 + 1e-6


def _risk_json(*arguments):
    done = subprocess.run([sys.executable, "-m", "dpcalc", "risk", *arguments, "-f", "json"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_cli_prints_the_exact_mu_at_q_one_not_inf():
    data = _risk_json("--q", "1", "--sigma", "1", "--steps", "10000")
    record = next(r for r in data["results"] if r["measure"] == "gdp_mu")
    assert isinstance(record["upper"], float) and isinstance(record["lower"], float)
    assert record["lower"] <= 100.0 <= record["upper"]
    assert record["upper"] == pytest.approx(100.0, rel=1e-12)


def test_report_states_a_finite_mu_at_q_one():
    done = subprocess.run([sys.executable, "-m", "dpcalc", "report", "--q", "1", "--sigma", "1",
                           "--steps", "1000"], capture_output=True, text=True, check=True)
    line = next(line for line in done.stdout.splitlines() if "Gaussian DP" in line)
    assert "inf" not in line and "31.62" in line


def test_the_statement_claims_mu_only_on_the_checked_fpr_range():
    """`report` once printed "for every FPR ≥ low" and dropped the range's upper end; at
    q = 1e-6, σ = 10, T = 1 the add order's exact Neyman–Pearson test then beats
    Φ(Φ⁻¹(α) + μ) at FPRs above it (independent review). The printed range must be where the
    exact trade-off (mpmath, 50 digits) stays below the printed μ's curve."""
    import re

    import mpmath as mp

    done = subprocess.run([sys.executable, "-m", "dpcalc", "report", "--q", "1e-6", "--sigma",
                           "10", "--steps", "1"], capture_output=True, text=True, check=True)
    line = next(line for line in done.stdout.splitlines() if "Gaussian DP" in line)
    found = re.search(r"μ = ([0-9.e+-]+) for every FPR in \[([0-9.e+-]+), ([0-9.e+-]+)\]", line)
    assert found, line
    mu, low, high = (mp.mpf(value) for value in found.groups())
    mp.mp.dps = 50
    q, sigma = mp.mpf("1e-6"), mp.mpf(10)

    def bound(alpha):
        return mp.ncdf(mp.sqrt(2) * mp.erfinv(2 * alpha - 1) + mu)

    for z in mp.linspace(-9, 9, 181):  # thresholds of the exact tests, both orders
        remove = (1 - mp.ncdf(z), (1 - q) * (1 - mp.ncdf(z)) + q * (1 - mp.ncdf(z - 1 / sigma)))
        add = ((1 - q) * mp.ncdf(z) + q * mp.ncdf(z - 1 / sigma), mp.ncdf(z))
        for alpha, tpr in (remove, add):
            if low <= alpha <= high:
                assert tpr <= bound(alpha), (float(alpha), float(tpr - bound(alpha)))
