"""One contract for every registered accountant: ε for δ, δ for ε, certified ≥ tight."""
from __future__ import annotations

import math

import pytest

from dpcalc.accounting.base import Accountant
from dpcalc.accounting.registry import accountant_names, get_accountant
from dpcalc.accounting.result import EpsilonResult
from dpcalc.accounting.schedule import Phase, Schedule

CONFIGS = [Schedule.single(0.01, 4.0, 10_000), Schedule.single(0.004, 1.1, 1_000),
           Schedule.single(1.0, 20.0, 50), Schedule((Phase(0.02, 2.0, 300), Phase(0.01, 3.0, 700)))]
TIGHT = {id(s): get_accountant("pb").epsilon(s, 1e-5) for s in CONFIGS}


@pytest.mark.parametrize("name", accountant_names())
@pytest.mark.parametrize("schedule", CONFIGS, ids=["abadi", "mnist-1k", "q1", "two-phase"])
def test_accountant_contract(name, schedule):
    accountant = get_accountant(name)
    assert isinstance(accountant, Accountant) and accountant.name == name
    result = accountant.epsilon(schedule, 1e-5)
    assert isinstance(result, EpsilonResult) and result.accountant == name
    assert result.certified == accountant.certified
    if result.epsilon is None:
        assert result.notes, "an accountant that does not apply must say why"
        return
    assert result.epsilon >= 0 and not math.isnan(result.epsilon)
    tight = TIGHT[id(schedule)]
    if accountant.certified:
        # every certified ε is at least the certified lower bound of the tight value
        assert result.epsilon >= tight.epsilon_lower * (1 - 1e-9)
    if result.epsilon_lower is not None:
        assert result.epsilon_lower <= result.epsilon
    # δ for ε answers the inverse question on the safe side
    delta = accountant.delta(schedule, result.epsilon * 1.001 + 1e-9)
    if delta is not None:
        assert 0 <= delta <= 1e-5 * 1.05


def test_registry_rejects_unknown_names_with_the_valid_ones():
    from dpcalc.errors import DpcalcError

    with pytest.raises(DpcalcError, match="--accountant must be one of pb"):
        get_accountant("nope")
