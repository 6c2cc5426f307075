"""The statistics of a privacy audit: from what an attack got right to a lower bound on ε that
holds with a stated confidence. NumPy and SciPy only; never prints, never exits.

Two ways to read an attack:

- one run (Steinke, Nasr, Jagielski 2023, "Privacy auditing with one (1) training run",
  arXiv:2305.08846v1): m canaries, each included independently with probability ½; the auditor
  guesses "in" or "out" for r of them and is right v times. Main theorem (§3): if the run is
  ε-DP, the number of correct guesses W is stochastically dominated by
  Binomial(r, e^ε/(1 + e^ε)). Its (ε, δ) version (§5, Corollary 5.4 in v1):
  P[W ≥ v] ≤ f(v) + 2mδ·max_{i=1..v} (f(v−i) − f(v))/i with f(v) = P[Binomial(r, e^ε/(1 + e^ε))
  ≥ v]. The lower bound is the largest ε at which observing v correct guesses has probability
  ≤ β (the search of their Appendix D; its printed values, 0.673 and 2.675, are reproduced in
  tests/test_audit_bounds.py). The number of guesses must be fixed without looking at the
  audited canaries (dpcalc.audit.guesses); the ceiling is the bound with v = r.
- many runs (Monte Carlo; Jagielski, Ullman, Oprea 2020; Nasr et al. 2021): R runs with or without
  one canary, a threshold test on a score. (ε, δ)-DP bounds every test's error rates
  (Kairouz, Oh, Viswanath 2015, Thm 2.1): FPR + e^ε·FNR ≥ 1 − δ and FNR + e^ε·FPR ≥ 1 − δ.
  With Clopper–Pearson upper bounds on FPR and FNR, each at level α/2, both hold for the true
  rates with probability ≥ 1 − α, and then ε ≥ max{ln((1 − δ − FNR_U)/FPR_U),
  ln((1 − δ − FPR_U)/FNR_U), 0}.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.errors import DpcalcError

# ε beyond which the search stops: e^60 ≈ 1e26 guesses would be needed to tell more apart.
MAX_AUDIT_EPSILON = 60.0
_BISECTION_STEPS = 60


def _binomial_tail(successes: int, trials: int, epsilon: float) -> float:
    """P[Binomial(trials, p) ≥ successes] with p = e^ε/(1 + e^ε), as the regularised incomplete
    beta function I_p(v, r − v + 1) = 1 − I_{1−p}(r − v + 1, v) (Abramowitz & Stegun 26.5.24,
    26.5.2) of the miss rate 1 − p = 1/(1 + e^ε), computed as such: p itself rounded to a
    double leaves 1 − p off by up to 1e-16·e^ε relative, which moved the tail both ways (9.5e-8
    too LOW at r = 10^9, ε = 20: a smaller p-value rejects more ε, so the ε lower bound
    came out too high), and bdtrc's int32 trial count gave NaN past 2^31 − 1 trials."""
    from scipy.special import betaincc, expit  # scipy.special: 0.3 s less to import than .stats

    if successes <= 0:
        return 1.0
    if successes > trials:
        return 0.0
    return float(betaincc(float(trials - successes + 1), float(successes), expit(-epsilon)))


def _binomial_masses(values: np.ndarray, trials: int, epsilon: float) -> np.ndarray:
    """P[Binomial(trials, p) = k] for k in ``values``, p = e^ε/(1 + e^ε), in log space."""
    from scipy.special import gammaln

    log_p = -math.log1p(math.exp(-epsilon))            # log p
    log_not_p = -epsilon - math.log1p(math.exp(-epsilon))  # log(1 − p)
    return np.exp(gammaln(trials + 1) - gammaln(values + 1) - gammaln(trials - values + 1)
                  + values * log_p + (trials - values) * log_not_p)


def guess_accuracy(epsilon: float) -> float:
    """e^ε/(1 + e^ε): the best accuracy of a guess about one canary under ε-DP
    (randomised response; the main theorem of Steinke et al. 2023, §3)."""
    return 1.0 / (1.0 + math.exp(-epsilon))


# ---------------------------------------------------------------- one run
def one_run_p_value(epsilon: float, delta: float, canaries: int, guesses: int,
                    correct: int) -> float:
    """Upper bound on P[W ≥ correct] when the run is (ε, δ)-DP (Steinke et al. 2023, §5,
    Corollary 5.4 in arXiv v1).

    f(v) = P[Binomial(r, p) ≥ v] with p = e^ε/(1 + e^ε); the δ term is
    2mδ·max_{i=1..v} (f(v−i) − f(v))/i, where f(v−i) − f(v) = Σ_{k=v−i}^{v−1} P[Binomial = k].
    """
    _check_counts(canaries, guesses, correct)
    tail = _binomial_tail(correct, guesses, epsilon)  # f(v) = P[W ≥ v]
    if delta == 0.0 or correct == 0:
        return min(1.0, tail)
    masses = _binomial_masses(np.arange(correct - 1, -1, -1), guesses, epsilon)  # k = v−1, …, 0
    window = np.cumsum(masses) / np.arange(1, correct + 1)         # (f(v−i) − f(v))/i
    return min(1.0, tail + 2.0 * canaries * delta * float(window.max()))


_P_VALUE_ERROR = 1e-9  # relative, well above the measured 1e-12


def one_run_epsilon_lower(canaries: int, guesses: int, correct: int, delta: float,
                          beta: float, tolerance: float = 0.0) -> float:
    """The largest ε at which ``correct`` of ``guesses`` right is still implausible: every
    ε' < ε has p-value ≤ β (Cor. 5.4), so "the run is (ε', δ)-DP" is rejected at level β.

    0 when even ε = 0 is not rejected. The p-value grows with ε, so bisection finds the crossing.
    ``tolerance`` > 0 stops the bisection once the bracket is that narrow (the guess planner's
    estimates); the answer is still a tested value, never above the crossing.
    """
    _check_counts(canaries, guesses, correct)
    # the p-value's float error is 1e-14 to 1e-12 relative, either sign (independent
    # review): an ε is rejected only where the computed p-value is below β by more than that
    beta = beta * (1.0 - _P_VALUE_ERROR)
    if one_run_p_value(0.0, delta, canaries, guesses, correct) > beta:
        return 0.0
    # Invariant: the p-value is ≤ β at ``low`` (ε = low is rejected, hence every ε' < low: an
    # (ε', δ)-DP run is (low, δ)-DP), so ``low`` is a certified lower bound at every step; the
    # search answers ``low`` whether it converges or gives up, never a value it did not test.
    low, high = 0.0, 1.0
    while one_run_p_value(high, delta, canaries, guesses, correct) <= beta:
        if high >= MAX_AUDIT_EPSILON:
            return MAX_AUDIT_EPSILON  # tested just now: rejected at the cap itself
        # the cap is tested before it is passed (returning it untested once gave 60 where
        # only 32 had been rejected, for a crossing at 33.4)
        low, high = high, min(2.0 * high, MAX_AUDIT_EPSILON)
    for _ in range(_BISECTION_STEPS):
        if high - low <= tolerance:
            break
        middle = 0.5 * (low + high)
        if one_run_p_value(middle, delta, canaries, guesses, correct) <= beta:
            low = middle
        else:
            high = middle
    return low


def one_run_ceiling(canaries: int, guesses: int, delta: float, beta: float) -> float:
    """The most a one-run audit with these counts can certify: the bound when all ``guesses``
    are right. With v = r, f(r) = P[Binomial(r, p) ≥ r] = p^r and f(r − i) − f(r) =
    Σ_{j=1..i} C(r, j) p^{r−j} (1 − p)^j, so the ceiling is the ε where
    p^r + 2mδ·max_{i=1..r} (1/i)·Σ_{j=1..i} C(r, j) p^{r−j} (1 − p)^j = β, p = e^ε/(1 + e^ε)
    (Steinke et al. 2023, Thm 3.1 and its (ε, δ) form, Cor. 5.4 in arXiv v1). For δ = 0 it is
    logit(β^{1/r}): r = 1000 guesses at 95 % certify at most ε = 5.81, whatever the run."""
    return one_run_epsilon_lower(canaries, guesses, guesses, delta, beta)


def pure_epsilon_lower(guesses: np.ndarray, correct: np.ndarray, beta: float) -> np.ndarray:
    """one_run_epsilon_lower at δ = 0, elementwise: logit of the exact one-sided lower
    confidence bound of the accuracy, Beta(β; v, r − v + 1) (Clopper & Pearson 1934), floored
    at 0. Fast; the guess planner ranks guess counts with it."""
    from scipy.special import betaincinv

    guesses = np.asarray(guesses, dtype=float)
    correct = np.asarray(correct, dtype=float)
    safe = np.maximum(correct, 1.0)
    lower = np.where(correct >= 1, betaincinv(safe, guesses - safe + 1.0, beta), 0.0)
    with np.errstate(divide="ignore"):
        epsilon = np.log(lower) - np.log1p(-lower)
    return np.maximum(np.nan_to_num(epsilon, nan=0.0, posinf=MAX_AUDIT_EPSILON), 0.0)


def correct_guesses(scores: np.ndarray, included: np.ndarray, guess_in: int,
                    guess_out: int) -> int:
    """Right guesses when "in" is guessed for the ``guess_in`` highest scores and "out" for the
    ``guess_out`` lowest (ties broken by position, stably)."""
    scores = np.asarray(scores, dtype=float)
    included = np.asarray(included, dtype=bool)
    if scores.shape != included.shape or scores.ndim != 1:
        raise DpcalcError("an audit needs one score per canary")
    if guess_in < 0 or guess_out < 0 or guess_in + guess_out > scores.shape[0]:
        raise DpcalcError(f"need 0 <= guesses in + out <= canaries; got {guess_in} + "
                          f"{guess_out} of {scores.shape[0]}")
    ranked = included[np.argsort(scores, kind="stable")]  # lowest score first
    top = int(ranked[ranked.shape[0] - guess_in:].sum()) if guess_in else 0
    return top + int((~ranked[:guess_out]).sum())


@dataclass(frozen=True)
class OneRunBound:
    """The bound from guesses whose counts were fixed before the scores were seen."""

    epsilon_lower: float
    canaries: int
    guesses: int
    correct: int
    ceiling: float


def one_run_bound(scores: np.ndarray, included: np.ndarray, guess_in: int, guess_out: int,
                  delta: float, beta: float) -> OneRunBound:
    """Guess "in" for the ``guess_in`` highest scores and "out" for the ``guess_out`` lowest,
    and bound ε at level β (Cor. 5.4). The counts must not depend on these scores or on
    ``included`` (dpcalc.audit.guesses plans them on a simulation, or on other canaries):
    then the guesses are a post-processing of the run's output and the theorem applies as is,
    with no correction for a choice."""
    canaries = int(np.asarray(scores).shape[0])
    if canaries < 1:
        raise DpcalcError("an audit needs at least one canary")
    correct = correct_guesses(scores, included, guess_in, guess_out)
    guesses = guess_in + guess_out
    if guesses == 0:
        return OneRunBound(0.0, canaries, 0, 0, 0.0)
    return OneRunBound(one_run_epsilon_lower(canaries, guesses, correct, delta, beta), canaries,
                       guesses, correct, one_run_ceiling(canaries, guesses, delta, beta))


def _check_counts(canaries: int, guesses: int, correct: int) -> None:
    if not 0 <= correct <= guesses <= canaries:
        raise DpcalcError(f"need 0 <= correct <= guesses <= canaries; got {correct}, {guesses}, "
                          f"{canaries}")


# ---------------------------------------------------------------- many runs
def clopper_pearson_upper(events: int, trials: int, alpha: float) -> float:
    """Exact one-sided upper confidence bound of a binomial rate at level α
    (Clopper & Pearson 1934): the p with P[Binomial(n, p) ≤ k] = α, i.e. Beta(1 − α; k+1, n−k)."""
    if trials <= 0 or not 0 <= events <= trials:
        raise DpcalcError(f"need 0 <= events <= trials and trials >= 1; got {events}, {trials}")
    if events == trials:
        return 1.0
    from scipy.special import betaincinv

    return float(betaincinv(events + 1, trials - events, 1.0 - alpha))


def epsilon_from_error_rates(false_positive_rate: float, false_negative_rate: float,
                             delta: float) -> float:
    """The smallest ε any (ε, δ)-DP mechanism needs for a test with these error rates
    (Kairouz, Oh, Viswanath 2015, Thm 2.1: both FPR + e^ε FNR ≥ 1 − δ and FNR + e^ε FPR ≥ 1 − δ)."""
    candidates = [0.0]
    for first, second in ((false_positive_rate, false_negative_rate),
                          (false_negative_rate, false_positive_rate)):
        if first <= 0.0:
            return math.inf if 1.0 - delta - second > 0.0 else 0.0
        if 1.0 - delta - second > 0.0:
            candidates.append(math.log((1.0 - delta - second) / first))
    return max(candidates)


@dataclass(frozen=True)
class MonteCarloBound:
    """A threshold test over R runs: "in" when score ≥ threshold."""

    epsilon_lower: float
    threshold: float
    true_positives: int
    positives: int
    false_positives: int
    negatives: int
    false_positive_rate_upper: float
    false_negative_rate_upper: float


def monte_carlo_bound(scores_in: np.ndarray, scores_out: np.ndarray, threshold: float,
                      delta: float, alpha: float) -> MonteCarloBound:
    """ε lower bound at confidence 1 − α for a threshold fixed before these scores were seen:
    Clopper–Pearson upper bounds on FPR and FNR at α/2 each (a union bound), then
    epsilon_from_error_rates."""
    scores_in, scores_out = np.asarray(scores_in), np.asarray(scores_out)
    return bound_from_counts(int(np.count_nonzero(scores_in >= threshold)),
                             int(scores_in.shape[0]),
                             int(np.count_nonzero(scores_out >= threshold)),
                             int(scores_out.shape[0]), delta, alpha, float(threshold))


def bound_from_counts(true_positives: int, positives: int, false_positives: int, negatives: int,
                      delta: float, alpha: float, threshold: float = math.nan) -> MonteCarloBound:
    """monte_carlo_bound from the test's counts."""
    fpr_upper = clopper_pearson_upper(false_positives, negatives, alpha / 2.0)
    fnr_upper = clopper_pearson_upper(positives - true_positives, positives, alpha / 2.0)
    return MonteCarloBound(epsilon_from_error_rates(fpr_upper, fnr_upper, delta), threshold,
                           true_positives, positives, false_positives, negatives, fpr_upper,
                           fnr_upper)


def monte_carlo_ceiling(positives: int, negatives: int, delta: float, alpha: float) -> float:
    """The most a threshold test over these runs can certify: every run with the canary
    flagged and none without (TP = positives, FP = 0), i.e. ln((1 − δ − FNR_U)/FPR_U) with the
    Clopper–Pearson bounds 1 − (α/2)^{1/n} of zero observed errors."""
    return bound_from_counts(positives, positives, 0, negatives, delta, alpha).epsilon_lower


def epsilon_lower_from_counts(true_positives: np.ndarray, positives: int,
                              false_positives: np.ndarray, negatives: int, delta: float,
                              alpha: float) -> np.ndarray:
    """bound_from_counts(...).epsilon_lower for arrays of counts at once."""
    from scipy.special import betaincinv

    def upper(events: np.ndarray, trials: int) -> np.ndarray:
        events = np.asarray(events, dtype=float)
        inside = np.minimum(events, trials - 1)  # keep betaincinv's arguments valid
        return np.where(events >= trials, 1.0,
                        betaincinv(inside + 1, trials - inside, 1.0 - alpha / 2.0))

    fpr_upper = upper(false_positives, negatives)
    fnr_upper = upper(positives - np.asarray(true_positives), positives)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(1.0 - delta - fnr_upper > 0,
                         np.log(np.maximum(1.0 - delta - fnr_upper, 1e-300) / fpr_upper), 0.0)
        second = np.where(1.0 - delta - fpr_upper > 0,
                          np.log(np.maximum(1.0 - delta - fpr_upper, 1e-300) / fnr_upper), 0.0)
    return np.maximum(np.maximum(first, second), 0.0)


def best_threshold(scores_in: np.ndarray, scores_out: np.ndarray, delta: float,
                   alpha: float) -> float:
    """The threshold whose bound is largest on these scores. Choosing it looks at the scores,
    so its bound must then be computed on other, independent runs (a calibration split)."""
    candidates = np.unique(np.concatenate([np.asarray(scores_in), np.asarray(scores_out)]))
    if candidates.shape[0] > 400:  # enough resolution; keeps the search cheap
        candidates = np.quantile(candidates, np.linspace(0.0, 1.0, 400))
    best_value, best_at = -1.0, float(candidates[0])
    for threshold in candidates:
        value = monte_carlo_bound(scores_in, scores_out, threshold, delta, alpha).epsilon_lower
        if value > best_value:
            best_value, best_at = value, float(threshold)
    return best_at
