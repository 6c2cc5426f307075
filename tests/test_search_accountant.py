"""pb's upper_only mode (σ searches read the upper bound only): the same upper bound, the
explicit run's lower bound skipped (reported 0, never a claim), and the calibrated σ still
reported with its certified lower bound."""
from __future__ import annotations

import pytest

from dpcalc import Schedule
from dpcalc.accountants.pb import PrivacyBucketsAccountant
from dpcalc.calibration.dpsgd import dpsgd_sigma
from dpcalc.errors import DpcalcError
from dpcalc.models.schedule import Phase

NOT_ATTAINED = [Phase(None, 1.0, 200, "fixed", "replace-one", 256, 60_000),
                Phase(None, 1.0, 200, "truncated-poisson", "add-remove", 256, 6_000, 280)]


@pytest.mark.parametrize("phase", NOT_ATTAINED, ids=lambda p: p.sampling)
def test_upper_only_keeps_the_upper_bound_and_claims_no_lower_bound(phase):
    schedule = Schedule((phase,))
    full = PrivacyBucketsAccountant().epsilon(schedule, 1e-5)
    search = PrivacyBucketsAccountant(upper_only=True).epsilon(schedule, 1e-5)
    assert search.epsilon == full.epsilon
    assert search.epsilon_lower == 0.0 < full.epsilon_lower <= full.epsilon


def test_upper_only_changes_nothing_where_the_pair_is_attained():
    schedule = Schedule.single(0.01, 1.0, 500)
    full = PrivacyBucketsAccountant().epsilon(schedule, 1e-5)
    search = PrivacyBucketsAccountant(upper_only=True).epsilon(schedule, 1e-5)
    assert (search.epsilon, search.epsilon_lower) == (full.epsilon, full.epsilon_lower)


def test_upper_only_must_be_a_boolean():
    with pytest.raises(DpcalcError, match="upper_only must be True or False"):
        PrivacyBucketsAccountant(upper_only="yes")


def test_a_calibrated_sigma_is_reported_with_its_certified_lower_bound():
    schedule = Schedule((NOT_ATTAINED[0],))
    found = dpsgd_sigma("pb", 1.0, 1e-5, schedule=schedule)
    final = PrivacyBucketsAccountant().epsilon(schedule.with_noise_multiplier(found.sigma), 1e-5)
    assert found.epsilon <= 1.0
    assert found.result.epsilon_lower == final.epsilon_lower > 0.0
