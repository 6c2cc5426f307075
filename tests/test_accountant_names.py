"""Accountant names users bring from other tools: pld and prv are pb here (numeric PLD
composition, certified both sides), clt is gdp; an unknown name lists the valid ones and
says what pb is."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dpcalc import DpcalcError, Schedule, get_accountant
from dpcalc.accountants.registry import alias_notes, resolve_names


def _run(*arguments):
    return subprocess.run([sys.executable, "-m", "dpcalc", *arguments], capture_output=True,
                          text=True)


@pytest.mark.parametrize("alias, name", [("pld", "pb"), ("prv", "pb"), ("clt", "gdp")])
def test_aliases_resolve_to_the_accountant_that_answers(alias, name):
    assert resolve_names([alias]) == [name]
    assert get_accountant(alias).name == name
    assert len(alias_notes([alias])) == 1 and name in alias_notes([alias])[0]


def test_an_alias_gives_the_same_numbers_and_says_so_on_stderr():
    flags = ["epsilon", "--q", "0.01", "--sigma", "4", "--steps", "1000", "-f", "json"]
    plain, aliased = _run(*flags), _run(*flags, "-a", "prv")
    assert plain.returncode == aliased.returncode == 0
    assert json.loads(plain.stdout)["results"] == json.loads(aliased.stdout)["results"]
    assert "prv" in aliased.stderr and "pb" in aliased.stderr and plain.stderr == ""


def test_an_alias_and_its_target_together_count_once():
    assert resolve_names(["pb,pld", "prv"]) == ["pb"]


def test_an_unknown_name_lists_the_valid_ones_and_says_what_pb_is():
    with pytest.raises(DpcalcError) as caught:
        resolve_names(["bogus"])
    message = str(caught.value)
    assert "pb, rdp" in message and "certified both sides" in message and "'bogus'" in message
    done = _run("epsilon", "--q", "0.01", "--sigma", "4", "--steps", "10", "-a", "bogus")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_the_library_answer_under_an_alias_is_the_accountants():
    schedule = Schedule.single(0.01, 4.0, 1000)
    assert get_accountant("pld").epsilon(schedule, 1e-5) == get_accountant("pb").epsilon(
        schedule, 1e-5)
