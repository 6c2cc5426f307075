"""Hypothesis properties of the risk bounds: the certified TPR bound rises with steps and
q and falls with σ; it never drops below the FPR nor exceeds 1; lower ≤ upper. Risk
calibration round trip: the σ returned meets the target, σ·(1 − 1e-3) does not."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc.risk.bounds import risk_bounds
from dpcalc.risk.tradeoff import tpr_upper
from dpcalc.risk.calibration import risk_sigma
from dpcalc.models.schedule import Schedule

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
FPR = 1e-2


def _tpr(q, sigma, steps):
    bounds = risk_bounds(Schedule.single(q, sigma, steps), [FPR], tolerance=0.05)
    (figure,) = bounds.tpr
    return figure


@SETTINGS
@given(q=st.floats(0.02, 0.5), sigma=st.floats(0.8, 4.0), steps=st.integers(1, 150))
def test_tpr_bound_is_monotone_in_steps_q_and_sigma(q, sigma, steps):
    base = _tpr(q, sigma, steps)
    assert FPR <= base.lower <= base.upper <= 1.0
    assert _tpr(q, sigma, 2 * steps).upper >= base.upper
    assert _tpr(min(1.0, 1.5 * q), sigma, steps).upper >= base.upper
    assert _tpr(q, 1.25 * sigma, steps).upper <= base.upper


@SETTINGS
@given(q=st.floats(0.01, 1.0), sigma=st.floats(0.5, 6.0), steps=st.integers(1, 300),
       fpr=st.floats(1e-6, 0.9))
def test_bounds_stay_between_fpr_and_one(q, sigma, steps, fpr):
    bounds = risk_bounds(Schedule.single(q, sigma, steps), [fpr], prior=0.3, tolerance=0.05)
    (figure,) = bounds.tpr
    assert fpr <= figure.lower <= figure.upper <= 1.0
    assert 0.0 <= bounds.advantage.lower <= bounds.advantage.upper <= 1.0
    assert 0.7 <= bounds.posterior.lower <= bounds.posterior.upper <= 1.0
    assert bounds.gdp.lower <= bounds.gdp.upper


@pytest.mark.parametrize("targets", [
    {"max_tpr": 0.02, "at_fpr": 1e-3},
    {"max_advantage": 0.1},
    {"max_tpr": 0.2, "at_fpr": 0.1, "max_advantage": 0.15},
])
def test_risk_calibration_round_trip(targets):
    schedule = Schedule.single(0.02, 1.0, 500)
    found = risk_sigma(schedule, precision=1e-4, **targets)

    def meets(sigma: float) -> bool:
        fprs = [targets["at_fpr"]] if "at_fpr" in targets else [0.5]
        bounds = risk_bounds(schedule.with_noise_multiplier(sigma), fprs)
        ok = True
        if "max_tpr" in targets:
            ok &= bounds.tpr[0].upper <= targets["max_tpr"]
        if "max_advantage" in targets:
            ok &= bounds.advantage.upper <= targets["max_advantage"]
        return ok

    assert meets(found.sigma)
    assert not meets(found.sigma * (1 - 1e-3))


def test_tpr_upper_is_a_concave_curve_above_the_diagonal():
    from dpcalc.pb.composed import composed_directions
    import numpy as np

    run = composed_directions(Schedule.single(0.1, 1.0, 50), 1e-9)
    alphas = np.linspace(0.001, 0.999, 400)
    values = tpr_upper(run, alphas)
    assert np.all(values >= alphas)
    assert np.all(np.diff(values, 2) <= 1e-9)  # an infimum of lines in α is concave
