"""The participation bound (models.subsampling.participation_bound): δ(ε) ≤ 1 − ∏(1 − r_i)^{T_i}
at every ε ≥ 0, and pb's ε = 0 where the record is drawn with probability ≤ δ (issue 30 §3:
`sigma -e 1 --q 1e-8 --steps 1000` searched pb at σ = 1e-4 for minutes)."""
from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import pytest

from dpcalc import Schedule
from dpcalc.accountants.pb import PrivacyBucketsAccountant, drawn_probability
from dpcalc.errors import DpcalcError
from dpcalc.models.schedule import Phase
from dpcalc.models.subsampling import participation_bound
from dpcalc.pb.buckets import delta_bounds, schedule_phases


def _three_point_divergence(rates: list[float], epsilon: float) -> float:
    """H_{e^ε} of the composed three-point pairs ((1−r)c + r·a, (1−r)c + r·b), by enumerating
    every outcome sequence (the brute-force adversary picks the set where P − e^ε Q > 0)."""
    total = 0.0
    for outcome in itertools.product("cab", repeat=len(rates)):
        p = q = 1.0
        for rate, symbol in zip(rates, outcome):
            p *= {"c": 1.0 - rate, "a": rate, "b": 0.0}[symbol]
            q *= {"c": 1.0 - rate, "a": 0.0, "b": rate}[symbol]
        total += max(0.0, p - math.exp(epsilon) * q)
    return total


@pytest.mark.parametrize("rates", [[0.3], [0.1, 0.1, 0.1], [0.5, 0.02, 0.2, 0.7], [1e-3] * 5])
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 5.0])
def test_the_bound_is_the_composed_three_point_pairs_divergence(rates, epsilon):
    exact = _three_point_divergence(rates, epsilon)
    bound = participation_bound((rate, 1) for rate in rates)
    assert exact <= bound <= exact * (1 + 1e-8) + 1e-300


def test_the_bound_counts_steps_and_handles_the_extremes():
    assert participation_bound([(1e-8, 1000)]) == pytest.approx(-math.expm1(1000 * math.log1p(-1e-8)),
                                                                rel=1e-8)
    assert participation_bound([(1e-8, 1000)]) >= 1000 * 1e-8 * (1 - 1000 * 1e-8 / 2)
    assert participation_bound([(0.0, 10)]) == 0.0
    assert participation_bound([(1.0, 1), (0.1, 3)]) == 1.0
    exact = 1 - 0.9**2 * 0.8**3
    assert exact <= participation_bound([(0.1, 2), (0.2, 3)]) <= exact * (1 + 2e-9)
    with pytest.raises(DpcalcError, match="sampling_rate"):
        participation_bound([(1.5, 1)])


# every per-step model pb composes: each pair's total variation must be ≤ its sampling rate
MODELS = [dict(sampling=sampling, adjacency=adjacency)
          for sampling in ("poisson", "fixed") for adjacency in ("add-remove", "replace-one", "zero-out")]
MODELS += [dict(sampling="truncated-poisson", adjacency=adjacency, dataset_size=40, max_batch_size=6)
           for adjacency in ("add-remove", "replace-one", "zero-out")]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m['sampling']}-{m['adjacency']}")
@pytest.mark.parametrize("epsilon", [0.0, 1.0])
def test_pb_certified_lower_delta_never_exceeds_the_bound(model, epsilon):
    """From the side the bound must hold: pb's certified lower δ (≤ the truth) ≤ the bound,
    at σ small enough that the pairs nearly separate (the bound is then nearly attained)."""
    for rate, steps in ((0.1, 1), (0.1, 3), (0.02, 10)):
        phase = Phase(rate, 0.05, steps, **model)
        schedule = Schedule((phase,))
        bound = drawn_probability(schedule)
        lower = delta_bounds(schedule_phases(schedule), epsilon, None).lower
        assert lower <= bound, (model, rate, steps, lower, bound)
        if model["sampling"] == "poisson" and model["adjacency"] != "replace-one":
            assert lower >= 0.95 * bound  # nearly attained: the record's step is visible


def test_epsilon_is_zero_exactly_when_the_record_is_drawn_with_probability_at_most_delta():
    accountant = PrivacyBucketsAccountant()
    inside = accountant.epsilon(Schedule.single(1e-8, 0.01, 1000), 1e-5)  # p = 9.99995e-6
    assert (inside.epsilon, inside.epsilon_lower) == (0.0, 0.0)
    assert inside.details["upper_source"] == "participation"
    assert inside.details["participation_probability"] <= 1e-5
    outside = accountant.epsilon(Schedule.single(2e-8, 0.3, 1000), 1e-5)  # p ≈ 2e-5 > δ
    assert outside.details["upper_source"] != "participation"
    assert outside.epsilon > 0.0
    # the truth there is > 0: one step at σ = 0.3 separates with TV q·(2Φ(1/0.6) − 1)
    assert 1 - (1 - 2e-8 * 0.9044) ** 1000 > 1e-5


def test_a_curve_mixes_zero_points_and_composed_points_in_order():
    accountant = PrivacyBucketsAccountant()
    schedules = [Schedule.single(1e-8, 0.3, steps) for steps in (100, 1000, 3000, 1500)]
    curve = accountant.epsilon_curve(schedules, 1e-5)
    points = [accountant.epsilon(schedule, 1e-5) for schedule in schedules]
    assert [r.epsilon for r in curve] == [r.epsilon for r in points]
    assert [r.epsilon for r in curve][:2] == [0.0, 0.0] and curve[2].epsilon > 0.0
    assert curve[3].epsilon == 0.0


def test_delta_takes_the_participation_bound_where_it_is_tighter():
    accountant = PrivacyBucketsAccountant()
    schedule = Schedule.single(1e-7, 0.1, 1000)
    upper, lower, notes, details = accountant.delta_bounds(schedule, 1.0)
    assert upper == drawn_probability(schedule)
    assert lower <= upper and lower > 0.99 * upper  # nearly tight at σ = 0.1
    assert details == {"upper_source": "participation"} and "drawn" in notes[-1]
    wide = Schedule.single(0.01, 1.0, 1000)  # the record is drawn almost surely: pb's own δ
    upper, lower, _, details = accountant.delta_bounds(wide, 1.0)
    assert upper < 0.5 and details == {}


def test_sigma_where_any_noise_meets_the_target_answers_in_seconds():
    """Was > 300 s (pb evaluated at σ down to 1e-4 with q·T ≈ δ)."""
    run = subprocess.run([sys.executable, "-m", "dpcalc", "sigma", "-e", "1", "--q", "1e-8",
                          "--steps", "1000", "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    (row,) = json.loads(run.stdout)["results"]
    assert row["epsilon"] == 0.0 and row["epsilon_lower"] == 0.0
    assert any("drawn in at least one step" in note for note in row["notes"])
    assert any("smallest noise multiplier searched" in note for note in row["notes"])


def test_the_privacy_accountant_gives_the_same_zero_over_several_phases():
    from dpcalc import PrivacyAccountant

    accountant = PrivacyAccountant()
    accountant.step(noise_multiplier=0.05, sample_rate=1e-8, steps=400)
    accountant.step(noise_multiplier=0.07, sample_rate=1e-8, steps=500)
    assert accountant.bounds(1e-5) == (0.0, 0.0)
    accountant.step(noise_multiplier=0.9, sample_rate=0.01, steps=100)  # now drawn almost surely
    upper, lower = accountant.bounds(1e-5)
    reference = PrivacyBucketsAccountant().epsilon(accountant.schedule, 1e-5)
    assert (upper, lower) == (reference.epsilon, reference.epsilon_lower) and lower > 0.0
