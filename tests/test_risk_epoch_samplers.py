"""`dpcalc risk` and `report` for the epoch samplers (shuffle, shuffle-once, balls-in-bins).

What is checked, and why it must hold (dpcalc/risk/epoch.py):
1. Shuffle (and shuffle-once), zero-out or replace-one: pb's upper bound is exactly μ-GDP,
   μ = Δ√E/σ (Δ = 1, resp. 2), so the safe TPR at FPR α is G_μ(α) = Φ(Φ⁻¹(α) + μ) (Dong,
   Roth, Su 2022): equal within 1e-6 relative and never below; the certified μ is μ.
2. Every epoch model: FPR ≤ lower ≤ upper ≤ 1 for TPR (and lower ≤ upper for every figure);
   consistency with `dpcalc epsilon`: TPR ≤ e^ε α + δ at its certified ε (Kairouz et al.
   2015) and the profile read by risk at that ε is ≤ δ. Shuffle: the same closed form, so up
   to float round-off; balls-in-bins: risk reads the random-allocation bound at a grid of δ
   (each built with its own PLD tail), so within 1e-3 relative.
3. Balls-in-bins — only checks the maths implies: (a) one step per epoch (B = N) is E-fold
   full-batch Gaussian, exactly G_μ: upper = G_μ within 1e-6 and the lower bound (the
   max-of-one-output pair is then the Gaussian pair itself) ≤ G_μ and close to it; (b) its
   upper bound never exceeds the no-amplification bound (the shuffle figure at the same μ);
   (c) the upper profile is ≥ the divergence of every enumerated tiny instance (brute force,
   a rigorous lower bound on the truth). Balls-in-bins ≥ Poisson's lower bound is NOT
   implied by any theorem we know (random allocation may be more private than Poisson at
   q = 1/b), nor ≥ shuffle's lower bound (shuffling displaces a record; allocation does
   not), so neither is tested.
4. The command line: risk and report exit 0 for the epoch samplers, JSON keys unchanged.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from dpcalc.accountants.pb import PrivacyBucketsAccountant
from dpcalc.risk.bounds import risk_bounds
from dpcalc.risk.tradeoff import tpr_lower, tpr_upper
from dpcalc.models.samplers import EPOCH_MODELS
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.cli.app import app
from tests.brute_force import epoch_hockey_stick_lower, epoch_mixture
from tests.conftest import cli_runner, run_dpcalc

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

runner = cli_runner()
FPRS = (1e-6, 1e-3, 1e-2, 0.1, 0.5)
GRID = np.geomspace(1e-10, 0.999, 120)


def _schedule(batch, size, sigma, epochs, sampling, adjacency) -> Schedule:
    steps = epochs * -(-size // batch)
    return Schedule((Phase.from_batches(batch, size, sigma, steps, sampling, adjacency),))


def _gdp_curve(alphas, mu):
    return norm.cdf(norm.ppf(np.asarray(alphas)) + mu)


# --- 1. shuffle: the safe TPR is the Gaussian trade-off curve --------------------------------
SHUFFLE_CONFIGS = [(100, 1000, 1.0, 2), (256, 60_000, 0.8, 3), (50, 2000, 3.0, 10),
                   (10, 100, 0.5, 1)]


@pytest.mark.parametrize("batch,size,sigma,epochs", SHUFFLE_CONFIGS)
@pytest.mark.parametrize("sampling,adjacency,sensitivity", [
    ("shuffle", "zero-out", 1.0), ("shuffle", "replace-one", 2.0),
    ("shuffle-once", "zero-out", 1.0)])
def test_shuffle_tpr_upper_is_the_gdp_curve(batch, size, sigma, epochs, sampling, adjacency,
                                            sensitivity):
    mu = sensitivity * math.sqrt(epochs) / sigma
    bounds = risk_bounds(_schedule(batch, size, sigma, epochs, sampling, adjacency), FPRS)
    exact = _gdp_curve(FPRS, mu)
    for figure, truth in zip(bounds.tpr, exact):
        assert figure.upper >= truth, (figure, truth)
        assert figure.upper <= truth * (1 + 1e-6), (figure, truth)
        assert figure.at <= figure.lower <= truth  # the lower bound is below the exact curve
    # between the tangent points asked for: the breakpoint grid, still within 1e-5
    curve, truth = tpr_upper(bounds.run, GRID), _gdp_curve(GRID, mu)
    assert np.all(curve >= truth * (1 - 1e-12)) and np.all(curve <= truth * (1 + 1e-5))
    assert bounds.gdp.upper == pytest.approx(mu, rel=1e-12)
    assert bounds.gdp.fpr_range == (0.0, 1.0)
    assert bounds.advantage.upper == pytest.approx(2 * norm.cdf(mu / 2) - 1, rel=1e-9)
    assert bounds.advantage.upper >= 2 * norm.cdf(mu / 2) - 1


# --- 2. every epoch model: ordered bounds, consistent with `dpcalc epsilon` -------------------
RUN = (100, 1000, 1.0, 2)


@pytest.mark.parametrize("sampling,adjacency", sorted(EPOCH_MODELS))
def test_every_epoch_model_is_ordered_and_consistent_with_epsilon(sampling, adjacency):
    schedule = _schedule(*RUN, sampling, adjacency)
    bounds = risk_bounds(schedule, FPRS, prior=0.3, baseline=1e-3)
    for figure in bounds.tpr:
        assert figure.at <= figure.lower <= figure.upper <= 1.0
    upper, lower = tpr_upper(bounds.run, GRID), tpr_lower(bounds.run, GRID)
    assert np.all(GRID <= lower) and np.all(lower <= upper) and np.all(upper <= 1.0)
    for figure in (bounds.advantage, bounds.posterior, bounds.reconstruction):
        assert 0.0 <= figure.lower <= figure.upper <= 1.0
    assert 0.0 < bounds.gdp.lower <= bounds.gdp.upper
    tolerance = 1e-9 if sampling.startswith("shuffle") else 1e-3
    profile = next(iter(bounds.run.directions.values())).upper
    accountant = PrivacyBucketsAccountant()
    for delta in (1e-5, 1e-8):
        epsilon = accountant.epsilon(schedule, delta).epsilon
        assert profile.at([epsilon])[0] <= delta * (1 + tolerance)
        alphas = np.array([1e-9, 1e-6, 1e-4, 1e-2, 0.2])
        assert np.all(tpr_upper(bounds.run, alphas)
                      <= (np.exp(epsilon) * alphas + delta) * (1 + max(tolerance, 1e-6)))
    # the advantage is δ(0): at most `dpcalc delta --epsilon 0`'s certified value
    assert bounds.advantage.upper <= accountant.delta(schedule, 0.0) * (1 + 2e-3)


# --- 3. balls-in-bins: the checks the maths implies ------------------------------------------
@pytest.mark.parametrize("adjacency,sensitivity", [("add-remove", 1.0), ("replace-one", 2.0)])
def test_balls_in_bins_with_one_step_per_epoch_is_the_gaussian_curve(adjacency, sensitivity):
    epochs, sigma = 3, 1.5
    mu = sensitivity * math.sqrt(epochs) / sigma
    bounds = risk_bounds(_schedule(100, 100, sigma, epochs, "balls-in-bins", adjacency), FPRS)
    for figure, truth in zip(bounds.tpr, _gdp_curve(FPRS, mu)):
        assert truth <= figure.upper <= truth * (1 + 1e-6)
        assert truth * (1 - 0.02) <= figure.lower <= truth


@pytest.mark.parametrize("batch,size,sigma,epochs", [(100, 1000, 1.0, 2), (256, 60_000, 1.0, 1)])
def test_balls_in_bins_never_exceeds_the_no_amplification_bound(batch, size, sigma, epochs):
    allocation = risk_bounds(_schedule(batch, size, sigma, epochs, "balls-in-bins", "zero-out"),
                             FPRS)
    gaussian = risk_bounds(_schedule(batch, size, sigma, epochs, "shuffle", "zero-out"), FPRS)
    for ours, theirs in zip(allocation.tpr, gaussian.tpr):
        assert ours.upper <= theirs.upper
    assert allocation.advantage.upper <= gaussian.advantage.upper
    assert allocation.gdp.upper <= gaussian.gdp.upper
    # and amplification is real here: strictly below at FPR 1e-3
    assert allocation.tpr[1].upper < 0.9 * gaussian.tpr[1].upper


BRUTE_CASES = [("balls-in-bins", "add-remove", 4, 2, 1), ("balls-in-bins", "add-remove", 4, 2, 2),
               ("balls-in-bins", "replace-one", 4, 2, 1), ("shuffle", "zero-out", 4, 2, 1)]


def _instances(sampling, adjacency, gradients, extra, batch, steps):
    def mixture(values):
        return epoch_mixture(values, sampling, batch, steps)

    base = mixture(gradients)
    if adjacency == "add-remove":
        other = mixture(list(gradients) + [extra])
    elif adjacency == "zero-out":
        other = mixture(list(gradients[:-1]) + [0.0])
    else:
        other = mixture(list(gradients[:-1]) + [extra])
    return [(base, other), (other, base)]


@pytest.mark.parametrize("sampling,adjacency,size,batch,epochs", BRUTE_CASES)
def test_upper_profile_holds_against_every_enumerated_instance(sampling, adjacency, size, batch,
                                                               epochs):
    sigma = 1.0
    steps = -(-size // batch)
    bounds = risk_bounds(_schedule(batch, size, sigma, epochs, sampling, adjacency), (1e-3, 0.1))
    profile = next(iter(bounds.run.directions.values())).upper
    epsilons = np.array([0.0, 0.25, 0.5, 1.0, 2.0])
    certified = profile.at(epsilons)
    configs = [([-1.0] * (size - 1) + [1.0], -1.0), ([0.0] * (size - 1) + [1.0], -1.0)]
    reached = np.zeros_like(epsilons)
    for gradients, extra in configs:
        for p_mix, q_mix in _instances(sampling, adjacency, gradients, extra, batch, steps):
            truth = epoch_hockey_stick_lower(p_mix, q_mix, sigma, epochs, epsilons,
                                             cells_per_axis=90)
            assert np.all(truth <= certified * (1 + 1e-9)), (truth, certified)
            reached = np.maximum(reached, truth)
    assert bounds.advantage.upper >= reached[0]
    assert reached[0] > 0.1  # the instances are not vacuous


# --- 4. the command line ---------------------------------------------------------------------
CLI_RUN = ["--batch-size", "100", "--dataset-size", "1000", "--sigma", "1", "--epochs", "2"]


def test_risk_for_shuffled_batches_runs_and_names_its_certificate():
    result = run_dpcalc("risk", "--sampling", "shuffle", "--adjacency", "zero-out", *CLI_RUN)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # notes wrap at the terminal width
    assert "shuffled batches" in text and "zero-out adjacency" in text
    assert "μ-GDP with μ = 1·√2/σ = 1.41421" in text and "Chua et al. 2024" in text
    # TPR at FPR 0.001 for μ = √2: Φ(Φ⁻¹(0.001) + √2) = 0.0468673, shown rounded up
    assert "0.046868" in text


def test_report_for_shuffled_batches_keeps_the_caveats():
    result = run_dpcalc("report", "--sampling", "shuffle", "--adjacency", "zero-out", *CLI_RUN)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "Sampler: shuffled batches — each epoch a fresh uniform permutation" in text
    assert "Neighbouring datasets: zero-out" in text
    assert "No credit for shuffling" in text and "Hyper-parameter tuning" in text
    assert "TPR ≤ 0.046868" in text and "pb for an epoch sampler" in text


def _json(*args):
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_balls_in_bins_risk_and_report_json_keep_their_keys():
    poisson = _json("risk", "--sampling", "poisson", *CLI_RUN)
    payload = _json("risk", "--sampling", "balls-in-bins", *CLI_RUN, "--baseline", "0.001")
    assert payload["inputs"]["sampling"] == "balls-in-bins"
    assert set(payload) == set(poisson) and set(payload["inputs"]) == set(poisson["inputs"])
    by_measure = {record["measure"]: record for record in payload["results"]}
    for record in poisson["results"]:
        assert set(by_measure[record["measure"]]) == set(record)
    for record in payload["results"]:
        assert record["lower"] <= record["upper"] == record["value"]
        assert any("random-allocation" in note for note in record["notes"])
    report = _json("report", "--sampling", "balls-in-bins", *CLI_RUN)
    plain = _json("report", "--sampling", "poisson", *CLI_RUN)
    assert set(report["results"][0]) == set(plain["results"][0])
    assert "Balls-in-bins is not shuffling" in report["results"][0]["markdown"]
    assert [r["upper"] for r in report["results"][0]["risk"][:3]] == [
        r["upper"] for r in payload["results"][:3]]


def test_risk_under_add_remove_shuffling_is_not_applicable_with_the_zero_out_figures():
    """No certificate for shuffling under add/remove: every row is "not applicable" (no value,
    certified false, exit 0), and carries the nearest certified model's figures — zero-out,
    the same run — which are exactly `risk --adjacency zero-out`'s."""
    payload = _json("risk", "--sampling", "shuffle", "--adjacency", "add-remove", *CLI_RUN)
    zero_out = _json("risk", "--sampling", "shuffle", "--adjacency", "zero-out", *CLI_RUN)
    for record, reference in zip(payload["results"], zero_out["results"], strict=True):
        assert record["upper"] is None and record["value"] is None and record["lower"] is None
        assert record["certified"] is False and record["kind"] == "not applicable"
        assert "add/remove-one adjacency have no certified bound" in record["notes"][0]
        nearest = record["nearest_model"]
        assert nearest["adjacency"] == "zero-out"
        assert (nearest["upper"], nearest["lower"]) == (reference["upper"], reference["lower"])
