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
