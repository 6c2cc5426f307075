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

from dpcalc.audit.bounds import (bound_from_counts, clopper_pearson_upper, correct_guesses,
                                 epsilon_from_error_rates, epsilon_lower_from_counts,
                                 monte_carlo_ceiling, one_run_bound, one_run_ceiling,
                                 one_run_epsilon_lower, one_run_p_value, pure_epsilon_lower)
from dpcalc.errors import DpcalcError
from tests.audit_oracles import independent_ceiling


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
        exceeded += one_run_bound(scores, included, 100, 100, 0.0,
                                  beta).epsilon_lower > true_epsilon
    assert exceeded <= 2 * beta * 100


def test_correct_guesses_counts_the_top_and_bottom():
    scores = np.array([0.9, -1.0, 0.3, 2.0, -0.5, 0.0])
    included = np.array([True, False, False, True, True, False])
    # top 2: 2.0 (in), 0.9 (in) -> 2 right; bottom 2: -1.0 (out), -0.5 (in) -> 1 right
    assert correct_guesses(scores, included, 2, 2) == 3
    assert correct_guesses(scores, included, 0, 1) == 1
    assert correct_guesses(scores, included, 6, 0) == 3
    with pytest.raises(DpcalcError, match="guesses in \\+ out"):
        correct_guesses(scores, included, 4, 3)


def test_one_run_bound_uses_the_counts_given_and_no_correction():
    """With fixed counts the bound is one_run_epsilon_lower at β itself (no Bonferroni)."""
    rng = np.random.default_rng(3)
    included = rng.random(500) < 0.5
    scores = included + rng.normal(0, 0.6, 500)
    bound = one_run_bound(scores, included, 40, 10, 1e-5, 0.05)
    assert (bound.guesses, bound.canaries) == (50, 500)
    assert bound.correct == correct_guesses(scores, included, 40, 10)
    assert bound.epsilon_lower == one_run_epsilon_lower(500, 50, bound.correct, 1e-5, 0.05)
    assert bound.ceiling == one_run_ceiling(500, 50, 1e-5, 0.05) >= bound.epsilon_lower


def test_pure_bound_matches_the_scalar_search():
    guesses = np.array([10, 50, 200, 200, 7])
    correct = np.array([10, 40, 120, 95, 0])
    fast = pure_epsilon_lower(guesses, correct, 0.05)
    slow = [one_run_epsilon_lower(1000, int(r), int(v), 0.0, 0.05)
            for r, v in zip(guesses, correct)]
    assert fast == pytest.approx(slow, abs=1e-9)


# ---------------------------------------------------------------- ceilings
@pytest.mark.parametrize("canaries,guesses,delta", [(1000, 50, 1e-5), (1000, 70, 1e-5),
                                                    (1000, 1000, 1e-5), (100, 10, 1e-3),
                                                    (100_000, 1510, 1e-5), (200, 30, 1e-4)])
def test_one_run_ceiling_solves_the_perfect_guess_equation(canaries, guesses, delta):
    """The ceiling is the LARGEST ε with p-value ≤ β when all r guesses are right
    (tests/audit_oracles.py: the v = r formula written out, scanned on a 0.01 grid and solved
    with brentq)."""
    assert one_run_ceiling(canaries, guesses, delta, 0.05) == pytest.approx(
        independent_ceiling(canaries, guesses, delta, 0.05), abs=1e-8)


@pytest.mark.parametrize("guesses", [1, 5, 55, 1000])
def test_one_run_ceiling_is_the_logit_of_beta_root_at_delta_zero(guesses):
    """δ = 0: p^r = β, so the ceiling is logit(β^{1/r}) (0 when even r right is plausible at
    ε = 0, i.e. 2^{−r} > β)."""
    p = 0.05 ** (1 / guesses)
    expected = max(0.0, math.log(p / (1 - p)))
    assert one_run_ceiling(1000, guesses, 0.0, 0.05) == pytest.approx(expected, abs=1e-9)


def test_no_outcome_beats_the_ceiling():
    for correct in range(0, 71):
        assert one_run_epsilon_lower(1000, 70, correct, 1e-5, 0.05) <= one_run_ceiling(
            1000, 70, 1e-5, 0.05)


def test_monte_carlo_ceiling_is_the_perfect_test():
    """TP = all positives, FP = 0: Clopper–Pearson upper bounds 1 − (α/2)^{1/n} on both error
    rates, then ln((1 − δ − FNR_U)/FPR_U) (Kairouz et al. Thm 2.1)."""
    alpha, delta = 0.05, 1e-5
    fpr = 1 - (alpha / 2) ** (1 / 1000)
    fnr = 1 - (alpha / 2) ** (1 / 1000)
    assert monte_carlo_ceiling(1000, 1000, delta, alpha) == pytest.approx(
        math.log((1 - delta - fnr) / fpr), rel=1e-9)
    assert bound_from_counts(999, 1000, 0, 1000, delta, alpha).epsilon_lower < \
        monte_carlo_ceiling(1000, 1000, delta, alpha)


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
