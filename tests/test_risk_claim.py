"""`dpcalc risk --epsilon E --delta D`: the attack bounds of an (ε, δ) claim, against
independent values — riskcal's (ε, δ) trade-off and advantage (Dong et al. 2019, Eq. 5), and
the four-point randomized response with an atom δ computed by brute force (the Bayes-optimal
guess, the best test at each FPR by Neyman–Pearson with randomisation)."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from riskcal.analysis.conversions import get_advantage_from_adp, get_beta_from_adp

from dpcalc.risk.claim import claim_figures

POINTS = [(0.5, 1e-5), (1.0, 1e-5), (3.0, 1e-6), (8.0, 1e-5), (0.1, 0.01), (0.0, 1e-12),
          (1e-9, 1e-10)]
FPRS = (1e-12, 1e-4, 1e-3, 0.01, 0.1, 0.5)


def _exact_tpr(epsilon, delta, alpha):
    """min{1, e^ε α + δ, 1 − e^{−ε}(1 − δ − α)} at 50 digits (Kairouz et al. 2015)."""
    import mpmath as mp

    with mp.workdps(50):
        e, d, a = mp.mpf(epsilon), mp.mpf(delta), mp.mpf(alpha)
        return float(min(1, mp.e**e * a + d, 1 - mp.e**(-e) * (1 - d - a)))


def _randomized_response(epsilon, delta):
    """(P, Q) of the (ε, δ) randomized response with an atom (Kairouz et al. 2015)."""
    high, low = math.exp(epsilon) / (1 + math.exp(epsilon)), 1 / (1 + math.exp(epsilon))
    p = np.array([delta, (1 - delta) * high, (1 - delta) * low, 0.0])
    return p, p[::-1].copy()


def _best_tpr(p, q, alpha):
    """Neyman–Pearson: outcomes by decreasing likelihood ratio, the last one randomised."""
    with np.errstate(divide="ignore"):
        order = np.argsort(-(p / np.where(q > 0, q, 0.0)), kind="stable")
    tpr, spent = 0.0, 0.0
    for index in order:
        if spent + q[index] <= alpha:
            tpr, spent = tpr + p[index], spent + q[index]
        else:
            return tpr + p[index] * (alpha - spent) / q[index]
    return tpr


@pytest.mark.parametrize("epsilon, delta", POINTS)
def test_claim_tpr_and_advantage_match_riskcal_and_brute_force(epsilon, delta):
    figures = claim_figures(epsilon, delta, FPRS)
    tprs = {f.at: f.upper for f in figures if f.name == "tpr"}
    p, q = _randomized_response(epsilon, delta)
    for alpha in FPRS:
        expected = _exact_tpr(epsilon, delta, alpha)
        assert tprs[alpha] >= expected  # never below the extremal pair's exact TPR
        assert tprs[alpha] == pytest.approx(expected, rel=1e-9)
        assert tprs[alpha] == pytest.approx(1 - float(get_beta_from_adp(epsilon, delta, alpha)),
                                            rel=1e-9, abs=1e-15)
        assert tprs[alpha] == pytest.approx(_best_tpr(p, q, alpha), rel=1e-9)
    advantage = next(f.upper for f in figures if f.name == "advantage")
    import mpmath as mp

    with mp.workdps(50):
        exact = float((mp.expm1(mp.mpf(epsilon)) + 2 * mp.mpf(delta)) / (mp.e**epsilon + 1))
    assert advantage >= exact and advantage == pytest.approx(exact, rel=1e-9)
    # riskcal's float form cancels in e^ε − 1 at ε ≈ 0: a looser check there
    assert advantage == pytest.approx(get_advantage_from_adp(epsilon, delta), rel=1e-6)
    assert advantage == pytest.approx(0.5 * np.abs(p - q).sum(), rel=1e-9)


@pytest.mark.parametrize("epsilon, delta", POINTS)
@pytest.mark.parametrize("prior", [0.5, 0.1, 0.9])
def test_claim_posterior_is_the_bayes_optimal_guess_on_the_extremal_pair(epsilon, delta, prior):
    figures = claim_figures(epsilon, delta, [0.01], prior=prior)
    posterior = next(f.upper for f in figures if f.name == "posterior_success")
    p, q = _randomized_response(epsilon, delta)
    bayes = float(np.maximum(prior * p, (1 - prior) * q).sum())
    assert posterior >= bayes and posterior == pytest.approx(bayes, rel=1e-9)


def test_claim_reconstruction_is_the_tpr_at_the_baseline():
    figures = claim_figures(2.0, 1e-5, [0.01], baseline=0.001)
    rebuilt = next(f for f in figures if f.name == "reconstruction")
    assert rebuilt.at == 0.001 and rebuilt.upper == pytest.approx(math.exp(2) * 0.001 + 1e-5)


def test_huge_epsilon_does_not_overflow():
    figures = claim_figures(1e4, 1e-5, [1e-3])
    assert all(0.0 <= f.upper <= 1.0 for f in figures)


def _risk(*arguments):
    return subprocess.run([sys.executable, "-m", "dpcalc", "risk", *arguments],
                          capture_output=True, text=True)


def test_cli_claim_is_labelled_as_the_claims_bound_not_a_runs():
    done = _risk("--epsilon", "8", "--delta", "1e-5", "-f", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["inputs"]["claim"] == {"epsilon": 8.0, "delta": 1e-5}
    assert {r["kind"] for r in data["results"]} == {"bound for the claim"}
    assert all(r["lower"] is None for r in data["results"])
    table = _risk("--epsilon", "8", "--delta", "1e-5")
    assert "claim" in table.stdout and "(8, 1e-05)" in table.stdout


def test_cli_claim_and_run_together_are_refused():
    done = _risk("--epsilon", "1", "--q", "0.01", "--sigma", "1", "--steps", "10")
    assert done.returncode == 2 and "not both" in done.stderr
    done = _risk("--q", "0.01", "--sigma", "1", "--steps", "10", "--delta", "1e-5")
    assert done.returncode == 2 and "--delta" in done.stderr


def test_report_states_a_claim_with_the_claims_bounds():
    done = subprocess.run([sys.executable, "-m", "dpcalc", "report", "--epsilon", "2",
                           "--delta", "1e-6", "--fpr", "0.01"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    expected = claim_figures(2.0, 1e-6, [0.01])[0].upper  # e^2·0.01 + 1e-6
    assert "# What an (ε, δ) claim means for an attacker" in done.stdout
    assert "A claim, not a run" in done.stdout
    line = next(line for line in done.stdout.splitlines() if "FPR 0.01:" in line)
    shown = float(line.split("TPR ≤ ")[1].split(" ")[0])
    assert expected <= shown <= expected * (1 + 1e-4)  # rounded up, 5 digits
    data = json.loads(subprocess.run([sys.executable, "-m", "dpcalc", "report", "--epsilon", "2",
                                      "--delta", "1e-6", "-f", "json"], capture_output=True,
                                     text=True, check=True).stdout)
    assert data["results"][0]["kind"] == "bound for the claim"
    assert data["inputs"]["claim"] == {"epsilon": 2.0, "delta": 1e-6}
    refused = subprocess.run([sys.executable, "-m", "dpcalc", "report", "--epsilon", "2", "--q",
                              "0.01", "--sigma", "1", "--steps", "10"], capture_output=True,
                             text=True)
    assert refused.returncode == 2 and "not both" in refused.stderr
