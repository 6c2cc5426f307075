"""The audit statistics (dpcalc.audit.bounds) against exact computations.

The synthetic Bernoulli experiment: an ε-DP randomised-response guesser is right with probability
exactly p = e^ε/(1 + e^ε) on every canary, independently (the main theorem of Steinke, Nasr,
Jagielski 2023 is tight for it). The number of correct guesses is then Binomial(r, p), and the probability that
the audit's lower bound exceeds the true ε can be summed exactly: it must be at most β.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import beta as beta_distribution
from scipy.stats import binom

from dpcalc.audit.bounds import (bound_from_counts, clopper_pearson_upper, epsilon_from_error_rates,
                                 epsilon_lower_from_counts, guess_counts, one_run_bound,
                                 one_run_epsilon_lower, one_run_p_value)
from dpcalc.errors import DpcalcError


def _p_value_oracle(epsilon, delta, canaries, guesses, correct):
    """Cor. 5.4 (arXiv:2305.08846v1) written out with scipy.stats, term by term (independent of the vectorised code)."""
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    tail = binom.sf(correct - 1, guesses, p)
    steps = np.arange(1, correct + 1)
    worst = np.max((binom.sf(correct - steps - 1, guesses, p) - tail) / steps)
    return min(1.0, tail + 2 * canaries * delta * worst)


# (m, r, v, δ, β) → ε: the values printed in arXiv:2305.08846v1 (App. D: 0.673; §7, Fig. 11:
# 2.675, truncated; 2.6759 here), also checked against the oracle.
REFERENCE = [((1000, 100, 75, 1e-4, 0.05), 0.673), ((100_000, 1510, 1439, 1e-5, 0.05), 2.676)]


@pytest.mark.parametrize("arguments,expected", REFERENCE)
def test_one_run_bound_reference_values(arguments, expected):
    canaries, guesses, correct, delta, beta = arguments
    epsilon = one_run_epsilon_lower(canaries, guesses, correct, delta, beta)
    assert epsilon == pytest.approx(expected, abs=5e-4)
    # the oracle agrees that ε is the crossing: p ≤ β just below it, > β just above
    assert _p_value_oracle(epsilon - 1e-3, delta, canaries, guesses, correct) <= beta
    assert _p_value_oracle(epsilon + 1e-3, delta, canaries, guesses, correct) > beta


@pytest.mark.parametrize("epsilon", [0.0, 0.4, 1.3, 3.0])
def test_p_value_matches_the_oracle(epsilon):
    for canaries, guesses, correct, delta in [(1000, 100, 75, 1e-4), (500, 40, 31, 1e-3),
                                              (200, 200, 120, 0.0)]:
        assert one_run_p_value(epsilon, delta, canaries, guesses, correct) == pytest.approx(
            _p_value_oracle(epsilon, delta, canaries, guesses, correct), rel=1e-9, abs=1e-15)


def test_p_value_grows_with_epsilon():
    values = [one_run_p_value(e, 1e-4, 1000, 100, 75) for e in np.linspace(0, 4, 81)]
    assert all(b >= a for a, b in zip(values, values[1:]))


def test_pure_dp_bound_is_the_clopper_pearson_lower_bound_of_the_accuracy():
    """δ = 0: the largest ε with P[Binomial(r, p(ε)) ≥ v] ≤ β is the logit of the exact
    one-sided lower confidence bound of p, Beta(β; v, r − v + 1)."""
    for guesses, correct, beta in [(100, 75, 0.05), (50, 50, 0.05), (1000, 530, 0.01)]:
        p_lower = beta_distribution.ppf(beta, correct, guesses - correct + 1)
        expected = max(0.0, math.log(p_lower / (1 - p_lower)))
        assert one_run_epsilon_lower(1000, guesses, correct, 0.0, beta) == pytest.approx(
            expected, abs=1e-9)


@pytest.mark.parametrize("true_epsilon,delta", [(0.5, 0.0), (1.0, 1e-5), (2.0, 0.0),
                                                (2.0, 1e-4)])
def test_bernoulli_experiment_exact_coverage(true_epsilon, delta):
    """P[ε_LB > ε_true] summed exactly over Binomial(r, e^ε/(1 + e^ε)) is at most β, and not
    far below it (the bound is not vacuous)."""
    canaries, guesses, beta = 1000, 200, 0.05
    p = math.exp(true_epsilon) / (1 + math.exp(true_epsilon))
    # the audit's bound grows with the number of correct guesses: find the first v above ε
    low, high = 0, guesses + 1
    while low < high:
        middle = (low + high) // 2
        if one_run_epsilon_lower(canaries, guesses, min(middle, guesses), delta,
                                 beta) > true_epsilon and middle <= guesses:
            high = middle
        else:
            low = middle + 1
    first_above = low
    exceed = binom.sf(first_above - 1, guesses, p) if first_above <= guesses else 0.0
    assert exceed <= beta
    assert exceed >= beta / 5
    below = one_run_epsilon_lower(canaries, guesses, first_above - 1, delta, beta)
    assert below <= true_epsilon


def test_bernoulli_experiment_simulated_guesses():
    """Canaries guessed by ε-DP randomised response: over 200 seeded experiments the bound
    exceeds ε about β of the time, never much more."""
    rng = np.random.default_rng(0)
    true_epsilon, canaries, beta = 1.0, 400, 0.05
    p = math.exp(true_epsilon) / (1 + math.exp(true_epsilon))
    exceeded = 0
    for _ in range(100):
        included = rng.random(canaries) < 0.5
        right = rng.random(canaries) < p
        # a score whose sign is the guess: positive means "in"
        scores = np.where(included == right, 1.0, -1.0) * rng.random(canaries)
        exceeded += one_run_bound(scores, included, 0.0, beta).epsilon_lower > true_epsilon
    assert exceeded <= 2 * beta * 100


def test_guess_counts_are_even_and_within_m():
    for canaries in (2, 3, 10, 999, 1000, 100_000):
        counts = guess_counts(canaries)
        assert counts and all(c % 2 == 0 and 2 <= c <= canaries for c in counts)
        assert len(set(counts)) == len(counts)


# ---------------------------------------------------------------- Monte Carlo
def test_clopper_pearson_matches_scipy_stats():
    for events, trials, alpha in [(0, 100, 0.025), (3, 100, 0.025), (99, 100, 0.01)]:
        assert clopper_pearson_upper(events, trials, alpha) == pytest.approx(
            beta_distribution.ppf(1 - alpha, events + 1, trials - events), rel=1e-12)
    assert clopper_pearson_upper(5, 5, 0.025) == 1.0
    with pytest.raises(DpcalcError):
        clopper_pearson_upper(6, 5, 0.025)


def test_epsilon_from_error_rates_inverts_the_dp_region():
    """At FPR = (1 − δ − FNR)/e^ε the first constraint of Kairouz et al. Thm 2.1 is tight."""
    epsilon, delta, fnr = 1.7, 1e-3, 0.2
    fpr = (1 - delta - fnr) / math.exp(epsilon)
    assert epsilon_from_error_rates(fpr, fnr, delta) == pytest.approx(epsilon)
    assert epsilon_from_error_rates(0.5, 0.5, 0.0) == 0.0


@pytest.mark.parametrize("true_epsilon", [0.5, 1.5, 3.0])
def test_monte_carlo_bernoulli_exact_coverage(true_epsilon):
    """Randomised response (ε-DP, so (ε, δ)-DP for every δ): "in" answers 1 with probability p,
    "out" with 1 − p; the test "answer = 1" over n runs each. Sum P[ε_LB > ε] exactly over both
    binomials: at most α."""
    runs_each, alpha, delta = 100, 0.05, 1e-5
    p = math.exp(true_epsilon) / (1 + math.exp(true_epsilon))
    counts = np.arange(runs_each + 1)
    exceeds = np.array([[bound_from_counts(int(tp), runs_each, int(fp), runs_each, delta,
                                           alpha).epsilon_lower > true_epsilon
                         for fp in counts] for tp in counts])
    probability = binom.pmf(counts, runs_each, p) @ exceeds @ binom.pmf(counts, runs_each, 1 - p)
    assert probability <= alpha


def test_vectorised_bound_matches_the_scalar_one():
    rng = np.random.default_rng(0)
    true_positives, false_positives = rng.integers(0, 101, 300), rng.integers(0, 101, 300)
    scalar = [bound_from_counts(int(tp), 100, int(fp), 100, 1e-3, 0.05).epsilon_lower
              for tp, fp in zip(true_positives, false_positives)]
    assert np.array_equal(epsilon_lower_from_counts(true_positives, 100, false_positives, 100,
                                                    1e-3, 0.05), scalar)
